# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the CI build steps that build a copy of this tree as a user
# would (scripts/deb-lintian, scripts/build-by-hand).  The caller sets
# top (the source tree), name (the step's name) and out (OUT: the step
# writes OUT.log and OUT.trs, automake's format, so that .ci/run counts it
# with the test logs), then sources this; log is OUT.log.

# OUT as an absolute path (the step changes directory), its log emptied
case $out in
/*) ;;
*) out=$PWD/$out ;;
esac
mkdir -p "$(dirname "$out")"
log=$out.log
: >"$log"

# a build as a user would start it: nothing of a make this runs under
# (make check's TESTS in MAKEFLAGS would reach the copy's make)
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEFILES

# result PASS|FAIL [WHY]: the step's verdict, in its log and its .trs
result()
{
	printf '%s: %s%s\n' "$1" "$name" "${2:+ ($2)}" | tee -a "$out.log"
	printf ':test-result: %s\n:global-test-result: %s\n:recheck: no\n:copy-in-global-log: yes\n' \
		"$1" "$1" >"$out.trs"
	[ "$1" = PASS ]
	exit
}

fail()
{
	result FAIL "$*"
}

# copy_tree DIR: the tree as git sees it (tracked and new files, not build
# outputs) into DIR
copy_tree()
{
	mkdir -p "$1" || fail "cannot make $1"
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$top" && git ls-files -z -co --exclude-standard |
			tar --null -T - --ignore-failed-read -cf -) |
			tar -C "$1" -xf - || fail "cannot copy the tree"
	else
		cp -a "$top/." "$1/" || fail "cannot copy the tree"
	fi
}
