#!/bin/bash
# Every libFuzzer target for SECONDS each (default 600), one after another,
# each input run on a fan-out worker's stack (tests/fuzz/worker.h), seeded
# from tests/data (Redfish resources of the five captured BMCs, the captured
# GPU node outputs, a few node CSVs and node sets). Prints one line per
# target: executions, coverage, corpus, findings. Findings (crash-*, leak-*,
# timeout-*, oom-*) are kept in $GF_FUZZ_BUILD/fuzz-findings/.
#   bash bench/fuzz.sh [SECONDS]
# GF_FUZZ_TARGETS="redfish nodeset" runs only those (e.g. several scripts at once).
set -euo pipefail
secs=${1:-600}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${GF_FUZZ_BUILD:-build-fuzz}

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null
fi
ninja -C "$build" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=$build/fuzz-findings
mkdir -p "$findings" "$work"/{redfish,hostfacts,nodes_csv,nodeset,cper,sse,ipmi_loop}

# Seeds: each Redfish resource of every captured tree as a document of its own.
/usr/bin/python3 - "$work/redfish" tests/data/redfish/*/tree.json <<'PY'
import json, sys
out, n = sys.argv[1], 0
for path in sys.argv[2:]:
    for res in json.load(open(path))["resources"].values():
        n += 1
        with open(f"{out}/{n:05d}.json", "w") as f:
            json.dump(res, f)
PY
cp tests/data/gpu-node-outputs/*.txt tests/data/gpu-node-outputs/*.json "$work/hostfacts/" 2>/dev/null || true
# A round's answer (host/script.c): the first byte picks how many commands (1 + byte % 13).
printf '\001motd\n@gf1-0123456789abcdef 0 0 0 3 2\n@gf1-0123456789abcdef 1 143 1 0 0\nhi\ner' \
	>"$work/hostfacts/frames-2"
printf '\000@gf1-0123456789abcdef 0 137 1 0 0\n' >"$work/hostfacts/frames-1"
printf 'name,bmc,protocol\nn1,127.0.0.1:623,ipmi\n' >"$work/nodes_csv/1.csv"
printf 'name,bmc,host,protocol,profile\n"a,b",[::1]:443,h1,redfish,p\nn[1-3],10.0.0.1,,auto,\n' \
	>"$work/nodes_csv/2.csv"
printf 'gpu[001-100]' >"$work/nodeset/1"
printf 'rack[1-4]-n[01-32],spare' >"$work/nodeset/2"

# CPER records built from the UEFI layouts (tests/lab/redfish_events.py), and
# an event stream as the emulated BMCs send it.
/usr/bin/python3 - "$work" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
import redfish_events as ev
out = sys.argv[1]
open(f"{out}/cper/1.bin", "wb").write(ev.cper_record())
open(f"{out}/cper/2.bin", "wb").write(ev.cper_record(xid=48, xid_message="DBE", recovery_action=4))
payload = b'{"Events":[{"EventId":"1","Message":"m","MessageSeverity":"Critical"}]}'
open(f"{out}/sse/1", "wb").write(b"\x07: hi\r\nid: 1\r\ndata: " + payload + b"\r\n\r\nretry: 10\n\n")
# The power loop (ipmi/batch.c): the first byte is the session's message tag
# (bit 0: suite 17, else 3); then an RMCP+ answer. An Open Session Response
# for the fuzzer's session ids (suite 3), ipmi_sim's two-byte refusal, and an
# answer to the ping.
rmcpplus = bytes([0x06, 0x00, 0xFF, 0x07, 0x06])
def setup(ptype, body):
    return rmcpplus + bytes([ptype]) + bytes(8) + len(body).to_bytes(2, "little") + body
algos = bytes([0, 0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 8, 1, 0, 0, 0, 2, 0, 0, 8, 1, 0, 0, 0])
tag = 0x02
open_ok = bytes([tag, 0, 4, 0]) + (0x01020304).to_bytes(4, "little") + \
    (0x0a0b0c0d).to_bytes(4, "little") + algos
open(f"{out}/ipmi_loop/open", "wb").write(bytes([tag]) + setup(0x11, open_ok))
open(f"{out}/ipmi_loop/refused", "wb").write(bytes([tag]) + setup(0x11, bytes([tag, 4])))
open(f"{out}/ipmi_loop/rakp2", "wb").write(bytes([tag]) + setup(0x13, bytes([tag, 0, 0, 0]) +
    (0x01020304).to_bytes(4, "little") + bytes(32) + bytes(20)))
open(f"{out}/ipmi_loop/ping", "wb").write(bytes([tag, 0x06, 0, 0xFF, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    16, 0x81, 0x1C, 0x63, 0x20, 0, 0x38, 0, 1, 0x95, 0x04, 0, 0, 0, 0, 0x9e]))
PY

status=0
for t in ${GF_FUZZ_TARGETS:-redfish hostfacts nodes_csv nodeset cper sse ipmi_loop}; do
	log=$work/$t.log
	rc=0
	"$build/tests/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$findings/$t-" "$work/$t" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	corpus=$(ls "$work/$t" | wc -l)
	found=$(ls "$findings" | grep -c "^$t-" || true)
	echo "fuzz_$t: ${secs} s, ${execs:-?} executions, coverage ${cov:-?}, corpus $corpus, findings $found, exit $rc"
	if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
		tail -n 30 "$log"
		status=1
	fi
done
exit $status
