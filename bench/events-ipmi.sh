#!/bin/bash
# bench/events-ipmi.sh [N] [SECONDS]: one `gpufleet events follow` of N
# ipmi_sim BMCs (127.50.10.0/24, default 200) at --interval INTERVAL
# (default 5) for SECONDS (default 60): peak RSS and CPU (user + system, as
# a share of one core), with 10 SEL records added on the way (each must be
# printed once). The first follow (the baseline of every log) runs before,
# untimed. GPUFLEET_REF_BIN=OTHER: that build measured in turns with
# gpufleet, ROUNDS (default 1) times, and the ratio of their CPU printed.
# Needs root (UDP port 623), GNU time (/usr/bin/time), a built tree.
set -euo pipefail

n=${1:-200}
secs=${2:-60}
interval=${INTERVAL:-5}
[ "$n" -le 254 ] || { echo "at most 254 BMCs (one /24)" >&2; exit 2; }
. "$(dirname "$0")/lab.sh"
lab_init events
lab_start 127.50.10 "$n" --sensors
lab_creds
mkdir -p "$work/cache"
export GPUFLEET_DB=$work/db GPUFLEET_CREDENTIALS=$work/cred XDG_CACHE_HOME=$work/cache TZ=UTC
lab_import

"$gf" events follow @bench --duration 1 --interval 1 --format ndjson --no-progress >/dev/null
base=$(sqlite3 "$work/db" "SELECT count(*) FROM events")
echo "baseline: $base entries of $n logs stored"

add_events() {
	sleep $((secs / 3))
	/usr/bin/python3 - "$work/lab" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
import ipmisensors as S
from ipmilab import IpmiLab
lab = IpmiLab.attach(sys.argv[1])
for i in range(1, 11):
    S.add_event(lab, (i * 17) % lab.count + 1, 'PSU1 Status', S.PSU_FAILED)
PY
}

# measure LABEL BIN: one timed follow, 10 records added on the way; its CPU % into cpu_LABEL.
measure() {
	local label=$1 bin=$2 before rss user sys wall printed stored cpu
	before=$(sqlite3 "$work/db" "SELECT count(*) FROM events")
	add_events &
	adder=$!
	/usr/bin/time -f '%M %U %S %e' -o "$work/time" \
		"$bin" events follow @bench --duration "$secs" --interval "$interval" --format ndjson \
		--no-progress > "$work/out" 2> "$work/err" || true
	wait "$adder"
	read -r rss user sys wall < "$work/time"
	printed=$(wc -l < "$work/out")
	stored=$(($(sqlite3 "$work/db" "SELECT count(*) FROM events") - before))
	cpu=$(echo "$user $sys $wall" | awk '{printf "%.2f", 100 * ($1 + $2) / $3}')
	eval "cpu_$label=\$cpu"
	echo "$label: events follow of $n BMCs, interval $interval s, ${wall} s: peak RSS" \
		"$((rss / 1024)) MiB, CPU ${cpu} % of one core (user ${user} s, system ${sys} s);" \
		"10 added, $printed printed, $stored stored; errors: $(wc -l < "$work/err")"
}

# With GPUFLEET_REF_BIN (another build: the one before a change), both in
# turns, ROUNDS times, over the same lab and inventory.
for ((r = 1; r <= ${ROUNDS:-1}; r++)); do
	measure gpufleet "$gf"
	if [ -n "${GPUFLEET_REF_BIN:-}" ]; then
		measure ref "$GPUFLEET_REF_BIN"
		echo "  round $r: CPU ratio gpufleet / ref = $(echo "$cpu_gpufleet $cpu_ref" |
			awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}')"
	fi
done
