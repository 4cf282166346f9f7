#!/bin/bash
# Install what gpufleet needs to build and test, from Debian 12's archive only.
# Run as root. Installs nothing when everything is already there.
set -euo pipefail

pkgs=(
	# build
	gcc meson ninja-build pkg-config
	# the layout of the C files (tests/check-format.sh, .clang-format)
	clang-format
	libfreeipmi-dev libipmimonitoring-dev libipmiconsole-dev libcurl4-openssl-dev libjansson-dev
	libssh2-1-dev libsqlite3-dev libinih-dev libcmocka-dev
	# test lab and reference tools
	openipmi libopenipmi-dev freeipmi-tools ipmitool openssh-server openssl sqlite3 groff-base
	python3 python3-pytest hyperfine curl openssh-client valgrind
	# the CPU hogs beside a bench (LOAD=1 bench/ipmi-power.sh)
	stress-ng
	# e2e modules side by side (run-all.sh); a test in a network namespace of its own
	python3-pytest-xdist iproute2
	# the clang fuzz build (README, bench/fuzz.sh): libFuzzer is in libclang-rt-dev
	clang libclang-rt-dev
	# ClusterShell's nodeset: the reference for node set folds (tests only)
	clustershell
	# promtool (metrics and rule checks), and a real Prometheus scraping
	# node_exporter's textfile collector (gpufleet metrics)
	prometheus prometheus-node-exporter
	# headless Chromium opens the HTML report (gpufleet report)
	chromium
)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 2
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
