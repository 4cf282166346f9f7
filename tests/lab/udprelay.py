#!/usr/bin/python3
"""A UDP relay in front of a lab BMC that delays and drops packets: a slow or
lossy BMC (RMCP+ on port 623) for deadline tests.

    with UdpRelay('127.42.10.50', 623, lab.addr(1), 623, delay=0.1) as relay:
        ...                        # talk to 127.42.10.50:623 as to the BMC
        relay.drop = 1.0           # now it is dead: nothing gets through
        relay.counts               # {'in': client datagrams, 'out': answers, 'dropped': n}

Each client address gets its own upstream socket, so the BMC sees one peer
per client as it would without the relay. @delay (seconds) is added to every
datagram each way; @drop is the share of client datagrams thrown away (a
seeded generator, so a run is repeatable); @drop_answers the share of the
BMC's answers. counts['session'] is how many in-session IPMI answers
(RMCP+ payload type IPMI with a session ID: the commands after a session is
open) came from the BMC; @session_answers, when not None, is how many of them
get through; every later one is dropped (counted in 'session_dropped'): a BMC
that opens sessions, then stops answering in them. @auth_caps_first: an RMCP+
Open Session Request from a client that has sent no Get Channel Authentication
Capabilities through the relay yet is dropped (counted in 'opens_dropped'), as
a BMC that wants that command before a session would ignore it.
counts['opens'] is how many Open Session Requests clients sent, and
counts['auth_caps'] how many Get Channel Authentication Capabilities (the
ping). counts['logins'] is how many
RAKP Message 1 the client sent: one per session it logged in to (an Open
Session Request the BMC refused, such as a cipher suite it lacks, has none).
Only the Python standard library; one thread.
"""

import heapq
import random
import select
import socket
import threading
import time


def _rmcpplus_payload(data):
    """The payload type of an RMCP+ (auth type 6) IPMI datagram, None for another."""
    if len(data) >= 6 and data[0] == 0x06 and data[3] == 0x07 and data[4] == 0x06:
        return data[5] & 0x3F
    return None


def _rakp1(data):
    """A RAKP Message 1 (payload type 0x12): a session's login."""
    return _rmcpplus_payload(data) == 0x12


def _open_session(data):
    """An RMCP+ Open Session Request (payload type 0x10)."""
    return _rmcpplus_payload(data) == 0x10


def _auth_caps(data):
    """IPMI 1.5 outside a session, Get Channel Authentication Capabilities (0x38)."""
    return (len(data) >= 20 and data[0] == 0x06 and data[3] == 0x07 and data[4] == 0x00
            and data[15] >> 2 == 0x06 and data[19] == 0x38)


def _in_session(data):
    """An IPMI payload (type 0) with a session ID: a command in a session."""
    return len(data) >= 16 and _rmcpplus_payload(data) == 0x00 and data[6:10] != b'\0\0\0\0'


class UdpRelay:
    def __init__(self, listen_addr, listen_port, target_addr, target_port, delay=0.0,
                 drop=0.0, drop_answers=0.0, seed=1, session_answers=None,
                 auth_caps_first=False):
        self.listen = (listen_addr, listen_port)
        self.target = (target_addr, target_port)
        self.delay = float(delay)
        self.drop = float(drop)
        self.drop_answers = float(drop_answers)
        self.session_answers = session_answers
        self.auth_caps_first = auth_caps_first
        self._asked = set()  # clients that sent Get Channel Authentication Capabilities
        self.counts = {'in': 0, 'out': 0, 'dropped': 0, 'session': 0, 'session_dropped': 0,
                       'logins': 0, 'opens': 0, 'opens_dropped': 0, 'auth_caps': 0}
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = None
        self._up = {}        # client address -> upstream socket
        self._down = {}      # upstream socket fileno -> client address
        self._queue = []     # (due, seq, socket, data, address)
        self._seq = 0
        self._thread = None

    def start(self):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(self.listen)
        self._thread = threading.Thread(target=self._run, name='udprelay', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(5)
        for s in self._up.values():
            s.close()
        if self._sock:
            self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _later(self, sock, data, addr):
        with self._lock:
            self._seq += 1
            heapq.heappush(self._queue, (time.monotonic() + self.delay, self._seq, sock, data,
                                         addr))

    def _upstream(self, client):
        s = self._up.get(client)
        if s is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((self.listen[0], 0))
            self._up[client] = s
            self._down[s.fileno()] = client
        return s

    def _run(self):
        while not self._stop.is_set():
            with self._lock:
                due = self._queue[0][0] if self._queue else None
            wait = 0.05 if due is None else max(0.0, min(0.05, due - time.monotonic()))
            socks = [self._sock] + list(self._up.values())
            try:
                ready, _, _ = select.select(socks, [], [], wait)
            except (OSError, ValueError):
                return
            for s in ready:
                try:
                    data, addr = s.recvfrom(65536)
                except OSError:
                    continue
                if s is self._sock:
                    self.counts['in'] += 1
                    if _rakp1(data):
                        self.counts['logins'] += 1
                    if _auth_caps(data):
                        self.counts['auth_caps'] += 1
                        self._asked.add(addr)
                    if _open_session(data):
                        self.counts['opens'] += 1
                        if self.auth_caps_first and addr not in self._asked:
                            self.counts['opens_dropped'] += 1
                            continue
                    if self.drop and self._rng.random() < self.drop:
                        self.counts['dropped'] += 1
                        continue
                    self._later(self._upstream(addr), data, self.target)
                else:
                    if self.drop_answers and self._rng.random() < self.drop_answers:
                        self.counts['dropped'] += 1
                        continue
                    if _in_session(data):
                        self.counts['session'] += 1
                        if (self.session_answers is not None
                                and self.counts['session'] > self.session_answers):
                            self.counts['session_dropped'] += 1
                            continue
                    self._later(self._sock, data, self._down[s.fileno()])
            now = time.monotonic()
            while True:
                with self._lock:
                    if not self._queue or self._queue[0][0] > now:
                        break
                    _, _, s, data, addr = heapq.heappop(self._queue)
                try:
                    s.sendto(data, addr)
                    if s is self._sock:
                        self.counts['out'] += 1
                except OSError:
                    pass
