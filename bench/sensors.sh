#!/bin/bash
# bench/sensors.sh [N]: `gpufleet sensors` of N emulated DGX H100 BMCs
# (tests/lab/redfish_emu.py, PREFIX 127.42.160 and up) that answer one
# request at a time, each answer 100 ms late (the emulator's one_at_a_time
# and slow modes), against the same read of ONE of those BMCs alone, side
# by side in one run (hyperfine, both commands in the same script and lab).
# Target (issue 21): N BMCs within 2 x the time of one BMC's expanded reads.
# Prints the medians, the ratio, what one BMC's read asks (requests, and how
# many of them expanded), and gpufleet's peak RSS for the N-BMC read.
#
# Environment: RUNS (hyperfine runs, default 5), DELAY (seconds per answer,
# default 0.1), FANOUT (gpufleet --fanout, default N), PREFIX (addresses,
# default 127.42.160), GPUFLEET_BIN,
# WORKERS (emulator processes). Run it in a network namespace:
#   unshare -n sh -c 'ip link set lo up && bash bench/sensors.sh 100'
# Needs hyperfine, openssl, GNU time and a built tree (ninja -C build).
set -euo pipefail

n=${1:-100}
runs=${RUNS:-5}
delay=${DELAY:-0.1}
fan=${FANOUT:-$n} # every BMC at once (gpufleet's default is 64)
. "$(dirname "$0")/redfish-lib.sh"
rf_setup hyperfine openssl /usr/bin/time

rf_lab sensors "$n" "${PREFIX:-127.42.160}" dgx s \
	--every "slow=$delay" --every one_at_a_time=true

# What the emulator holds of node $1: its access log as JSON lines, then cleared.
lab_log() {
	/usr/bin/python3 - "$work/lab" "$1" <<'PY'
import json, sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
lab = RedfishLab.attach(sys.argv[1])
i = int(sys.argv[2])
for e in lab.access_log(i):
    print(json.dumps(e))
lab.clear(i)
PY
}

# Sanity: every BMC's sensors, all of them, and what one read asks of a BMC.
/usr/bin/python3 - "$work/lab" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
lab = RedfishLab.attach(sys.argv[1])
for i in lab.indices():
    lab.clear(i)
PY
set +e
/usr/bin/time -f '%M %e' -o "$work/rss" "$gf" --timeout 300 --fanout $fan sensors @bench --format ndjson --no-progress \
	>"$work/all.out" 2>"$work/all.err"
rc=$?
set -e
lab_log 1 >"$work/one.log"
[ -n "${KEEP_LOG:-}" ] && cp "$work/one.log" "$KEEP_LOG"
counts=$(/usr/bin/python3 - "$work/all.out" <<'PY'
import json, sys
per = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    per.append(len(d["sensors"]) if d.get("ok") else -1)
print(len(per), min(per), max(per))
PY
)
read -r nodes smin smax <<<"$counts"
read -r reqs expanded <<<"$(/usr/bin/python3 -c '
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
print(len(log), sum("expand" in e["path"] for e in log))' "$work/one.log")"
read -r rss wall <<<"$(cat "$work/rss")"
echo "sanity: $nodes of $n BMCs answered, $smin to $smax sensors each (exit $rc);" \
	"one BMC's read: $reqs requests, $expanded of them \$expand"
if [ "$rc" -ne 0 ] || [ "$nodes" -ne "$n" ] || [ "$smin" -lt 1 ]; then
	echo "FAIL: gpufleet sensors did not read every BMC:" >&2
	head -n 5 "$work/all.err" >&2
	head -c 800 "$work/all.out" >&2
	exit 1
fi
echo "peak RSS of gpufleet sensors of $n BMCs: $((rss / 1024)) MiB (${rss} KiB), wall ${wall} s"

hyperfine -N -r "$runs" --export-json "$work/h.json" --style basic \
	--command-name "one BMC" "$gf --timeout 300 sensors s0001 --format json --no-progress -q" \
	--command-name "$n BMCs" "$gf --timeout 300 --fanout $fan sensors @bench --format json --no-progress -q" >&2

/usr/bin/python3 - "$n" "$reqs" "$delay" "$work/h.json" <<'PY'
import json, statistics, sys
n, reqs, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
res = json.load(open(sys.argv[4]))["results"]
med = {r["command"]: statistics.median(r["times"]) for r in res}
one, many = med["one BMC"], med[f"{n} BMCs"]
print(f"median wall time, DGX BMCs answering one request at a time, {delay * 1000:.0f} ms each:")
print(f"  one BMC     {one:7.3f} s  ({reqs} requests: {reqs * delay:.1f} s of answers at least)")
print(f"  {n} BMCs    {many:7.3f} s")
print(f"  ratio {n} / one: {many / one:.2f} (target <= 2.00)")
PY
