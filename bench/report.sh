#!/bin/bash
# bench/report.sh [NODES [SWEEPS]]: gpufleet metrics and report --html at fleet scale.
#
# Builds the synthetic inventory of bench/inventory.sh (NODES nodes, default
# 10,000, x 60 components x SWEEPS sweeps, default 30, from
# bench/inventory-gen.py) and measures, RUNS times each (default 5, median),
# wall time, CPU time and peak RSS (GNU time) of
#   metrics   gpufleet metrics --output FILE (every node's last sweep and drift)
#   report    gpufleet report --html FILE (the same rows, with hardware and host facts)
# and the size of the HTML file, and, when Debian's chromium is installed,
# how long headless Chromium takes to load the page and dump its DOM (next to
# an empty page, the browser's own start). Targets: metrics < 1 s, report
# < 3 s, RSS < 200 MB; each figure is printed with its ratio to the target.
# Needs a built tree (ninja -C build) and /usr/bin/time. Prints a Markdown
# table; APPEND=1 adds it to bench/RESULTS.md.
set -euo pipefail

nodes=${1:-10000}
sweeps=${2:-30}
runs=${RUNS:-5}
. "$(dirname "$0")/inventory-lib.sh"
bench_setup report
bench_inventory "$nodes" 1 "$sweeps"

chromium=$(command -v chromium || true)
open_page() {
	local t0 t1
	t0=$(date +%s.%N)
	"$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$work/profile" --dump-dom "file://$1" >/dev/null 2>&1
	t1=$(date +%s.%N)
	printf '%.2f\n' "$(echo "$t1 - $t0" | bc)"
}
echo '<!DOCTYPE html><title>empty</title>' > "$work/empty.html"

declare -A wall cpu rss
for r in $(seq 1 "$runs"); do
	read -r w c m <<<"$(measure "$gf" metrics --output "$work/gpufleet.prom")"
	wall[metrics]+="$w "; cpu[metrics]+="$c "; rss[metrics]+="$m "
	read -r w c m <<<"$(measure "$gf" report --html "$work/fleet.html")"
	wall[report]+="$w "; cpu[report]+="$c "; rss[report]+="$m "
	if [ -n "$chromium" ]; then
		wall[open]+="$(open_page "$work/fleet.html") "
		wall[empty]+="$(open_page "$work/empty.html") "
	fi
done
size=$(stat -c %s "$work/fleet.html")
prom=$(stat -c %s "$work/gpufleet.prom")
rows=$(grep -c '<tr class=' "$work/fleet.html" || true)
said=$("$gf" report --html "$work/fleet.html")

ratio() { printf '%.2f' "$(echo "scale=4; $1 / $2" | bc)"; }

{
	echo
	echo "$(date +%F), \`bash bench/report.sh $nodes $sweeps\` ($runs runs, medians;" \
		"$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) at the end):"
	echo "$sweeps sweeps in the database, $(du -m "$GPUFLEET_DB" | cut -f1) MB; $said;" \
		"$rows heat-map rows; metrics $((prom / 1024)) KiB."
	echo
	echo "| what | target | wall (ratio) | CPU | peak RSS (ratio to 200 MB) |"
	echo "|---|---|---|---|---|"
	echo "| \`metrics --output FILE\` | < 1 s | $(med "${wall[metrics]}") s" \
		"($(ratio "$(med "${wall[metrics]}")" 1)) | $(med "${cpu[metrics]}") s |" \
		"$(mb "${rss[metrics]}") MB ($(ratio "$(mb "${rss[metrics]}")" 200)) |"
	echo "| \`report --html FILE\` | < 3 s | $(med "${wall[report]}") s" \
		"($(ratio "$(med "${wall[report]}")" 3)) | $(med "${cpu[report]}") s |" \
		"$(mb "${rss[report]}") MB ($(ratio "$(mb "${rss[report]}")" 200)) |"
	echo "| the HTML file | | $((size / 1024)) KiB | | |"
	if [ -n "$chromium" ]; then
		echo "| headless Chromium: load the page, dump its DOM | < 5 s |" \
			"$(med "${wall[open]}") s ($(ratio "$(med "${wall[open]}")" 5)) | | |"
		echo "| ... an empty page (the browser's start alone) | | $(med "${wall[empty]}") s | | |"
	fi
} | tee "$work/result.md"
if [ "${APPEND:-0}" = 1 ]; then
	cat "$work/result.md" >> bench/RESULTS.md
fi
