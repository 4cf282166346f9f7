"""Dead IPMI BMCs fail at the deadline counted from the run's start (issue 10,
point 1's figure): one unauthenticated Get Channel Authentication
Capabilities datagram goes to every IPMI BMC of a fan-out at once, from one
socket; the BMCs that answer are run as always, those that never answer
fail as timeouts at run start + --timeout without a session. ipmi_sim BMCs
on .1-6 of the module's range; dead addresses .201-204, two of them with a UDP
socket of the test's own that records what arrives and never answers."""
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import ipmisensors as S  # noqa: E402
from ipmilab import IpmiLab  # noqa: E402

PREFIX = loopback(__name__, "ipmi")
LIVE = 6
DEAD = [f"{PREFIX}.{200 + k}" for k in range(1, 5)]
HEARD = DEAD[:2]                # dead addresses whose datagrams the test records


def is_auth_caps_request(d):
    """IPMI 1.5, outside a session: RMCP (IPMI class), auth type none, rsAddr
    BMC, NetFn App, Get Channel Authentication Capabilities, both checksums."""
    if len(d) != 23 or d[0:4] != bytes([0x06, 0x00, 0xFF, 0x07]) or d[4] != 0x00:
        return False
    if d[13] != 9 or d[14] != 0x20 or d[15] >> 2 != 0x06 or d[19] != 0x38:
        return False
    return sum(d[14:17]) & 0xFF == 0 and sum(d[17:23]) & 0xFF == 0


def is_rmcpplus(d):
    """An RMCP+ (IPMI 2.0, auth type 6) datagram: an open session request and what follows."""
    return len(d) >= 6 and d[0] == 0x06 and d[3] == 0x07 and d[4] == 0x06


def is_open_session_request(d):
    """An RMCP+ Open Session Request (payload type 0x10, no session yet): no
    user name, no password, nothing authenticated."""
    return is_rmcpplus(d) and len(d) >= 16 and d[5] & 0x3F == 0x10 and d[6:14] == bytes(8)


def probes_only(got, may_open):
    """What a dead BMC saw was the probe: the ping, and (@may_open: `power
    status`'s loop, whose first window's Open Session is its ping) at most one
    Open Session Request, first; never a RAKP message (the user name) or
    anything in a session. How many Open Session Requests there were."""
    opens = 0
    for k, (_, _, d) in enumerate(got):
        if is_open_session_request(d):
            assert may_open and k == 0, (k, d.hex())
            opens += 1
        else:
            assert is_auth_caps_request(d), d.hex()
    return opens


class Recorder:
    """A UDP socket on a dead address's port 623 that records and never answers."""

    def __init__(self, addr):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, 623))
        self.seen = []              # (monotonic time, source, datagram)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.05)
            if r:
                data, src = self.sock.recvfrom(4096)
                with self.lock:
                    self.seen.append((time.monotonic(), src, data))

    def datagrams(self):
        with self.lock:
            return list(self.seen)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture(scope="module")
def lab():
    profiles = {i: {} for i in range(1, LIVE + 1)}
    with started(lambda d: IpmiLab(d, prefix=PREFIX, count=LIVE, user="admin",
                                   password=PASSWORD, power="on",
                                   emu_extra=S.emu_extra(profiles)), "gf-probe-") as lab:
        yield lab


@pytest.fixture
def recorders():
    rs = []
    try:
        for a in HEARD:
            rs.append(Recorder(a))
        yield rs
    finally:
        for r in rs:
            r.close()


@pytest.fixture
def nodes(gf, lab):
    lines = ["name,bmc,protocol,groups"]
    for i in range(1, LIVE + 1):
        lines.append(f"live{i},{lab.addr(i)},ipmi,all;live")
    for k, a in enumerate(DEAD, 1):
        lines.append(f"dead{k},{a},ipmi,all;dead")
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    return gf


def timed(gf, *args):
    t0 = time.monotonic()
    r, data = gf.json(*args)
    return r, {o["node"]: o for o in data}, time.monotonic() - t0


@pytest.mark.parametrize("verb", [("power", "status"), ("boot", "status")])
def test_dead_bmcs_fail_at_the_deadline_from_the_runs_start(nodes, recorders, verb):
    """--fanout 1: before, each dead BMC waited its whole deadline in turn (4 x 2 s
    + the live work); now every dead one's deadline counts from the run's start,
    with no session opened, and the live ones are answered as always. `power
    status` is the one loop (ipmi/batch.c), `boot status` the workers behind the
    fleet ping (ipmi/ping.c)."""
    r, live, live_took = timed(nodes, *verb, "@live", "--fanout", "1", "--timeout", "2")
    assert r.returncode == 0 and all(o["ok"] for o in live.values()), (r.stderr, live)
    for rec in recorders:
        rec.seen.clear()
    t0 = time.monotonic()
    r, by, took = timed(nodes, *verb, "@all", "--fanout", "1", "--timeout", "2")
    assert r.returncode == 1, r.stderr
    for i in range(1, LIVE + 1):
        assert by[f"live{i}"]["ok"] is True, by[f"live{i}"]
        assert by[f"live{i}"].get("power", "on") == "on", by[f"live{i}"]
    for k, a in enumerate(DEAD, 1):
        o = by[f"dead{k}"]
        assert o["ok"] is False and o["error"]["kind"] == "timeout", o
        assert f"'dead{k}'" in o["error"]["message"] and a in o["error"]["message"], o
        assert "did not answer" in o["error"]["message"], o
    # The live work plus one deadline, not the live work plus 4 deadlines (about 9 s).
    assert took < max(2.0, live_took) * 1.2 + 1.0, (took, live_took)
    # What the dead BMCs saw: only the probe, from one socket for all of them,
    # at the run's start and retransmitted inside the deadline; no session
    # opened. --fanout 1: at most one of them was in the loop's first window.
    ports = set()
    opens = 0
    for rec in recorders:
        got = rec.datagrams()
        assert got, "no probe reached the dead BMC"
        opens += probes_only(got, verb[0] == "power")
        for when, src, d in got:
            assert when - t0 < 2.0 + 0.5, (when - t0)
            ports.add(src)
        assert len(got) >= 2, got      # retransmitted while unanswered
        assert got[0][0] - t0 < 1.0, got[0][0] - t0   # sent at the start, not in turn
    assert opens <= 1, opens
    assert len({p for _, p in ports}) == 1, ports


def test_retries_of_a_probed_dead_bmc_stay_inside_the_deadline(nodes, recorders):
    """--retries 3 changes nothing for a BMC that never answered the probe
    (here all of them are in the loop's first window: its Open Session, then
    the ping)."""
    r, by, took = timed(nodes, "power", "status", "@dead", "--timeout", "2", "--retries", "3")
    assert r.returncode == 1, r.stderr
    assert all(o["error"]["kind"] == "timeout" for o in by.values()), by
    assert took < 2.0 * 1.2 + 1.0, took
    for rec in recorders:
        assert probes_only(rec.datagrams(), True) == 1


def test_a_bmc_that_answers_the_probe_late_is_run_normally(nodes, lab):
    """A BMC frozen at the start answers once it is thawed (1 s later, within
    the 3 s deadline): it is then run as always, with a session of its own."""
    lab.pause(LIVE)
    thaw = threading.Timer(1.0, lab.resume, args=(LIVE,))
    try:
        thaw.start()
        r, by, took = timed(nodes, "sensors", f"live[1,{LIVE}]", "--timeout", "3",
                            "--retries", "0")
    finally:
        thaw.cancel()
        lab.resume(LIVE)
    o = by[f"live{LIVE}"]
    assert o["ok"] is True, (o, r.stderr)
    assert any(s["name"] for s in o["sensors"]), o
    assert by["live1"]["ok"] is True
    assert took < 1.0 + 3.0 * 1.2 + 1.0, took


def test_a_sweep_fails_a_dead_bmc_at_the_deadline_without_a_session(nodes, recorders):
    """The sweep's BMC part goes through the same probe: --fanout 1, 3 dead BMCs, one deadline."""
    r, by, took = timed(nodes, "sweep", "--fanout", "1", "--timeout", "2", "--retries", "0",
                        "live1", "dead1", "dead2", "dead3")
    assert r.returncode == 1, r.stderr
    assert by["live1"]["status"] == "ok", by["live1"]
    for k in (1, 2, 3):
        o = by[f"dead{k}"]
        assert o["status"] == "failed", o
        assert {e["kind"] for e in o["errors"]} == {"timeout"}, o["errors"]
    assert took < 2.0 * 1.2 + 1.0 + 1.0, took
    got = [x for rec in recorders for x in rec.datagrams()]
    assert got and probes_only(got, False) == 0
    rows = {x["node"]: x for x in nodes.sql("SELECT node, status, errors FROM sweep_nodes")}
    assert rows["dead1"]["status"] == "failed" and '"timeout"' in rows["dead1"]["errors"], rows


def test_ctrl_c_during_the_probe_ends_at_once(nodes, recorders):
    """Only dead BMCs, a long deadline: Ctrl-C once the probe is out ends the run, exit 130."""
    p = subprocess.Popen([GPUFLEET, "power", "status", "@dead", "--timeout", "30"],
                         env=nodes.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        end = time.monotonic() + 10
        while not recorders[0].datagrams() and time.monotonic() < end and p.poll() is None:
            time.sleep(0.01)
        assert recorders[0].datagrams(), "the probe never came"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, (p.returncode, err)
    assert took < 1.0, took
