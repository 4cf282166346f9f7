"""Rollouts an operator can leave running (issue 18, points 2, 3, 5 and 6),
through the real binary against the Redfish emulator's UpdateService: one
rollout per node at a time (racing runs and resumes, a dead holder taken
over), a known state after Ctrl-C and kill -9, the failure budget as nodes
finish, and hosts that are off staying off. Each test checks what every BMC
received (pushes counted per node, with the hash of the bytes) as well as
what gpufleet printed and stored."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from conftest import GPUFLEET, LOOPBACK, TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from updatelab import lab_fixture, manager_resets, rf_fixture, upd  # noqa: E402

PREFIX = loopback(__name__, "lab")
DEAD = LOOPBACK[("*", "dead")]   # nothing listens there
COUNT = 8
lab = lab_fixture(["supermicro"] * COUNT, "gf-safe-")
rf = rf_fixture("u", power="On")


_versions = iter(range(100, 10000))


def fresh_version():
    return "7.%d" % next(_versions)


def image(gf, name, version):
    path = os.path.join(gf.dir, name)
    with open(path, "wb") as f:
        f.write(("GF-IMAGE version=%s\n" % version).encode() + b"\x3c" * 4096)
    return path


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def catalog(gf, component="bmc", version=None):
    version = version or fresh_version()
    path = image(gf, component + ".bin", version)
    cat = os.path.join(gf.dir, "catalog-%s.json" % version)
    with open(cat, "w") as f:
        json.dump({"images": [{"component": component, "version": version, "file": path}]}, f)
    return cat, version, sha256_of(path)


def start(gf, *args):
    return subprocess.Popen([GPUFLEET, *gf.ca, "--format", "json", "update", *args],
                            env=gf.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(proc, timeout=120):
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def pushed(lab, i, version=None):
    """The hashes of the images BMC @i received (of @version)."""
    return [p["sha256"] for p in lab.updates(i)["pushes"]
            if version is None or p["version"] == version]


def wait_until(what, cond, limit=30):
    """Poll the peer's state (no sleep stands in for an event)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("never happened: " + what)


def killed(gf, what, cond, *args, sig=signal.SIGKILL):
    """update ARGS started, then @sig once the peer shows @what (@cond):
    the process, ended (its exit code in .returncode, its output read)."""
    proc = start(gf, *args)
    try:
        wait_until(what, cond)
    finally:
        proc.send_signal(sig)
        proc.rc, proc.out, proc.err = finish(proc)
    return proc


def task_running(lab, i):
    return any(t["state"] == "Running" for t in lab.updates(i)["tasks"])


def system_resets(lab, i):
    return [r for r in lab.updates(i)["resets"] if r["kind"] == "system"]


# ---- point 2: one rollout per node at a time ----------------------------------

def test_run_refused_on_a_node_another_run_holds(rf, lab):
    for i in (1, 2):
        lab.override(i, update_flash=3.0)
    cat, version, digest = catalog(rf)
    a = start(rf, "run", "--yes", "--canary", "0", "--catalog", cat, "u1,u2")
    try:
        wait_until("a push to u2", lambda: pushed(lab, 2, version))
        # u2 is mid-flash: a second run planning it sees the old version.
        r, _ = upd(rf, "run", "--yes", "--canary", "0", "--catalog", cat, "u2,u3")
        assert r.returncode == 1, r.stderr
        assert "node 'u2' is held by rollout 1 (run by pid %d)" % a.pid in r.stderr, r.stderr
        assert "u3" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert pushed(lab, 3) == []                    # nothing was sent
        assert rf.sql("SELECT count(*) AS n FROM rollouts")[0]["n"] == 1
    finally:
        rc, out, err = finish(a)
    assert rc == 0, err
    assert pushed(lab, 1) == [digest] and pushed(lab, 2) == [digest]
    # Once the first let go: u2 is at its version, u3 is updated.
    r, data = upd(rf, "run", "--yes", "--canary", "0", "--catalog", cat, "u2,u3")
    assert r.returncode == 0, r.stderr
    assert data["u2"]["state"] == "skipped" and data["u3"]["state"] == "done"
    assert pushed(lab, 2) == [digest] and pushed(lab, 3) == [digest]
    assert [x["holder_pid"] for x in rf.sql("SELECT holder_pid FROM rollouts")] == [None, None]


def test_two_runs_started_together_flash_each_bmc_once(rf, lab):
    for i in (1, 2, 3, 4):
        lab.override(i, update_flash=4.0)   # both plan long before either ends
    cat, version, digest = catalog(rf)
    a = start(rf, "run", "--yes", "--canary", "0", "--catalog", cat, "u[1-3]")
    b = start(rf, "run", "--yes", "--canary", "0", "--catalog", cat, "u[2-4]")
    ra, oa, ea = finish(a)
    rb, ob, eb = finish(b)
    for i in (2, 3):
        assert pushed(lab, i, version) == [digest], (i, ea, eb)
    refused = [e for rc, e in ((ra, ea), (rb, eb)) if rc == 1]
    assert len(refused) == 1 and "is held by rollout" in refused[0], (ra, ea, rb, eb)
    assert sorted((ra, rb)) == [0, 1]


def stopped_rollout(rf, lab, cat):
    """Rollout 1 over u1 (the canary, refused) and u5: stopped, u5 not started."""
    lab.override(1, update_result="exception")
    r, data = upd(rf, "run", "--yes", "--canary", "1", "--catalog", cat, "u1,u5")
    assert r.returncode == 1, r.stderr
    assert data["u1"]["state"] == "failed" and data["u5"]["state"] == "not-started"
    assert len(pushed(lab, 1)) == 1 and pushed(lab, 5) == []
    lab.override(1, update_result="ok")
    lab.clear_updates(1)           # from here on: what the resumes send


def test_resume_refused_while_a_run_or_resume_holds_it(rf, lab):
    cat, version, digest = catalog(rf)
    stopped_rollout(rf, lab, cat)
    lab.override(1, update_flash=3.0)
    lab.override(5, update_flash=3.0)
    a = start(rf, "resume", "--yes")
    try:
        wait_until("the resume's push to u1", lambda: pushed(lab, 1, version))
        for args in (("resume", "--yes"), ("resume", "--yes", "1")):
            r, _ = upd(rf, *args)
            assert r.returncode == 1, r.stderr
            assert "node 'u1' is held by rollout 1 (run by pid %d)" % a.pid in r.stderr
        # and a new run over one of its nodes
        r, _ = upd(rf, "run", "--yes", "--canary", "0", "--catalog", cat, "u5,u6")
        assert r.returncode == 1 and "node 'u5' is held by rollout 1" in r.stderr, r.stderr
    finally:
        rc, out, err = finish(a)
    assert rc == 0, err
    for i in (1, 5):
        assert pushed(lab, i, version) == [digest], i
    assert pushed(lab, 6) == []


def test_a_run_holds_its_rollout_against_resume(rf, lab):
    lab.override(1, update_flash=3.0)
    cat, version, digest = catalog(rf)
    a = start(rf, "run", "--yes", "--catalog", cat, "u1")
    try:
        wait_until("a push to u1", lambda: pushed(lab, 1, version))
        r, _ = upd(rf, "resume", "--yes")
        assert r.returncode == 1 and "held by rollout 1" in r.stderr, r.stderr
    finally:
        rc, out, err = finish(a)
    assert rc == 0, err
    assert pushed(lab, 1, version) == [digest]


def set_holder(rf, pid, start, boot):
    subprocess.run(["sqlite3", rf.db, "UPDATE rollouts SET state = 'running', holder_pid = %d, "
                    "holder_start = %d, holder_boot = '%s'" % (pid, start, boot)], check=True)


def me():
    """This test process as a holder: its pid, start time, boot id."""
    with open("/proc/self/stat") as f:
        start = int(f.read().rpartition(")")[2].split()[19])
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    return os.getpid(), start, boot


def test_a_dead_holder_is_taken_over(rf, lab):
    """Held by this (live) test process: refused. The same pid with another
    start time (a reused pid), or another boot: taken over."""
    cat, version, digest = catalog(rf)
    stopped_rollout(rf, lab, cat)
    pid, st, boot = me()
    set_holder(rf, pid, st, boot)
    r, _ = upd(rf, "resume", "--yes")
    assert r.returncode == 1 and "node 'u1' is held by rollout 1 (run by pid %d)" % pid \
        in r.stderr, r.stderr
    assert pushed(lab, 1, version) == [] and pushed(lab, 5) == []
    set_holder(rf, pid, st + 1, boot)
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done" and data["u5"]["state"] == "done"
    assert pushed(lab, 1, version) == [digest] and pushed(lab, 5, version) == [digest]
    # A holder of an earlier boot is dead whatever its pid.
    set_holder(rf, pid, st, "00000000-0000-0000-0000-000000000000")
    r, data = upd(rf, "resume", "--yes", "1")
    assert r.returncode == 0, r.stderr


def test_kill_9_then_resume_takes_over(rf, lab):
    lab.override(1, update_flash=2.0)
    cat, version, digest = catalog(rf)
    a = killed(rf, "a push to u1", lambda: pushed(lab, 1, version), "run", "--yes",
               "--catalog", cat, "u1")
    assert rf.sql("SELECT holder_pid FROM rollouts")[0]["holder_pid"] == a.pid
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done"
    assert pushed(lab, 1, version) == [digest]
    assert rf.sql("SELECT holder_pid FROM rollouts")[0]["holder_pid"] is None


# ---- point 3: every interruption ends in a known state -----------------------------

def test_ctrl_c_during_a_running_task_is_interrupted_and_resume_activates(rf, lab):
    lab.override(1, update_flash=3.0)
    cat, version, digest = catalog(rf)
    a = killed(rf, "u1's task running", lambda: task_running(lab, 1), "run", "--yes",
               "--catalog", cat, "u1", sig=signal.SIGINT)
    rc, out, err = a.rc, a.out, a.err
    assert rc == 130, err
    data = {o["node"]: o for o in json.loads(out)}
    assert data["u1"]["state"] == "interrupted", out
    (u,) = data["u1"]["updates"]
    assert u["state"] == "interrupted" and "sent" in u["error"]["message"], u
    assert pushed(lab, 1, version) == [digest]
    assert manager_resets(lab, 1) == []
    rows = rf.sql("SELECT state FROM rollout_items WHERE node = 'u1'")
    assert [x["state"] for x in rows] == ["interrupted"]
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done" and data["u1"]["updates"][0]["state"] == "done"
    assert pushed(lab, 1, version) == [digest]            # activated, not pushed again
    assert len(manager_resets(lab, 1)) == 1


def test_kill_9_status_shows_in_flight_not_not_started(rf, lab):
    lab.override(1, update_flash=3.0)
    cat, version, digest = catalog(rf)
    a = killed(rf, "a push to u1", lambda: pushed(lab, 1, version), "run", "--yes",
               "--catalog", cat, "u1")
    r, data = upd(rf, "status")
    assert r.returncode == 1
    assert data["u1"]["state"] == "running"
    assert [u["state"] for u in data["u1"]["updates"]] == ["running"], data
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done"
    assert pushed(lab, 1, version) == [digest]
    assert len(manager_resets(lab, 1)) == 1


FW_INV = "/redfish/v1/UpdateService/FirmwareInventory"


def test_resume_activates_what_the_bmc_shows_staged_without_a_task(rf, lab):
    """Killed while u1's task ran; the task completed, staging the image,
    then left the TaskService (purged): no task tells resume about it, but
    the BMC's staging slot (Staging_BMC) shows the version. resume activates
    it (one Manager.Reset) and reads it back; the image is not pushed again."""
    lab.override(1, update_flash=2.0, update_purge="task")
    cat, version, digest = catalog(rf)
    killed(rf, "a push to u1", lambda: pushed(lab, 1, version), "run", "--yes",
           "--catalog", cat, "u1")
    wait_until("u1's image staged", lambda: lab.updates(1)["staged"])
    assert lab.resource(1, FW_INV + "/Staging_BMC")["Version"] == version
    assert lab.resource(1, FW_INV + "/BMC")["Version"] != version
    assert manager_resets(lab, 1) == []
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done", data
    assert [u["state"] for u in data["u1"]["updates"]] == ["done"]
    assert pushed(lab, 1, version) == [digest]            # activated, not pushed again
    assert len(manager_resets(lab, 1)) == 1
    assert lab.resource(1, FW_INV + "/BMC")["Version"] == version
    rows = rf.sql("SELECT state FROM rollout_items WHERE node = 'u1'")
    assert [x["state"] for x in rows] == ["done"]


def test_resume_activates_host_firmware_the_bmc_shows_staged(rf, lab):
    """The same for host firmware (BIOS, activated by a host restart):
    resume --reboot restarts the host once and pushes nothing; without
    --reboot it stays pending-activation, not pushed either."""
    lab.override(2, update_flash=2.0, update_purge="task")
    cat, version, digest = catalog(rf, "bios")
    killed(rf, "a push to u2", lambda: pushed(lab, 2, version), "run", "--yes",
           "--catalog", cat, "u2")
    wait_until("u2's image staged", lambda: lab.updates(2)["staged"])
    assert lab.resource(2, FW_INV + "/Staging_BIOS")["Version"] == version
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 1, r.stderr
    assert data["u2"]["state"] == "pending-activation", data
    assert pushed(lab, 2, version) == [digest] and system_resets(lab, 2) == []
    r, data = upd(rf, "resume", "--yes", "--reboot")
    assert r.returncode == 0, r.stderr
    assert data["u2"]["state"] == "done", data
    assert pushed(lab, 2, version) == [digest]
    assert len(system_resets(lab, 2)) == 1


# ---- point 5: the failure budget acts when failures happen --------------------------

def test_max_failures_checked_as_each_node_finishes(rf, lab):
    """One batch of four, one node at a time (--fanout 1): the first fails,
    and no other node of the batch starts."""
    cat, version, digest = catalog(rf)
    lab.override(1, update_result="exception")
    r = rf.run(*rf.ca, "--format", "json", "--fanout", "1", "update", "run", "--yes",
               "--canary", "0", "--batch", "4", "--catalog", cat, "u1,u2,u3,u4")
    assert r.returncode == 1, r.stderr
    data = {o["node"]: o for o in json.loads(r.stdout)}
    assert data["u1"]["state"] == "failed"
    for i in (2, 3, 4):
        assert data[f"u{i}"]["state"] == "not-started", data
        assert pushed(lab, i) == []
    assert "no more nodes are started" in r.stderr
    assert rf.sql("SELECT state FROM rollouts")[0]["state"] == "stopped"


def test_default_canary_is_one_node_alone(rf, lab):
    cat, version, digest = catalog(rf)
    r, data = upd(rf, "run", "--yes", "--catalog", cat, "u1,u2,u3")
    assert r.returncode == 0, r.stderr
    assert [data[f"u{i}"]["batch"] for i in (1, 2, 3)] == [1, 2, 2]
    t_canary = lab.updates(1)["pushes"][0]["t"]
    done_canary = manager_resets(lab, 1)[0]["t"]
    for i in (2, 3):
        assert lab.updates(i)["pushes"][0]["t"] > done_canary > t_canary
        assert pushed(lab, i) == [digest]


def test_unreachable_at_plan_is_skipped_not_a_failure(rf, lab):
    r = rf.run("nodes", "add", "u9", "--bmc", DEAD + ".9:443", "--protocol", "redfish")
    assert r.returncode == 0, r.stderr
    cat, version, digest = catalog(rf)
    r, data = upd(rf, "run", "--yes", "--catalog", cat, "u9,u1,u2")
    assert r.returncode == 0, r.stderr
    assert data["u9"]["state"] == "skipped", data
    assert data["u9"]["error"]["kind"] in ("connect", "timeout")
    assert data["u1"]["state"] == "done" and data["u2"]["state"] == "done"
    assert pushed(lab, 1) == [digest] and pushed(lab, 2) == [digest]
    assert "u9" in r.stderr and "resume" in r.stderr
    assert rf.sql("SELECT state FROM rollouts")[0]["state"] == "stopped"
    # Resumable: once its BMC answers, resume plans and updates it.
    r = rf.run("nodes", "add", "u9", "--replace", "--bmc", "%s:%d" % (lab.addr(3), lab.port),
               "--protocol", "redfish")
    assert r.returncode == 0, r.stderr
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u9"]["state"] == "done" and pushed(lab, 3) == [digest]
    assert pushed(lab, 1) == [digest]


# ---- point 6: hosts that are off stay off ---------------------------------------------

def test_reboot_never_powers_on_a_host_that_is_off(rf, lab):
    lab.set_power(1, "Off")
    cat, version, digest = catalog(rf, "bios")
    r, data = upd(rf, "run", "--yes", "--reboot", "--catalog", cat, "u1,u2")
    assert r.returncode == 1, r.stderr
    assert data["u2"]["state"] == "done"
    assert data["u1"]["state"] == "pending-activation", data
    assert "off" in data["u1"]["error"]["message"]
    assert lab.power(1) == "Off" and system_resets(lab, 1) == []
    assert pushed(lab, 1) == [digest]
    # resume --reboot: still off, still not turned on, not pushed again
    r, data = upd(rf, "resume", "--yes", "--reboot")
    assert r.returncode == 1
    assert data["u1"]["state"] == "pending-activation"
    assert lab.power(1) == "Off" and system_resets(lab, 1) == []
    assert pushed(lab, 1) == [digest]
    # Once it is on again, resume activates what was staged.
    lab.set_power(1, "On")
    r, data = upd(rf, "resume", "--yes", "--reboot")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done" and len(system_resets(lab, 1)) == 1
    assert pushed(lab, 1) == [digest]


def test_resume_activates_only_what_was_recorded_staged(rf, lab):
    """Killed while u1's BMC refused the push (busy): u1 is in flight, but its
    BMC ran no update task since, so nothing is staged. resume --reboot
    restarts the host once, after the one push, not before it as well."""
    cat, version, digest = catalog(rf, "bios")
    lab.override(1, update_busy=60)
    killed(rf, "a refused push", lambda: lab.updates(1)["refused"], "run", "--yes", "--reboot",
           "--catalog", cat, "u1")
    assert pushed(lab, 1) == []
    lab.override(1, update_busy=0)
    r, data = upd(rf, "resume", "--yes", "--reboot")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done"
    assert pushed(lab, 1, version) == [digest]
    assert len(system_resets(lab, 1)) == 1
    assert manager_resets(lab, 1) == []


# ---- point 7: the audit of update ----------------------------------------------------

def audit_rows(rf, node):
    return rf.sql("SELECT verb, result, detail, finished FROM audit WHERE node = '%s' "
                  "AND verb LIKE 'update %%' ORDER BY id" % node)


def test_update_audit_rows_name_the_rollout_component_and_version(rf, lab):
    """Each node's audit row of update run names the rollout, what it
    updates and to which version; a failure keeps that with its error."""
    lab.override(2, update_result="exception")
    cat, version, digest = catalog(rf)
    r, data = upd(rf, "run", "--yes", "--canary", "0", "--max-failures", "1",
                  "--catalog", cat, "u1,u2")
    assert r.returncode == 1, r.stderr
    assert data["u1"]["state"] == "done" and data["u2"]["state"] == "failed"
    rid = rf.sql("SELECT id FROM rollouts")[0]["id"]
    (ok,) = audit_rows(rf, "u1")
    assert ok["verb"] == "update run" and ok["result"] == "ok", ok
    assert ok["detail"] == "rollout %d: bmc %s" % (rid, version), ok
    (bad,) = audit_rows(rf, "u2")
    assert bad["result"] == "refused", bad
    assert bad["detail"].startswith("rollout %d: bmc %s: " % (rid, version)), bad
    assert "Firmware apply failed" in bad["detail"], bad
    assert pushed(lab, 1) == [digest] and pushed(lab, 2) == [digest]


def test_pending_audit_rows_of_a_killed_run_are_reconciled_by_resume(rf, lab):
    """kill -9 leaves u1's audit intent pending; resume finds out from the
    BMC what happened (the image staged, activated, read back) and completes
    that row with it, beside its own row."""
    lab.override(1, update_flash=2.0)
    cat, version, digest = catalog(rf)
    killed(rf, "a push to u1", lambda: pushed(lab, 1, version), "run", "--yes",
           "--catalog", cat, "u1")
    (row,) = audit_rows(rf, "u1")
    assert row["result"] == "pending" and row["finished"] is None, row
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, r.stderr
    assert data["u1"]["state"] == "done"
    assert pushed(lab, 1, version) == [digest]
    run_row, resume_row = audit_rows(rf, "u1")
    assert resume_row["verb"] == "update resume" and resume_row["result"] == "ok"
    assert run_row["verb"] == "update run" and run_row["finished"] is not None, run_row
    assert run_row["result"] == "ok", run_row
    assert run_row["detail"].startswith("rollout 1: bmc %s: " % version), run_row
    assert "update resume" in run_row["detail"] and "done" in run_row["detail"], run_row
    r = rf.run("inventory", "audit", "--pending")
    assert r.returncode == 0 and "u1" not in r.stdout, r.stdout
