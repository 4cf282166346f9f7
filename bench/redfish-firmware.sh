#!/bin/bash
# bench/redfish-firmware.sh [N]: `gpufleet firmware` vs a parallel curl crawl
# of the same UpdateService/FirmwareInventory members (one curl per request,
# xargs -P 20, Basic auth: the way scripts do it today), on the same N
# emulated Redfish BMCs (tests/lab/redfish_emu.py, PREFIX 127.32.160.0/24 and up),
# side by side in one run. Prints medians and the ratio gpufleet / curl
# (the target is <= 0.5).
#
# ANCHOR=expand times instead (in RUNS rounds, one run of each a round, the
# order swapped every round) the least any client can do: one `curl
# --parallel` (one process, N transfers at once, Basic auth) of the N
# `FirmwareInventory?$expand=.($levels=1)` collections, one request per BMC
# (target: gpufleet <= 2.5 x that with instant BMCs, <= 2 x with BMCs that
# answer in 100 ms one request at a time: EMU="--delay-ms 100 --one-at-a-time").
#
# Environment: VENDORS (emulated dialects, default dgx; see
# tests/lab/REDFISH-EMU.md), RUNS (hyperfine runs, default 3), PARALLEL (curl
# parallelism, default 20), PREFIX (addresses, default 127.32.160),
# GPUFLEET_BIN, WORKERS (emulator processes), EMU (more emulator start
# options), ANCHOR (crawl or expand, default crawl).
# Needs hyperfine, curl, openssl and a built tree (ninja -C build). Fails
# loudly while gpufleet cannot read the firmware inventory over Redfish.
set -euo pipefail

n=${1:-100}
runs=${RUNS:-3}
par=${PARALLEL:-20}
vendors=${VENDORS:-dgx}
. "$(dirname "$0")/redfish-lib.sh"
rf_setup hyperfine curl openssl

anchor=${ANCHOR:-crawl}
case $anchor in crawl | expand) ;; *) echo "ANCHOR is crawl or expand" >&2; exit 2 ;; esac
# shellcheck disable=SC2086 # EMU is a list of options
rf_lab redfish "$n" "${PREFIX:-127.32.160}" "$vendors" r ${EMU:-}

# The anchor: one curl process, every BMC's expanded collection at once.
cat > "$work/expand.sh" <<'SH'
#!/bin/bash
set -euo pipefail
addrs=$1 port=$2 ca=$3 netrc=$4 out=${5:-/dev/null}
n=$(wc -l <"$addrs")
sed "s|.*|url = \"https://&:$port/redfish/v1/UpdateService/FirmwareInventory?\$expand=.(\$levels=1)\"\noutput = \"$out.&\"|" \
	"$addrs" >"$out.cfg"
curl -sS --no-progress-meter --fail --parallel --parallel-max "$n" --cacert "$ca" --netrc-file "$netrc" -g -K "$out.cfg"
SH
chmod +x "$work/expand.sh"

# The crawl: every BMC's FirmwareInventory collection (following
# Members@odata.nextLink), then every member, one curl per request.
cat > "$work/crawl.sh" <<'SH'
#!/bin/bash
set -euo pipefail
addrs=$1 port=$2 ca=$3 netrc=$4 par=$5 out=${6:-/dev/null}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
collection() {
	local h=$1 url=/redfish/v1/UpdateService/FirmwareInventory body
	while [ -n "$url" ]; do
		body=$(curl -sS --fail --cacert "$ca" --netrc-file "$netrc" "https://$h:$port$url")
		grep -o '"@odata.id": *"/redfish/v1/UpdateService/FirmwareInventory/[^"]*"' <<<"$body" |
			sed -e 's/.*"\(\/redfish[^"]*\)"$/\1/' -e "s|^|https://$h:$port|" >>"$tmp/$h"
		url=$(grep -o '"Members@odata.nextLink": *"[^"]*"' <<<"$body" | sed 's/.*"\([^"]*\)"$/\1/' || true)
	done
}
export -f collection
export port ca netrc tmp
xargs -P "$par" -I{} bash -c 'collection "$@"' _ {} < "$addrs"
sort -u "$tmp"/* > "$tmp/all"
[ -s "$tmp/all" ] || { echo "crawl: no members found" >&2; exit 1; }
xargs -P "$par" -n 1 curl -sS --fail --cacert "$ca" --netrc-file "$netrc" -o /dev/null \
	-w '%{http_code}\n' <"$tmp/all" >"$out"
SH
chmod +x "$work/crawl.sh"

# Sanity first: both sides must see every member of every BMC.
expect=$(/usr/bin/python3 - "$work/lab" <<'PY'
import json, sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab, FW_INV
lab = RedfishLab.attach(sys.argv[1])
print(sum(len(lab.resource(i, FW_INV)['Members']) for i in lab.indices()))
PY
)
if [ "$anchor" = expand ]; then
	"$work/expand.sh" "$work/lab/addrs" "$port" "$ca" "$work/netrc" "$work/x"
	got_curl=$(/usr/bin/python3 - "$work"/x.127.* <<'PY'
import json, sys
print(sum(len(json.load(open(f))["Members"]) for f in sys.argv[1:]))
PY
)
	ref_name="curl --parallel \$expand"
	ref_cmd="$work/expand.sh $work/lab/addrs $port $ca $work/netrc $work/t"
else
	"$work/crawl.sh" "$work/lab/addrs" "$port" "$ca" "$work/netrc" "$par" "$work/crawl.out"
	got_curl=$(grep -c '^200$' "$work/crawl.out" || true)
	ref_name="curl crawl (xargs -P $par)"
	ref_cmd="$work/crawl.sh $work/lab/addrs $port $ca $work/netrc $par"
fi
set +e
"$gf" firmware @bench --format ndjson --no-progress >"$work/gf.out" 2>"$work/gf.err"
rc=$?
set -e
got_gf=$(/usr/bin/python3 - "$work/gf.out" <<'PY'
import json, sys
total = 0
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("ok"):
        total += len(d.get("components") or [])
print(total)
PY
)
echo "sanity: $expect members on $n BMCs; curl ($anchor) fetched $got_curl, gpufleet reported $got_gf (exit $rc)"
if [ "$got_curl" -ne "$expect" ]; then
	echo "FAIL: curl ($anchor) did not fetch every member" >&2
	exit 1
fi
if [ "$rc" -ne 0 ] || [ "$got_gf" -ne "$expect" ]; then
	echo "FAIL: gpufleet firmware did not report every member over Redfish (exit $rc):" >&2
	head -n 5 "$work/gf.err" >&2
	head -c 600 "$work/gf.out" >&2
	echo >&2
	exit 1
fi
sessions=$(/usr/bin/python3 - "$work/lab" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from redfish_emu import RedfishLab
lab = RedfishLab.attach(sys.argv[1])
print(sum(lab.sessions_open(i) for i in lab.indices()))
PY
)
echo "sanity: $sessions sessions left open on the BMCs after gpufleet"

gf_cmd="$gf firmware @bench --format json --no-progress -q >/dev/null"
if [ "$anchor" = expand ]; then
	# Rounds, one run of each per round, the order swapped every round: on a
	# shared machine the load moves, and each round's pair sees the same.
	uptime >&2
	/usr/bin/python3 - "$n" "$expect" "$runs" "$gf_cmd" "$ref_cmd" "$ref_name" <<'PY'
import statistics, subprocess, sys, time
n, expect, runs, cmds, ref_name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:6], sys.argv[6]
for c in cmds:  # warm-up
    subprocess.run(c, shell=True, check=True)
t = [[], []]
for r in range(runs):
    for k in ((0, 1) if r % 2 == 0 else (1, 0)):
        t0 = time.monotonic()
        subprocess.run(cmds[k], shell=True, check=True)
        t[k].append(time.monotonic() - t0)
print(f"N={n} BMCs, {expect} firmware members: median wall time of {runs} rounds")
print(f"  {'gpufleet firmware':32s} {statistics.median(t[0]):7.3f} s")
print(f"  {ref_name:32s} {statistics.median(t[1]):7.3f} s")
print(f"  ratio of the medians: {statistics.median(t[0]) / statistics.median(t[1]):.2f}")
ratios = [a / b for a, b in zip(*t)]
print(f"  ratio gpufleet / curl --parallel $expand (median of the rounds' ratios): "
      f"{statistics.median(ratios):.2f}")
PY
	uptime >&2
	exit 0
fi

hyperfine -w 1 -r "$runs" --export-json "$work/h.json" --style basic \
	--command-name "gpufleet firmware" "$gf_cmd" \
	--command-name "$ref_name" "$ref_cmd" >&2

uptime >&2
/usr/bin/python3 - "$n" "$expect" "$work/h.json" <<'PY'
import json, statistics, sys
res = json.load(open(sys.argv[3]))["results"]
med = {r["command"]: statistics.median(r["times"]) for r in res}
print(f"N={sys.argv[1]} BMCs, {sys.argv[2]} firmware members: median wall time")
for name, t in med.items():
    print(f"  {name:32s} {t:7.3f} s")
g = [k for k in med if k.startswith("gpufleet")][0]
c = [k for k in med if k.startswith("curl")][0]
print(f"  ratio gpufleet / curl crawl: {med[g] / med[c]:.2f} (target <= 0.50)")
PY
