#!/bin/bash
# bench/events-ipmi.sh [N] [SECONDS]: one `gpufleet events follow` of N
# ipmi_sim BMCs (127.50.10.0/24, default 200) at --interval 5 for SECONDS
# (default 60): peak RSS and CPU (user + system, as a share of one core),
# with 10 SEL records added on the way (each must be printed once). The
# first follow (the baseline of every log) runs before, untimed.
# Needs root (UDP port 623), GNU time (/usr/bin/time), a built tree.
set -euo pipefail

n=${1:-200}
secs=${2:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
gf=${GPUFLEET_BIN:-$top/build/cli/gpufleet}
[ -x "$gf" ] || { echo "build first: ninja -C build" >&2; exit 2; }
[ "$n" -le 254 ] || { echo "at most 254 BMCs (one /24)" >&2; exit 2; }

work=$(mktemp -d /tmp/gf-bench-events.XXXXXX)
cleanup() {
	/usr/bin/python3 tests/lab/ipmilab.py stop --dir "$work/lab" || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

umask 077
echo "bench-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/pw"
/usr/bin/python3 tests/lab/ipmilab.py start --dir "$work/lab" --prefix 127.50.10 --count "$n" \
	--user admin --password-file "$work/pw" --sensors
printf '[default]\nbmc_user = admin\nbmc_password = %s\nipmi_workarounds = opensesspriv\nipmi_cipher_suite = 3\n' \
	"$(cat "$work/pw")" > "$work/cred"
mkdir -p "$work/cache"
export GPUFLEET_DB=$work/db GPUFLEET_CREDENTIALS=$work/cred XDG_CACHE_HOME=$work/cache TZ=UTC
{
	echo "name,bmc,protocol,groups"
	for i in $(seq 1 "$n"); do printf 'b%04d,127.50.10.%d,ipmi,bench\n' "$i" "$i"; done
} | "$gf" nodes import - >/dev/null

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
add_events &
adder=$!
/usr/bin/time -f '%M %U %S %e' -o "$work/time" \
	"$gf" events follow @bench --duration "$secs" --interval 5 --format ndjson --no-progress \
	> "$work/out" 2> "$work/err" || true
wait "$adder"
read -r rss user sys wall < "$work/time"
printed=$(wc -l < "$work/out")
stored=$(($(sqlite3 "$work/db" "SELECT count(*) FROM events") - base))
cpu=$(echo "$user $sys $wall" | awk '{printf "%.1f", 100 * ($1 + $2) / $3}')
echo "events follow of $n BMCs, interval 5 s, ${wall} s: peak RSS $((rss / 1024)) MiB," \
	"CPU ${cpu} % of one core (user ${user} s, system ${sys} s); 10 added, $printed printed," \
	"$stored stored; errors: $(wc -l < "$work/err")"
