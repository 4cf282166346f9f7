#!/usr/bin/python3
"""bench/udp-delay.py MS READY: slow BMCs for bench/ipmi-power.sh. For each
line "LISTEN TARGET" on stdin (IPv4 addresses), a UDP relay
(tests/lab/udprelay.py) on LISTEN:623 in front of the BMC at TARGET:623 that
holds every datagram MS milliseconds each way, as a BMC that answers late.
Writes READY once every relay listens; runs until stdin's pipe is closed or
it is sent TERM. Loopback addresses only."""
import ipaddress
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "lab"))
from udprelay import UdpRelay  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: udp-delay.py MS READY < pairs")
    delay = float(sys.argv[1]) / 1000.0
    pairs = [line.split() for line in sys.stdin if line.strip()]
    for p in pairs:
        if len(p) != 2 or not all(ipaddress.ip_address(a).is_loopback for a in p):
            sys.exit(f"udp-delay.py: not two loopback addresses: {' '.join(p)}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    relays = []
    try:
        for listen, target in pairs:
            relays.append(UdpRelay(listen, 623, target, 623, delay=delay).start())
        with open(sys.argv[2], "w") as f:
            f.write("ready\n")
        signal.pause()
    finally:
        for r in relays:
            r.stop()


if __name__ == "__main__":
    main()
