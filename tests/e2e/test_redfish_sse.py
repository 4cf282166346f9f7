"""Redfish Server-Sent Events (issue 19, the Redfish half): redfish/sse.c and
redfish/events.c driven by tests/driver/sse_follow.c (built with the tests;
`gpufleet events follow` wires the same calls) against the emulator's
EventService (tests/lab/redfish_events.py: bmcweb's limits of 10 streams,
200 events replayed, no keep-alives). Each case checks what the driver
printed and what the emulated BMC saw (streams served and refused, the
Last-Event-ID it was sent, sessions left open)."""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
# Node 1 DGX and 2 Lenovo stream (their captures have a ServerSentEventUri);
# node 3 Supermicro has none: it is polled. Node 4 DGX takes the hostile streams.
VENDORS = "dgx,lenovo,supermicro,dgx"
DRIVER = os.environ.get("GF_SSE_FOLLOW") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(GPUFLEET))), "tests", "sse_follow")
WAIT = 30.0


@pytest.fixture(scope="module")
def lab():
    with started(lambda d: RedfishLab(d, prefix=PREFIX, count=4, vendors=VENDORS.split(","),
                                      user="admin", password=PASSWORD), "gf-sselab-") as lab:
        yield lab


@pytest.fixture(autouse=True)
def fresh(lab):
    for i in lab.indices():
        lab.ctl(i, "POST", "/events/config", {"reset": True})
    yield


def ev_state(lab, i):
    return lab.ctl(i, "GET", "/events/state")


def inject(lab, i, **body):
    return lab.ctl(i, "POST", "/events/inject", body)["ids"]


class Follow:
    """The driver running, its lines read as they come."""

    def __init__(self, lab, nodes, *args):
        assert os.access(DRIVER, os.X_OK), f"the test driver is not built: {DRIVER}"
        pwfile = os.path.join(lab.workdir, "password")
        argv = [DRIVER, "--user", "admin", "--password-file", pwfile, "--cacert", lab.cacert,
                "--backoff", "0.2", *args]
        argv += [f"{name}={lab.addr(i)}:{lab.port}" + (f"@{last}" if last else "")
                 for name, i, last in nodes]
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for raw in self.p.stdout:
            self.q.put(raw)

    def wait_for(self, pred, what, timeout=WAIT):
        """Lines until one satisfies @pred (returned); fails after @timeout."""
        for ln in self.lines:
            if pred(ln):
                return ln
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                raw = self.q.get(timeout=end - time.monotonic())
            except queue.Empty:
                break
            assert b"\x1b" not in raw, f"a raw escape reached the output: {raw!r}"
            ln = json.loads(raw)
            self.lines.append(ln)
            if pred(ln):
                return ln
        raise AssertionError(f"no {what} within {timeout} s; lines: {self.lines[-20:]}")

    def count(self, pred, n, what, timeout=WAIT):
        self.wait_for(lambda _ln: sum(1 for x in self.lines if pred(x)) >= n, what, timeout)
        return [x for x in self.lines if pred(x)]

    def stop(self):
        """Ctrl-C, as a user would: the driver ends and closes its sessions."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        rc = self.p.wait(timeout=20)
        self.t.join(timeout=5)
        while not self.q.empty():
            self.lines.append(json.loads(self.q.get()))
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def follow(lab):
    made = []

    def start(nodes, *args):
        f = Follow(lab, nodes, *args)
        made.append(f)
        return f

    yield start
    for f in made:
        f.kill()


def kind(k, node=None):
    return lambda ln: ln["kind"] == k and (node is None or ln["node"] == node)


def sse_events(f, node):
    return [ln["event"] for ln in f.lines if ln["kind"] == "event" and ln["node"] == node
            and ln["event"]["source"] == "redfish-sse"]


def test_events_delivered_once_across_a_drop_resumed_by_last_event_id(lab, follow):
    f = follow([("a", 1, None), ("b", 2, None), ("c", 3, None)])
    f.wait_for(kind("connected", "a"), "stream of a")
    f.wait_for(kind("connected", "b"), "stream of b")
    # Supermicro's EventService has no ServerSentEventUri: polled.
    poll = f.wait_for(kind("poll", "c"), "poll of c")
    assert "no Server-Sent Events" in poll["error"]

    first = inject(lab, 1, count=3) + inject(lab, 1, events=[
        {"message": "GPU 3 fell off the bus", "severity": "Critical",
         "message_id": "ResourceEvent.1.0.ResourceErrorsDetected",
         "origin": "/redfish/v1/Chassis/HGX_GPU_SXM_3"}])
    b_ids = inject(lab, 2, count=2)
    f.count(lambda ln: kind("event", "a")(ln), 4, "4 events of a")
    f.count(lambda ln: kind("event", "b")(ln), 2, "2 events of b")
    # Stored by the BMC but not sent: what a stream that was down would miss.
    missed = inject(lab, 1, count=5, push=False)
    lab.ctl(1, "POST", "/events/drop", {})
    f.wait_for(kind("dropped", "a"), "drop of a")
    f.wait_for(kind("resumed", "a"), "resume of a")
    after = inject(lab, 1, count=2)
    f.count(lambda ln: kind("event", "a")(ln) and ln["event"]["source"] == "redfish-sse",
            len(first + missed + after), "every event of a")
    got = sse_events(f, "a")
    assert [int(e["id"]) for e in got] == first + missed + after  # once each, in order
    crit = got[3]
    assert crit["severity"] == "critical" and crit["message"] == "GPU 3 fell off the bus"
    assert crit["origin"] == "/redfish/v1/Chassis/HGX_GPU_SXM_3"
    assert crit["message_id"] == "ResourceEvent.1.0.ResourceErrorsDetected"
    assert [int(e["id"]) for e in sse_events(f, "b")] == b_ids
    # The cursor handed with each event is its SSE id.
    assert all(ln["cursor"] == ln["event"]["id"] for ln in f.lines if ln["kind"] == "event")
    # What the BMC saw: two streams, the second resumed after the last event delivered.
    st = ev_state(lab, 1)
    assert st["served"] == 2 and st["dropped"] == 1
    assert st["last_event_ids"] == [None, str(first[-1])]
    assert f.stop() == 0
    assert f.lines[-1]["kind"] == "end"
    for i in (1, 2, 3):
        assert lab.sessions_open(i) == 0
    # The stream went out on the session's token, not Basic.
    sse = [r for r in lab.access_log(1) if r.get("sse")]
    assert sse and all(r["auth"] == "session" for r in sse)


def test_what_the_replay_cannot_cover_comes_from_the_log(lab, follow):
    f = follow([("a", 1, None)], "--log")
    f.wait_for(kind("connected", "a"), "stream")
    f.wait_for(kind("log", "a"), "the log's cursor read at the start")
    seen = inject(lab, 1, count=1)
    f.wait_for(kind("event", "a"), "first event")
    # 250 events while the stream is down: the BMC replays its last 200 only.
    missed = inject(lab, 1, count=250, push=False)
    lab.ctl(1, "POST", "/events/drop", {})
    f.wait_for(kind("resumed", "a"), "resume")
    f.wait_for(lambda ln: kind("log", "a")(ln) and ln.get("read", 0) > 0, "log read after resume")
    f.count(lambda ln: kind("event", "a")(ln) and ln["event"]["source"] == "redfish-sse",
            1 + 200, "the replay")
    sse = [int(e["id"]) for e in sse_events(f, "a")]
    log = [int(ln["event"]["id"]) for ln in f.lines
           if ln["kind"] == "event" and ln["event"]["source"] == "redfish-log"]
    assert sse == seen + missed[-200:]
    # The log read after the resume has every entry past the cursor, once, oldest first.
    assert log == seen + missed
    assert set(sse) | set(log) == set(seen + missed)
    assert f.stop() == 0


def test_the_eleventh_stream_is_refused_and_polled(lab, follow):
    nodes = [(f"a{k}", 1, None) for k in range(1, 12)]
    f = follow(nodes)
    f.count(kind("connected"), 10, "10 streams")
    poll = f.wait_for(kind("poll"), "the refused stream")
    assert "refused another event stream (HTTP 503)" in poll["error"]
    st = ev_state(lab, 1)
    assert st["streams"] == 10 and st["refused"] == 1 and st["served"] == 10
    # The ten streams still flow.
    inject(lab, 1, count=1)
    f.count(kind("event"), 10, "the event on each of the 10 streams")
    assert len([ln for ln in f.lines if ln["kind"] == "poll"]) == 1
    assert f.stop() == 0
    assert lab.sessions_open(1) == 0


def test_a_stalled_stream_is_detected_and_resumed(lab, follow):
    f = follow([("a", 2, None)], "--stall", "1.5")
    f.wait_for(kind("connected", "a"), "stream")
    ids = inject(lab, 2, count=1)
    f.wait_for(kind("event", "a"), "event")
    # The BMC sends nothing more (no keep-alives): after 1.5 s the stream is taken for dead.
    drop = f.wait_for(kind("dropped", "a"), "stall", timeout=10)
    assert "sent nothing for" in drop["error"]
    f.wait_for(kind("resumed", "a"), "resume")
    st = ev_state(lab, 2)
    assert st["served"] >= 2 and st["last_event_ids"][1] == str(ids[0])
    assert f.stop() == 0


HOSTILE = {
    "endless": "line longer than 65536 bytes",
    "huge": "event larger than 1048576 bytes",
    "badjson": "not JSON",
    "backwards": "ids went backwards",
    "escape": "control characters",
    "flood": "more than 2000 events in a second",
}


@pytest.mark.parametrize("how", sorted(HOSTILE))
def test_a_hostile_stream_costs_its_node_only(lab, follow, how):
    lab.ctl(4, "POST", "/events/hostile", {"kind": how})
    f = follow([("bad", 4, None), ("good", 1, None)])
    f.wait_for(kind("connected", "good"), "the good stream")
    failed = f.wait_for(kind("failed", "bad"), "the hostile stream's failure")
    assert HOSTILE[how] in failed["error"] and "bmc 'bad'" in failed["error"]
    ids = inject(lab, 1, count=3)
    f.count(kind("event", "good"), 3, "the good node's events")
    assert [int(e["id"]) for e in sse_events(f, "good")] == ids
    # One error for the bad node, last, and never retried; what came before it
    # was well-formed (the flood's first 2000 events in a second).
    kinds = [ln["kind"] for ln in f.lines if ln["node"] == "bad"]
    assert kinds[0] == "connected" and kinds[-1] == "failed"
    assert set(kinds[1:-1]) <= {"event"} and len(kinds) - 2 <= 2000
    assert ev_state(lab, 4)["served"] == 1
    # Memory stayed bounded whatever the stream sent (a 100 MiB event, 16 MiB of one line).
    with open(f"/proc/{f.p.pid}/status") as st:
        hwm = int(next(ln for ln in st if ln.startswith("VmHWM:")).split()[1])
    assert hwm < 150 * 1024, f"peak RSS {hwm} kB"
    assert f.stop() == 0


def test_escapes_inside_json_are_kept_but_never_raw(lab, follow):
    f = follow([("a", 1, None)])
    f.wait_for(kind("connected", "a"), "stream")
    inject(lab, 1, events=[{"message": "\x1b[2J\x1b]0;owned\x07 cleared"}])
    ev = f.wait_for(kind("event", "a"), "event")["event"]
    assert ev["message"] == "\x1b[2J\x1b]0;owned\x07 cleared"  # JSON-escaped on the wire out
    assert f.stop() == 0


def test_cper_entries_of_the_log_are_decoded(lab, follow):
    f = follow([("a", 1, None)], "--log")
    f.wait_for(kind("log", "a"), "the log's cursor")
    inject(lab, 1, events=[{"message": "GPU Xid 79", "severity": "Critical",
                            "cper": {"xid": 79, "xid_message": "GPU has fallen off the bus",
                                     "recovery_action": 2}}])
    f.wait_for(kind("event", "a"), "the streamed event")
    lab.ctl(1, "POST", "/events/drop", {})
    ln = f.wait_for(lambda x: kind("event", "a")(x) and x["event"]["source"] == "redfish-log",
                    "the log entry")
    ev = ln["event"]
    assert ev["severity"] == "critical" and ev["message"] == "GPU Xid 79"
    cper = ev["payload"]["cper"]
    assert cper["severity"] == "fatal"
    assert cper["xid"] == {"code": 79, "message": "GPU has fallen off the bus"}
    assert cper["recommended_action"]["recovery_action"] == 2
    assert [s["type"] for s in cper["sections"]] == ["nvidia-event", "memory"]
    mem = cper["sections"][1]
    assert mem["error_type"] == "multi-bit-ecc" and mem["physical_address"] == "0x1234000"
    # The BMC's entry is what was decoded.
    entry = lab.resource(1, "/redfish/v1/Managers/BMC/LogServices/SEL/Entries/" + ev["id"])
    assert entry["DiagnosticDataType"] == "CPER" and entry["Id"] == ev["id"]
    assert f.stop() == 0


def test_the_deadline_ends_the_loop_and_closes_the_sessions(lab, follow):
    f = follow([("a", 1, None), ("b", 2, None)], "--duration", "3")
    f.wait_for(kind("connected", "a"), "stream of a")
    f.wait_for(kind("connected", "b"), "stream of b")
    assert lab.sessions_open(1) == 1 and lab.sessions_open(2) == 1
    # No signal: the deadline alone ends it, and each session is deleted.
    assert f.p.wait(timeout=15) == 0
    f.t.join(timeout=5)
    f.wait_for(kind("end"), "the end", timeout=5)
    assert lab.sessions_open(1) == 0 and lab.sessions_open(2) == 0
