#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The files of src/ call each other downward only (issue 30): no set of
# files calls each other in a cycle, beyond the send and receive halves of
# the data path {rx tx} and the main thread's {control metrics smcproxyd}.
# Read from the objects this build made (scripts/callgraph, nm); a new
# upward call fails here with the symbols that close the cycle.  The two
# places that list the files as layers say it truly (issue 44): the .c
# files of src/Makefile.inc come by level from the bottom, and
# docs/internals.md's layer table names every file, none in a row below
# a file it calls.  So do src/smcproxyd.h's sections, one a file.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 nm
SRC=$(cd "$(dirname "$0")/../.." && pwd)

# the archive: this build's objects, none left from a file since removed
lib=$SMC_BUILDDIR/src/libsmcproxy.a main=$SMC_BUILDDIR/src/smcproxyd-smcproxyd.o
[ -f "$lib" ] && [ -f "$main" ] || fail "no $lib or $main: build first"
python3 "$SRC/scripts/callgraph" -a "rx tx" -a "control metrics smcproxyd" \
	--levels --order "$SRC/src/Makefile.inc" --doc "$SRC/docs/internals.md" \
	--header "$SRC/src/smcproxyd.h" "$lib" "$main" >"$T/out" 2>&1 ||
	fail "files of src/ call each other:
$(cat "$T/out")"
grep -q '^allowed {rx tx}$' "$T/out" ||
	fail "the reader did not see the rx/tx pair (nm output changed?): $(cat "$T/out")"
grep -q '^level 1: ' "$T/out" ||
	fail "no levels printed: $(cat "$T/out")"
smc_log "$(grep -c '^level ' "$T/out") levels; $(grep -v '^  \|^level ' "$T/out" | tr '\n' ' ')"

# must_fail WHAT OPTION FILE PATTERN: callgraph with OPTION FILE (a copy
# broken on purpose) fails, and says PATTERN
must_fail() {
	! python3 "$SRC/scripts/callgraph" -a "rx tx" -a "control metrics smcproxyd" \
		"$2" "$3" "$lib" "$main" >"$T/bad" 2>&1 &&
		grep -q "$4" "$T/bad" ||
		fail "$1 passed: $(cat "$T/bad")"
}

# and the order check reads what it says: the list with its first two
# levels swapped fails, naming the file out of place
sed 's|src/now.c src/addr.c|src/addr.c|; s|src/log.c src/buf.c|src/log.c src/now.c src/buf.c|' \
	"$SRC/src/Makefile.inc" >"$T/Makefile.inc"
must_fail "a misordered src/Makefile.inc" --order "$T/Makefile.inc" \
	'^ORDER .*: log (level 1) comes before now (level 0)'
# and the table's: llc.c put in the bottom row fails, naming what it calls
sed 's/^| clock, log, addresses, wire | `now.c`,/| clock, log, addresses, wire | `llc.c`, `now.c`,/' \
	"$SRC/docs/internals.md" >"$T/internals.md"
must_fail "a misplaced llc.c in docs/internals.md" --doc "$T/internals.md" \
	'^LAYER .*: llc (clock, log, addresses, wire) calls wr'
# and the header's: now.c's section moved below log.c's fails
sed '/^\/\* now\.c \*\/$/,/^$/{H;d}; /^\/\* buf\.c/{x;s/^\n//;G}' \
	"$SRC/src/smcproxyd.h" >"$T/smcproxyd.h"
must_fail "a misordered src/smcproxyd.h" --header "$T/smcproxyd.h" \
	'^HEADER .*: section now (level 0) comes after log (level 1)'
