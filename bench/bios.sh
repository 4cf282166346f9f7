#!/bin/bash
# bench/bios.sh [NODES [SWEEPS [ATTRS]]]: BIOS settings in the inventory at fleet scale.
#
# Builds a synthetic database of NODES nodes (default 10,000) x (60 components
# + ATTRS BIOS settings, default 400) x SWEEPS sweeps (default 30) from
# bench/bios-gen.py (bench/inventory-gen.py's fleet plus the settings: a
# changed default on half a model, settings changed by hand on a few nodes;
# PER_NODE=k adds k per-node values the sweep would keep), through the same store code a sweep uses
# (`gpufleet inventory import`), then measures, RUNS times each (default 3,
# median):
#   store  storing one more sweep: the time inside the store (gpufleet -v)
#   drift  gpufleet drift --component 'bios.*' (majority by model)
# with peak RSS (GNU time), and reports the DB size and its lists and rows.
# Targets: store < 3 s, drift < 1 s, RSS < 150 MB. There is no reference
# tool that keeps BIOS settings history to run side by side; the reference
# is the same fleet without the settings (bench/inventory.sh: 123 MB, store
# 0.97 s). Needs a built tree and /usr/bin/time. Prints a Markdown table;
# APPEND=1 adds it to bench/RESULTS.md.
set -euo pipefail

nodes=${1:-10000}
sweeps=${2:-30}
attrs=${3:-400}
runs=${RUNS:-3}
. "$(dirname "$0")/inventory-lib.sh"
bench_setup bios
gen=bench/bios-gen.py
t0=$(date +%s)
per_node=${PER_NODE:-0}
/usr/bin/python3 $gen "$nodes" 1 $((sweeps - 1)) "$attrs" "$per_node" | "$gf" inventory import - >/dev/null
echo "built $((sweeps - 1)) sweeps in $(($(date +%s) - t0)) s" >&2
/usr/bin/python3 $gen "$nodes" "$sweeps" "$sweeps" "$attrs" "$per_node" > "$work/last.ndjson"

declare -A wall cpu rss
store_in=()
for r in $(seq 1 "$runs"); do
	cp "$GPUFLEET_DB" "$work/run.db"
	read -r w c m <<<"$(GPUFLEET_DB=$work/run.db measure "$gf" -v inventory import "$work/last.ndjson")"
	store_in+=("$(sed -n 's/.* s in all, \([0-9.]*\) s storing.*/\1/p' "$work/err")")
	wall[import]+="$w "; cpu[import]+="$c "; rss[import]+="$m "
	rm -f "$work/run.db" "$work/run.db-wal" "$work/run.db-shm"
done
"$gf" inventory import "$work/last.ndjson" >/dev/null
for r in $(seq 1 "$runs"); do
	read -r w c m <<<"$(measure "$gf" drift --component 'bios.*')"
	wall[drift]+="$w "; cpu[drift]+="$c "; rss[drift]+="$m "
	read -r w c m <<<"$(measure "$gf" drift --component 'bios.*' --format json)"
	wall[driftj]+="$w "; cpu[driftj]+="$c "; rss[driftj]+="$m "
done
summary=$("$gf" drift --component 'bios.*' | tail -n 1)
q() { sqlite3 "$GPUFLEET_DB" "$1"; }
lists=$(q "SELECT count(*) FROM csets")
blists=$(q "SELECT count(DISTINCT bios_cset) FROM sweep_nodes")
rows=$(q "SELECT count(*) FROM components")

{
	echo
	echo "$(date +%F), \`PER_NODE=$per_node bash bench/bios.sh $nodes $sweeps $attrs\` ($runs runs, medians;" \
		"$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) at the end):"
	echo "$sweeps sweeps of $nodes nodes x (60 + $attrs) components, DB $(du -m "$GPUFLEET_DB" | cut -f1) MB" \
		"($lists component lists, $blists of them BIOS settings, $rows component rows);" \
		"drift: $summary."
	echo
	echo "| what | target | wall | CPU | peak RSS |"
	echo "|---|---|---|---|---|"
	echo "| store one sweep (inside the store) | < 3 s | $(printf '%s\n' "${store_in[@]}" | median) s | | |"
	echo "| ... the whole \`inventory import\` of it | |" \
		"$(med "${wall[import]}") s | $(med "${cpu[import]}") s | $(mb "${rss[import]}") MB |"
	echo "| \`drift --component 'bios.*'\`, table | < 1 s |" \
		"$(med "${wall[drift]}") s | $(med "${cpu[drift]}") s | $(mb "${rss[drift]}") MB |"
	echo "| ... \`--format json\` | < 1 s |" \
		"$(med "${wall[driftj]}") s | $(med "${cpu[driftj]}") s | $(mb "${rss[driftj]}") MB |"
} | tee "$work/result.md"
if [ "${APPEND:-0}" = 1 ]; then
	cat "$work/result.md" >> bench/RESULTS.md
fi
