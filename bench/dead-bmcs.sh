#!/bin/bash
# bench/dead-bmcs.sh [N] [TIMEOUT]: a fleet of N BMCs of which 10 % are dead
# (addresses where nothing answers), gpufleet power status --timeout T vs
# FreeIPMI's ipmipower --session-timeout T*1000, side by side, each as a ratio
# of its median wall time to the deadline T (issue 10's target: <= 1.2).
# Both fan out to min(N, 256) at once (--fanout, -F: ipmipower 1.6.10 loses
# sessions above about 500 on this machine), so the figure is the cost of the
# dead BMCs, not of queueing behind them. Every tenth node is dead, so they
# are spread over the fleet. N <= 1000; the live BMCs
# are ipmi_sim on 127.42.11.x-127.42.14.x. Needs root (UDP port 623),
# hyperfine, and a built tree (ninja -C build).
set -euo pipefail

n=${1:-200}
t=${2:-3}
runs=${RUNS:-5}
. "$(dirname "$0")/lab.sh"
lab_init dead
[ "$n" -ge 10 ] && [ "$n" -le 1000 ] || { echo "N must be 10 to 1000" >&2; exit 2; }
dead=$((n / 10))
fan=$((n < 256 ? n : 256))
live=$((n - dead))

# One socket per BMC in flight, for both tools.
ulimit -n 8192
lab_start 127.42.11 "$live" --power on
lab_creds

# The live BMCs' addresses, then the dead ones: the next addresses, where no sim runs.
# Every tenth node is a dead one, so they are spread over the fleet.
/usr/bin/python3 - "$live" "$dead" > "$work/addrs" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from labutil import node_address
live, dead = int(sys.argv[1]), int(sys.argv[2])
addrs = [node_address('127.42.11', i) for i in range(1, live + 1)]
gone = [node_address('127.42.11', live + i) for i in range(1, dead + 1)]
out = []
for k in range(live + dead):
    out.append(gone.pop(0) if k % 10 == 9 and gone else addrs.pop(0) if addrs else gone.pop(0))
print('\n'.join(out))
PY
hosts=$(paste -sd, "$work/addrs")
export GPUFLEET_DB=$work/db
lab_import "$work/addrs"

# A sanity pass first: both tools see the live BMCs on and the dead ones fail.
GPUFLEET_CREDENTIALS=$work/cred "$gf" power status @bench --timeout "$t" --fanout "$fan" \
	--format ndjson --no-progress > "$work/sanity" || true
ok=$(grep -c '"power":"on"' "$work/sanity" || true)
ref=$(ipmipower -h "$hosts" --config-file "$work/freeipmi.conf" --stat -F "$fan" \
	--session-timeout=$((t * 1000)) | grep -c ': on$' || true)
echo "sanity: gpufleet saw $ok/$live on, ipmipower saw $ref/$live on ($dead dead of $n)"
if [ "$ok" -ne "$live" ] || [ "$ref" -ne "$live" ]; then
	echo "sanity check failed; gpufleet's failed live BMCs:" >&2
	grep -Ff "$work/addrs" "$work/sanity" | grep '"ok":false' | grep -vFf <(awk 'NR % 10 == 0' "$work/addrs" | sed 's/.*/"bmc":"&"/') | head -5 >&2 || true
	exit 1
fi

hyperfine -i -w 1 -r "$runs" --export-json "$work/h.json" --style basic \
	--command-name "gpufleet --timeout $t --fanout $fan" \
	"GPUFLEET_CREDENTIALS=$work/cred $gf power status @bench --timeout $t --fanout $fan --no-progress -q" \
	--command-name "ipmipower --session-timeout=$((t * 1000)) -F $fan" \
	"ipmipower -h '$hosts' --config-file $work/freeipmi.conf --stat -F $fan --session-timeout=$((t * 1000))" >&2

/usr/bin/python3 - "$n" "$dead" "$t" "$work/h.json" <<'PY'
import json, statistics, sys
n, dead, t = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
res = json.load(open(sys.argv[4]))["results"]
print(f"N={n} BMCs, {dead} dead, deadline {t:g} s: median wall time, and as a ratio to the deadline")
med = {}
for r in res:
    med[r["command"]] = statistics.median(r["times"])
    print(f"  {r['command']:42s} {med[r['command']]:7.3f} s  = {med[r['command']] / t:.2f} x deadline  ({len(r['times'])} runs)")
g, i = list(med)
print(f"  ratio gpufleet / ipmipower: {med[g] / med[i]:.2f}")
PY
