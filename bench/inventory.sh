#!/bin/bash
# bench/inventory.sh [NODES [SWEEPS]]: the inventory at fleet scale.
#
# Builds a synthetic database of NODES nodes (default 10,000) x 60 components
# x SWEEPS sweeps (default 30) from bench/inventory-gen.py, through the same
# store code a sweep uses (`gpufleet inventory import` of export lines), then
# measures, RUNS times each (default 5, median):
#   store  storing one more sweep of NODES nodes: the time inside the store
#          (gpufleet -v prints it), and the whole import with reading the file
#   drift  gpufleet drift --majority over every node (table, and --format json)
#   diff   gpufleet diff of the last two sweeps
# with peak RSS (GNU time) and CPU time. Targets: store < 2 s, drift < 0.5 s,
# diff < 0.5 s, RSS < 100 MB. Needs a built tree (ninja -C build) and
# /usr/bin/time. Prints a Markdown table; APPEND=1 adds it to bench/RESULTS.md.
set -euo pipefail

nodes=${1:-10000}
sweeps=${2:-30}
runs=${RUNS:-5}
. "$(dirname "$0")/inventory-lib.sh"
bench_setup inv
gen=bench/inventory-gen.py
bench_inventory "$nodes" 1 $((sweeps - 1))
/usr/bin/python3 $gen "$nodes" "$sweeps" "$sweeps" > "$work/last.ndjson"

declare -A wall cpu rss
store_in=()
for r in $(seq 1 "$runs"); do
	# Each run stores the same sweep into a copy of the database.
	cp "$GPUFLEET_DB" "$work/run.db"
	read -r w c m <<<"$(GPUFLEET_DB=$work/run.db measure "$gf" -v inventory import "$work/last.ndjson")"
	s=$(sed -n 's/.* s in all, \([0-9.]*\) s storing.*/\1/p' "$work/err")
	store_in+=("$s")
	wall[import]+="$w "; cpu[import]+="$c "; rss[import]+="$m "
	rm -f "$work/run.db" "$work/run.db-wal" "$work/run.db-shm"
done
"$gf" inventory import "$work/last.ndjson" >/dev/null
n=$(( $("$gf" inventory sweeps --format json | grep -c '"sweep"') ))
for r in $(seq 1 "$runs"); do
	read -r w c m <<<"$(measure "$gf" drift)"
	wall[drift]+="$w "; cpu[drift]+="$c "; rss[drift]+="$m "
	read -r w c m <<<"$(measure "$gf" drift --format json)"
	wall[driftj]+="$w "; cpu[driftj]+="$c "; rss[driftj]+="$m "
	read -r w c m <<<"$(measure "$gf" diff $((n - 1)) "$n")"
	wall[diff]+="$w "; cpu[diff]+="$c "; rss[diff]+="$m "
done
summary=$("$gf" drift | tail -n 1)
changes=$("$gf" diff $((n - 1)) "$n" | tail -n 1)

{
	echo
	echo "$(date +%F), \`bash bench/inventory.sh $nodes $sweeps\` ($runs runs, medians;" \
		"$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) at the end):"
	echo "$n sweeps in the database, $(du -m "$GPUFLEET_DB" | cut -f1) MB;" \
		"drift: $summary; diff: $changes."
	echo
	echo "| what | target | wall | CPU | peak RSS |"
	echo "|---|---|---|---|---|"
	echo "| store one sweep of $nodes nodes (inside the store) | < 2 s |" \
		"$(printf '%s\n' "${store_in[@]}" | median) s | | |"
	echo "| ... the whole \`inventory import\` of it (reading 60 components x $nodes lines) | |" \
		"$(med "${wall[import]}") s | $(med "${cpu[import]}") s | $(mb "${rss[import]}") MB |"
	echo "| \`drift\` (majority by model), table | < 0.5 s |" \
		"$(med "${wall[drift]}") s | $(med "${cpu[drift]}") s | $(mb "${rss[drift]}") MB |"
	echo "| \`drift --format json\` (every node) | < 0.5 s |" \
		"$(med "${wall[driftj]}") s | $(med "${cpu[driftj]}") s | $(mb "${rss[driftj]}") MB |"
	echo "| \`diff\` of the last two sweeps | < 0.5 s |" \
		"$(med "${wall[diff]}") s | $(med "${cpu[diff]}") s | $(mb "${rss[diff]}") MB |"
} | tee "$work/result.md"
if [ "${APPEND:-0}" = 1 ]; then
	cat "$work/result.md" >> bench/RESULTS.md
fi
