#!/bin/bash
# bench/console.sh [N] [SECONDS]: N serial consoles (default 200) logged by one
# process for SECONDS (default 60) each serial port printing as fast as its
# ipmi_sim BMC takes it: gpufleet console log, then Debian's conmand through
# its IPMI support (libipmiconsole), the same consoles, the same check: bytes
# logged = bytes sent (every flood line found in the logs), peak RSS, CPU per
# console. Runs in a network namespace of its own (127.43.110.0/24); needs
# root (UDP port 623, unshare), GNU time, ipmi_sim, a built tree. Installs
# conman with apt-get when it is missing. RATE: bytes a second each port
# prints (default 11520, 115200 baud).
# BURST, PAUSE: the ports print BURST seconds (default 15), then nothing for
# PAUSE seconds (default 8), and again. OpenIPMI's ipmi_sim ends a session
# 30 s after the last IPMI request it received and does not count SOL packets;
# libipmiconsole sends its keep-alive (an IPMI request) only after its
# keep-alive time without a packet from the BMC (gpufleet: 5 s; conman: the
# library's 20 s). So on this lab no SOL session outlives 30 s of unbroken
# output; the pause lets the keep-alive through. BURST=0: print without pause.
set -euo pipefail

n=${1:-200}
secs=${2:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
gf=${GPUFLEET_BIN:-$top/build/cli/gpufleet}
[ -x "$gf" ] || { echo "build first: ninja -C build" >&2; exit 2; }
[ "$n" -le 254 ] || { echo "at most 254 consoles (one /24)" >&2; exit 2; }
[ -x /usr/sbin/conmand ] || apt-get install -y conman >/dev/null

work=$(mktemp -d /tmp/gf-bench-console.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
umask 077
echo "bench-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/pw"

echo "# $(date -u +%FT%TZ) $(uptime)"
echo "# bench/console.sh $n $secs: gpufleet $("$gf" --version 2>/dev/null | head -1), $(dpkg-query -W -f='conman ${Version}' conman)"
unshare -n sh -c 'ip link set lo up && exec /usr/bin/python3 "$0" "$@"' bench/console-lab.py \
	--prefix 127.43.110 --count "$n" --seconds "$secs" --gpufleet "$gf" --work "$work" \
	--password-file "$work/pw" ${RATE:+--rate "$RATE"} --burst "${BURST:-15}" --pause "${PAUSE:-8}"
echo "# $(date -u +%FT%TZ) $(uptime)"
