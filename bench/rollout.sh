#!/bin/bash
# bench/rollout.sh [N]: how close a rollout of N emulated Redfish BMCs
# (default 100) in batches of BATCH (default 25) comes to its ideal (issue 18):
# number of batches (the canary's, default 1 node, included) x one BMC's
# update alone. Both are `gpufleet update run`
# (plan included) with the same binary, run alternately ROUNDS times (default
# 3) in this script: one node, then all N, each run flashing a new version.
# The target: the rollout within 1.1x of the ideal.
#
# Every BMC (dialect VENDORS, default dgx) takes NEW s in the task's New and
# Starting phases together (the emulator's update_new, x2), FLASH s to flash,
# then refuses connections REFUSED s after its reset and answers 503
# (Retry-After 1) BUSY s: the emulator's floor for one update is
# 2 x NEW + FLASH + REFUSED + BUSY, printed beside the measured one.
# FLASH defaults to 20 s: a real BMC takes minutes to flash, and with a few
# seconds the fixed cost of a batch (its uploads spread over one second, so
# that a batch does not push every image in the same second) stands for more
# than it does on a fleet (FLASH=3: 4 spreads are 1.14x of the ideal alone).
# FANOUT, when set, is passed as --fanout (default gpufleet's, 64: the plan
# of 100 nodes then reads them in two waves).
# The BMCs live on PREFIX (default 127.41.100, LOOPBACK "bench" row).
# Needs jq, openssl and a built tree (GPUFLEET_BIN or build/cli/gpufleet);
# run it in a network namespace of its own:
#   unshare -n sh -c 'ip link set lo up && bash bench/rollout.sh 100'
set -euo pipefail

n=${1:-100}
batch=${BATCH:-25}
rounds=${ROUNDS:-3}
new=${NEW:-0.2}
flash=${FLASH:-20}
refused=${REFUSED:-1}
busy=${BUSY:-1}
image_kb=${IMAGE_KB:-1024}
vendors=${VENDORS:-dgx}
. "$(dirname "$0")/redfish-lib.sh"
rf_setup jq openssl

rf_lab rollout "$n" "${PREFIX:-127.41.100}" "$vendors" r --every update_new="$new" \
	--every update_flash="$flash" --every bmc_reset_refused="$refused" \
	--every bmc_reset_busy="$busy" --every retry_after=1

# run TARGETS WANT: a new image, then `update run` of TARGETS timed; prints
# the seconds; fails unless WANT nodes end `done`, each pushed once.
run() {
	local targets=$1 want=$2 v t0 t1 rc done
	v="25.$(date +%s%N | cut -c6-13)"
	{ printf 'GF-IMAGE version=%s targets=bmc\n' "$v"; head -c $((image_kb * 1024)) /dev/zero; } \
		> "$work/img"
	printf '{"images":[{"component":"bmc","file":"%s","version":"%s","activation":"bmc-reset"}]}\n' \
		"$work/img" "$v" > "$work/catalog.json"
	t0=$(date +%s.%N)
	set +e
	(cd "$work" && "$gf" ${FANOUT:+--fanout "$FANOUT"} update run --catalog catalog.json \
		--batch "$batch" --yes --no-progress --format json "$targets" \
		> rollout.out 2> rollout.err)
	rc=$?
	set -e
	t1=$(date +%s.%N)
	echo "$t0 $t1 $v" > "$work/last.run"
	done=$(jq '[.[] | select(.state == "done")] | length' "$work/rollout.out")
	if [ "$rc" -ne 0 ] || [ "$done" -ne "$want" ]; then
		echo "rollout of $targets: exit $rc, $done of $want nodes done" >&2
		head -n 5 "$work/rollout.err" >&2
		exit 1
	fi
	/usr/bin/python3 - "$work/lab" "$v" "$want" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
lab = RedfishLab.attach(sys.argv[1])
pushed = sum(1 for i in lab.indices() for p in lab.updates(i)['pushes'] if p['version'] == sys.argv[2])
if pushed != int(sys.argv[3]):
    sys.exit(f"FAIL: the BMCs saw {pushed} pushes of {sys.argv[2]}, not {sys.argv[3]}")
PY
	echo "$t1 - $t0" | bc
}

: > "$work/one.t"
: > "$work/all.t"
for ((k = 1; k <= rounds; k++)); do
	t=$(run r0001 1)
	echo "$t" >> "$work/one.t"
	echo "round $k: one node $(printf '%.2f' "$t") s" >&2
	t=$(run @bench "$n")
	echo "$t" >> "$work/all.t"
	jq '[.[].batch] | max' "$work/rollout.out" > "$work/batches"
	echo "round $k: $n nodes $(printf '%.2f' "$t") s, batches $(cat "$work/batches")" >&2
done

/usr/bin/python3 - "$n" "$batch" "$work" "$new" "$flash" "$refused" "$busy" "$rounds" <<'PY'
import statistics, sys
n, batch, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
new, flash, refused, busy = map(float, sys.argv[4:8])
read = lambda name: [float(x) for x in open(f"{work}/{name}.t").read().split()]
one, roll = statistics.median(read("one")), statistics.median(read("all"))
nb = int(open(f"{work}/batches").read())   # the canary's batch included
floor = 2 * new + flash + refused + busy
print(f"N={n} BMCs, --batch {batch}: {nb} batches (the canary's first), {sys.argv[8]} rounds"
      f" alternating;"
      f" task {2 * new:g} s + flash {flash:g} s, reset {refused:g} s refused + {busy:g} s 503")
print(f"  one node alone (median)     {one:8.2f} s   (the emulator's floor {floor:.2f} s)")
print(f"  {n} nodes (median)          {roll:8.2f} s   (runs: "
      + ", ".join(f"{t:.2f}" for t in read("all")) + ")")
print(f"  ideal {nb} x {one:.2f} s = {nb * one:.2f} s: rollout at {roll / (nb * one):.3f}x"
      f" the ideal (target 1.1x)")
print(f"  from the floor: {nb} x {floor:.2f} s = {nb * floor:.2f} s: {roll / (nb * floor):.3f}x")
PY

# Where the time of the last rollout of all N went, from what the BMCs saw:
# start to the first push (start, plan), then per batch the spread of its
# pushes, its slowest node (push to its last request) and the gap to the next.
/usr/bin/python3 - "$work" <<'PY'
import json, statistics, sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
work = sys.argv[1]
t0, t1, version = open(f"{work}/last.run").read().split()
t0, t1 = float(t0), float(t1)
lab = RedfishLab.attach(f"{work}/lab")
batch = {o["node"]: o["batch"] for o in json.load(open(f"{work}/rollout.out"))}
nodes, asked, before = {}, [], []
for i in lab.indices():
    push = [p["t"] for p in lab.updates(i)["pushes"] if p["version"] == version]
    last = [e["t"] for e in lab.access_log(i) if t0 <= e["t"] <= t1]
    if push and last:
        nodes[f"r{i:04d}"] = (push[0], max(last))
        asked.append(len(last))
        before.append(sum(1 for t in last if t < push[0]))
by = {}
for name, (push, end) in nodes.items():
    by.setdefault(batch[name], []).append((push, end))
print(f"  last rollout: start to first push {min(p for p, _ in nodes.values()) - t0:.2f} s,"
      f" last request to exit {t1 - max(e for _, e in nodes.values()):.2f} s;"
      f" requests per BMC (median) {statistics.median(asked):g},"
      f" {statistics.median(before):g} of them before its push (the plan's included)")
prev_end = None
for b in sorted(by):
    pushes, ends = [p for p, _ in by[b]], [e for _, e in by[b]]
    spans = [e - p for p, e in by[b]]
    gap = f", {min(pushes) - prev_end:.2f} s after the previous batch" if prev_end else ""
    print(f"  batch {b}: {len(pushes)} nodes, pushes over {max(pushes) - min(pushes):.2f} s,"
          f" push to last request median {statistics.median(spans):.2f} s,"
          f" max {max(spans):.2f} s; batch {max(ends) - min(pushes):.2f} s{gap}")
    prev_end = max(ends)
PY
