#!/bin/bash
# bench/update.sh [N]: a firmware rollout of N emulated BMCs (default 100) in
# batches of BATCH (25), `gpufleet update run`, against the same updates done
# one BMC after another by a shell loop over curl, the way a script does it
# today: push the image (multipart), poll the task until it ends, reset the
# manager, wait for the BMC to answer again, read the FirmwareInventory member
# back and check the version. Both use the same polling intervals as gpufleet
# (task 0.5 s, a restarting BMC 1 s). Prints the medians, the ratio rollout /
# loop, and how close the rollout comes to its ideal: number of batches x one
# node's update time (a rollout of one node, measured here with the same
# binary; also given from the loop's time per node).
#
# Every BMC takes FLASH s to flash (the task's Running phase; New and Starting
# add 0.4 s), then refuses connections for REFUSED s after its reset and
# answers 503 (Retry-After 1) for BUSY s. Each run flashes a new version, so
# every run updates every node. hyperfine runs: RUNS (rollout, default 3),
# ONE_RUNS (one node, default 3), LOOP_RUNS (the curl loop, default 1: about
# 100 x 7 s). The emulated BMCs (dialect VENDORS, default dgx) live on PREFIX
# (default 127.43.0) and up; WORKERS emulator processes.
# Needs hyperfine, curl, jq, openssl and a built tree (ninja -C build).
set -euo pipefail

n=${1:-100}
batch=${BATCH:-25}
flash=${FLASH:-3}
refused=${REFUSED:-1}
busy=${BUSY:-1}
image_kb=${IMAGE_KB:-1024}
vendors=${VENDORS:-dgx}
. "$(dirname "$0")/redfish-lib.sh"
rf_setup hyperfine curl jq openssl
[ "$vendors" = dgx ] || { echo "the curl loop knows the dgx dialect's URIs only" >&2; exit 2; }

rf_lab update "$n" "${PREFIX:-127.43.0}" "$vendors" u --every update_new=0.2 \
	--every update_flash="$flash" --every bmc_reset_refused="$refused" \
	--every bmc_reset_busy="$busy" --every retry_after=1

# A new image (a version no run flashed yet) in $work/img, its version in $work/img.version.
cat > "$work/newimage.sh" <<'SH'
#!/bin/bash
set -euo pipefail
work=$1 kb=$2
v="25.$(date +%s%N | cut -c6-13)"
{ printf 'GF-IMAGE version=%s targets=bmc\n' "$v"; head -c $((kb * 1024)) /dev/zero; } > "$work/img"
printf '{"images":[{"component":"bmc","version":"%s","file":"img","activation":"bmc-reset"}]}\n' \
	"$v" > "$work/catalog.json"
echo "$v" > "$work/img.version"
SH

# The rollout: every node of TARGETS done, or the run fails (hyperfine stops).
cat > "$work/rollout.sh" <<'SH'
#!/bin/bash
set -euo pipefail
work=$1 kb=$2 gf=$3 batch=$4 targets=$5 want=$6
"$work/newimage.sh" "$work" "$kb"
set +e
"$gf" update run --catalog "$work/catalog.json" --batch "$batch" --yes --no-progress \
	--format json "$targets" > "$work/rollout.out" 2> "$work/rollout.err"
rc=$?
set -e
done=$(jq '[.[] | select(.state == "done")] | length' "$work/rollout.out")
if [ "$rc" -ne 0 ] || [ "$done" -ne "$want" ]; then
	echo "rollout: exit $rc, $done of $want nodes done" >&2
	head -n 5 "$work/rollout.err" >&2
	exit 1
fi
SH

# The loop: one BMC after another, as a script over curl would do it.
cat > "$work/loop.sh" <<'SH'
#!/bin/bash
set -euo pipefail
work=$1 kb=$2 port=$3
ca=$work/lab/ca.pem
"$work/newimage.sh" "$work" "$kb"
v=$(cat "$work/img.version")
member=/redfish/v1/UpdateService/FirmwareInventory/HostBMC_0
printf '{"Targets":["%s"]}' "$member" > "$work/params.json"
c() { curl -sS --cacert "$ca" --netrc-file "$work/netrc" "$@"; }
fail() { echo "loop: $1" >&2; exit 1; }
while read -r h; do
	base=https://$h:$port
	# 1. push the image
	code=$(c -D "$work/hdr" -o "$work/body" -w '%{http_code}' \
		-F "UpdateParameters=<$work/params.json;type=application/json" \
		-F "UpdateFile=@$work/img;type=application/octet-stream" \
		"$base/redfish/v1/UpdateService/upload")
	[ "$code" = 202 ] || fail "$h: push answered $code"
	loc=$(grep -i '^location:' "$work/hdr" | tr -d '\r' | awk '{print $2}')
	[ -n "$loc" ] || fail "$h: no task monitor"
	# 2. follow the task
	for ((k = 0; ; k++)); do
		[ "$k" -lt 600 ] || fail "$h: task did not end"
		state=$(c "$base$loc" | jq -r .TaskState)
		case $state in
		Completed) break ;;
		Exception|Killed|Cancelled) fail "$h: task ended $state" ;;
		esac
		sleep 0.5
	done
	# 3. reset the manager (it may drop the connection as it goes)
	c -o /dev/null -H 'Content-Type: application/json' -d '{"ResetType":"ForceRestart"}' \
		"$base/redfish/v1/Managers/BMC/Actions/Manager.Reset" || true
	# 4. wait for it to answer again
	for ((k = 0; ; k++)); do
		[ "$k" -lt 300 ] || fail "$h: did not come back"
		code=$(curl -s --cacert "$ca" --netrc-file "$work/netrc" --max-time 5 -o /dev/null \
			-w '%{http_code}' "$base/redfish/v1/UpdateService" || true)
		[ "$code" = 200 ] && break
		sleep 1
	done
	# 5. read the version back
	got=$(c "$base$member" | jq -r .Version)
	[ "$got" = "$v" ] || fail "$h: reads $got after the update, not $v"
done < "$work/lab/addrs"
SH
chmod +x "$work/newimage.sh" "$work/rollout.sh" "$work/loop.sh"

# Emulator CPU seconds so far (utime + stime of its workers).
emu_cpu() {
	jq -r '.workers[].pid' "$work/lab/lab.json" | while read -r pid; do
		awk '{ print $14 + $15 }' "/proc/$pid/stat"
	done | awk -v hz="$(getconf CLK_TCK)" '{ s += $1 } END { printf "%.2f", s / hz }'
}

# Sanity first: a rollout of all N, every node read back at the new version,
# each BMC pushed once; how long each node took from its push to its
# read-back, and what the emulator spent.
c0=$(emu_cpu)
t0=$(date +%s.%N)
"$work/rollout.sh" "$work" "$image_kb" "$gf" "$batch" @bench "$n"
t1=$(date +%s.%N)
c1=$(emu_cpu)
wall=$(echo "$t1 - $t0" | bc)
echo "sanity: $n of $n nodes done in $(printf '%.1f' "$wall") s," \
	"batches $(jq '[.[].batch] | max' "$work/rollout.out"); emulator CPU" \
	"$(printf "%.2f" "$(echo "$c1 - $c0" | bc)") s over $(jq '.workers | length' "$work/lab/lab.json") workers" >&2
/usr/bin/python3 - "$work/lab" "$(cat "$work/img.version")" "$batch" <<'PY'
import statistics, sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
lab = RedfishLab.attach(sys.argv[1])
version, batch = sys.argv[2], int(sys.argv[3])
pushed, spans, starts = 0, [], []
for i in lab.indices():
    u = lab.updates(i)
    pushed += sum(1 for p in u['pushes'] if p['version'] == version)
    log = lab.access_log(i)
    up = [e['t'] for e in log if e['method'] == 'POST' and e['path'].endswith('/upload')]
    rb = [e['t'] for e in log if e['path'].startswith('/redfish/v1/UpdateService/FirmwareInventory')]
    if up and rb:
        spans.append(rb[-1] - up[-1])
        starts.append(up[-1])
    lab.clear_updates(i)
    lab.clear(i)
if pushed != len(lab.indices()):
    sys.exit(f"FAIL: the BMCs saw {pushed} pushes, not {len(lab.indices())}")
starts.sort()
spread = [starts[min(k + batch, len(starts)) - 1] - starts[k] for k in range(0, len(starts), batch)]
print(f"sanity: each BMC pushed once; push to read-back per node: median {statistics.median(spans):.2f} s,"
      f" max {max(spans):.2f} s; uploads of a batch spread over {max(spread):.1f} s", file=sys.stderr)
PY

h() {
	hyperfine -r "$1" --export-json "$2" --style basic --command-name "$3" "$4" >&2
}
h "${RUNS:-3}" "$work/roll.json" "gpufleet update run ($n nodes, --batch $batch)" \
	"$work/rollout.sh $work $image_kb $gf $batch @bench $n"
h "${ONE_RUNS:-3}" "$work/one.json" "gpufleet update run (1 node)" \
	"$work/rollout.sh $work $image_kb $gf $batch u0001 1"
if [ "${LOOP_RUNS:-1}" -gt 0 ]; then
	h "${LOOP_RUNS:-1}" "$work/loop.json" "curl loop, sequential ($n nodes)" \
		"$work/loop.sh $work $image_kb $port"
fi

/usr/bin/python3 - "$n" "$batch" "$work" "$flash" "$refused" "$busy" "${RUNS:-3}" \
	"${ONE_RUNS:-3}" "${LOOP_RUNS:-1}" <<'PY'
import json, math, os, statistics, sys
n, batch, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
flash, refused, busy = sys.argv[4:7]
def med(name):
    path = f"{work}/{name}.json"
    if not os.path.exists(path):
        return None
    return statistics.median(json.load(open(path))["results"][0]["times"])
roll, one, loop = med("roll"), med("one"), med("loop")
nb = math.ceil(n / batch)
print(f"N={n} BMCs, batches of {batch} ({nb} batches), flash {flash} s, "
      f"reset: {refused} s refused + {busy} s 503; runs {sys.argv[7]}/{sys.argv[8]}/{sys.argv[9]}")
print(f"  gpufleet update run ({n} nodes)   {roll:8.2f} s")
print(f"  gpufleet update run (1 node)     {one:8.2f} s")
print(f"  ideal {nb} x {one:.2f} s = {nb * one:.2f} s: rollout at {nb * one / roll:.2f} of ideal")
if loop is not None:
    print(f"  curl loop, sequential ({n})      {loop:8.2f} s  ({loop / n:.2f} s per node)")
    print(f"  ratio rollout / curl loop: {roll / loop:.3f} ({loop / roll:.1f}x faster)")
    print(f"  ideal from the loop's time per node: {nb} x {loop / n:.2f} s = {nb * loop / n:.2f} s,"
          f" rollout at {nb * loop / n / roll:.2f} of it")
PY
