# bench/lab.sh: what the IPMI benches share, sourced (not run) by
# bench/ipmi-power.sh, ipmi-read.sh, dead-bmcs.sh, events-ipmi.sh and
# events.sh: the tree and binary, a work folder removed on exit, a fleet of
# ipmi_sim BMCs (tests/lab/ipmilab.py) started and stopped, the credentials
# of both tools, the lab's addresses and the nodes imported into a bench
# inventory.
#
#   lab_init NAME            top, gf (GPUFLEET_BIN or build/cli/gpufleet),
#                            work=/tmp/gf-bench-NAME.XXXXXX; the EXIT trap
#                            runs lab_at_exit's commands, stops the lab,
#                            removes work
#   lab_at_exit CMD          one more command for the EXIT trap (first added,
#                            first run; before the lab stops)
#   lab_start PREFIX N ARGS  a random password in $work/pw, N sims from
#                            PREFIX (ipmilab.py start ARGS...), returns once
#                            every sim answers
#   lab_creds                $work/cred (gpufleet: cipher suite 3, what
#                            ipmi_sim has) and $work/freeipmi.conf (FreeIPMI
#                            reads its password from a file, never argv)
#   lab_addrs                the sims' addresses, one a line
#   lab_hostrange            the same as a FreeIPMI host range
#   lab_import [FILE]        nodes b0001... (group bench, protocol ipmi) of
#                            the addresses in FILE (default: lab_addrs) into
#                            $GPUFLEET_DB
#   lab_sim_pids             the sims' process ids, one a line
#
# Needs root (UDP port 623) for lab_start.

lab_init() {
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	cd "$top"
	gf=${GPUFLEET_BIN:-$top/build/cli/gpufleet}
	[ -x "$gf" ] || { echo "build first: ninja -C build" >&2; exit 2; }
	work=$(mktemp -d "/tmp/gf-bench-$1.XXXXXX")
	lab_exit_cmds=()
	trap lab_cleanup EXIT
	trap 'exit 130' INT TERM
	umask 077
}

lab_at_exit() {
	lab_exit_cmds+=("$1")
}

lab_cleanup() {
	local c
	for c in "${lab_exit_cmds[@]}"; do
		eval "$c" || true
	done
	if [ -d "$work/lab" ]; then
		/usr/bin/python3 tests/lab/ipmilab.py stop --dir "$work/lab" || true
	fi
	rm -rf "$work"
}

lab_start() {
	local prefix=$1 count=$2
	shift 2
	echo "bench-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/pw"
	/usr/bin/python3 tests/lab/ipmilab.py start --dir "$work/lab" --prefix "$prefix" \
		--count "$count" --user admin --password-file "$work/pw" "$@"
}

lab_creds() {
	local pw
	pw=$(cat "$work/pw")
	printf '[default]\nbmc_user = admin\nbmc_password = %s\nipmi_workarounds = opensesspriv\nipmi_cipher_suite = 3\n' \
		"$pw" > "$work/cred"
	printf 'driver-type LAN_2_0\nusername admin\npassword %s\nworkaround-flags opensesspriv\ncipher-suite-id 3\n' \
		"$pw" > "$work/freeipmi.conf"
}

lab_info() {
	/usr/bin/python3 - "$work/lab" "$1" <<'PY'
import sys
sys.path.insert(0, 'tests/lab')
from ipmilab import IpmiLab
lab = IpmiLab.attach(sys.argv[1])
if sys.argv[2] == 'range':
    print(lab.hostrange())
else:
    print('\n'.join(lab.addr(i) for i in lab.indices()))
PY
}

lab_addrs() {
	lab_info addrs
}

lab_hostrange() {
	lab_info range
}

lab_sim_pids() {
	awk '{print $1}' "$work/lab/pids" 2>/dev/null | grep -E '^[0-9]+$' || true
}

lab_import() {
	{
		echo "name,bmc,protocol,groups"
		if [ $# -gt 0 ]; then cat "$1"; else lab_addrs; fi |
			awk '{printf "b%04d,%s,ipmi,bench\n", NR, $1}'
	} | "$gf" nodes import - >/dev/null 2>&1
}
