#!/bin/bash
# The test command: install what is missing, build with ASan/UBSan and
# -Werror, check the layout of the C files (tests/check-format.sh), run the
# unit tests and the end-to-end tests against the loopback lab, and end with
# one line "N passed, N failed". Exit 0 only if all passed.
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

# The layout of every tracked C file (.clang-format): one test case in the line.
tests/check-format.sh --junit "$build/format.xml" >"$build/format.log" 2>&1
format_rc=$?
head -n 12 "$build/format.log"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
export LSAN_OPTIONS=suppressions=$top/tests/lsan.supp

meson test -C "$build" --suite unit --print-errorlogs >"$build/unit.log" 2>&1
unit_rc=$?
tail -n 15 "$build/unit.log"

export GPUFLEET_BIN=$top/$build/cli/gpufleet
/usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$build/e2e.xml" tests/e2e
e2e_rc=$?

# A further build in $1 with the meson options that follow (configured once),
# with an empty $1/reports/ for what its checker reports.
checked_build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" -Dwerror=true -Dbuildtype=debug "$@" >/dev/null ||
			{ echo "meson setup ($dir) failed" >&2; exit 2; }
	fi
	ninja -C "$dir" >/dev/null || { ninja -C "$dir"; echo "0 passed, 1 failed"; exit 1; }
	rm -rf "$dir/reports"
	mkdir -p "$dir/reports"
}

# Prints what the checker $2 of build $1 reported (non-empty files in
# $1/reports/) and returns 1 if anything, each file to count as one failure.
reported() {
	find "$1/reports" -type f -empty -delete
	[ -z "$(ls -A "$1/reports")" ] && return 0
	echo "$2 reports (in $1/reports/):" >&2
	head -n 40 "$1"/reports/* >&2
	results+=("$1/reports")
	return 1
}

# ThreadSanitizer: the executor (unit tests) and every fan-out path (BMC over
# IPMI and Redfish, SSH hosts, a sweep's BMC and SSH parts at once, update
# batches, Ctrl-C) through the real binary built with -fsanitize=thread. A
# report fails the command it came from (exit 66) and is kept in $tsan/.
tsan=${GF_TSAN_BUILD_DIR:-build-tsan}
results=("$build/format.xml" "$build/meson-logs/testlog.junit.xml" "$build/e2e.xml")
tsan_rc=0
if [ "${GF_TSAN:-1}" != 0 ]; then
	checked_build "$tsan" -Db_sanitize=thread
	(
		unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
		export TSAN_OPTIONS="exitcode=66:halt_on_error=0:second_deadlock_stack=1:log_path=$top/$tsan/reports/tsan"
		# TSan sleeps 1 s (atexit_sleep_ms) before exit while a thread is left, to
		# catch races at exit: timing tests allow for it (tests/e2e/test_deadline.py).
		export GF_TEST_EXIT_SLACK=1
		meson test -C "$tsan" --suite unit --print-errorlogs >"$tsan/unit.log" 2>&1
		u=$?
		tail -n 8 "$tsan/unit.log"
		export GPUFLEET_BIN=$top/$tsan/cli/gpufleet
		/usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$tsan/e2e.xml" \
			tests/e2e/test_power.py tests/e2e/test_ctrl_c_progress_and_exit_codes.py \
			tests/e2e/test_host.py tests/e2e/test_deadline.py tests/e2e/test_ipmi_fleet_ping.py \
			tests/e2e/test_update.py tests/e2e/test_events_follow.py \
			"tests/e2e/test_inventory.py::test_sweep_reads_every_source_and_stores_one_sweep" \
			"tests/e2e/test_inventory.py::test_two_sweeps_at_once" \
			"tests/e2e/test_hostile.py::test_sweep_does_not_store_a_truncated_walk_as_complete"
		e=$?
		[ $u -eq 0 ] && [ $e -eq 0 ]
	)
	tsan_rc=$?
	results+=("$tsan/meson-logs/testlog.junit.xml" "$tsan/e2e.xml")
	reported "$tsan" ThreadSanitizer || tsan_rc=1
fi

# Valgrind (memcheck) on a plain debug build, without sanitizers: the unit
# tests, and the CLI, node registry and inventory paths through the real
# binary. An error, or a definite or indirect leak, fails the command it came
# from (exit 97); each report is kept in $vg/reports/ and counts as a failure.
vg=${GF_VG_BUILD_DIR:-build-vg}
vg_rc=0
if [ "${GF_VALGRIND:-1}" != 0 ]; then
	checked_build "$vg"
	memcheck="valgrind -q --error-exitcode=97 --leak-check=full"
	memcheck+=" --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
	memcheck+=" --log-file=$top/$vg/reports/vg.%p"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$memcheck" "$top/$vg/cli/gpufleet" >"$vg/gpufleet-memcheck"
	chmod +x "$vg/gpufleet-memcheck"
	(
		unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
		meson test -C "$vg" --suite unit --print-errorlogs --timeout-multiplier 4 --wrap "$memcheck" >"$vg/unit.log" 2>&1
		u=$?
		tail -n 8 "$vg/unit.log"
		export GPUFLEET_BIN=$top/$vg/gpufleet-memcheck
		/usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$vg/e2e.xml" \
			tests/e2e/test_cli.py tests/e2e/test_nodes.py \
			"tests/e2e/test_inventory.py::test_sweep_reads_every_source_and_stores_one_sweep" \
			"tests/e2e/test_inventory.py::test_export_import_round_trip_and_idempotence" \
			"tests/e2e/test_inventory.py::test_partial_and_failed_nodes_are_stored" \
			"tests/e2e/test_inventory.py::test_migration_from_every_earlier_schema"
		e=$?
		[ $u -eq 0 ] && [ $e -eq 0 ]
	)
	vg_rc=$?
	results+=("$vg/meson-logs/testlog-valgrind.junit.xml" "$vg/e2e.xml")  # named after the wrapper
	reported "$vg" Valgrind || vg_rc=1
fi

# A step can fail with every test case passed (a unit binary that leaks at
# exit: LeakSanitizer's exit 99); that counts as one failure in the line.
GF_STEP_RCS="$format_rc $unit_rc $e2e_rc $tsan_rc $vg_rc" /usr/bin/python3 - "${results[@]}" <<'PY'
import os, sys, xml.etree.ElementTree as ET
passed = failed = 0
for path in sys.argv[1:]:
    if os.path.isdir(path):     # one failure per sanitizer report file
        failed += len(os.listdir(path))
        continue
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
if failed == 0 and any(rc != "0" for rc in os.environ.get("GF_STEP_RCS", "").split()):
    print("a step failed with no failing test case (see its log)", file=sys.stderr)
    failed = 1
print(f"{passed} passed, {failed} failed")
PY
[ $format_rc -eq 0 ] && [ $unit_rc -eq 0 ] && [ $e2e_rc -eq 0 ] && [ $tsan_rc -eq 0 ] &&
	[ $vg_rc -eq 0 ]
