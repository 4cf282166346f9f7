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


# ---- point 13: credentials as OpenSSH treats keys ---------------------------

def test_password_command_text_never_in_argv(rf, lab, tmp_path):
    seen = tmp_path / "argv.txt"
    rf.write_creds(f"[default]\nbmc_user = admin\n"
                   f"bmc_password_command = tr '\\0' ' ' </proc/$$/cmdline >$T; "
                   f"env | grep -c GPUFLEET_BMC_PASSWORD >>$T; echo {PASSWORD}\n"
                   f"redfish_cacert = {lab.cacert}\n")
    r = rf.run("power", "status", "rf1", env={"T": str(seen)})
    assert r.returncode == 0, r.stderr
    argv, count = seen.read_text().rsplit(" ", 1)  # cmdline ends in NUL: no newline
    assert argv.strip() == "sh -s", argv
    assert PASSWORD not in argv and "cmdline" not in argv
    assert count.strip() == "0"


def test_env_password_is_gone_for_the_command(rf, lab, tmp_path):
    # The env password wins and the command does not run; a host command
    # started locally would see no GPUFLEET_BMC_PASSWORD either.
    marker = tmp_path / "ran"
    rf.write_creds(f"[default]\nbmc_user = admin\nbmc_password_command = touch {marker}\n"
                   f"redfish_cacert = {lab.cacert}\n")
    r = rf.run("power", "status", "rf1", env={"GPUFLEET_BMC_PASSWORD": PASSWORD})
    assert r.returncode == 0, r.stderr
    assert not marker.exists()


def test_credentials_of_another_user_refused(rf, lab, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file away")
    marker = tmp_path / "ran-as-root"
    rf.write_creds(f"[default]\nbmc_user = admin\nbmc_password_command = touch {marker}; "
                   f"echo {PASSWORD}\nredfish_cacert = {lab.cacert}\n")
    os.chown(rf.creds, 65534, 65534)
    r = rf.run("power", "status", "rf1")
    assert r.returncode == 2, r.stderr
    assert "is owned by uid 65534, not by this user" in r.stderr, r.stderr
    assert not marker.exists()
    os.chown(rf.creds, 0, 0)

    link = tmp_path / "creds-link"
    link.symlink_to(rf.creds)
    r = rf.run("power", "status", "rf1", env={"GPUFLEET_CREDENTIALS": str(link)})
    assert r.returncode == 2 and "is a symbolic link" in r.stderr, r.stderr

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    inside = shared / "credentials"
    inside.write_text(open(rf.creds).read())
    os.chmod(inside, 0o600)
    r = rf.run("power", "status", "rf1", env={"GPUFLEET_CREDENTIALS": str(inside)})
    assert r.returncode == 2 and "which group or others can write" in r.stderr, r.stderr
    assert not marker.exists()


def test_database_symlink_not_followed(rf, lab, tmp_path):
    other = tmp_path / "elsewhere.db"
    other.write_bytes(b"")
    link = tmp_path / "inv-link.db"
    link.symlink_to(other)
    r = rf.run("nodes", "list", env={"GPUFLEET_DB": str(link)})
    assert r.returncode == 2, r.stderr
    assert "is a symbolic link" in r.stderr, r.stderr
    assert other.read_bytes() == b""
