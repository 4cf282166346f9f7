"""Ctrl-C answers at once (issue 22, point 5), also while a FreeIPMI call is
in flight: a UDP relay (tests/lab/udprelay.py) in front of an ipmi_sim BMC
drops the BMC's answers inside the session, so the session's opening or the
first command waits for the node's deadline (30 s here). Ctrl-C then ends the
run within a second, with the node reported as interrupted and the audit row
of the action already sent kept."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import DEFAULT_CREDS, GPUFLEET, TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from udprelay import UdpRelay  # noqa: E402

LAB_COUNT = 2
RELAY = loopback(__name__, "relay") + ".1"
FAST = loopback(__name__, "relay") + ".2"  # fast1's relay: passes all, counts its answers
TIMEOUT = "30"


@pytest.fixture
def reg(gf, fleet):
    # Suite 3 named: no probing of 17, so the session's steps are the same every run.
    gf.write_creds(DEFAULT_CREDS + "ipmi_cipher_suite = 3\n")
    lines = ["name,bmc,protocol,groups", f"fast1,{FAST},ipmi,all",
             f"slow1,{RELAY},ipmi,all"]
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    for i in (1, 2):
        fleet.set_power(i, "off")
    return gf


def session_answers(gf, fleet, *verb):
    """How many answers inside a session @verb of slow1 gets from the BMC:
    its command's and Close Session's, and Set Session Privilege Level's
    where the session sends it (a worker's FreeIPMI session does, `power
    status`'s one loop does not)."""
    with UdpRelay(RELAY, 623, fleet.addr(2), 623) as relay:
        r = gf.run(*verb, "slow1")
        assert r.returncode == 0, r.stderr
        assert relay.counts["session"] >= 2, relay.counts
        return relay.counts["session"]


def interrupt_when_stuck(gf, relay, *args, first=None, ready=None):
    """Run gpufleet (ndjson: each node's line as it ends), Ctrl-C it once
    node @first's line is out, the relay dropped an answer (a call waits on
    it) and @ready() (when given) holds: (rc, {node: result}, stderr, seconds
    from Ctrl-C to exit)."""
    p = subprocess.Popen([GPUFLEET, "--format", "ndjson", "--no-progress", "--timeout", TIMEOUT,
                          *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=gf.env())
    try:
        lines = []
        if first:
            # The other node is stuck: @first's line is the first (at most
            # TIMEOUT seconds away, when it fails instead).
            lines.append(p.stdout.readline())
            assert json.loads(lines[0])["node"] == first, (lines, p.communicate())
        limit = time.monotonic() + 20
        while relay.counts["session_dropped"] == 0 or (ready and not ready()):
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < limit, relay.counts
            time.sleep(0.01)  # polling the relay's count, not synchronising by time
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=15)
        took = time.monotonic() - t0
        lines += out.splitlines()
        return p.returncode, {o["node"]: o for o in map(json.loads, lines)}, err, took
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("stuck", ["opening", "command"])
def test_ctrl_c_while_a_call_waits(reg, fleet, stuck):
    full = session_answers(reg, fleet, "power", "status")
    keep = 0 if stuck == "opening" else full - 2
    with UdpRelay(FAST, 623, fleet.addr(1), 623), \
            UdpRelay(RELAY, 623, fleet.addr(2), 623, session_answers=keep) as relay:
        # Ctrl-C once fast1 is out (on a loaded machine it may still be
        # under way when slow1 gets stuck).
        rc, data, err, took = interrupt_when_stuck(reg, relay, "power", "status", "@all",
                                                   first="fast1")
    assert rc == 130, err
    assert took < 1.0, took
    assert data["fast1"]["ok"] is True and data["fast1"]["power"] == "off"
    assert data["slow1"]["ok"] is False
    assert "interrupted" in data["slow1"]["error"]["message"], data["slow1"]


def test_ctrl_c_keeps_the_audit_of_what_was_sent(reg, fleet):
    keep = session_answers(reg, fleet, "power", "on", "--yes") - 2
    with UdpRelay(FAST, 623, fleet.addr(1), 623), \
            UdpRelay(RELAY, 623, fleet.addr(2), 623, session_answers=keep) as relay:
        # Ctrl-C once fast1's action is done and audited (on a loaded machine
        # it may still be under way when slow1 gets stuck).
        rc, data, err, took = interrupt_when_stuck(
            reg, relay, "power", "on", "--yes", "@all", first="fast1",
            ready=lambda: reg.sql("select result from audit where node = 'fast1'")
            == [{"result": "ok"}])
    assert rc == 130, err
    assert took < 1.0, took
    assert data["fast1"]["ok"] is True and fleet.power(1) == "on"
    assert "interrupted" in data["slow1"]["error"]["message"], data["slow1"]
    audit = {a["node"]: a["result"] for a in reg.sql("select node, result from audit")}
    assert audit.get("fast1") == "ok", audit
    assert "slow1" in audit and audit["slow1"] != "ok", audit  # sent, its outcome unknown
