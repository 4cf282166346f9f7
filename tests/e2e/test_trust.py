"""Trust and the record of what was done (issue 10, points 5, 8, 10, 11, 13-15),
through the real binary against the Redfish emulator.

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

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register_redfish, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402
import sshlab  # noqa: E402

PREFIX = loopback(__name__, "lab")
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


# ---- point 14: known_hosts ---------------------------------------------------

@pytest.fixture(scope="module")
def ssh_lab():
    assert os.access(sshlab.SSHD, os.X_OK), "sshd is not installed (tests/install-deps.sh)"
    with started(lambda d: sshlab.SshLab(d, nodes=[dict(profile="h100"), dict(profile="h100")],
                                         prefix=PREFIX, names=["kh1", "kh2"]),
                 "gf-trust-ssh-") as lab:
        yield lab


@pytest.fixture
def sg(gf, ssh_lab):
    kh = os.path.join(gf.workdir, "known_hosts")
    gf.known_hosts = kh
    gf.write_creds(f"[default]\nssh_user = {ssh_lab.user}\nssh_key = {ssh_lab.key}\n"
                   f"ssh_known_hosts = {kh}\n")
    r = gf.run("nodes", "import", "-",
               input=f"name,ssh\nkh1,{ssh_lab.spec(1)}\nkh2,{ssh_lab.spec(2)}\n")
    assert r.returncode == 0, r.stderr
    ssh_lab.clear_logs()
    return gf


def write_kh(sg, text):
    with open(sg.known_hosts, "w") as f:
        f.write(text)
    os.chmod(sg.known_hosts, 0o600)


def read_kh(sg):
    with open(sg.known_hosts) as f:
        return f.read()


def test_revoked_host_key_refused(sg, ssh_lab):
    key = ssh_lab.hostkeys[0]  # both nodes are served by one sshd, one host key
    # kh1 is known with that very key, but the key is revoked: never accepted.
    write_kh(sg, ssh_lab.known_hosts_line(1) + f"@revoked * {key} compromised\n")
    for extra in ([], ["--ssh-accept-new"]):
        r, data = sg.json("host", "kh1,kh2", "--timeout", "20", *extra)
        assert r.returncode == 1, (r.stderr, data)
        for o in data:
            assert o["ok"] is False, o
            assert o["error"]["kind"] == "hostkey" and "revoked" in o["error"]["message"], o
    assert ssh_lab.commands(1) == [] and ssh_lab.commands(2) == []
    assert read_kh(sg).count("\n") == 2  # nothing recorded for kh2

    # Without the @revoked line the same file is fine.
    write_kh(sg, ssh_lab.known_hosts_line(1))
    r, data = sg.json("host", "kh1", "--timeout", "20")
    assert r.returncode == 0 and data[0]["ok"], (r.stderr, data)


def test_accept_new_never_adds_another_type_to_a_known_host(sg, ssh_lab):
    # kh1 is known by a key type this client cannot use (a security key);
    # the host now offers ed25519: that is a changed key, not a new one.
    name = f"[{ssh_lab.addr(1)}]:{sshlab.PORT}"
    blob = "AAAAInNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIA" + "A" * 43 + "="
    before = f"{name} sk-ssh-ed25519@openssh.com {blob}\n"
    write_kh(sg, before)
    r, data = sg.json("host", "kh1", "--ssh-accept-new", "--timeout", "20")
    assert r.returncode == 1, (r.stderr, data)
    err = data[0]["error"]
    assert err["kind"] == "hostkey" and "changed" in err["message"], err
    assert read_kh(sg) == before
    assert ssh_lab.commands(1) == []

    # A host not known at all is still recorded by --ssh-accept-new.
    r, data = sg.json("host", "kh2", "--ssh-accept-new", "--timeout", "20")
    assert r.returncode == 0, (r.stderr, data)
    added = read_kh(sg)[len(before):].splitlines()
    assert len(added) == 1 and added[0].startswith(f"[{ssh_lab.addr(2)}]:{sshlab.PORT} "), added
