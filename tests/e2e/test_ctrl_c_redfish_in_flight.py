"""Ctrl-C answers at once (issue 22, point 5) while a Redfish request is in
flight: the Redfish emulator holds a request of one BMC (the whole BMC hangs,
or only its Reset action does) with a 60 s deadline. Ctrl-C then ends the run
within a second, exit 130, with that node reported as interrupted, the node
that answered reported as it answered, and the audit row of an action already
sent kept. The libcurl transfer must watch the Ctrl-C flag itself: waiting
for libcurl's own once-a-second progress call is too late."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import GPUFLEET, PASSWORD, SLOWDOWN, TOP, loopback, register_redfish, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
TIMEOUT = "60"
# Ctrl-C to exit: within a second (scaled under a slow wrapper such as Valgrind).
PROMPT_S = 1.0 * SLOWDOWN


@pytest.fixture(scope="module")
def lab():
    with started(lambda d: RedfishLab(d, prefix=PREFIX, count=2, user="admin",
                                      password=PASSWORD, vendors=["supermicro-sys-821ge-tnhr"]),
                 "gf-rf-ctrlc-") as lab:
        yield lab


@pytest.fixture
def rf(gf, lab):
    """rf1 (fast) and rf2 (slow), powered off, counters cleared."""
    for i in (1, 2):
        lab.set_mode(i, hang=False)
        lab.override(i, faults={})
        lab.set_power(i, "Off")
        lab.clear(i)
    register_redfish(gf, lab)
    yield gf
    for i in (1, 2):
        lab.set_mode(i, hang=False)
        lab.override(i, faults={})


def interrupt_when_held(gf, lab, *args, ready):
    """Run gpufleet ARGS (one JSON object a line, each printed once its node's
    result is final); Ctrl-C it once rf2's BMC holds a request of it (a transfer
    waits) and @ready(lines so far) holds: (rc, {node: result}, stderr, seconds
    from Ctrl-C to exit)."""
    p = subprocess.Popen([GPUFLEET, "--format", "ndjson", "--no-progress", "--timeout",
                          TIMEOUT, "--retries", "0", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=gf.env())
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    try:
        limit = time.monotonic() + 30
        while lab.state(2)["held"] == 0 or not ready(list(lines)):
            assert p.poll() is None, (lines, p.stderr.read())
            assert time.monotonic() < limit, (lines, lab.state(2)["held"])
            time.sleep(0.02)  # polling the peers' state, not synchronising by time
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        took = time.monotonic() - t0
        reader.join(timeout=30)
        err = p.stderr.read()
        return p.returncode, {o["node"]: o for o in map(json.loads, lines)}, err, took
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def fast_done(lines):
    """rf1's line is out: its node is finished."""
    return any(json.loads(x)["node"] == "rf1" for x in lines)


@pytest.mark.parametrize("verb", [["power", "status"], ["sensors"], ["firmware"]])
def test_ctrl_c_while_a_whole_bmc_hangs(rf, lab, verb):
    """rf2 answers nothing at all (its first request waits): the run still
    ends within a second of Ctrl-C; rf1's answer is kept."""
    lab.set_mode(2, hang=True)
    rc, data, err, took = interrupt_when_held(rf, lab, *verb, "@all", ready=fast_done)
    assert rc == 130, err
    assert took < PROMPT_S, took
    assert "interrupted" in err, err
    assert data["rf1"]["ok"] is True, data["rf1"]
    assert data["rf2"]["ok"] is False
    assert "interrupted" in data["rf2"]["error"]["message"], data["rf2"]
    # rf1's session, left for after the results, is deleted after Ctrl-C too
    # (power status and firmware read once, with Basic: no session).
    st = lab.state(1)["sessions"]
    made = 1 if verb == ["sensors"] else 0
    assert st["created"] == made and st["deleted"] == made and st["open"] == 0, st


def test_ctrl_c_keeps_the_audit_of_what_was_sent(rf, lab):
    """power on: rf1 is switched on and audited; rf2's Reset action is held by its
    BMC. Ctrl-C: within a second, rf2 interrupted, both audit rows kept (rf2's
    outcome unknown), and rf2's session still deleted (only the action hangs)."""
    reset = lab.state(2)["main_system"] + "/Actions/ComputerSystem.Reset"
    lab.override(2, faults={reset: "hang"})
    rc, data, err, took = interrupt_when_held(
        rf, lab, "power", "on", "--yes", "@all",
        ready=lambda lines: rf.sql("select result from audit where node = 'rf1'")
        == [{"result": "ok"}])
    assert rc == 130, err
    assert took < PROMPT_S, took
    assert data["rf1"]["ok"] is True and lab.power(1) == "On"
    assert data["rf2"]["ok"] is False
    assert "interrupted" in data["rf2"]["error"]["message"], data["rf2"]
    audit = {a["node"]: a["result"] for a in rf.sql("select node, result from audit")}
    assert audit.get("rf1") == "ok", audit
    assert "rf2" in audit and audit["rf2"] != "ok", audit  # sent, its outcome unknown
    st = lab.state(2)["sessions"]
    assert st["created"] == 1 and st["deleted"] == 1 and st["open"] == 0, st
