#!/bin/bash
# The README's first command: on a fresh Debian 12 machine as root, install
# what is missing, build gpufleet, start the bundled loopback lab and run the
# main job on it: power, then a sweep of the whole fleet and the drift report
# that finds what was planted in it. Everything runs on loopback addresses
# (ipmi_sim BMCs on 127.30.0.x, Redfish BMCs on 127.32.30.x, sshd hosts on
# 127.33.30.x) and is stopped at the end (by PID), also on failure or Ctrl-C.
# --keep leaves the lab running.
#
# The lab: GF_DEMO_NODES nodes (default 20), the last 4 with a Redfish BMC
# (NVIDIA DGX dialect), the others with an IPMI BMC, every one with an SSH
# host whose fake nvidia-smi & co. print real captured outputs. Planted
# drift: two IPMI BMCs on older firmware, one GPU of a DGX on other
# firmware, two hosts on an older NVIDIA driver.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
keep=0
[ "${1:-}" = "--keep" ] && keep=1
count=${GF_DEMO_NODES:-20}
if [ "$count" -lt 10 ]; then
	echo "GF_DEMO_NODES must be 10 or more" >&2
	exit 2
fi
nrf=4
nipmi=$((count - nrf))

tests/install-deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build -Dwerror=true >/dev/null
fi
# ninja prints compiler errors on stdout: show them when the build fails.
if ! out=$(ninja -C build 2>&1); then
	printf '%s\n' "$out" >&2
	echo "demo: the build failed" >&2
	exit 1
fi
gf=$top/build/cli/gpufleet

work=$(mktemp -d /tmp/gpufleet-demo.XXXXXX)
chmod 755 "$work" # the SSH lab's login user reads its keys and scripts under it
cleanup() {
	if [ $keep -eq 0 ]; then
		/usr/bin/python3 tests/lab/ipmilab.py stop --dir "$work/ipmi" || true
		/usr/bin/python3 tests/lab/redfish_emu.py stop --dir "$work/redfish" || true
		/usr/bin/python3 tests/lab/sshlab.py stop --dir "$work/ssh" || true
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The planted drift (node numbers of the fleet).
old_bmc="4 9"        # IPMI BMC firmware 2.04 where the others run 2.10
old_driver="6 15"    # NVIDIA driver 580.95.05 where the others run 590.48.01
odd_gpu=$((nipmi + 3))  # a DGX whose GPU 3 runs 96.00.74.00.01

# The lab's password lives in files, never on a command line.
umask 077
head -c 9 /dev/urandom | base64 | tr -d '/+=' > "$work/bmc-password"
umask 022
echo "starting the lab: $nipmi IPMI BMCs, $nrf Redfish BMCs, $count SSH hosts" >&2
/usr/bin/python3 - "$work" "$nipmi" "$old_bmc" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from ipmilab import IpmiLab
import ipmisensors
work, n, old = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split()]
pw = open(work + '/bmc-password').read().strip()
lab = IpmiLab(work + '/ipmi', prefix='127.30.0', count=n, user='admin', password=pw,
              power='off', overrides={i: {'fw': '2.04' if i in old else '2.10'} for i in range(1, n + 1)},
              emu_extra=ipmisensors.emu_extra({i: {} for i in range(1, n + 1)}))
lab.start()   # the sims outlive this process; ipmilab.py stop ends them by PID
ipmisensors.set_sel_time(lab)
PY
/usr/bin/python3 tests/lab/redfish_emu.py start --dir "$work/redfish" --prefix 127.32.30 \
	--count $nrf --vendors dgx --user admin --password-file "$work/bmc-password" --power off \
	--node "$((odd_gpu - nipmi)):gpu_firmware={\"3\": \"96.00.74.00.01\"}" >/dev/null
/usr/bin/python3 tests/lab/sshlab.py start --dir "$work/ssh" --prefix 127.33.30 --count "$count" \
	--profile h100
for i in $old_driver; do
	# The host now reports an older driver: every output that names the version.
	sed -i 's/590\.48\.01/580.95.05/g' "$work/ssh/hosts/$(printf 'gpu%02d' "$i")"/out/*
done

sshinfo() {
	/usr/bin/python3 -c "import json, sys; print(json.load(open('$work/ssh/lab.json'))$1)"
}
{
	echo "[default]"
	echo "bmc_user = admin"
	echo "bmc_password_command = cat $work/bmc-password"
	echo "ipmi_workarounds = opensesspriv"
	echo "redfish_cacert = $work/redfish/ca.pem"
	echo "ssh_user = $(sshinfo "['user']")"
	echo "ssh_key = $(sshinfo "['key']")"
	echo "ssh_known_hosts = $(sshinfo "['known_hosts']")"
} > "$work/credentials"
chmod 600 "$work/credentials"

export GPUFLEET_DB=$work/inventory.db
export GPUFLEET_CREDENTIALS=$work/credentials

ssh_specs=($(sshinfo "['nodes']" | /usr/bin/python3 -c "
import ast, sys
print(' '.join(n['ssh'] for n in ast.literal_eval(sys.stdin.read())))"))
{
	echo "name,bmc,protocol,ssh,groups"
	for i in $(seq 1 "$count"); do
		rack=rack$(( (i - 1) / 10 + 1 ))
		if [ "$i" -le $nipmi ]; then
			bmc=127.30.0.$i
			proto=ipmi
		else
			bmc=127.32.30.$((i - nipmi)):8443
			proto=redfish
		fi
		printf 'gpu%03d,%s,%s,%s,%s;lab\n' "$i" "$bmc" "$proto" "${ssh_specs[$((i - 1))]}" "$rack"
	done
} | "$gf" nodes import -

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say "gpufleet nodes list gpu[001-003],gpu020"
"$gf" nodes list "gpu[001-003],gpu020"
say gpufleet power status @lab -C
"$gf" power status @lab -C
say gpufleet power on @lab --batch 5 --interval 1 --wait
"$gf" power on @lab --batch 5 --interval 1 --wait --no-progress -C
say "sqlite3 \$GPUFLEET_DB 'select ... from audit'   (when each node was switched on)"
sqlite3 -column -header "$GPUFLEET_DB" \
	"select node, strftime('%H:%M:%f', time, 'unixepoch') as sent, verb, user, result
	 from audit order by time limit 8"

say "gpufleet sweep @lab       (firmware, hardware, event log, sensors, host facts: one sweep)"
"$gf" sweep @lab --no-progress --timeout 30
say "gpufleet drift @lab       (each node against the majority of its hardware model)"
"$gf" drift @lab

# The report must find exactly what was planted, and nothing else.
planted=$(
	for i in $old_bmc; do printf 'gpu%03d bmc 2.10 2.04\n' "$i"; done
	for i in $old_driver; do printf 'gpu%03d driver 590.48.01 580.95.05\n' "$i"; done
	printf 'gpu%03d gpu3.firmware %s 96.00.74.00.01\n' "$odd_gpu" \
		"$("$gf" inventory show "$(printf 'gpu%03d' $((nipmi + 1)))" --format json |
		   /usr/bin/python3 -c "import json, sys
print(next(c['version'] for c in json.load(sys.stdin)[0]['components'] if c['key'] == 'gpu3.firmware'))")"
)
found=$("$gf" drift @lab --format json | /usr/bin/python3 -c "
import json, sys
for o in json.load(sys.stdin):
    for d in o['drift']:
        print(o['node'], d['component'], d['expected'], d['actual'])")
if [ "$(sort <<<"$planted")" = "$(sort <<<"$found")" ]; then
	echo
	echo "the drift report found exactly the planted drift: $(wc -l <<<"$planted") components on $(cut -d' ' -f1 <<<"$planted" | sort -u | wc -l) nodes"
else
	echo
	echo "the drift report differs from the planted drift" >&2
	diff <(sort <<<"$planted") <(sort <<<"$found") >&2 || true
	exit 1
fi
say "gpufleet drift @lab --component driver --fail-on-drift; echo \$?"
set +e
"$gf" drift @lab --component driver --fail-on-drift
echo "$?"
set -e
say "gpufleet inventory show gpu006"
"$gf" inventory show gpu006 | head -n 12

if [ $keep -eq 1 ]; then
	echo
	echo "lab left running: GPUFLEET_DB=$GPUFLEET_DB GPUFLEET_CREDENTIALS=$GPUFLEET_CREDENTIALS"
	echo "stop it with: python3 tests/lab/ipmilab.py stop --dir $work/ipmi;" \
		"python3 tests/lab/redfish_emu.py stop --dir $work/redfish;" \
		"python3 tests/lab/sshlab.py stop --dir $work/ssh"
fi
