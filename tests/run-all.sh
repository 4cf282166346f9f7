#!/bin/bash
# The test command: install what is missing, build with ASan/UBSan and
# -Werror, run the unit tests and the end-to-end tests against the loopback
# lab, and end with one line "N passed, N failed". Exit 0 only if all passed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${GF_BUILD_DIR:-build-test}

tests/install-deps.sh || exit 2

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" -Dwerror=true -Db_sanitize=address,undefined -Dbuildtype=debug \
		>/dev/null || { echo "meson setup failed" >&2; exit 2; }
fi
ninja -C "$build" >/dev/null || { ninja -C "$build"; echo "0 passed, 1 failed"; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
export LSAN_OPTIONS=suppressions=$top/tests/lsan.supp

meson test -C "$build" --suite unit --print-errorlogs >"$build/unit.log" 2>&1
unit_rc=$?
tail -n 15 "$build/unit.log"

export GPUFLEET_BIN=$top/$build/cli/gpufleet
/usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$build/e2e.xml" tests/e2e
e2e_rc=$?

/usr/bin/python3 - "$build/meson-logs/testlog.junit.xml" "$build/e2e.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
passed = failed = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        failed += 1
        print(f"no results in {path}", file=sys.stderr)
        continue
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
print(f"{passed} passed, {failed} failed")
PY
[ $unit_rc -eq 0 ] && [ $e2e_rc -eq 0 ]
