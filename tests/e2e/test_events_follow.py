"""events follow and events list through the real binary against ipmi_sim BMCs whose
event logs the test writes while follow runs (the simulator's console, sel_add):
what follow printed, what it stored, exactly once, across kill -9 and SEL clears."""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import ipmisensors as S  # noqa: E402
from ipmilab import IpmiLab  # noqa: E402
from udprelay import UdpRelay  # noqa: E402

COUNT = 6
PROFILES = {i: {"sel": 1} for i in range(1, COUNT + 1)}
PROFILES[2] = {"sel": 1, "failed_psu": True}


@pytest.fixture(scope="module")
def lab():
    prefix = loopback(__name__, "ipmi")
    with started(lambda d: IpmiLab(d, prefix=prefix, count=COUNT, user="admin",
                                   password=PASSWORD, emu_extra=S.emu_extra(PROFILES)),
                 "gf-lab-events-") as lab:
        S.prepare_events(lab, PROFILES)
        yield lab


@pytest.fixture
def reg(gf, lab):
    register(gf, lab)
    return gf


def node(i):
    return f"gpu{i:02d}"


def sel_count(gf, i):
    r, data = gf.json("sel", "list", node(i))
    assert r.returncode == 0, r.stderr
    return len(data[0]["entries"])


def stored(gf, i):
    return gf.sql(f"SELECT bmc_id, key, severity, sensor, message FROM events"
                  f" WHERE node = '{node(i)}' AND source = 'sel' ORDER BY id")


def follow(gf, *args):
    return subprocess.Popen([GPUFLEET, "events", "follow", "--format", "ndjson", "--interval",
                             "0.5", "--no-progress", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=gf.env())


def read_events(p, n, timeout=30):
    """The next @n ndjson lines follow prints (fails after @timeout seconds). Read from
    the pipe's descriptor: lines that came in one write are not hidden in a buffer
    select() cannot see; what is read past them waits in p.gf_buf (stop() adds it)."""
    out = []
    buf = getattr(p, "gf_buf", b"")
    fd = p.stdout.fileno()
    deadline = time.monotonic() + timeout
    while len(out) < n:
        if b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            out.append(json.loads(line))
            continue
        left = deadline - time.monotonic()
        assert left > 0, f"got {len(out)} of {n} events: {out}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"follow ended (rc {p.poll()}) after {out}: {p.stderr.read()}"
            buf += chunk
    p.gf_buf = buf
    return out


def stop(p, sig=signal.SIGTERM):
    p.send_signal(sig)
    try:
        rest, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, getattr(p, "gf_buf", b"").decode() + rest, err


def baseline(gf, *nodes):
    """One short follow: what the logs hold now is stored, nothing printed."""
    r = gf.run("events", "follow", "--format", "ndjson", "--duration", "1", "--interval", "0.5",
               *[node(i) for i in nodes])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "", r.stdout
    return r


def psu_failure(lab, i):
    S.add_event(lab, i, "PSU1 Status", S.PSU_FAILED)


def hot_gpu(lab, i, value=90):
    S.add_event(lab, i, "GPU1 Temp", S.EVENT_BIT["unc"], data2=value, data3=85, threshold=True)


def test_first_follow_stores_the_log_as_its_baseline(reg, lab):
    r = baseline(reg, 1, 2)
    for i in (1, 2):
        rows = stored(reg, i)
        assert len(rows) == sel_count(reg, i) > 0
        assert len({row["key"] for row in rows}) == len(rows)
    assert any(row["severity"] == "critical" and row["sensor"] == "PSU2 Status"
               for row in stored(reg, 2))
    cursors = reg.sql("SELECT node, source FROM event_cursors ORDER BY node")
    assert cursors == [{"node": "gpu01", "source": "sel"}, {"node": "gpu02", "source": "sel"}]
    # Again: nothing new, nothing printed, nothing added.
    before = len(stored(reg, 1))
    baseline(reg, 1, 2)
    assert len(stored(reg, 1)) == before


def test_new_records_printed_and_stored_exactly_once(reg, lab):
    baseline(reg, 1, 2)
    before = {i: len(stored(reg, i)) for i in (1, 2)}
    p = follow(reg, node(1), node(2))
    try:
        psu_failure(lab, 1)
        hot_gpu(lab, 2)
        got = read_events(p, 2)
        hot_gpu(lab, 1, 91)
        got += read_events(p, 1)
    finally:
        rc, rest, err = stop(p)
    assert rc == 0, err
    assert rest == "", rest  # nothing printed twice
    by = {}
    for e in got:
        by.setdefault(e["node"], []).append(e)
    one = by["gpu01"]
    assert [e["sensor"] for e in one] == ["PSU1 Status", "GPU1 Temp"]
    assert one[0]["severity"] == "critical" and one[0]["source"] == "sel"
    assert "Power Supply Failure" in one[0]["message"], one[0]
    assert one[1]["severity"] == "warning"
    assert one[0]["time"].endswith("Z") and one[0]["received"]
    two = by["gpu02"]
    assert [e["sensor"] for e in two] == ["GPU1 Temp"]
    assert two[0]["severity"] == "warning"
    rows1, rows2 = stored(reg, 1), stored(reg, 2)
    assert len(rows1) == before[1] + 2 and len(rows2) == before[2] + 1
    assert [r["bmc_id"] for r in rows1[-2:]] == [e["id"] for e in one]
    # What the BMC holds: the records follow printed are its newest ones.
    r, data = reg.json("sel", "list", node(1))
    assert [e["id"] for e in data[0]["entries"][-2:]] == [e["id"] for e in one]


def test_kill_9_then_restart_reports_what_came_meanwhile_once(reg, lab):
    baseline(reg, 3)
    p = follow(reg, node(3))
    try:
        hot_gpu(lab, 3, 88)
        first = read_events(p, 1)
    finally:
        p.kill()  # SIGKILL: no chance to clean up
        p.wait()
    assert first[0]["node"] == "gpu03"
    for v in (86, 87):
        hot_gpu(lab, 3, v)
    psu_failure(lab, 3)
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "2", "--interval", "0.5",
                node(3))
    assert r.returncode == 0, r.stderr
    again = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["sensor"] for e in again] == ["GPU1 Temp", "GPU1 Temp", "PSU1 Status"], again
    assert first[0]["id"] not in [e["id"] for e in again]
    rows = stored(reg, 3)
    assert len(rows) == sel_count(reg, 3)
    assert len({row["key"] for row in rows}) == len(rows)


def test_sel_clear_detected_and_nothing_reported_again(reg, lab):
    baseline(reg, 4)
    old = stored(reg, 4)
    assert old
    r = reg.run("sel", "clear", node(4), "--yes")
    assert r.returncode == 0, r.stderr
    assert sel_count(reg, 4) == 0
    psu_failure(lab, 4)
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "2", "--interval", "0.5",
                node(4))
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["sensor"] for e in got] == ["PSU1 Status"], got
    assert "cleared" in r.stderr, r.stderr
    rows = stored(reg, 4)
    assert len(rows) == len(old) + 1
    # A second follow: nothing.
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "1", "--interval", "0.5",
                node(4))
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    assert len(stored(reg, 4)) == len(old) + 1


def test_a_silent_bmc_costs_its_node_only(reg, lab):
    baseline(reg, 5, 6)
    lab.pause(6)
    try:
        p = follow(reg, "--timeout", "2", node(5), node(6))
        try:
            hot_gpu(lab, 5, 89)
            got = read_events(p, 1)
            hot_gpu(lab, 5, 90)
            got += read_events(p, 1)
        finally:
            rc, rest, err = stop(p)
    finally:
        lab.resume(6)
    assert [e["node"] for e in got] == ["gpu05", "gpu05"]
    assert rest == ""
    lines = [line for line in err.splitlines() if "gpu06" in line or "127.50" in line]
    assert len(lines) == 1, err  # one clear error for the node, not one per round


def test_list_filters_formats_and_fail_on(reg, lab):
    baseline(reg, 1, 2)
    r, data = reg.json("events", "list", node(2))
    assert r.returncode == 0, r.stderr
    assert len(data) == len(stored(reg, 2)) and {e["node"] for e in data} == {"gpu02"}
    assert set(data[0]) >= {"node", "source", "id", "time", "received", "severity", "message",
                            "message_id", "sensor", "type", "origin", "payload"}
    r, crit = reg.json("events", "list", "--severity", "critical", node(1), node(2))
    assert r.returncode == 0
    assert crit and all(e["severity"] == "critical" for e in crit)
    assert len(crit) == sum(1 for i in (1, 2) for row in stored(reg, i)
                            if row["severity"] == "critical")
    r, none = reg.json("events", "list", "--source", "host-xid", node(2))
    assert r.returncode == 0 and none == []
    r, later = reg.json("events", "list", "--since", "2099-01-01", node(2))
    assert r.returncode == 0 and later == []
    r = reg.run("events", "list", "--fail-on", "critical", node(2))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "PSU2 Status" in r.stdout
    r = reg.run("events", "list", "--fail-on", "critical", "--severity", "info", node(2))
    assert r.returncode == 0, r.stdout + r.stderr
    r = reg.run("events", "list", "--format", "csv", node(2))
    assert r.returncode == 0
    head = r.stdout.splitlines()[0]
    assert head.startswith("node,time,source,id,severity,sensor,type,message"), head
    assert len(r.stdout.splitlines()) == len(data) + 1
    r = reg.run("events", "list", "--format", "ndjson", node(2))
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == [e["id"] for e in data]


@pytest.mark.parametrize("args", [
    ["follow", "--interval", "soon", "gpu01"],
    ["follow", "--duration", "0", "gpu01"],
    ["follow", "--sessions", "-1", "gpu01"],
    ["follow", "--sessions", "many", "gpu01"],
    ["list", "--sessions", "5"],
    ["follow", "--format", "json", "gpu01"],
    ["follow", "--since", "1h", "gpu01"],
    ["follow"],
    ["list", "--fail-on", "info"],
    ["list", "--severity", "bad"],
    ["list", "--source", "smoke-signals"],
    ["list", "--since", "yesterday"],
    ["list", "--interval", "5"],
    ["list", "--format", "prometheus"],
    ["watch", "gpu01"],
])
def test_bad_input_exits_2(reg, args):
    r = reg.run("events", *args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_inventory_prune_is_the_events_retention(reg, lab):
    baseline(reg, 1, 2)
    n1, n2 = len(stored(reg, 1)), len(stored(reg, 2))
    # gpu01's events were received 40 days ago (as the store says), gpu02's now.
    subprocess.run(["sqlite3", reg.db, "UPDATE events SET received = received - 40 * 86400"
                    " WHERE node = 'gpu01'"], check=True)
    r = reg.run("inventory", "prune", "--older-than", "30d")
    assert r.returncode == 0, r.stderr
    assert f"pruned {n1} events" in r.stdout, r.stdout
    assert stored(reg, 1) == [] and len(stored(reg, 2)) == n2
    # The cursor stays: a follow does not take the pruned entries as new.
    r = reg.run("events", "follow", "--format", "ndjson", "--duration", "1", "--interval", "0.5",
                node(1))
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    r = reg.run("--format", "json", "inventory", "prune", "--older-than", "30d")
    assert json.loads(r.stdout)["events_pruned"] == 0


def test_metrics_count_the_stored_events(reg, lab):
    baseline(reg, 1, 2)
    r = reg.run("metrics", "gpu01", "gpu02")
    text = r.stdout
    counts = {}
    for line in text.splitlines():
        if line.startswith("gpufleet_events{"):
            labels, _, value = line.rpartition(" ")
            counts[labels] = float(value)
    for i in (1, 2):
        for sev in ("info", "warning", "critical"):
            n = sum(1 for row in stored(reg, i) if row["severity"] == sev)
            key = f'gpufleet_events{{node="{node(i)}",source="sel",severity="{sev}"}}'
            assert counts.get(key, 0) == n, (key, counts)
    assert 'gpufleet_event_last_received_timestamp_seconds{node="gpu02"' in text
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus) is not installed"
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_ctrl_c_ends_follow_with_130_and_what_was_printed_is_stored(reg, lab):
    baseline(reg, 5)
    p = follow(reg, node(5))
    try:
        hot_gpu(lab, 5, 92)
        got = read_events(p, 1)
    finally:
        rc, rest, err = stop(p, signal.SIGINT)
    assert rc == 130, err
    assert "interrupted" in err
    assert rest == ""
    keys = [r["bmc_id"] for r in stored(reg, 5)]
    assert got[0]["id"] in keys and keys.count(got[0]["id"]) == 1


def test_sessions_past_the_cap_are_opened_each_round(reg, lab):
    """--sessions N keeps the first N nodes' sessions from one poll to the next; the others
    open one each round and their events come all the same: the sessions counted where the
    BMCs see them, by UDP relays in front of BMCs 3 (relay-a) and 4 (relay-b)."""
    relay = loopback(__name__, "relay")
    r = reg.run("nodes", "import", "-",
                input=f"name,bmc,protocol\nrelay-a,{relay}.1,ipmi\nrelay-b,{relay}.2,ipmi\n")
    assert r.returncode == 0, r.stderr
    with UdpRelay(f"{relay}.1", 623, lab.addr(3), 623) as ra, \
            UdpRelay(f"{relay}.2", 623, lab.addr(4), 623) as rb:
        r = reg.run("events", "follow", "--format", "ndjson", "--duration", "1.2",
                    "--interval", "0.4", "relay-a", "relay-b")
        assert r.returncode == 0, r.stderr
        # By default every session is kept: one each for the whole follow.
        assert (ra.counts["logins"], rb.counts["logins"]) == (1, 1)
        a0, b0 = ra.counts["logins"], rb.counts["logins"]
        p = follow(reg, "--sessions", "1", "relay-a", "relay-b")
        try:
            psu_failure(lab, 4)
            got = read_events(p, 1)
            hot_gpu(lab, 3, 87)
            got += read_events(p, 1)
            # More rounds: relay-b's session is opened again for each (bounded wait).
            until = time.monotonic() + 30
            while rb.counts["logins"] - b0 < 3:
                assert time.monotonic() < until, rb.counts
                time.sleep(0.1)
        finally:
            rc, rest, err = stop(p)
    assert rc == 0, err
    assert rest == "", rest  # nothing printed twice
    assert [(e["node"], e["sensor"]) for e in got] == [("relay-b", "PSU1 Status"),
                                                       ("relay-a", "GPU1 Temp")]
    assert ra.counts["logins"] - a0 == 1, ra.counts  # kept for the whole follow
    rows = reg.sql("SELECT node, bmc_id FROM events WHERE node LIKE 'relay-%' AND source = 'sel'"
                   " ORDER BY id")
    for e in got:
        assert [(x["node"], x["bmc_id"]) for x in rows].count((e["node"], e["id"])) == 1
