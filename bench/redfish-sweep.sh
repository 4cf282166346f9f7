#!/bin/bash
# bench/redfish-sweep.sh [N]: a full Redfish sweep (`gpufleet sweep --no-ssh`:
# firmware, sensors, event log, hardware, BIOS, stored) of N emulated DGX H100
# BMCs (tests/lab/redfish_emu.py, default N = 100) that answer every request
# DELAY_MS late (default 100) and one request at a time, as real BMCs do,
# against the sweep of one of those BMCs alone. The two run in rounds, one of
# each per round, in the same script. Prints the medians, the requests each
# BMC answered, and the ratio fleet / single BMC last (target < 2).
#
# Environment: RUNS (rounds, default 3), DELAY_MS, PREFIX (addresses, default
# 127.47.8; run it in a network namespace), FANOUT (default N: every BMC at
# once; the verb's default is 64), TIMEOUT (each node's deadline, default
# 300 s: a DGX sweep at 100 ms an answer takes more than the default 10 s),
# WORKERS (emulator processes), EMU (more emulator start options),
# GPUFLEET_BIN.
# Needs curl, openssl and a built tree (ninja -C build).
set -euo pipefail

n=${1:-100}
runs=${RUNS:-3}
delay=${DELAY_MS:-100}
fanout=${FANOUT:-$n}
timeout=${TIMEOUT:-300}
. "$(dirname "$0")/redfish-lib.sh"
rf_setup openssl

# shellcheck disable=SC2086 # EMU is a list of options
rf_lab sweep "$n" "${PREFIX:-127.47.8}" dgx s --delay-ms "$delay" --one-at-a-time ${EMU:-}

# requests KIND: what each BMC answered since the last clear, "min max total", and clear.
requests() {
	/usr/bin/python3 - "$work/lab" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
lab = RedfishLab.attach(sys.argv[1])
seen = [s['counters']['requests'] for s in (lab.state(i) for i in lab.indices()) if s['counters']['requests']]
left = sum(lab.sessions_open(i) for i in lab.indices())
for i in lab.indices():
    lab.clear(i)
print(min(seen or [0]), max(seen or [0]), sum(seen), left)
PY
}

one() {
	local what=$1 t0 t1
	shift
	requests >/dev/null
	t0=$(date +%s.%N)
	if ! "$gf" sweep --no-ssh --quiet --fanout "$fanout" --timeout "$timeout" "$@" >"$work/out" 2>"$work/err"; then
		echo "FAIL: gpufleet sweep $* ($what):" >&2
		head -n 5 "$work/err" >&2
		exit 1
	fi
	t1=$(date +%s.%N)
	read -r lo hi total left < <(requests)
	if [ "$left" -ne 0 ]; then
		echo "FAIL: $left sessions left open after the sweep ($what)" >&2
		exit 1
	fi
	echo "$what $(echo "$t1 - $t0" | bc) $lo $hi $total" >>"$work/times"
}

: >"$work/times"
for r in $(seq 1 "$runs"); do
	one single s0001
	one fleet @bench
	echo "round $r: $(tail -n 2 "$work/times" | tr '\n' ' ')" >&2
done
uptime >&2
/usr/bin/python3 - "$n" "$delay" "$work/times" <<'PY'
import statistics, sys
n, delay = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(sys.argv[3])]
t = {k: statistics.median(float(r[1]) for r in rows if r[0] == k) for k in ("single", "fleet")}
req = {r[0]: (r[2], r[3]) for r in rows}
print(f"N={n} DGX BMCs, {delay} ms per answer, one request at a time: median wall time")
print(f"  sweep of one BMC     {t['single']:7.2f} s  ({req['single'][1]} requests)")
print(f"  sweep of {n} BMCs   {t['fleet']:7.2f} s  ({req['fleet'][0]}-{req['fleet'][1]} requests per BMC)")
print(f"  ratio fleet / one BMC: {t['fleet'] / t['single']:.2f} (target < 2)")
PY
