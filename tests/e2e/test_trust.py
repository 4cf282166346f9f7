"""Trust and the record of what was done (issue 10, points 5, 8, 10, 11, 13-15),
through the real binary against the Redfish emulator on 127.42.20.x.

Point 10, audit before acting: the intent row of a destructive action is
committed before the request leaves, so kill -9 in the middle of a fan-out
leaves a pending row for every node that may have acted, and a database that
cannot be written means nothing is sent."""
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, register_redfish

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = "127.42.20"
VENDORS = ["supermicro", "dgx", "lenovo", "dell", "hpe", "supermicro"]
SLOW = 6  # its Reset is read and never answered while the fault is on


def wait_for(cond, timeout=20.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


@pytest.fixture(scope="module")
def lab():
    with tempfile.TemporaryDirectory(prefix="gf-trust-") as workdir, \
            RedfishLab(workdir, prefix=PREFIX, count=len(VENDORS), vendors=VENDORS,
                       user="admin", password=PASSWORD) as lab:
        yield lab


@pytest.fixture
def rf(gf, lab):
    for i in lab.indices():
        lab.clear(i)
        lab.override(i, faults={})
        lab.set_power(i, "On")
    register_redfish(gf, lab)
    yield gf
    for i in lab.indices():
        lab.override(i, faults={})


def reset_uri(lab, i):
    system = lab.state(i)["main_system"]
    return lab.resource(i, system)["Actions"]["#ComputerSystem.Reset"]["target"]


def resets(lab, i):
    return lab.events(i, kind="reset")


# ---- point 10: audit before acting ------------------------------------------

def test_kill_9_in_a_power_fanout_keeps_every_intent(rf, lab):
    lab.override(SLOW, faults={reset_uri(lab, SLOW): "hang"})
    p = subprocess.Popen([GPUFLEET, "power", "cycle", "@all", "--yes", "--timeout", "60",
                          "--retries", "0", "--format", "ndjson", "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=rf.env())
    try:
        # Five BMCs have acted and the sixth holds its Reset: the process dies now.
        wait_for(lambda: all(resets(lab, i) for i in range(1, SLOW)))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGKILL
    assert not resets(lab, SLOW)

    rows = rf.sql("SELECT node, verb, result, finished FROM audit ORDER BY node")
    # Every node the run was sending to has its row: done or pending, never lost.
    assert [r["node"] for r in rows] == [f"rf{i}" for i in range(1, 7)], rows
    for r in rows:
        assert r["verb"] == "power cycle", r
        assert (r["result"], r["finished"] is None) in {("ok", False), ("pending", True)}, r
    assert rows[SLOW - 1]["result"] == "pending", rows

    r, data = rf.json("inventory", "audit", "--pending")
    assert r.returncode == 0, r.stderr
    assert f"rf{SLOW}" in [o["node"] for o in data], data
    assert all(o["pending"] is True and o["result"] == "pending" and o["finished"] is None
               for o in data), data
    # The table says so in words too.
    r = rf.run("inventory", "audit")
    assert r.returncode == 0, r.stderr
    assert "pending" in r.stdout and f"rf{SLOW}" in r.stdout
    assert "may have been sent" in r.stderr, r.stderr


def test_results_complete_the_intents(rf, lab):
    r, data = rf.json("power", "off", "rf1,rf2", "--yes")
    assert r.returncode == 0, r.stderr
    rows = rf.sql("SELECT node, result, finished FROM audit ORDER BY node")
    assert [(x["node"], x["result"]) for x in rows] == [("rf1", "ok"), ("rf2", "ok")], rows
    assert all(x["finished"] is not None for x in rows)
    r, data = rf.json("inventory", "audit", "--pending")
    assert r.returncode == 0 and data == [], (r.stderr, data)
    r, data = rf.json("inventory", "audit", "rf2")
    assert [o["node"] for o in data] == ["rf2"], data
    assert data[0]["action"] == "power off" and data[0]["pending"] is False


def test_no_intent_written_means_nothing_is_sent(rf, lab):
    # Another process holds the write lock past the busy timeout: the intent
    # cannot be committed, so no BMC may get the request.
    rf.run("nodes", "list")  # the DB exists, schema current
    con = sqlite3.connect(rf.db, timeout=1, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        r = rf.run("power", "off", "rf1,rf2", "--yes", timeout=60)
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "nothing was sent" in r.stderr, r.stderr
    for i in (1, 2):
        assert not resets(lab, i)
        assert lab.power(i) == "On"
    assert rf.sql("SELECT count(*) AS n FROM audit") == [{"n": 0}]
