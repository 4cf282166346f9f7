#!/usr/bin/python3
"""bench/udp-delay.py MS READY: slow BMCs for bench/ipmi-power.sh. For each
line "LISTEN TARGET" on stdin (IPv4 loopback addresses), a UDP relay on
LISTEN:623 in front of the BMC at TARGET:623 that holds every datagram MS
milliseconds each way, as a BMC that answers late. Each client address gets
an upstream socket of its own, so the BMC sees one peer per client (closed
once idle IDLE_S: every run of a tool is a new client). One thread and one
poll() loop for every relay (a thread per relay, as tests/lab/udprelay.py
has it, fell behind at 50 BMCs). Writes READY once every relay listens;
runs until it is sent TERM."""
import heapq
import ipaddress
import resource
import select
import signal
import socket
import sys
import time

IDLE_S = 5.0


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: udp-delay.py MS READY < pairs")
    delay = float(sys.argv[1]) / 1000.0
    pairs = [line.split() for line in sys.stdin if line.strip()]
    for p in pairs:
        if len(p) != 2 or not all(ipaddress.ip_address(a).is_loopback for a in p):
            sys.exit(f"udp-delay.py: not two loopback addresses: {' '.join(p)}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    poller = select.poll()
    sock = {}       # fd -> socket
    front = {}      # listening fd -> (listen address, target address)
    up = {}         # (listening fd, client) -> upstream socket
    down = {}       # upstream fd -> [listening socket, client, last used]
    queue = []      # (due, seq, socket, datagram, destination)
    seq = 0
    swept = time.monotonic()
    for listen, target in pairs:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((listen, 623))
        s.setblocking(False)
        sock[s.fileno()] = s
        front[s.fileno()] = (listen, (target, 623))
        poller.register(s, select.POLLIN)
    with open(sys.argv[2], "w") as f:
        f.write("ready\n")
    while True:
        wait = max(0.0, queue[0][0] - time.monotonic()) if queue else IDLE_S
        for fd, _ in poller.poll(wait * 1000.0):
            s = sock[fd]
            try:
                data, addr = s.recvfrom(65536)
            except OSError:
                continue
            seq += 1
            now = time.monotonic()
            if fd in front:
                u = up.get((fd, addr))
                if u is None:
                    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    u.bind((front[fd][0], 0))
                    u.setblocking(False)
                    up[(fd, addr)] = u
                    sock[u.fileno()] = u
                    down[u.fileno()] = [s, addr, now, (fd, addr)]
                    poller.register(u, select.POLLIN)
                down[u.fileno()][2] = now
                heapq.heappush(queue, (now + delay, seq, u, data, front[fd][1]))
            else:
                back, client, _, _ = down[fd]
                down[fd][2] = now
                heapq.heappush(queue, (now + delay, seq, back, data, client))
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, s, data, dest = heapq.heappop(queue)
            try:
                s.sendto(data, dest)
            except OSError:
                pass
        if now - swept > IDLE_S and not queue:
            swept = now
            for fd in [fd for fd, d in down.items() if now - d[2] > IDLE_S]:
                u = sock.pop(fd)
                poller.unregister(u)
                del up[down.pop(fd)[3]]
                u.close()


if __name__ == "__main__":
    main()
