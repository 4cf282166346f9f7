"""events follow opens a fleet's Redfish event streams at once (issue 19): 30
emulated BMCs that answer every request DELAY late. The streams' logins go to a
pool of opener threads (redfish/sse.c), not one after another on the
multiplexer's thread; one after another they would take at least two requests
(the session's POST and the stream's GET) x DELAY each, 30 x 2 x DELAY in all.
Checked at the emulator (its open streams) and on stdout (an event injected
into every BMC, each printed once)."""
import json
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

from conftest import GPUFLEET, PASSWORD, SLOWDOWN, TOP, loopback, register_redfish, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
COUNT = 30
DELAY = 0.4  # seconds, every answer of every BMC
SERIAL = COUNT * 2 * DELAY  # the least that opening one stream after another takes
BOUND = 20 * DELAY * SLOWDOWN  # all open: a fraction of SERIAL (8 s against 24 s)


@pytest.fixture(scope="module")
def lab():
    with started(lambda d: RedfishLab(d, prefix=PREFIX, count=COUNT, vendors=["dgx"] * COUNT,
                                      user="admin", password=PASSWORD), "gf-evopenlab-") as lab:
        yield lab


def streams(lab):
    return sum(lab.ctl(i, "GET", "/events/state")["streams"] for i in lab.indices())


def log_cursors(gf):
    return gf.sql("SELECT count(*) AS n FROM event_cursors WHERE source = 'redfish-log'")[0]["n"]


def wait_until(pred, what, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


def test_slow_bmcs_streams_open_at_once_and_deliver(gf, lab):
    assert BOUND < SERIAL
    for i in lab.indices():
        lab.ctl(i, "POST", "/events/config", {"reset": True})
    register_redfish(gf, lab)
    for i in lab.indices():
        lab.set_mode(i, slow=DELAY)
    p = subprocess.Popen([GPUFLEET, "events", "follow", "--format", "ndjson", "--interval", "5",
                          "--no-progress", "@all"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=gf.env())
    q = queue.Queue()
    t = threading.Thread(target=lambda: [q.put(json.loads(x)) for x in p.stdout], daemon=True)
    t.start()
    try:
        # Every log read first (its baseline): then the streams open.
        wait_until(lambda: log_cursors(gf) == COUNT, "log cursor of every node",
                   60 * SLOWDOWN)
        t0 = time.monotonic()
        wait_until(lambda: streams(lab) == COUNT, f"{COUNT} streams open", BOUND)
        took = time.monotonic() - t0
        ids = {f"rf{i}": lab.ctl(i, "POST", "/events/inject", {"count": 1})["ids"][0]
               for i in lab.indices()}
        got = []
        end = time.monotonic() + 10 * DELAY * SLOWDOWN
        while len(got) < COUNT:
            try:
                got.append(q.get(timeout=max(0.01, end - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"{len(got)} of {COUNT} events: {got}") from None
    finally:
        for i in lab.indices():
            lab.set_mode(i, slow=0)
        p.terminate()
        try:
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    err = p.stderr.read()
    assert p.returncode == 0, err
    assert err == "", err  # no stream reported stalled or failed
    assert {e["node"]: int(e["id"]) for e in got} == ids, (got, ids)
    assert all(e["source"] == "redfish-sse" for e in got), got
    assert took < BOUND, took
    # What each BMC saw: one stream, never a second one (no stall, no reconnect).
    for i in lab.indices():
        st = lab.ctl(i, "GET", "/events/state")
        assert st["served"] == 1, (i, st)
