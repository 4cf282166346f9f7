#!/bin/bash
# bench/ipmi-read.sh [N]: gpufleet sensors and sel list vs FreeIPMI's
# ipmi-sensors and ipmi-sel, on the same N ipmi_sim BMCs with sensors, SDRs
# and event logs (127.35.0.0/16, tests/lab/ipmisensors.py), side by side in
# one run, with the same fanout. SDR caches are warm on both sides (one read
# before timing). "gpufleet sensors" prints a table, which has no thresholds,
# so it reads none (like plain ipmi-sensors); "--format json" reads them too,
# like ipmi-sensors --output-sensor-thresholds. Runs go in rounds (every
# command once per round, timed by hyperfine). Prints medians and ratios
# (gpufleet / reference).
# Needs root (UDP port 623), hyperfine, and a built tree (ninja -C build).
set -euo pipefail

n=${1:-200}
runs=${RUNS:-7}
fan=${FANOUT:-64}
. "$(dirname "$0")/lab.sh"
lab_init read
lab_start 127.35.0 "$n" --power on --sensors
# Cipher suite 3 on both sides (ipmi_sim has no 17).
lab_creds
# gpufleet's idea of a warning, for the reference run that prints states.
printf 'IPMI_Threshold_Sensor_At_Or_Below_Lower_Non_Critical_Threshold Warning\nIPMI_Threshold_Sensor_At_Or_Above_Upper_Non_Critical_Threshold Warning\n' \
	> "$work/state.conf"
mkdir -p "$work/fcache" "$work/cache"

hosts=$(lab_hostrange)
export GPUFLEET_DB=$work/db GPUFLEET_CREDENTIALS=$work/cred XDG_CACHE_HOME=$work/cache TZ=UTC
lab_import

fipmi="--config-file $work/freeipmi.conf --sdr-cache-directory $work/fcache --quiet-cache -F $fan"

# A sanity pass first, which also fills both SDR caches: every tool must
# read all N BMCs, and see the same number of sensors and event log entries.
gf_sensors=$("$gf" sensors @bench --fanout "$fan" --format json --no-progress |
	/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(o["ok"] for o in d), sum(len(o.get("sensors", [])) for o in d))')
ref_sensors=$(ipmi-sensors -h "$hosts" $fipmi --no-header-output | grep -c ' | ' || true)
gf_sel=$("$gf" sel list @bench --fanout "$fan" --format json --no-progress |
	/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(o["ok"] for o in d), sum(len(o.get("entries", [])) for o in d))')
ref_sel=$(ipmi-sel -h "$hosts" $fipmi --no-header-output | grep -c ' | ' || true)
echo "sanity: gpufleet sensors (ok nodes, sensors) = $gf_sensors, ipmi-sensors sensors = $ref_sensors"
echo "sanity: gpufleet sel (ok nodes, entries) = $gf_sel, ipmi-sel entries = $ref_sel"
[ "${gf_sensors% *}" -eq "$n" ] && [ "${gf_sensors#* }" -eq "$ref_sensors" ] &&
	[ "${gf_sel% *}" -eq "$n" ] && [ "${gf_sel#* }" -eq "$ref_sel" ] ||
	{ echo "sanity check failed" >&2; exit 1; }

names=(
	"gpufleet sensors"
	"gpufleet --format json sensors"
	"ipmi-sensors"
	"ipmi-sensors --output-sensor-thresholds --output-sensor-state"
	"gpufleet sel list"
	"ipmi-sel"
)
cmds=(
	"$gf sensors @bench --fanout $fan --no-progress -q"
	"$gf --format json sensors @bench --fanout $fan --no-progress -q"
	"ipmi-sensors -h '$hosts' $fipmi"
	"ipmi-sensors -h '$hosts' $fipmi --output-sensor-thresholds --output-sensor-state --sensor-state-config-file $work/state.conf"
	"$gf sel list @bench --fanout $fan --no-progress -q"
	"ipmi-sel -h '$hosts' $fipmi"
)
time1() { # NAME COMMAND JSON: one run, timed by hyperfine
	hyperfine -r 1 -N --export-json "$3" --style none --command-name "$1" "$2" >/dev/null 2>&1 ||
		hyperfine -r 1 --export-json "$3" --style none --command-name "$1" "$2" >/dev/null
}
# Rounds of one run per command, the order rotated each round, so that a
# change in the machine's load (the sims are CPU-bound) hits every command
# alike.
k=${#cmds[@]}
for ((r = 1; r <= runs; r++)); do
	for ((j = 0; j < k; j++)); do
		i=$(((j + r) % k))
		time1 "${names[$i]}" "${cmds[$i]}" "$work/h.$r.$i.json"
	done
	echo "round $r of $runs done" >&2
done
# ipmi-sel with severities loads FreeIPMI's interpretation rules once per
# host, which takes far longer: a few runs on their own.
for ((r = 1; r <= 3; r++)); do
	time1 "ipmi-sel --output-event-state" "ipmi-sel -h '$hosts' $fipmi --output-event-state" \
		"$work/h.state.$r.json"
done

/usr/bin/python3 - "$n" "$fan" "$work"/h.*.json <<'PY'
import json, statistics, sys
times = {}
for path in sys.argv[3:]:
    for r in json.load(open(path))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
med = {c: (statistics.median(t), len(t)) for c, t in times.items()}
print(f"N={sys.argv[1]} BMCs, fanout {sys.argv[2]}, warm SDR caches: median wall time;"
      " ratio = gpufleet / reference (<= 1.0: gpufleet no slower)")
for name, (t, k) in med.items():
    print(f"  {name:62s} {t:7.3f} s  ({k} runs)")
pairs = [("gpufleet sensors", "ipmi-sensors"),
         ("gpufleet --format json sensors",
          "ipmi-sensors --output-sensor-thresholds --output-sensor-state"),
         ("gpufleet sel list", "ipmi-sel"),
         ("gpufleet sel list", "ipmi-sel --output-event-state")]
for g, r in pairs:
    print(f"  ratio {g} / {r}: {med[g][0] / med[r][0]:.2f}")
PY
