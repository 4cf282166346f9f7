"""events follow on Redfish nodes through the real binary against the emulator's
EventService (tests/lab/redfish_events.py): the Server-Sent Events streams in one
multiplexer thread, the LogService read after a reconnect and for a node whose
stream is refused, every event printed (ndjson) and stored exactly once, across
a server-side drop, kill -9 and a refused stream. Each case checks what the
emulated BMC saw (streams served, refused, the Last-Event-ID it was sent)."""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register_redfish, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
COUNT = 3
WAIT = 30.0


@pytest.fixture(scope="module")
def lab():
    with started(lambda d: RedfishLab(d, prefix=PREFIX, count=COUNT, vendors=["dgx"] * COUNT,
                                      user="admin", password=PASSWORD), "gf-evrflab-") as lab:
        yield lab


@pytest.fixture
def reg(gf, lab):
    for i in lab.indices():
        lab.ctl(i, "POST", "/events/config", {"reset": True})
        # Something in every log before the first follow: its baseline.
        inject(lab, i, count=1)
    register_redfish(gf, lab)
    return gf


def inject(lab, i, **body):
    return lab.ctl(i, "POST", "/events/inject", body)["ids"]


def ev_state(lab, i):
    return lab.ctl(i, "GET", "/events/state")


def wait_until(pred, what, timeout=WAIT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


class Follow:
    """events follow running, its stdout lines read by a thread as they come."""

    def __init__(self, gf, *args):
        self.p = subprocess.Popen([GPUFLEET, "events", "follow", "--format", "ndjson",
                                   "--interval", "0.3", "--no-progress", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=gf.env())
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))

    def events(self, n, timeout=WAIT):
        """The next @n events follow prints (fails after @timeout seconds)."""
        out = []
        end = time.monotonic() + timeout
        while len(out) < n:
            try:
                out.append(self.q.get(timeout=max(0.01, end - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"got {len(out)} of {n} events: {out}") from None
        return out

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()

    def stop(self, sig=signal.SIGTERM):
        """Stop it (SIGTERM): its exit code, what it printed since, its stderr."""
        self.p.send_signal(sig)
        try:
            self.p.wait(timeout=30)
        finally:
            self.kill()
        self.t.join(timeout=10)
        err = self.p.stderr.read()
        rest = []
        while not self.q.empty():
            rest.append(self.q.get())
        return self.p.returncode, rest, err


def cursor(gf, node, source):
    rows = gf.sql(f"SELECT cursor FROM event_cursors WHERE node = '{node}'"
                  f" AND source = '{source}'")
    return rows[0]["cursor"] if rows else None


def stored(gf, node):
    return gf.sql(f"SELECT bmc_id, key, source FROM events WHERE node = '{node}'"
                  f" AND source LIKE 'redfish-%' ORDER BY id")


def ready(gf, lab, *nodes, streams=1):
    """follow has read each node's log (its baseline) and holds its stream."""
    for i in nodes:
        wait_until(lambda: cursor(gf, f"rf{i}", "redfish-log"), f"the log cursor of rf{i}")
        wait_until(lambda: ev_state(lab, i)["streams"] == streams, f"the stream of rf{i}")


def ids_of(events, node):
    return [int(e["id"]) for e in events if e["node"] == node]


def assert_stored_once(gf, node, ids):
    rows = stored(gf, node)
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), rows
    got = {int(r["bmc_id"]) for r in rows}
    assert set(ids) <= got, (ids, rows)
    for k in ids:
        assert keys.count(f"redfish:{k}") == 1, rows


def test_injected_events_printed_and_stored_once(reg, lab):
    before = {i: ev_state(lab, i)["next_id"] - 1 for i in (1, 2)}
    p = Follow(reg, "rf1", "rf2")
    try:
        ready(reg, lab, 1, 2)
        one = inject(lab, 1, count=2) + inject(lab, 1, events=[
            {"message": "GPU 3 fell off the bus", "severity": "Critical",
             "message_id": "ResourceEvent.1.0.ResourceErrorsDetected"}])
        two = inject(lab, 2, count=1)
        got = p.events(4)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    assert rest == [], rest  # nothing printed twice
    assert ids_of(got, "rf1") == one and ids_of(got, "rf2") == two
    assert all(e["source"] == "redfish-sse" for e in got), got
    crit = [e for e in got if e["severity"] == "critical"]
    assert [c["message"] for c in crit] == ["GPU 3 fell off the bus"]
    # The baseline (what the log held before) is stored, never printed.
    assert before[1] not in ids_of(got, "rf1")
    assert_stored_once(reg, "rf1", [before[1]] + one)
    assert_stored_once(reg, "rf2", [before[2]] + two)
    assert cursor(reg, "rf1", "redfish-sse") == str(one[-1])
    # What the BMC saw: one stream each, from now on (no Last-Event-ID the first time).
    st = ev_state(lab, 1)
    assert st["served"] == 1 and st["last_event_ids"] == [None]
    for i in (1, 2):
        assert lab.sessions_open(i) == 0


def test_a_streamed_event_is_printed_as_it_comes_not_a_round_later(reg, lab):
    p = Follow(reg, "--interval", "1h", "rf2")
    try:
        ready(reg, lab, 2)
        t0 = time.monotonic()
        ids = inject(lab, 2, count=1)
        got = p.events(1, timeout=20)
        took = time.monotonic() - t0
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    assert ids_of(got, "rf2") == ids and rest == []
    assert took < 10, took  # an hour between polled rounds


def test_a_server_side_drop_loses_nothing_and_repeats_nothing(reg, lab):
    p = Follow(reg, "rf1")
    try:
        ready(reg, lab, 1)
        first = inject(lab, 1, count=2)
        got = p.events(2)
        # In the BMC's log, never sent on the stream: what a stream that is down
        # misses; the BMC replays its last one only, the log has them all.
        lab.ctl(1, "POST", "/events/config", {"replay": 1})
        missed = inject(lab, 1, count=3, push=False)
        lab.ctl(1, "POST", "/events/drop", {})
        wait_until(lambda: ev_state(lab, 1)["served"] == 2 and ev_state(lab, 1)["streams"] == 1,
                   "the stream resumed")
        after = inject(lab, 1, count=2)
        got += p.events(5)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    got += rest
    assert sorted(ids_of(got, "rf1")) == first + missed + after, got
    assert_stored_once(reg, "rf1", first + missed + after)
    # Beyond the replay only the LogService read after the resume had them.
    assert [e["source"] for e in got if int(e["id"]) in missed[:2]] == ["redfish-log"] * 2
    st = ev_state(lab, 1)
    assert st["dropped"] == 1 and st["last_event_ids"] == [None, str(first[-1])]
    assert lab.sessions_open(1) == 0


def test_kill_9_then_follow_again_reports_each_event_once(reg, lab):
    p = Follow(reg, "rf2")
    try:
        ready(reg, lab, 2)
        first = inject(lab, 2, count=1)
        got = p.events(1)
    finally:
        p.kill()  # SIGKILL: no chance to clean up
    assert ids_of(got, "rf2") == first
    wait_until(lambda: ev_state(lab, 2)["streams"] == 0, "the killed stream closed")
    meanwhile = inject(lab, 2, count=3)
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "3", "--interval", "0.3",
                "rf2")
    assert r.returncode == 0, r.stderr
    again = [json.loads(x) for x in r.stdout.splitlines()]
    assert ids_of(again, "rf2") == meanwhile, again
    assert_stored_once(reg, "rf2", first + meanwhile)
    # The second stream resumed after the last event stored.
    assert ev_state(lab, 2)["last_event_ids"][-1] == str(first[-1])


def test_a_refused_stream_is_polled_through_the_log_service(reg, lab):
    # The BMC's streams are all taken (OpenBMC allows 10): the next one is refused.
    lab.ctl(3, "POST", "/events/config", {"max_streams": 0})
    p = Follow(reg, "rf1", "rf3")
    try:
        ready(reg, lab, 1)
        wait_until(lambda: cursor(reg, "rf3", "redfish-log"), "the log cursor of rf3")
        wait_until(lambda: ev_state(lab, 3)["refused"] >= 1, "the refusal")
        three = inject(lab, 3, count=2)
        one = inject(lab, 1, count=1)
        got = p.events(3)
        more = inject(lab, 3, count=1)
        got += p.events(1)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    assert rest == [], rest
    assert ids_of(got, "rf3") == three + more
    assert all(e["source"] == "redfish-log" for e in got if e["node"] == "rf3")
    assert ids_of(got, "rf1") == one
    assert_stored_once(reg, "rf3", three + more)
    st = ev_state(lab, 3)
    assert st["served"] == 0 and st["streams"] == 0
    assert lab.sessions_open(3) == 0


def log_reads(lab, i):
    return sum(1 for r in lab.access_log(i)
               if r["method"] == "GET" and "/LogServices/SEL/Entries" in r["path"])


def test_polled_rounds_with_nothing_new_go_on(reg, lab):
    # A refused stream's node is polled: most rounds find nothing new (under
    # UBSan an empty round once stopped the whole follow, its streams too).
    lab.ctl(3, "POST", "/events/config", {"max_streams": 0})
    before = log_reads(lab, 3)
    p = Follow(reg, "rf1", "rf3")
    try:
        ready(reg, lab, 1)
        wait_until(lambda: ev_state(lab, 3)["refused"] >= 1, "the refusal")
        # The baseline read, then three rounds that found nothing.
        wait_until(lambda: p.p.poll() is not None or log_reads(lab, 3) >= before + 4,
                   "three polled rounds")
        assert p.p.poll() is None, p.p.stderr.read()
        three = inject(lab, 3, count=1)
        one = inject(lab, 1, count=1)
        got = p.events(2)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0 and err == "", err
    assert rest == [], rest
    assert ids_of(got, "rf3") == three and ids_of(got, "rf1") == one
    assert ev_state(lab, 3)["served"] == 0
    wait_until(lambda: ev_state(lab, 1)["streams"] == 0, "rf1's stream closed by the stop")


def test_a_hostile_stream_costs_its_node_only(reg, lab):
    lab.ctl(3, "POST", "/events/hostile", {"kind": "badjson"})
    p = Follow(reg, "--duration", "8", "rf1", "rf3")
    try:
        ready(reg, lab, 1)
        wait_until(lambda: ev_state(lab, 3)["served"] >= 1, "the hostile stream")
        ids = inject(lab, 1, count=2)
        got = p.events(2)
        p.p.wait(timeout=30)
    finally:
        rc, rest, err = p.stop()
    assert ids_of(got, "rf1") == ids and rest == []
    # One error, for its node; the run ends 1 (a node failed), never retried.
    lines = [ln for ln in err.splitlines() if ln]
    assert len(lines) == 1 and "rf3" in lines[0] and "not JSON" in lines[0], err
    assert rc == 1, err
    assert ev_state(lab, 3)["served"] == 1
    assert lab.sessions_open(3) == 0


def test_an_auto_node_that_answers_redfish_is_followed_over_its_stream(reg, lab):
    r = reg.run("nodes", "import", "-",
                input=f"name,bmc,protocol,groups\nauto2,{lab.addr(2)}:{lab.port},auto,all\n")
    assert r.returncode == 0, r.stderr
    open_before = lab.sessions_open(2)  # a follow killed earlier may have left one
    # An hour between polled rounds: only a stream delivers within the test.
    p = Follow(reg, "--interval", "1h", "auto2")
    try:
        wait_until(lambda: cursor(reg, "auto2", "redfish-log"), "the log cursor of auto2")
        wait_until(lambda: ev_state(lab, 2)["streams"] == 1, "the stream of auto2")
        ids = inject(lab, 2, count=1)
        got = p.events(1, timeout=20)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    assert ids_of(got, "auto2") == ids and rest == [], (got, rest)
    assert got[0]["source"] == "redfish-sse", got
    assert_stored_once(reg, "auto2", ids)
    st = ev_state(lab, 2)
    assert st["served"] == 1 and st["refused"] == 0, st
    assert lab.sessions_open(2) == open_before


def pin_of(gf, node):
    rows = gf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'")
    return rows[0]["fingerprint"] if rows else None


def test_follow_pins_on_first_use_as_every_verb_does(reg, lab):
    # No CA: the certificate is trusted on first use (--tls-pin new) and pinned.
    reg.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n")
    assert pin_of(reg, "rf1") is None
    p = Follow(reg, "--tls-pin", "new", "rf1")
    try:
        ready(reg, lab, 1)
        ids = inject(lab, 1, count=1)
        got = p.events(1)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    assert ids_of(got, "rf1") == ids and got[0]["source"] == "redfish-sse", got
    assert pin_of(reg, "rf1") == lab.fingerprint(1)
    assert f"pinned the certificate of 'rf1' (sha256 {lab.fingerprint(1)})" in err, err
    # Pinned: the next follow needs no --tls-pin new, and no CA either.
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "2", "--interval", "0.3",
                "rf1")
    assert r.returncode == 0, r.stderr
    assert "pinned" not in r.stderr, r.stderr
    assert ev_state(lab, 1)["served"] == 2


def test_follow_refuses_a_changed_certificate_with_the_pin_error(reg, lab):
    reg.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n")
    other = "ab" * 32
    reg.sql(f"INSERT INTO tls_pins (node, fingerprint, first_seen) VALUES ('rf3', '{other}', 0)")
    served = ev_state(lab, 3)["served"]
    created = lab.state(3)["sessions"]["created"]
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "3", "--interval", "0.3",
                "--tls-pin", "new", "rf3")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == "", r.stdout
    assert (f"certificate of bmc 'rf3' changed: pinned sha256 {other}, now "
            f"{lab.fingerprint(3)}") in r.stderr, r.stderr
    # The BMC saw no login and no stream; the pin stays.
    assert lab.state(3)["sessions"]["created"] == created
    assert ev_state(lab, 3)["served"] == served
    assert pin_of(reg, "rf3") == other


def test_a_cper_record_behind_additional_data_uri_is_fetched_and_decoded(reg, lab):
    # rf3's streams are all taken: its LogService is polled, where CPER entries are.
    lab.ctl(3, "POST", "/events/config", {"max_streams": 0})
    p = Follow(reg, "rf3")
    try:
        wait_until(lambda: cursor(reg, "rf3", "redfish-log"), "the log cursor of rf3")
        ids = inject(lab, 3, events=[
            {"message": "GPU 5 Xid 79", "severity": "Critical",
             "cper": {"xid": 79, "xid_message": "GPU has fallen off the bus",
                      "recovery_action": 2, "uri": True}},
            # a BMC that sends more than a CPER record can be: refused, the event kept
            {"message": "GPU 6 Xid 48", "severity": "Critical",
             "cper": {"xid": 48, "uri": True, "pad": 2 * 1024 * 1024}},
            {"message": "after them"}])
        got = p.events(3)
    finally:
        rc, rest, err = p.stop()
    assert rc == 0, err
    assert ids_of(got, "rf3") == ids and rest == [], (got, rest)
    ok, big, plain = got
    entries = "/redfish/v1/Managers/BMC/LogServices/SEL/Entries/"
    assert ok["payload"]["cper_uri"] == f"{entries}{ids[0]}/attachment"
    cper = ok["payload"]["cper"]
    assert cper["xid"] == {"code": 79, "message": "GPU has fallen off the bus"}
    assert cper["recommended_action"]["recovery_action"] == 2
    assert [s["type"] for s in cper["sections"]] == ["nvidia-event", "memory"]
    # The BMC's entry had no inline record: what was decoded came from its URI.
    entry = lab.resource(3, entries + str(ids[0]))
    assert "DiagnosticData" not in entry and entry["DiagnosticDataType"] == "CPER"
    assert "cper" not in big["payload"], big
    assert "more than 1 MiB" in big["payload"]["cper_error"], big
    assert plain["payload"] is None or "cper" not in plain["payload"]
    # Each record fetched once, and stored with its event.
    assert ev_state(lab, 3)["attachment_gets"] == [f"{entries}{i}/attachment" for i in ids[:2]]
    rows = reg.sql(f"SELECT payload FROM events WHERE node = 'rf3' AND bmc_id = '{ids[0]}'")
    assert json.loads(rows[0]["payload"])["cper"]["xid"]["code"] == 79
