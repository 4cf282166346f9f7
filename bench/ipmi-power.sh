#!/bin/bash
# bench/ipmi-power.sh [N]: gpufleet power status vs FreeIPMI's ipmipower and a
# sequential ipmitool loop, on the same N ipmi_sim BMCs (127.34.0.0/16), side
# by side in one run. Prints medians and ratios (gpufleet / reference).
# LOAD=1: the same beside a CPU hog (`stress-ng --cpu 2`), as on a management
# host running other jobs. Also prints the machine's load and gpufleet's peak
# RSS; the ratio gpufleet (cipher 3) / ipmipower last. DELAY_MS=MS (up to 200
# BMCs): every BMC answers through a UDP relay (bench/udp-delay.py,
# 127.37.x.y in front of 127.34.x.y) that holds each datagram MS ms each way,
# as BMCs that answer late: then the round trips count. Up to 200 BMCs also
# gpufleet with the BMCs on the command line (-H, no inventory), for reading.
# Needs root (UDP port 623), hyperfine, and a built tree (ninja -C build).
set -euo pipefail

n=${1:-200}
runs=${RUNS:-7}
if [ "${LOAD:-0}" = 1 ] && ! command -v stress-ng >/dev/null; then
	echo "LOAD=1 needs stress-ng (tests/install-deps.sh installs it)" >&2
	exit 2
fi
. "$(dirname "$0")/lab.sh"
lab_init power
lab_start 127.34.0 "$n" --power on
# gpufleet: cipher suite 3 (what ipmipower uses, $work/cred3), and the default (17, then 3).
lab_creds
mv "$work/cred" "$work/cred3"
grep -v '^ipmi_cipher_suite' "$work/cred3" > "$work/cred17"

hog=
relay=
lab_at_exit '[ -z "$hog" ] || kill "$hog" 2>/dev/null'
lab_at_exit '[ -z "$relay" ] || kill "$relay" 2>/dev/null'
hosts=$(lab_hostrange)
export GPUFLEET_DB=$work/db
if [ -n "${DELAY_MS:-}" ]; then
	[ "$n" -le 200 ] || { echo "DELAY_MS: up to 200 BMCs" >&2; exit 2; }
	lab_addrs | awk '{t = $1; sub(/^127\.34\./, "127.37.", $1); print $1, t}' > "$work/pairs"
	/usr/bin/python3 bench/udp-delay.py "$DELAY_MS" "$work/relays-ready" < "$work/pairs" &
	relay=$!
	for _ in $(seq 100); do
		[ -e "$work/relays-ready" ] || ! kill -0 "$relay" 2>/dev/null && break
		sleep 0.1
	done
	[ -e "$work/relays-ready" ] || { echo "the relays did not start" >&2; exit 1; }
	hosts=$(echo "$hosts" | sed 's/127\.34\./127.37./g')
	awk '{print $1}' "$work/pairs" > "$work/targets"
	echo "every BMC behind a relay holding each datagram $DELAY_MS ms each way"
else
	lab_addrs > "$work/targets"
fi
lab_import "$work/targets"

fan=64
cmds=(
	"$gf --credentials $work/cred3 power status @bench --fanout $fan --no-progress -q -C"
	"$gf --credentials $work/cred17 power status @bench --fanout $fan --no-progress -q -C"
	"ipmipower -h '$hosts' --config-file $work/freeipmi.conf --stat -F $fan"
)
names=("gpufleet (cipher 3)" "gpufleet (default: 17, falls back to 3)" "ipmipower -F $fan")
if [ "$n" -le 200 ]; then
	# For reading, not the figure: the BMCs named on the command line, as
	# ipmipower gets them, with no inventory to open (and no group to resolve).
	cmds+=("$gf --credentials $work/cred3 -H '$hosts' --protocol ipmi power status --fanout $fan --no-progress -q -C")
	names+=("gpufleet -H (cipher 3, no inventory)")
fi
# Not behind the relays (DELAY_MS): 3 x N sequential sessions of several round trips.
if [ "$n" -le 200 ] && [ -z "${DELAY_MS:-}" ]; then
	cmds+=("for h in \$(cat $work/targets); do ipmitool -I lanplus -C 3 -H \$h -U admin -f $work/pw power status; done")
	names+=("ipmitool loop (sequential)")
fi

# A sanity pass first: every tool must see all N BMCs on.
ok=$(GPUFLEET_CREDENTIALS=$work/cred3 "$gf" power status @bench --format ndjson --no-progress | grep -c '"power":"on"' || true)
ref=$(ipmipower -h "$hosts" --config-file "$work/freeipmi.conf" --stat -F $fan | grep -c ': on$' || true)
echo "sanity: gpufleet saw $ok/$n on, ipmipower saw $ref/$n on"
# ipmipower loses a few sessions to timeouts on a loaded machine at 2,000.
[ "$ok" -eq "$n" ] && [ "$((ref * 100))" -ge "$((n * 98))" ] ||
	{ echo "sanity check failed" >&2; exit 1; }

if [ "${LOAD:-0}" = 1 ]; then
	stress-ng --cpu 2 --quiet &
	hog=$!
	echo "beside stress-ng --cpu 2 (pid $hog)"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
args=()
slow=()
for i in "${!cmds[@]}"; do
	if [[ ${names[$i]} == ipmitool* ]]; then
		slow+=(--command-name "${names[$i]}" "${cmds[$i]}")
	else
		args+=(--command-name "${names[$i]}" "${cmds[$i]}")
	fi
done
# Rounds: every command once per round (hyperfine -r 1), the order turned
# each round, so that a change in the machine's load hits every command alike.
# -N: no shell, so no shell start-up for hyperfine to measure and subtract on
# every call (on a loaded machine that estimate moved the ratio at 10 BMCs
# by up to +-0.1 from pass to pass).
hyperfine -N -i -w 1 -r 1 --style none "${args[@]}" > /dev/null 2>&1
k=$((${#args[@]} / 3))
for ((r = 0; r < runs; r++)); do
	for ((j = 0; j < k; j++)); do
		i=$(((j + r) % k))
		# -i: a session that times out under load (either tool) fails
		# that run, which is timed all the same.
		hyperfine -N -i -r 1 --export-json "$work/h.$r.$i.json" --style none \
			"${args[@]:$((3 * i)):3}" > /dev/null 2>&1
	done
done
/usr/bin/python3 -c '
import json, sys
res = {}
for p in sys.argv[2:]:
    for r in json.load(open(p))["results"]:
        res.setdefault(r["command"], []).extend(r["times"])
json.dump({"results": [{"command": c, "times": t} for c, t in res.items()]}, open(sys.argv[1], "w"))
' "$work/h.json" "$work"/h.*.*.json
echo '{"results":[]}' > "$work/h2.json"
if [ ${#slow[@]} -gt 0 ]; then
	hyperfine -r 3 --export-json "$work/h2.json" --style basic "${slow[@]}" >&2
fi

GPUFLEET_CREDENTIALS=$work/cred3 /usr/bin/time -f '%M %U %S' -o "$work/rss" "$gf" power status @bench \
	--fanout $fan --no-progress -q -C > /dev/null || true # a node failed: still measured
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); gpufleet (cipher 3) peak RSS $(awk '{printf "%.1f MiB, cpu %.2f s", $1 / 1024, $2 + $3}' "$work/rss")"

/usr/bin/python3 - "$n" "$work/h.json" "$work/h2.json" <<'PY'
import json, statistics, sys
res = []
for path in sys.argv[2:]:
    res += json.load(open(path))["results"]
med = {r["command"]: (statistics.median(r["times"]), len(r["times"])) for r in res}
print(f"N={sys.argv[1]} BMCs: median wall time; ratio = gpufleet / reference (<= 1.0: gpufleet no slower)")
for name, (t, k) in med.items():
    print(f"  {name:42s} {t:7.3f} s  ({k} runs)")
gfs = [n for n in med if n.startswith("gpufleet")]
refs = [n for n in med if not n.startswith("gpufleet")]
for g in gfs:
    for r in refs:
        print(f"  ratio {g} / {r}: {med[g][0] / med[r][0]:.2f}")
g, r = "gpufleet (cipher 3)", [n for n in refs if n.startswith("ipmipower")][0]
print(f"ratio {g} / {r}: {med[g][0] / med[r][0]:.2f}")
PY
