#!/bin/bash
# bench/events.sh [N_IPMI] [N_REDFISH] [SECONDS]: one `gpufleet events follow`
# of N_IPMI ipmi_sim BMCs (default 1000, 127.144.0.0/22, with sensors and event
# logs) and N_REDFISH emulated Redfish BMCs (default 200, DGX dialect, with
# their EventService SSE, 127.144.100.x), at --interval INTERVAL (default 5),
# until the measures below are taken (then SIGTERM). Measured, in that one
# process:
#   - peak RSS (GNU time), target < 150 MB;
#   - idle CPU once every stream is open (utime + stime of /proc/PID/stat over
#     IDLE seconds, default 30, as a share of one core), target < 5 %;
#   - latency of an injected event to its line on stdout: SSE (5 events,
#     target < 1 s) and SEL (3 records added through ipmi_sim's console,
#     target: one interval plus the round);
#   - ingest: FLOOD_NODES (every Redfish BMC) each write FLOOD_EACH (2000)
#     distinct events on their streams, FLOOD_RATE (400) a second each (one
#     stream above 2000 a second is a hostile flood: its node fails); the
#     rate at which the events table grows to all of them (target >= 10,000
#     events/s).
# Beside it, over the same IPMI BMCs at the same interval for SECONDS
# (default 120) each:
# gpufleet following the IPMI BMCs alone, and FreeIPMI's ipmiseld (CPU and
# peak RSS). Before the lab starts, 50 sims are started to measure one's
# memory (PSS); N_IPMI is lowered to what fits in half of MemAvailable (said
# so). The figures, ratios and targets are printed last.
# FOLLOW_ARGS: more options for both follows (e.g. --sessions 1000).
# Needs root (UDP port 623), GNU time, sqlite3, ipmiseld
# (freeipmi-ipmiseld), a built tree; run it in a network namespace.
set -euo pipefail

nipmi=${1:-1000}
nrf=${2:-200}
secs=${3:-120}
interval=${INTERVAL:-5}
idle=${IDLE:-30}
flood_nodes=${FLOOD_NODES:-$nrf}
flood_each=${FLOOD_EACH:-2000}
flood_rate=${FLOOD_RATE:-400}
. "$(dirname "$0")/lab.sh"
lab_init events-all
command -v ipmiseld >/dev/null || { echo "ipmiseld is needed (freeipmi-ipmiseld)" >&2; exit 2; }
[ "$flood_nodes" -le "$nrf" ] || { echo "FLOOD_NODES must be <= N_REDFISH" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" # one socket per BMC, and ipmi_sim's
echo "load before: $(uptime)"

# ---- the lab's own memory: one sim's PSS, then what fits -----------------------------
pss_kib() {
	local p s=0 v
	for p in "$@"; do
		v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
		s=$((s + ${v:-0}))
	done
	echo "$s"
}
lab_start 127.144.0 50 --sensors > /dev/null
probe=$(pss_kib $(lab_sim_pids))
/usr/bin/python3 tests/lab/ipmilab.py stop --dir "$work/lab" > /dev/null
rm -rf "$work/lab"
per=$((probe / 50))
avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
fit=$((avail / 2 / (per > 0 ? per : 1)))
echo "lab memory: one ipmi_sim (with sensors) ${per} KiB PSS; $nipmi need" \
	"$((per * nipmi / 1024)) MiB; MemAvailable $((avail / 1024)) MiB"
if [ "$nipmi" -gt "$fit" ]; then
	echo "lab memory: only $fit sims fit in half of MemAvailable: N_IPMI lowered to $fit"
	nipmi=$fit
fi

# ---- the labs -----------------------------------------------------------------------
lab_start 127.144.0 "$nipmi" --sensors
lab_creds
labpss=$(pss_kib $(lab_sim_pids))
echo "lab memory: $nipmi ipmi_sim running, $((labpss / 1024)) MiB PSS in all"
/usr/bin/python3 tests/lab/redfish_emu.py start --dir "$work/rf" --prefix 127.144.100 \
	--count "$nrf" --vendors dgx --user admin --password-file "$work/pw" \
	${WORKERS:+--workers "$WORKERS"}
lab_at_exit '/usr/bin/python3 tests/lab/redfish_emu.py stop --dir "$work/rf"'
rfport=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/rf/lab.json'))['port'])")
printf 'redfish_cacert = %s\n' "$work/rf/ca.pem" >> "$work/cred"
# ipmiseld reads the same keys as the other FreeIPMI tools, and its poll interval.
{ cat "$work/freeipmi.conf"; echo "poll-interval $interval"; } > "$work/ipmiseld.conf"
mkdir -p "$work/cache" "$work/icache"
export GPUFLEET_DB=$work/db GPUFLEET_CREDENTIALS=$work/cred XDG_CACHE_HOME=$work/cache TZ=UTC
{
	echo "name,bmc,protocol,groups"
	lab_addrs | awk '{printf "b%04d,%s,ipmi,evipmi\n", NR, $1}'
	awk -v p="$rfport" '{printf "r%04d,%s:%s,redfish,evrf\n", NR, $1, p}' "$work/rf/addrs"
} | "$gf" nodes import - > /dev/null

# The lab's hands: events into the BMCs, and what came out of gpufleet.
cat > "$work/hands.py" <<'PY'
import json, os, sqlite3, sys, time
sys.path.insert(0, 'tests/lab')
import ipmisensors as S
from ipmilab import IpmiLab
from redfish_emu import RedfishLab

work, what = sys.argv[1], sys.argv[2]
out = os.path.join(work, 'out')


def wait_line(pred, since, timeout):
    """Seconds until a line of stdout from offset @since matches @pred."""
    t0 = time.monotonic()
    with open(out) as f:
        f.seek(since)
        buf = ''
        while time.monotonic() - t0 < timeout:
            chunk = f.read()
            if not chunk:
                time.sleep(0.002)
                continue
            buf += chunk
            *lines, buf = buf.split('\n')
            for ln in lines:
                if ln and pred(json.loads(ln)):
                    return time.monotonic() - t0
    return None


if what == 'ready':  # every stream open
    rf = RedfishLab.attach(os.path.join(work, 'rf'))
    end = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < end:
        n = sum(rf.ctl(i, 'GET', '/events/state')['streams'] for i in rf.indices())
        if n >= len(rf.indices()):
            print(n)
            sys.exit(0)
        time.sleep(0.5)
    print(n)
    sys.exit(1)
elif what == 'sse':  # latency of 5 injected events
    rf = RedfishLab.attach(os.path.join(work, 'rf'))
    got = []
    for k in range(1, 6):
        i = (k * 37) % len(rf.indices()) + 1
        end = time.monotonic() + 120  # its stream open (see flood)
        while not rf.ctl(i, 'GET', '/events/state')['streams'] and time.monotonic() < end:
            time.sleep(0.2)
        size = os.path.getsize(out)
        t0 = time.monotonic()
        eid = rf.ctl(i, 'POST', '/events/inject', {'count': 1})['ids'][0]
        t = wait_line(lambda e: e['node'] == 'r%04d' % i and e['id'] == str(eid), size, 10)
        got.append(t if t is None else time.monotonic() - t0)
    print(' '.join('%.3f' % t if t is not None else 'missed' for t in got))
elif what == 'sel':  # latency of 3 SEL records
    lab = IpmiLab.attach(os.path.join(work, 'lab'))
    limit = float(sys.argv[3])
    got = []
    for k in range(1, 4):
        size = os.path.getsize(out)
        i = (k * 331) % lab.count + 1
        t0 = time.monotonic()
        S.add_event(lab, i, 'PSU1 Status', S.PSU_FAILED)
        t = wait_line(lambda e: e['node'] == 'b%04d' % i and e['source'] == 'sel', size, limit)
        got.append(t if t is None else time.monotonic() - t0)
    print(' '.join('%.3f' % t if t is not None else 'missed' for t in got))
elif what == 'flood':  # the events table's growth rate under a flood
    rf = RedfishLab.attach(os.path.join(work, 'rf'))
    nodes, each, rate = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    db = sqlite3.connect('file:%s?mode=ro' % os.path.join(work, 'db'), uri=True, timeout=30)
    count = lambda: db.execute('SELECT count(*) FROM events').fetchone()[0]
    # A flood reaches the streams open now only: wait for theirs (a stream
    # that stalled is reopened by gpufleet after 90 s of silence).
    end = time.monotonic() + 120
    while time.monotonic() < end and not all(
            rf.ctl(i, 'GET', '/events/state')['streams'] for i in range(1, nodes + 1)):
        time.sleep(0.2)
    before = count()
    want = before + nodes * each
    t0 = time.monotonic()
    for i in range(1, nodes + 1):
        rf.ctl(i, 'POST', '/events/flood', {'count': each, 'rate': rate})
    sent = time.monotonic() - t0
    while count() < want and time.monotonic() - t0 < 300:
        time.sleep(0.05)
    took = time.monotonic() - t0
    print('%d %.3f %.3f' % (count() - before, took, sent))
PY
hands() { /usr/bin/python3 "$work/hands.py" "$work" "$@"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
child_of() { # the process GNU time runs
	local k
	for k in $(seq 1 100); do
		pgrep -P "$1" && return 0
		sleep 0.05
	done
	return 1
}

# ---- the baseline (every log's first read), untimed -----------------------------------
"$gf" events follow @evipmi @evrf --duration 1 --interval 1 --format ndjson --no-progress \
	> /dev/null 2> "$work/err0" || true
echo "baseline: $(sqlite3 "$work/db" 'SELECT count(*) FROM events') events stored" \
	"($(wc -l < "$work/err0") error lines $(head -c 160 "$work/err0" | head -1))"

# ---- the measured follow ---------------------------------------------------------------
: > "$work/out"
/usr/bin/time -f '%M %U %S %e' -o "$work/time" \
	"$gf" events follow @evipmi @evrf --interval "$interval" ${FOLLOW_ARGS:-} \
	--format ndjson --no-progress > "$work/out" 2> "$work/err" &
tpid=$!
lab_at_exit "kill $tpid 2>/dev/null"
gpid=$(child_of "$tpid")
t_start=$(date +%s.%N)
streams=$(hands ready 120 || true)
kill -0 "$gpid" 2>/dev/null || { echo "the follow ended early:" >&2; cat "$work/err" >&2; exit 1; }
t_ready=$(date +%s.%N)
echo "ready: $streams of $nrf streams open after $(echo "$t_ready $t_start" | awk '{printf "%.1f", $1 - $2}') s"
c0=$(cpu_ticks "$gpid")
w0=$(date +%s.%N)
sleep "$idle" # the measurement window, not a synchronisation
c1=$(cpu_ticks "$gpid")
w1=$(date +%s.%N)
idle_cpu=$(echo "$c0 $c1 $w0 $w1 $(getconf CLK_TCK)" |
	awk '{printf "%.2f", 100 * ($2 - $1) / $5 / ($4 - $3)}')
rss_idle=$(awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$gpid/status")
sse=$(hands sse)
sel=$(hands sel "$(echo "$interval" | awk '{print 3 * $1 + 30}')")
flood=$(hands flood "$flood_nodes" "$flood_each" "$flood_rate")
kill -TERM "$gpid" # SIGTERM: the follow's normal end (exit 0)
wait "$tpid" || true
read -r rss user sys wall < <(tail -1 "$work/time")
errors=$(wc -l < "$work/err")
read -r stored took sent <<< "$flood"
rate=$(echo "$stored $took" | awk '{printf "%.0f", $1 / $2}')

# ---- beside it: the IPMI BMCs alone, gpufleet and ipmiseld ------------------------------
/usr/bin/time -f '%M %U %S %e' -o "$work/time2" \
	"$gf" events follow @evipmi --duration "$secs" --interval "$interval" ${FOLLOW_ARGS:-} --format ndjson \
	--no-progress > /dev/null 2> "$work/err2" || true
read -r g_rss g_user g_sys g_wall < <(tail -1 "$work/time2")
/usr/bin/time -f '%M %U %S %e' -o "$work/time3" \
	timeout -s TERM "$secs" ipmiseld -h "$(lab_addrs | paste -sd,)" --config-file "$work/ipmiseld.conf" \
	--poll-interval "$interval" --cache-directory "$work/icache" --foreground \
	> /dev/null 2> "$work/err3" || true
read -r i_rss i_user i_sys i_wall < <(tail -1 "$work/time3")

pct() { echo "$1 $2 $3" | awk '{printf "%.2f", 100 * ($1 + $2) / $3}'; }
g_cpu=$(pct "$g_user" "$g_sys" "$g_wall")
i_cpu=$(pct "$i_user" "$i_sys" "$i_wall")
echo "load after: $(uptime)"
echo
echo "events follow of $nipmi IPMI + $nrf Redfish BMCs, interval $interval s, $wall s:"
echo "  peak RSS                 $((rss / 1024)) MiB (target < 150 MB; $rss_idle MiB when idle)"
echo "  CPU over the whole run   $(pct "$user" "$sys" "$wall") % of one core (with the flood)"
echo "  idle CPU, ${idle} s window  $idle_cpu % of one core (target < 5 %)"
echo "  SSE event to stdout      $sse s (target < 1 s)"
echo "  SEL record to stdout     $sel s (target < one interval, $interval s, plus the round)"
echo "  ingest                   $stored events from $flood_nodes streams in $took s:" \
	"$rate events/s (target >= 10000; offered $((flood_nodes * flood_rate))/s," \
	"$flood_rate/s a stream)"
echo "  errors on stderr         $errors lines $(head -c 200 "$work/err" | head -1)"
echo "IPMI only, $nipmi BMCs, interval $interval s, side by side:"
echo "  gpufleet events follow   CPU $g_cpu % of one core, peak RSS $((g_rss / 1024)) MiB"
echo "  ipmiseld                 CPU $i_cpu % of one core, peak RSS $((i_rss / 1024)) MiB" \
	"($(grep -vc '^Command' "$work/err3" || true) lines on stderr $(grep -v '^Command' "$work/err3" | head -c 160 | head -1))"
echo "  ratio gpufleet / ipmiseld: CPU $(echo "$g_cpu $i_cpu" |
	awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}'), RSS $(echo "$g_rss $i_rss" |
	awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}')"
