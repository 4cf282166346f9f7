#!/bin/bash
# bench/ipmi-sweep.sh [N]: a read-only sweep of N ipmi_sim BMCs (firmware,
# FRU, event log, sensors) by `gpufleet sweep --no-ssh` vs FreeIPMI's
# bmc-info, ipmi-fru, ipmi-sel and ipmi-sensors run one after another over the
# same host range with the same fanout (-F 64), on the same BMCs (sensors, SDRs
# and event logs: tests/lab/ipmisensors.py; 127.46.0.0/16). SDR caches warm on
# both sides (a sanity pass first). Rounds of one run per side, the order
# alternating, timed by hyperfine; then one run of each under /usr/bin/time
# for the peak RSS. Prints medians and the ratio (gpufleet / FreeIPMI) last.
# Needs root (UDP port 623), hyperfine; run it in a network namespace:
#   unshare -n sh -c 'ip link set lo up && bash bench/ipmi-sweep.sh 1000'
set -euo pipefail

n=${1:-200}
runs=${RUNS:-5}
fan=${FANOUT:-64}
. "$(dirname "$0")/lab.sh"
lab_init sweep
free -m | awk '/^Mem:/ {print "lab: memory used before start", $3, "MiB"}'
lab_start 127.46.0 "$n" --power on --sensors
# The lab's own footprint: the sims' resident memory.
ps -o rss= -p "$(lab_sim_pids | paste -sd,)" |
	awk '{s += $1; k++} END {printf "lab: %d ipmi_sim, RSS %.1f MiB in all, %.0f KiB each\n", k, s / 1024, s / k}'
free -m | awk '/^Mem:/ {print "lab: memory used after start", $3, "MiB"}'
lab_creds
mkdir -p "$work/fcache" "$work/cache"
hosts=$(lab_hostrange)
export GPUFLEET_DB=$work/db GPUFLEET_CREDENTIALS=$work/cred XDG_CACHE_HOME=$work/cache TZ=UTC
lab_import

fbase="--config-file $work/freeipmi.conf --privilege-level ADMIN -F $fan"
fipmi="$fbase --sdr-cache-directory $work/fcache --quiet-cache"
gfcmd="$gf sweep @bench --no-ssh --fanout $fan --no-progress -q"
refcmd="bmc-info -h '$hosts' $fbase && ipmi-fru -h '$hosts' $fipmi && ipmi-sel -h '$hosts' $fipmi && ipmi-sensors -h '$hosts' $fipmi"

# Sanity pass (fills both SDR caches): every BMC read whole by both sides.
"$gf" sweep @bench --no-ssh --fanout "$fan" --no-progress --format json > "$work/s.json"
sane=$(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(o["ok"] for o in d), sum(o["ncomponents"] for o in d),
      sum(o["sensors"]["nominal"] + o["sensors"]["warning"] + o["sensors"]["critical"] + o["sensors"]["unknown"] for o in d if o.get("sensors")))' "$work/s.json")
bash -c "$refcmd" > "$work/ref.out" 2>&1 || { tail "$work/ref.out" >&2; echo "FreeIPMI failed" >&2; exit 1; }
ref_sensors=$(ipmi-sensors -h "$hosts" $fipmi --no-header-output | grep -c ' | ' || true)
ref_bmc=$(grep -c ': Firmware Revision *:' "$work/ref.out" || true)
echo "sanity: gpufleet (ok nodes, components, sensors) = $sane; FreeIPMI: bmc-info $ref_bmc BMCs, ipmi-sensors $ref_sensors sensors"
set -- $sane
[ "$1" -eq "$n" ] && [ "$ref_bmc" -eq "$n" ] && [ "$3" -eq "$ref_sensors" ] ||
	{ echo "sanity check failed" >&2; exit 1; }

time1() { # NAME COMMAND JSON
	hyperfine -r 1 --export-json "$3" --style none --command-name "$1" "$2" >/dev/null
}
for ((r = 1; r <= runs; r++)); do
	if ((r % 2)); then
		time1 gpufleet "$gfcmd" "$work/h.$r.g.json"
		time1 freeipmi "$refcmd" "$work/h.$r.f.json"
	else
		time1 freeipmi "$refcmd" "$work/h.$r.f.json"
		time1 gpufleet "$gfcmd" "$work/h.$r.g.json"
	fi
	echo "round $r of $runs done ($(uptime | sed 's/.*load/load/'))" >&2
done
# Peak RSS: gpufleet alone; FreeIPMI the largest of its four tools.
/usr/bin/time -f '%M %e %U %S' -o "$work/rss.g" $gfcmd
/usr/bin/time -a -f '%M %e %U %S' -o "$work/rss.f" bmc-info -h "$hosts" $fbase > /dev/null
for t in ipmi-fru ipmi-sel ipmi-sensors; do
	/usr/bin/time -a -f '%M %e %U %S' -o "$work/rss.f" $t -h "$hosts" $fipmi > /dev/null
done

/usr/bin/python3 - "$n" "$fan" "$work" <<'PY'
import glob, json, statistics, sys
n, fan, work = sys.argv[1:]
times = {}
for path in sorted(glob.glob(work + "/h.*.json")):
    for r in json.load(open(path))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
g = open(work + "/rss.g").read().split()
f = [l.split() for l in open(work + "/rss.f")]
print(f"N={n} BMCs, fanout {fan}, warm SDR caches, medians; load {open('/proc/loadavg').read().split()[0]}")
for name, t in times.items():
    print(f"  {name:10s} {statistics.median(t):7.3f} s  ({len(t)} runs: {' '.join('%.2f' % x for x in t)})")
print(f"  gpufleet peak RSS {int(g[0]) / 1024:.1f} MiB (cpu {float(g[2]) + float(g[3]):.2f} s);"
      f" FreeIPMI's largest tool {max(int(x[0]) for x in f) / 1024:.1f} MiB"
      f" (cpu of the four {sum(float(x[2]) + float(x[3]) for x in f):.2f} s)")
print(f"  ratio gpufleet / FreeIPMI: {statistics.median(times['gpufleet']) / statistics.median(times['freeipmi']):.2f}")
PY
