#!/bin/bash
# The README's first command: on a fresh Debian 12 machine as root, install
# what is missing, build gpufleet, start the bundled loopback lab and run the
# main job on it. Everything runs on 127.30.0.0/16 and is stopped at the end
# (by PID), also on failure or Ctrl-C. --keep leaves the lab running.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
keep=0
[ "${1:-}" = "--keep" ] && keep=1
count=${GF_DEMO_NODES:-20}

tests/install-deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build -Dwerror=true >/dev/null
fi
ninja -C build >/dev/null
gf=$top/build/cli/gpufleet

work=$(mktemp -d /tmp/gpufleet-demo.XXXXXX)
cleanup() {
	if [ $keep -eq 0 ]; then
		/usr/bin/python3 tests/lab/ipmilab.py stop --dir "$work/ipmi" || true
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The lab's password lives in files, never on a command line.
umask 077
head -c 9 /dev/urandom | base64 | tr -d '/+=' > "$work/bmc-password"
/usr/bin/python3 tests/lab/ipmilab.py start --dir "$work/ipmi" --prefix 127.30.0 \
	--count "$count" --user admin --password-file "$work/bmc-password" --power off
{
	echo "[default]"
	echo "bmc_user = admin"
	echo "bmc_password_command = cat $work/bmc-password"
	echo "ipmi_workarounds = opensesspriv"
} > "$work/credentials"

export GPUFLEET_DB=$work/inventory.db
export GPUFLEET_CREDENTIALS=$work/credentials

{
	echo "name,bmc,protocol,groups"
	for i in $(seq 1 "$count"); do
		rack=rack$(( (i - 1) / 10 + 1 ))
		printf 'gpu%03d,127.30.0.%d,ipmi,%s;lab\n' "$i" "$i" "$rack"
	done
} | "$gf" nodes import -

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say "gpufleet nodes list gpu[001-003],gpu020"
"$gf" nodes list "gpu[001-003],gpu020"
say gpufleet power status @lab -C
"$gf" power status @lab -C
say gpufleet power on @lab --batch 5 --interval 1 --wait
"$gf" power on @lab --batch 5 --interval 1 --wait --no-progress -C
say gpufleet power status @lab -C
"$gf" power status @lab -C
say "sqlite3 \$GPUFLEET_DB 'select ... from audit'   (when each node was switched on)"
sqlite3 -column -header "$GPUFLEET_DB" \
	"select node, strftime('%H:%M:%f', time, 'unixepoch') as sent, verb, user, result
	 from audit order by time limit 12"
if [ $keep -eq 1 ]; then
	echo
	echo "lab left running: GPUFLEET_DB=$GPUFLEET_DB GPUFLEET_CREDENTIALS=$GPUFLEET_CREDENTIALS"
	echo "stop it with: python3 tests/lab/ipmilab.py stop --dir $work/ipmi"
fi
