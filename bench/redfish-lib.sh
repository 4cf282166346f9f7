# Sourced by bench/redfish-firmware.sh and bench/update.sh: a lab of emulated
# Redfish BMCs (tests/lab/redfish_emu.py) registered in a scratch inventory.

# rf_setup TOOL...: $top (the source tree, then the current folder) and $gf
# (the binary: $GPUFLEET_BIN or build/cli/gpufleet); exits 2 without it or
# without one of the TOOLs.
rf_setup() {
	top=$(cd "$(dirname "$0")/.." && pwd)
	cd "$top"
	gf=${GPUFLEET_BIN:-$top/build/cli/gpufleet}
	[ -x "$gf" ] || { echo "build first: ninja -C build" >&2; exit 2; }
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 2; }
	done
}

# rf_lab TAG N PREFIX VENDORS NAME [start options...]: starts N BMCs of
# VENDORS on PREFIX (WORKERS emulator processes when set) in $work (a new
# folder; the lab stopped and the folder removed at exit), and sets $ca,
# $port, a credentials file and GPUFLEET_DB / GPUFLEET_CREDENTIALS for
# gpufleet, $work/netrc for curl (no password on argv); the BMCs are
# registered as NAME0001... in group bench. Needs $top (the source tree,
# the current folder) and $gf.
rf_lab() {
	local tag=$1 n=$2 prefix=$3 vendors=$4 name=$5 pw i a
	shift 5
	work=$(mktemp -d "/tmp/gf-bench-$tag.XXXXXX")
	trap '/usr/bin/python3 tests/lab/redfish_emu.py stop --dir "$work/lab" || true; rm -rf "$work"' EXIT
	trap 'exit 130' INT TERM
	umask 077
	echo "bench-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/pw"
	local wargs=()
	[ -n "${WORKERS:-}" ] && wargs=(--workers "$WORKERS")
	/usr/bin/python3 tests/lab/redfish_emu.py start --dir "$work/lab" --prefix "$prefix" \
		--count "$n" --vendors "$vendors" --user admin --password-file "$work/pw" \
		"${wargs[@]}" "$@"
	ca=$work/lab/ca.pem
	port=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/lab/lab.json'))['port'])")
	pw=$(cat "$work/pw")
	printf '[default]\nbmc_user = admin\nbmc_password = %s\nredfish_cacert = %s\n' "$pw" "$ca" \
		> "$work/cred"
	printf 'default login admin password %s\n' "$pw" > "$work/netrc"
	export GPUFLEET_DB=$work/db
	export GPUFLEET_CREDENTIALS=$work/cred
	{
		echo "name,bmc,protocol,groups"
		i=0
		while read -r a; do
			i=$((i + 1))
			printf '%s%04d,%s:%s,redfish,bench\n' "$name" "$i" "$a" "$port"
		done < "$work/lab/addrs"
	} | "$gf" nodes import - >/dev/null
}
