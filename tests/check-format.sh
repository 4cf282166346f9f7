#!/bin/bash
# Every tracked C file (*.c, *.h) is laid out as .clang-format says: runs
# clang-format --dry-run --Werror on each and lists the files it would change.
# Exit 0 when none, 1 when some, 2 when clang-format or the file list is missing.
#   tests/check-format.sh [--junit FILE]   FILE: one JUnit test case, for run-all.sh
# The layout is clang-format 14's (Debian 12); another version may disagree,
# which is said but still checked. CLANG_FORMAT names another binary.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
junit=
if [ "${1:-}" = --junit ] && [ -n "${2:-}" ]; then
	junit=$2
elif [ $# -ne 0 ]; then
	echo "usage: tests/check-format.sh [--junit FILE]" >&2
	exit 2
fi
cf=${CLANG_FORMAT:-clang-format}

# Writes the JUnit file (if asked) with one test case, failed with $1 unless empty.
report() {
	[ -n "$junit" ] || return 0
	CHECK_FAILURE=$1 /usr/bin/python3 - "$junit" <<'PY'
import os, sys, xml.etree.ElementTree as ET
failure = os.environ["CHECK_FAILURE"]
suite = ET.Element("testsuite", name="format", tests="1", failures="1" if failure else "0")
case = ET.SubElement(suite, "testcase", classname="tests.check-format", name="clang_format_clean")
if failure:
    ET.SubElement(case, "failure", message=failure.splitlines()[0]).text = failure
ET.ElementTree(suite).write(sys.argv[1], encoding="utf-8", xml_declaration=True)
PY
}

if ! command -v "$cf" >/dev/null; then
	msg="check-format: $cf is not installed (tests/install-deps.sh)"
	echo "$msg" >&2
	report "$msg"
	exit 2
fi
version=$("$cf" --version)
case $version in
*"version 14."*) ;;
*) echo "check-format: .clang-format is tuned for clang-format 14; this is: $version" >&2 ;;
esac

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files -- '*.c' '*.h')
else
	mapfile -t files < <(find . -name build -prune -o -name 'build-*' -prune -o \
		\( -name '*.c' -o -name '*.h' \) -type f -print | sed 's|^\./||' | sort)
fi
if [ ${#files[@]} -eq 0 ]; then
	msg="check-format: no C file found"
	echo "$msg" >&2
	report "$msg"
	exit 2
fi

bad=()
for f in "${files[@]}"; do
	"$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -eq 0 ]; then
	echo "check-format: ${#files[@]} files, all formatted"
	report ""
	exit 0
fi
msg="check-format: ${#bad[@]} of ${#files[@]} files are not formatted (clang-format -i FILE; see HACKING.md):"
{
	echo "$msg"
	printf '  %s\n' "${bad[@]}"
} >&2
report "$msg"$'\n'"$(printf '%s\n' "${bad[@]}")"
exit 1
