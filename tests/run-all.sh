#!/bin/bash
# The test command: install what is missing, build with ASan/UBSan and
# -Werror, check the layout of the C files (tests/check-format.sh), run the
# unit tests and the end-to-end tests against the loopback lab, then the
# ThreadSanitizer and Valgrind passes, build every other build README
# documents (the release build and its install, the clang fuzz build) and run
# each fuzzer a few seconds on its seeds; end with one line "N passed, N
# failed". Exit 0 only if all passed.
#
# The end-to-end modules run GF_E2E_JOBS at a time (pytest-xdist, whole
# modules per worker: --dist loadfile). They do not collide: each module's
# addresses come from its own rows of LOOPBACK (tests/e2e/conftest.py,
# checked by test_loopback_ranges.py) and its files from its own temporary
# folders. While they run, the further builds run beside them at the lowest
# CPU priority (nice 19): the end-to-end tests mostly wait on peers.
# GF_E2E_LOCK=FILE: hold that flock(1) lock while end-to-end tests run (a
# machine where several checkouts share the loopback addresses).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${GF_BUILD_DIR:-build-test}
tsan=${GF_TSAN_BUILD_DIR:-build-tsan}
vg=${GF_VG_BUILD_DIR:-build-vg}
release=${GF_RELEASE_BUILD_DIR:-build-release}
fuzz=${GF_FUZZ_BUILD:-build-fuzz}
jobs=${GF_E2E_JOBS:-4}
fuzz_secs=${GF_FUZZ_SECONDS:-5}

# Each step's wall time and the machine's load when it ended, printed at the end.
timings=()
t0=$(date +%s)
step_t=$t0
# step_done NAME: the step since the last step_done (or the start) is NAME.
step_done() {
	local now
	now=$(date +%s)
	timings+=("$(awk -v n="$1" -v s="$((now - step_t))" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" \
		'BEGIN { printf "%-22s %5d s  (load %s)", n, s, l }')")
	step_t=$now
}

tests/install-deps.sh || exit 2
step_done install-deps

# setup_build DIR MESON-SETUP-ARGS...: configure DIR once.
setup_build() {
	local dir=$1
	shift
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
}

setup_build "$build" -Dwerror=true -Db_sanitize=address,undefined -Dbuildtype=debug ||
	{ echo "meson setup failed" >&2; exit 2; }
ninja -C "$build" >/dev/null || { ninja -C "$build"; echo "0 passed, 1 failed"; exit 1; }
step_done "build ASan"

# fresh_reports DIR: an empty DIR/reports/ for what its checker reports.
fresh_reports() {
	rm -rf "$1/reports"
	mkdir -p "$1/reports"
}
# What ThreadSanitizer and Valgrind (memcheck) run with: a report fails the
# command it came from (exit 66, 97) and is kept in DIR/reports/.
# tests/tsan.supp: what libipmiconsole (not built with TSan) reports of its own threads.
tsan_options="exitcode=66:halt_on_error=0:second_deadlock_stack=1:log_path=$top/$tsan/reports/tsan:suppressions=$top/tests/tsan.supp"
memcheck="valgrind -q --error-exitcode=97 --leak-check=full"
memcheck+=" --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
memcheck+=" --log-file=$top/$vg/reports/vg.%p --suppressions=$top/tests/valgrind.supp"

# unit_tests DIR: the unit tests of build DIR (ASan, TSan or Valgrind), with
# meson's per-test timeout (30 s unless the test says) times a factor for
# what slows the binary down and for the priority they run at, so that a
# busy machine does not lose a test to a race with it. Log in DIR/unit.log.
unit_tests() {
	case $1 in
	"$tsan")
		TSAN_OPTIONS=$tsan_options meson test -C "$1" --suite unit --print-errorlogs \
			--timeout-multiplier 10 ;;
	"$vg")
		meson test -C "$1" --suite unit --print-errorlogs --timeout-multiplier 20 \
			--wrap "$memcheck" ;;
	*)
		meson test -C "$1" --suite unit --print-errorlogs --timeout-multiplier 2 ;;
	esac >"$1/unit.log" 2>&1
}

# The other builds, one after another in the background at nice 19, each
# logged to DIR/build.log; $bgrc holds one line "DIR RC" per build. Then, at
# the same priority, the unit tests of the TSan and Valgrind builds (the idle
# time of the end-to-end step): their exit status in DIR/unit.rc.
bgrc=$(mktemp)
trap 'rm -f "$bgrc" "$bgrc.list"' EXIT
other_builds() {
	local dir args
	while read -r dir args; do
		[ -n "$dir" ] || continue
		mkdir -p "$dir"
		(
			# shellcheck disable=SC2086 # args are meson options, split on purpose
			if [ "$dir" = "$fuzz" ]; then
				CC=clang setup_build "$dir" $args && ninja -C "$dir"
			else
				setup_build "$dir" $args && ninja -C "$dir"
			fi
		) >"$dir/build.log" 2>&1
		echo "$dir $?" >>"$bgrc"
	done
	(
		unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
		for dir in "$tsan" "$vg"; do
			grep -qx "$dir 0" "$bgrc" || continue
			fresh_reports "$dir"
			unit_tests "$dir"
			echo $? >"$dir/unit.rc"
		done
	)
}
{
	[ "${GF_TSAN:-1}" = 0 ] || echo "$tsan -Dwerror=true -Dbuildtype=debug -Db_sanitize=thread"
	[ "${GF_VALGRIND:-1}" = 0 ] || echo "$vg -Dwerror=true -Dbuildtype=debug"
	# README: "meson setup build && ninja -C build && meson install -C build"
	echo "$release"
	# README: "CC=clang meson setup build-fuzz -Dfuzz=true ..." (bench/fuzz.sh)
	echo "$fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false"
} >"$bgrc.list"
(renice -n 19 "$BASHPID" >/dev/null && other_builds <"$bgrc.list") &
bg_pid=$!

# built DIR: wait for the background builds; 0 if DIR built, else its log's tail.
bg_waited=
built() {
	if [ -z "$bg_waited" ]; then
		wait "$bg_pid"
		bg_waited=1
		step_done "(wait for builds)"
	fi
	grep -qx "$1 0" "$bgrc" && return 0
	echo "build of $1 failed ($1/build.log):" >&2
	tail -n 30 "$1/build.log" >&2
	return 1
}

# The layout of every tracked C file (.clang-format): one test case in the line.
tests/check-format.sh --junit "$build/format.xml" >"$build/format.log" 2>&1
format_rc=$?
head -n 12 "$build/format.log"
step_done format

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
export LSAN_OPTIONS=suppressions=$top/tests/lsan.supp

unit_tests "$build"
unit_rc=$?
tail -n 15 "$build/unit.log"
step_done "unit ASan"

if [ -n "${GF_E2E_LOCK:-}" ]; then
	exec {lockfd}>"$GF_E2E_LOCK"
	flock "$lockfd"
	step_done "(wait for e2e lock)"
fi

# pytest over the end-to-end modules: e2e JUNIT MODULES...
e2e() {
	local junit=$1
	shift
	/usr/bin/python3 -m pytest -q -p no:cacheprovider -n "$jobs" --dist loadfile \
		--junitxml="$junit" "$@"
}

# Every e2e module, the longest first (as a full run on 2 cores measured them):
# a worker takes the next module when it is done with one, and the longest
# taken last would end the run alone. Only the order: a module not named
# here runs as well, after them. Suites below name their longest first too.
e2e_modules() {
	local m
	for m in terminal_fit_and_problems update inventory report update_quirks rollout_safety \
		redfish metrics hostile resource_bounds host bmc_health console nodeset_clustershell \
		bios deadline lab_redfish_update; do
		[ ! -f "tests/e2e/test_$m.py" ] || echo "tests/e2e/test_$m.py"
	done
	printf '%s\n' tests/e2e/test_*.py
}

export GPUFLEET_BIN=$top/$build/cli/gpufleet
mapfile -t modules < <(e2e_modules | awk '!seen[$0]++')
e2e "$build/e2e.xml" "${modules[@]}"
e2e_rc=$?
step_done "e2e ASan"

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
results=("$build/format.xml" "$build/meson-logs/testlog.junit.xml" "$build/e2e.xml")
tsan_rc=0
if [ "${GF_TSAN:-1}" != 0 ]; then
	built "$tsan" || { echo "0 passed, 1 failed"; exit 1; }
	(
		unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
		export TSAN_OPTIONS=$tsan_options
		# TSan sleeps 1 s (atexit_sleep_ms) before exit while a thread is left, to
		# catch races at exit: timing tests allow for it (tests/e2e/test_deadline.py).
		export GF_TEST_EXIT_SLACK=1
		# the unit tests ran in the background after the build (unit_tests)
		u=$(cat "$tsan/unit.rc")
		tail -n 8 "$tsan/unit.log"
		export GPUFLEET_BIN=$top/$tsan/cli/gpufleet
		e2e "$tsan/e2e.xml" tests/e2e/test_update.py \
			tests/e2e/test_power.py tests/e2e/test_ctrl_c_progress_and_exit_codes.py \
			tests/e2e/test_host.py tests/e2e/test_deadline.py tests/e2e/test_ipmi_fleet_ping.py \
			tests/e2e/test_events_follow.py tests/e2e/test_events_redfish.py \
			tests/e2e/test_console.py tests/e2e/test_console_ssh.py \
			"tests/e2e/test_inventory.py::test_sweep_reads_every_source_and_stores_one_sweep" \
			"tests/e2e/test_inventory.py::test_two_sweeps_at_once" \
			"tests/e2e/test_hostile.py::test_sweep_does_not_store_a_truncated_walk_as_complete"
		e=$?
		[ $u -eq 0 ] && [ $e -eq 0 ]
	)
	tsan_rc=$?
	results+=("$tsan/meson-logs/testlog.junit.xml" "$tsan/e2e.xml")
	reported "$tsan" ThreadSanitizer || tsan_rc=1
	step_done "ThreadSanitizer"
fi

# Valgrind (memcheck) on a plain debug build, without sanitizers: the unit
# tests, and the CLI, node registry and inventory paths through the real
# binary. An error, or a definite or indirect leak, fails the command it came
# from (exit 97); each report is kept in $vg/reports/ and counts as a failure.
vg_rc=0
if [ "${GF_VALGRIND:-1}" != 0 ]; then
	built "$vg" || { echo "0 passed, 1 failed"; exit 1; }
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$memcheck" "$top/$vg/cli/gpufleet" >"$vg/gpufleet-memcheck"
	chmod +x "$vg/gpufleet-memcheck"
	(
		unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
		u=$(cat "$vg/unit.rc")
		tail -n 8 "$vg/unit.log"
		export GPUFLEET_BIN=$top/$vg/gpufleet-memcheck
		# the deadlines that live peers must meet, x4 (tests/e2e/conftest.py)
		export GF_TEST_SLOWDOWN=4
		e2e "$vg/e2e.xml" \
			"tests/e2e/test_inventory.py::test_sweep_reads_every_source_and_stores_one_sweep" \
			"tests/e2e/test_inventory.py::test_export_import_round_trip_and_idempotence" \
			"tests/e2e/test_inventory.py::test_partial_and_failed_nodes_are_stored" \
			"tests/e2e/test_inventory.py::test_migration_from_every_earlier_schema" \
			"tests/e2e/test_power_loop.py::test_a_hostile_bmc_fails_alone_at_its_deadline" \
			"tests/e2e/test_power_loop.py::test_a_refused_login_is_tried_once" \
			tests/e2e/test_cli.py tests/e2e/test_nodes.py
		e=$?
		[ $u -eq 0 ] && [ $e -eq 0 ]
	)
	vg_rc=$?
	results+=("$vg/meson-logs/testlog-valgrind.junit.xml" "$vg/e2e.xml")  # named after the wrapper
	reported "$vg" Valgrind || vg_rc=1
	step_done "Valgrind"
fi
[ -z "${lockfd:-}" ] || exec {lockfd}>&-

# The release build README documents, installed into a scratch folder: one
# test case, failed with the build's or the install's log.
release_rc=0
if ! built "$release" ||
	! meson install -C "$release" --destdir "$top/$release/destdir" >"$release/install.log" 2>&1; then
	[ ! -f "$release/install.log" ] || tail -n 20 "$release/install.log" >&2
	release_rc=1
fi
echo "release build and install: $([ $release_rc -eq 0 ] && echo ok || echo FAILED)"

# The clang fuzz build README documents, and each fuzzer a few seconds on its
# seeds (bench/fuzz.sh: one line per target, "... exit RC"); each target is a
# test case.
fuzz_rc=0
fuzz_built=0
if built "$fuzz"; then
	fuzz_built=1
	GF_FUZZ_BUILD=$fuzz bash bench/fuzz.sh "$fuzz_secs" >"$fuzz/fuzz.log" 2>&1
	fuzz_rc=$?
	grep '^fuzz_' "$fuzz/fuzz.log"
	[ $fuzz_rc -eq 0 ] || tail -n 40 "$fuzz/fuzz.log" >&2
else
	fuzz_rc=1
fi
step_done "release, fuzz"

# A step can fail with every test case passed (a unit binary that leaks at
# exit: LeakSanitizer's exit 99); that counts as one failure in the line.
echo "time per step:"
printf '  %s\n' "${timings[@]}"
printf '  %-22s %5d s\n' total "$(($(date +%s) - t0))"
GF_STEP_RCS="$format_rc $unit_rc $e2e_rc $tsan_rc $vg_rc" GF_RELEASE_RC=$release_rc \
	GF_FUZZ_LOG=$fuzz/fuzz.log GF_FUZZ_DIR=$fuzz GF_FUZZ_BUILT=$fuzz_built \
	/usr/bin/python3 - "${results[@]}" <<'PY'
import os, re, sys, xml.etree.ElementTree as ET
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
# the release build and install: one case
if os.environ["GF_RELEASE_RC"] == "0":
    passed += 1
else:
    failed += 1
# each fuzzer: one case, passed when it ran to its time with no finding
targets, seen = set(), set()
if os.environ["GF_FUZZ_BUILT"] == "1":
    tdir = os.path.join(os.environ["GF_FUZZ_DIR"], "tests")
    targets = {f[5:] for f in os.listdir(tdir) if f.startswith("fuzz_")
               and os.path.isfile(os.path.join(tdir, f)) and os.access(os.path.join(tdir, f), os.X_OK)}
    for line in open(os.environ["GF_FUZZ_LOG"], errors="replace"):
        m = re.match(r"fuzz_(\w+): .*findings (\d+), exit (\d+)$", line.strip())
        if m:
            seen.add(m[1])
            if m[2] == "0" and m[3] == "0":
                passed += 1
            else:
                failed += 1
if os.environ["GF_FUZZ_BUILT"] != "1":
    failed += 1                 # the fuzz build failed
missing = targets - seen
if missing:                     # built, but bench/fuzz.sh does not run it
    print(f"fuzzers that did not run: {' '.join(sorted(missing))}", file=sys.stderr)
    failed += len(missing)
if failed == 0 and any(rc != "0" for rc in os.environ.get("GF_STEP_RCS", "").split()):
    print("a step failed with no failing test case (see its log)", file=sys.stderr)
    failed = 1
print(f"{passed} passed, {failed} failed")
PY
[ $format_rc -eq 0 ] && [ $unit_rc -eq 0 ] && [ $e2e_rc -eq 0 ] && [ $tsan_rc -eq 0 ] &&
	[ $vg_rc -eq 0 ] && [ $release_rc -eq 0 ] && [ $fuzz_rc -eq 0 ]
