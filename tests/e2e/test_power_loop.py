"""`power status` of IPMI BMCs runs in one event loop on the calling thread
(ipmi/batch.c, issue 23 point 2): RMCP+ Open Session (the first window's
ping; the ping before it for the others), RAKP 1-4,
Get Chassis Status and Close Session of every BMC, no thread per session
and no Set Session Privilege Level. UDP relays (tests/lab/udprelay.py) in
front of ipmi_sim BMCs count what each BMC saw; a hostile BMC answers
garbage."""
import os
import random
import select
import socket
import sys
import threading

import pytest

from conftest import DEFAULT_CREDS, TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from udprelay import UdpRelay  # noqa: E402

LAB_COUNT = 4
RELAYS = loopback(__name__, "relay")
HOSTILE = f"{RELAYS}.99"


@pytest.fixture
def relays(fleet):
    """A relay in front of each BMC: node rN is BMC N seen through RELAYS.N."""
    rs = []
    try:
        for i in range(1, LAB_COUNT + 1):
            rs.append(UdpRelay(f"{RELAYS}.{i}", 623, fleet.addr(i), 623).__enter__())
        yield rs
    finally:
        for r in rs:
            r.__exit__(None, None, None)


def add(gf, *rows):
    r = gf.run("nodes", "import", "-",
               input="name,bmc,protocol,groups,profile\n" + "\n".join(rows) + "\n")
    assert r.returncode == 0, r.stderr


@pytest.fixture
def nodes(gf, fleet, relays):
    gf.write_creds(DEFAULT_CREDS + "ipmi_cipher_suite = 3\n")
    add(gf, *[f"r{i},{RELAYS}.{i},ipmi,all,default" for i in range(1, LAB_COUNT + 1)])
    for i in range(1, LAB_COUNT + 1):
        fleet.set_power(i, "on" if i % 2 else "off")
    return gf


def test_one_loop_five_datagrams_a_bmc(nodes, fleet, relays):
    """Each BMC of the first window sees Open Session (its ping: nothing goes
    before it), RAKP 1 and 3, Get Chassis Status and Close Session: 5
    datagrams and 5 answers, one login, two answers in the session. A
    worker's FreeIPMI session (here `boot status`) sends the ping, its own
    Get Channel Authentication Capabilities and Set Session Privilege Level
    besides: that the count differs shows which path ran."""
    r, data = nodes.json("power", "status", "@all")
    assert r.returncode == 0, r.stderr
    assert {o["node"]: o["power"] for o in data} == {
        f"r{i}": fleet.power(i) for i in range(1, LAB_COUNT + 1)}
    for rel in relays:
        assert rel.counts["in"] == 5 and rel.counts["out"] == 5, rel.counts
        assert rel.counts["auth_caps"] == 0 and rel.counts["opens"] == 1, rel.counts
        assert rel.counts["logins"] == 1 and rel.counts["session"] == 2, rel.counts
        rel.counts.update({k: 0 for k in rel.counts})
    r, data = nodes.json("boot", "status", "r1")
    assert r.returncode == 0, r.stderr
    assert relays[0].counts["in"] >= 8 and relays[0].counts["session"] >= 3, relays[0].counts


def test_fanout_one_still_answers_every_bmc(nodes, fleet, relays):
    """--fanout 1: one session at a time, every BMC answered, each once. Only
    the first window (here one BMC) skips the ping; the others are pinged at
    the start and open their session in turn: 6 datagrams."""
    r, data = nodes.json("power", "status", "@all", "--fanout", "1")
    assert r.returncode == 0, r.stderr
    assert all(o["ok"] for o in data) and len(data) == LAB_COUNT, data
    assert all(rel.counts["logins"] == 1 for rel in relays), [r.counts for r in relays]
    assert sorted((rel.counts["in"], rel.counts["auth_caps"]) for rel in relays) == \
        [(5, 0)] + [(6, 1)] * (LAB_COUNT - 1), [r.counts for r in relays]


def test_a_bmc_that_wants_the_ping_first_is_answered_after_it(nodes, fleet, relays):
    """A BMC that ignores an Open Session with no Get Channel Authentication
    Capabilities before it (the relay drops it) leaves the first window's
    request unanswered: it gives up its slot, is pinged, and logs in once
    after the ping, in the loop (one login, no worker's session)."""
    relays[1].auth_caps_first = True
    r, data = nodes.json("power", "status", "@all", "--timeout", "3")
    assert r.returncode == 0, r.stderr
    by = {o["node"]: o for o in data}
    assert by["r2"]["ok"] is True and by["r2"]["power"] == fleet.power(2), by["r2"]
    c = relays[1].counts
    assert c["opens_dropped"] == 1 and c["auth_caps"] >= 1 and c["opens"] == 2, c
    assert c["logins"] == 1 and c["session"] == 2, c
    assert all(rel.counts["in"] == 5 for k, rel in enumerate(relays) if k != 1), \
        [rel.counts for rel in relays]


@pytest.mark.parametrize("user,password,why", [
    ("admin", "not-it", "password invalid"),
    ("nobody", "lab-Pa55word", "username invalid"),
])
def test_a_refused_login_is_tried_once(nodes, relays, user, password, why):
    """A wrong password or user fails the node as auth, in FreeIPMI's words,
    after one login: the loop does not hand it to a second session (a BMC
    locks an account after a few failed logins). The other nodes answer."""
    nodes.write_creds(DEFAULT_CREDS + "ipmi_cipher_suite = 3\n[wrong]\nbmc_user = " + user +
                      "\nbmc_password = " + password +
                      "\nipmi_workarounds = opensesspriv\nipmi_cipher_suite = 3\n")
    add(nodes, f"bad,{RELAYS}.{LAB_COUNT},ipmi,bad,wrong")
    r, data = nodes.json("power", "status", "r1", "bad")
    assert r.returncode == 1, r.stderr
    by = {o["node"]: o for o in data}
    assert by["r1"]["ok"] is True, by
    err = by["bad"]["error"]
    assert err["kind"] == "auth" and why in err["message"] and "'bad'" in err["message"], err
    assert relays[LAB_COUNT - 1].counts["logins"] == 1, relays[LAB_COUNT - 1].counts


def test_nodes_sharing_a_bmc_address_are_both_answered(nodes, fleet):
    """Two nodes behind one BMC address: the loop could not tell their
    answers apart, so their sessions run on workers; both answer."""
    add(nodes, f"twin,{RELAYS}.1,ipmi,all,default")
    r, data = nodes.json("power", "status", "r1", "twin", "r2")
    assert r.returncode == 0, r.stderr
    by = {o["node"]: o for o in data}
    assert by["r1"]["power"] == by["twin"]["power"] == fleet.power(1), by
    assert by["r2"]["power"] == fleet.power(2), by


class Hostile:
    """A BMC that answers every datagram with something else: random bytes,
    an RMCP+ header cut short, a session-setup answer of the wrong type or
    length, a datagram far too long."""

    def __init__(self, addr):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, 623))
        self.rng = random.Random(23)
        self.seen = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def answer(self, d):
        rmcpplus = bytes([0x06, 0x00, 0xFF, 0x07, 0x06])
        k = self.seen % 6
        if k == 0:
            return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randrange(0, 64)))
        if k == 1:
            return rmcpplus + bytes([0x11])                     # open session answer, cut
        if k == 2:                                              # claims 0xFFFF bytes of payload
            return rmcpplus + bytes([0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) + d[:8]
        if k == 3:                                              # RAKP 2, tag from the request
            return rmcpplus + bytes([0x13, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0]) + d[16:24]
        if k == 4:                                              # an IPMI payload in a session
            return rmcpplus + bytes([0xC0, 1, 2, 3, 4, 1, 0, 0, 0, 32, 0]) + bytes(32)
        return bytes(self.rng.getrandbits(8) for _ in range(1400))

    def _run(self):
        while not self.stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.05)
            if r:
                d, src = self.sock.recvfrom(4096)
                self.seen += 1
                self.sock.sendto(self.answer(d), src)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def test_a_hostile_bmc_fails_alone_at_its_deadline(nodes):
    """Garbage in every answer: the BMC's node fails as a timeout (nothing it
    sent was an answer) by the deadline; the run does not crash (the suite
    runs under ASan) and the others answer."""
    h = Hostile(HOSTILE)
    try:
        add(nodes, f"evil,{HOSTILE},ipmi,all,default")
        r, data = nodes.json("power", "status", "@all", "--timeout", "2", "--retries", "0")
    finally:
        h.close()
    assert r.returncode == 1, r.stderr
    by = {o["node"]: o for o in data}
    assert all(by[f"r{i}"]["ok"] for i in range(1, LAB_COUNT + 1)), by
    err = by["evil"]["error"]
    assert by["evil"]["ok"] is False and err["kind"] in ("timeout", "protocol"), err
    assert h.seen >= 2, h.seen      # it was asked, and asked again
