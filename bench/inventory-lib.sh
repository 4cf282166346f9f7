# Sourced by bench/inventory.sh and bench/report.sh: the tool, a work folder,
# the synthetic inventory of bench/inventory-gen.py, and measuring a command.

# bench_setup NAME: $top (the source tree, also the current folder), $gf
# (the binary: $GPUFLEET_BIN or build/cli/gpufleet), $work (a new folder,
# removed at exit) and GPUFLEET_DB in it; exits 2 without the binary or GNU time.
bench_setup() {
	top=$(cd "$(dirname "$0")/.." && pwd)
	cd "$top"
	gf=${GPUFLEET_BIN:-$top/build/cli/gpufleet}
	[ -x "$gf" ] || { echo "build first: ninja -C build" >&2; exit 2; }
	[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
	work=$(mktemp -d "/tmp/gf-bench-$1.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	trap 'exit 130' INT TERM
	export GPUFLEET_DB=$work/inventory.db
}

# bench_inventory NODES FIRST LAST: import sweeps FIRST..LAST of NODES nodes.
bench_inventory() {
	local t0 t1
	t0=$(date +%s.%N)
	/usr/bin/python3 bench/inventory-gen.py "$1" "$2" "$3" | "$gf" inventory import - >/dev/null
	t1=$(date +%s.%N)
	echo "built $(($3 - $2 + 1)) sweeps of $1 nodes in $(printf '%.0f' "$(echo "$t1 - $t0" | bc)") s" \
		"($(du -m "$GPUFLEET_DB" | cut -f1) MB)" >&2
}

# One measured command: prints "wall cpu rss_kb" and keeps its stderr in $work/err.
measure() {
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/err"
	read -r wall user sys rss < "$work/time"
	echo "$wall $(printf '%.2f' "$(echo "$user + $sys" | bc)") $rss"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The median of the words of $1, and of kB as MB.
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
mb() { echo "scale=1; $(med "$1") / 1024" | bc; }
