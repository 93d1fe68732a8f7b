#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The files of src/ call each other downward only (issue 30): no set of
# files calls each other in a cycle, beyond the send and receive halves of
# the data path {rx tx} and the main thread's {control metrics smcproxyd}.
# Read from the objects this build made (scripts/callgraph, nm); a new
# upward call fails here with the symbols that close the cycle.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 nm
SRC=$(cd "$(dirname "$0")/../.." && pwd)

# the archive: this build's objects, none left from a file since removed
lib=$SMC_BUILDDIR/src/libsmcproxy.a main=$SMC_BUILDDIR/src/smcproxyd-smcproxyd.o
[ -f "$lib" ] && [ -f "$main" ] || fail "no $lib or $main: build first"
python3 "$SRC/scripts/callgraph" -a "rx tx" -a "control metrics smcproxyd" \
	"$lib" "$main" >"$T/out" 2>&1 ||
	fail "files of src/ call each other:
$(cat "$T/out")"
grep -q '^allowed {rx tx}$' "$T/out" ||
	fail "the reader did not see the rx/tx pair (nm output changed?): $(cat "$T/out")"
smc_log "$(grep -c '' "$T/out") lines: $(grep -v '^  ' "$T/out" | tr '\n' ' ')"
