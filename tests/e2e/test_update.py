"""gpufleet update plan|run|status|resume through the real binary against the
Redfish emulator's UpdateService (tests/lab/REDFISH-EMU.md): what each BMC saw
(pushes, their targets, resets), what was printed, what the rollout store and
the inventory hold afterwards."""
import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

from conftest import GPUFLEET, PASSWORD, TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from ipmilab import IpmiLab  # noqa: E402
from redfish_update import ImageServer  # noqa: E402
from updatelab import FAST, lab_fixture, manager_resets, pushes, rf_fixture, upd  # noqa: E402

PREFIX = loopback(__name__, "lab")
IMAGES = PREFIX + ".250"     # the HTTPS server BMCs pull images from
SUPERMICRO, DGX, LENOVO, DELL, HPE = 1, 2, 3, 4, 5
SESSIONS = "/redfish/v1/SessionService/Sessions"
# 1-5 one per dialect, 6-8 Supermicro for batches and crashes
VENDORS = ["supermicro", "dgx", "lenovo", "dell", "hpe", "supermicro", "supermicro",
           "supermicro"]

lab = lab_fixture(VENDORS, "gf-upd-")
rf = rf_fixture("u")   # every lab node as uN, counters and updates cleared; a catalog folder


def image(gf, name, version, targets=None):
    path = os.path.join(gf.dir, name)
    with open(path, "wb") as f:
        f.write(("GF-IMAGE version=%s%s\n" % (version, " targets=" + targets if targets else ""))
                .encode() + b"\xa5" * 4096)
    return name


def catalog(gf, images, name="catalog.json"):
    path = os.path.join(gf.dir, name)
    with open(path, "w") as f:
        json.dump({"images": images}, f)
    return path


_versions = iter(range(100, 10000))


def fresh_version():
    """A version no earlier test of this module flashed (the lab keeps its state)."""
    return "9.%d" % next(_versions)


def bmc_catalog(gf, version=None):
    version = version or fresh_version()
    # HPE's raw push names no Targets: the image says what it is for.
    return catalog(gf, [
        {"model": "ProLiant*", "component": "bmc", "version": version,
         "file": image(gf, "hpe-bmc.bin", version, "bmc")},
        {"component": "bmc", "version": version, "file": image(gf, "bmc.bin", version)},
    ])


# ---- the catalog ---------------------------------------------------------

def test_bad_catalog_names_entry_and_field(rf):
    cat = catalog(rf, [{"component": "bmc", "version": "1", "file": image(rf, "a.bin", "1")},
                       {"component": "bios", "file": "a.bin"}])
    for sub in ("plan", "run"):
        r = rf.run(*rf.ca, "update", sub, "--yes", "--catalog", cat, "u1")
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "images[1] (component 'bios')" in lines[0] and \
            "'version' is missing" in lines[0], r.stderr
    r = rf.run(*rf.ca, "update", "plan", "--catalog", os.path.join(rf.dir, "none.json"), "u1")
    assert r.returncode == 2 and "cannot be read" in r.stderr


# ---- plan ----------------------------------------------------------------

def test_plan_reads_each_bmc_fresh_and_sends_nothing(rf, lab):
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    lab.override(DGX, bmc_firmware=version)  # behind the inventory's back: plan must see it
    try:
        r, data = upd(rf, "plan", "--catalog", cat, "u[1-5]")
        assert r.returncode == 0, r.stderr
        assert data["u2"]["updates"] == [] and data["u2"]["up_to_date"][0]["component"] == "bmc"
        want = {SUPERMICRO: "multipart-push", LENOVO: "multipart-push", DELL: "multipart-push",
                HPE: "http-push"}
        for i, action in want.items():
            (u,) = data[f"u{i}"]["updates"]
            assert set(u) >= {"component", "from", "to", "action", "activation"}
            assert u["component"] == "bmc" and u["to"] == version and u["action"] == action
            assert u["activation"] == "bmc-reset" and u["from"] != version
        for i in lab.indices():
            assert pushes(lab, i) == [] and lab.updates(i)["resets"] == []
    finally:
        lab.override(DGX, **FAST)


def test_plan_ipmi_node_unsupported(rf, tmp_path):
    ipmi = IpmiLab(str(tmp_path / "ipmi"), prefix=PREFIX, first=200, count=1, user="admin",
                   password=PASSWORD)
    try:
        ipmi.start()
        r = rf.run("nodes", "add", "i1", "--bmc", ipmi.addr(200), "--protocol", "ipmi")
        assert r.returncode == 0, r.stderr
        r, data = upd(rf, "plan", "--catalog", bmc_catalog(rf), "u1,i1")
        assert r.returncode == 1
        assert data["u1"]["ok"] is True
        assert data["i1"]["ok"] is False and data["i1"]["error"]["kind"] == "unsupported"
    finally:
        ipmi.stop()


# ---- run -----------------------------------------------------------------

def test_run_needs_yes_and_dry_run_sends_nothing(rf, lab):
    cat = bmc_catalog(rf)
    r = rf.run(*rf.ca, "update", "run", "--catalog", cat, "u[1-2]")
    assert r.returncode == 4 and "--yes" in r.stderr
    r, data = upd(rf, "run", "--dry-run", "--catalog", cat, "u[1-2]")
    assert r.returncode == 0 and data["u1"]["dry_run"] is True
    for i in (1, 2):
        assert pushes(lab, i) == []
    assert rf.sql("SELECT count(*) AS n FROM rollouts")[0]["n"] == 0


def test_run_every_dialect_done_only_when_read_back(rf, lab):
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    lab.override(DELL, update_result="noop")     # Completed, nothing applied
    r, data = upd(rf, "run", "--yes", "--readback-wait", "3", "--catalog", cat, "u[1-5]")
    assert r.returncode == 1, r.stderr
    for i in (SUPERMICRO, DGX, LENOVO, HPE):
        node = data[f"u{i}"]
        assert node["ok"] is True and node["state"] == "done", node
        assert node["updates"][0]["state"] == "done"
        (p,) = pushes(lab, i)                     # each image pushed once
        assert p["version"] == version
        assert len(manager_resets(lab, i)) == 1   # and activated once
    (p,) = pushes(lab, SUPERMICRO)
    assert p["kind"] == "multipart" and p["members"] == \
        ["/redfish/v1/UpdateService/FirmwareInventory/BMC"]
    assert pushes(lab, HPE)[0]["kind"] == "raw"
    dell = data[f"u{DELL}"]
    assert dell["ok"] is False and dell["state"] == "failed"
    assert dell["updates"][0]["error"]["kind"] == "refused"
    # The store says the same, and so does status.
    rows = rf.sql("SELECT node, state FROM rollout_nodes ORDER BY node")
    assert {x["node"]: x["state"] for x in rows} == \
        {"u1": "done", "u2": "done", "u3": "done", "u4": "failed", "u5": "done"}
    r2, st = upd(rf, "status")
    assert r2.returncode == 1 and st["u4"]["state"] == "failed" and st["u1"]["state"] == "done"
    # A sweep afterwards: drift against a done node shows only the failed one.
    r3 = rf.run(*rf.ca, "sweep", "--no-ssh", "u[1-5]")
    assert r3.returncode in (0, 1), r3.stderr
    r4, drift = rf.json("drift", "--baseline-node", "u1", "--component", "bmc", "u[1-5]")
    drifted = {o["node"] for o in drift if o.get("drift")}
    assert drifted == {"u4"}, drift


def test_run_round_trips_per_bmc(rf, lab):
    """What a rollout asks each BMC, counted in its access log (bench/rollout.sh,
    issue 18): the plan's session reads the root, the main System, the
    UpdateService and its inventory (expanded, in one request); the node's own
    session reads them again (a batch may start long after the plan), then
    lists the tasks (to tell its own should the BMC name none) and pushes
    without reading the UpdateService a third time. After the push: the task,
    the reset, the wait, and the inventory read back, which stays."""
    version = fresh_version()
    r, data = upd(rf, "run", "--yes", "--catalog", bmc_catalog(rf, version), "u2")
    assert r.returncode == 0 and data["u2"]["state"] == "done", (r.stderr, data)
    log = [(a["method"], a["path"].split("?")[0], a["path"]) for a in lab.access_log(DGX)]
    (p,) = pushes(lab, DGX)
    push = next(k for k, (m, path, _) in enumerate(log) if m == "POST" and "Actions" not in path
                and not path.startswith(SESSIONS))
    sessions = [k for k, (m, path, _) in enumerate(log) if m == "POST" and path == SESSIONS]
    plan, pre = log[:sessions[1] - 1], log[sessions[1] - 1:push]
    reads = [("GET", "/redfish/v1"), ("POST", SESSIONS), ("GET", "/redfish/v1/Systems"),
             ("GET", "/redfish/v1/UpdateService"), ("GET", "/redfish/v1/UpdateService")]
    assert [(m, path) for m, path, _ in plan[:5]] == reads, plan
    assert plan[5][0] == "DELETE" and len(plan) == 6, plan
    assert [(m, path) for m, path, _ in pre[:5]] == reads, pre
    # The inventory in one request, $select and $expand as `firmware` asks.
    assert "$expand=" in plan[4][2] and "$expand=" in pre[4][2], (plan, pre)
    # Then the tasks before the push, and the push: the UpdateService not read again.
    assert [(m, path) for m, path, _ in pre[5:]] == [
        ("GET", "/redfish/v1/TaskService"), ("GET", "/redfish/v1/TaskService/Tasks")], pre
    assert len(plan) + len(pre) == 13, log[:push]
    # After it: the inventory read back once the BMC is back, then the logout.
    assert log[-2][1] == "/redfish/v1/UpdateService" and "$expand=" in log[-2][2], log
    assert log[-1][0] == "DELETE", log
    assert p["version"] == version


def test_task_exception_is_failed_with_bmc_message(rf, lab):
    lab.override(SUPERMICRO, update_result="exception", update_message="flash chip said no")
    r, data = upd(rf, "run", "--catalog", bmc_catalog(rf), "u1")
    assert r.returncode == 1
    (u,) = data["u1"]["updates"]
    assert u["state"] == "failed" and u["error"]["kind"] == "refused"
    assert "Exception" in u["error"]["message"] and "flash chip said no" in u["error"]["message"]
    assert manager_resets(lab, SUPERMICRO) == []   # nothing to activate


def test_purged_task_monitor_is_not_a_failure(rf, lab):
    lab.override(SUPERMICRO, update_purge="task", update_flash=0.5)
    r, data = upd(rf, "run", "--catalog", bmc_catalog(rf), "u1")
    assert r.returncode == 0, (r.stderr, data)
    assert data["u1"]["state"] == "done"


def test_conflict_is_retried_within_the_deadline(rf, lab):
    lab.override(SUPERMICRO, update_busy=2)
    r, data = upd(rf, "run", "--catalog", bmc_catalog(rf), "u1")
    assert r.returncode == 0, (r.stderr, data)
    assert len(pushes(lab, SUPERMICRO)) == 1
    assert any(x["reason"] == "busy" for x in lab.updates(SUPERMICRO)["refused"])


def test_host_firmware_pending_without_reboot_then_resumed_with_it(rf, lab):
    version = fresh_version()
    cat = catalog(rf, [{"component": "bios", "version": version,
                        "file": image(rf, "bios.bin", version)}])
    r, data = upd(rf, "run", "--catalog", cat, "u1")
    assert r.returncode == 1
    assert data["u1"]["state"] == "pending-activation", data
    assert [x for x in lab.updates(SUPERMICRO)["resets"] if x["kind"] == "system"] == []
    r, data = upd(rf, "resume", "--reboot")
    assert r.returncode == 0, (r.stderr, data)
    assert data["u1"]["state"] == "done"
    assert len(pushes(lab, SUPERMICRO)) == 1       # staged once, activated by the reset
    assert len([x for x in lab.updates(SUPERMICRO)["resets"] if x["kind"] == "system"]) == 1


def test_canary_batches_and_max_failures(rf, lab):
    cat = bmc_catalog(rf)
    lab.override(6, update_result="exception")
    lab.override(7, update_result="exception")
    # Canary u1 alone, then batches of 2 over u[6-8,3]: two failures stop the rest.
    r, data = upd(rf, "run", "--yes", "--canary", "1", "--batch", "2", "--max-failures", "1",
                  "--catalog", cat, "u1,u6,u7,u8,u3")
    assert r.returncode == 1
    assert data["u1"]["state"] == "done" and data["u1"]["batch"] == 1
    assert data["u6"]["state"] == "failed" and data["u7"]["state"] == "failed"
    assert data["u6"]["batch"] == data["u7"]["batch"] == 2
    assert data["u8"]["state"] == "not-started" and data["u3"]["state"] == "not-started"
    assert pushes(lab, 8) == [] and pushes(lab, LENOVO) == []
    # The canary was pushed (and done) before the batch started.
    t_canary = pushes(lab, 1)[0]["t"]
    assert all(pushes(lab, i)[0]["t"] > t_canary + 0.3 for i in (6, 7))
    assert rf.sql("SELECT state FROM rollouts")[0]["state"] == "stopped"
    # Audited: intent rows completed per node sent to, none left pending.
    audit = rf.sql("SELECT node, result FROM audit WHERE verb = 'update run'")
    assert {a["node"] for a in audit} == {"u1", "u6", "u7"}
    assert all(a["result"] != "pending" for a in audit)


def test_uploads_of_a_batch_are_spread_over_a_second(rf, lab):
    """A batch does not push every image in the same second (issue 11), and does
    not wait on its spacing either (issue 18's figure): a batch of 8 starts its
    uploads spread over one second, whatever its size."""
    r, data = upd(rf, "run", "--yes", "--canary", "0", "--batch", "8", "--catalog",
                  bmc_catalog(rf), "u[1-8]")
    assert r.returncode == 0, r.stderr
    assert {o["batch"] for o in data.values()} == {1}
    t = sorted(pushes(lab, i)[0]["t"] for i in lab.indices())
    assert t[-1] - t[0] >= 0.8, t


def test_ndjson_streams_nodes(rf, lab):
    r = rf.run(*rf.ca, "--format", "ndjson", "update", "run", "--yes", "--catalog",
               bmc_catalog(rf), "u1,u6")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert sorted(o["node"] for o in objs) == ["u1", "u6"]
    assert all(o["state"] == "done" and o["rollout"] == 1 for o in objs)


# ---- the image planned is the image flashed --------------------------------

def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def stopped_after_canary(gf, lab, cat, cwd=None):
    """A rollout over u1 (the canary, whose task fails) and u6: stopped with
    u6 not started, its image recorded at plan."""
    lab.override(1, update_result="exception")
    r = subprocess.run([GPUFLEET, *gf.ca, "--format", "json", "update", "run", "--yes",
                        "--canary", "1", "--max-failures", "0", "--catalog", cat, "u1,u6"],
                       env=gf.env(), cwd=cwd, capture_output=True, text=True, timeout=180)
    assert r.returncode == 1, r.stderr
    data = {o["node"]: o for o in json.loads(r.stdout)}
    assert data["u1"]["state"] == "failed" and data["u6"]["state"] == "not-started"
    assert pushes(lab, 6) == []
    lab.override(1, update_result="ok")


def test_image_replaced_before_resume_is_refused_and_not_sent(rf, lab):
    """The file is replaced between the run and resume: the push is refused
    (node failed, the image named), and the BMC receives none of it."""
    version = fresh_version()
    cat = catalog(rf, [{"component": "bmc", "version": version,
                        "file": image(rf, "bmc.bin", version)}])
    path = os.path.join(rf.dir, "bmc.bin")
    stopped_after_canary(rf, lab, cat)
    planned = rf.sql("SELECT file, size, sha256 FROM rollout_images")
    assert planned == [{"file": path, "size": os.path.getsize(path), "sha256": sha256_of(path)}]
    lab.clear_updates(1)
    with open(path, "rb") as f:
        orig = bytearray(f.read())
    image(rf, "bmc.bin", version + "-other")   # same name, other bytes
    # The canary u1 goes first: refused, so --max-failures 0 leaves u6 unstarted.
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 1, r.stderr
    assert data["u1"]["state"] == "failed" and data["u6"]["state"] == "not-started", \
        json.dumps(data)
    text = json.dumps(data["u1"])
    assert "image '%s' changed since the rollout was planned" % path in text, text
    assert pushes(lab, 6) == [] and pushes(lab, 1) == []
    # A file of the planned size but other bytes: refused before anything is sent too.
    orig[-1] ^= 0xff
    with open(path, "wb") as f:
        f.write(bytes(orig))
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 1 and data["u1"]["state"] == "failed", r.stderr
    assert "sha256 %s, %s planned" % (sha256_of(path), planned[0]["sha256"]) in \
        json.dumps(data["u1"])
    assert pushes(lab, 6) == [] and pushes(lab, 1) == []


def test_catalog_sha256_checked_at_plan_and_shown(rf, lab):
    version = fresh_version()
    name = image(rf, "bmc.bin", version)
    path = os.path.join(rf.dir, name)
    good = sha256_of(path)
    bad = catalog(rf, [{"component": "bmc", "version": version, "file": name,
                        "sha256": "0" * 64}], name="bad.json")
    for sub in ("plan", "run"):
        r = rf.run(*rf.ca, "update", sub, "--yes", "--catalog", bad, "u6")
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "images[0] (component 'bmc')" in lines[0] and \
            "image '%s' has sha256 %s, the catalog gives %s" % (path, good, "0" * 64) \
            in lines[0], r.stderr
    assert pushes(lab, 6) == []
    assert rf.sql("SELECT count(*) AS n FROM rollouts")[0]["n"] == 0
    cat = catalog(rf, [{"component": "bmc", "version": version, "file": name,
                        "sha256": good.upper()}])
    r, data = upd(rf, "plan", "--catalog", cat, "u6")
    assert r.returncode == 0, r.stderr
    assert data["u6"]["updates"][0]["sha256"] == good
    assert set(data["u6"]["updates"][0]) >= {"component", "from", "to", "action",
                                             "activation", "host_reboot", "sha256"}
    r = rf.run(*rf.ca, "update", "plan", "--catalog", cat, "u6")
    assert r.returncode == 0 and "SHA256" in r.stdout and good in r.stdout, r.stdout
    r, data = upd(rf, "run", "--yes", "--catalog", cat, "u6")
    assert r.returncode == 0 and data["u6"]["state"] == "done", r.stderr
    assert [p["sha256"] for p in pushes(lab, 6)] == [good]


def test_resume_from_another_directory_pushes_the_recorded_file(rf, lab, tmp_path):
    """A catalog named relative to the current directory: its files are
    recorded absolute at plan, and a resume from elsewhere pushes them, not
    the files of the same names there."""
    version = fresh_version()
    catalog(rf, [{"component": "bmc", "version": version, "file": image(rf, "bmc.bin", version)}])
    planned = sha256_of(os.path.join(rf.dir, "bmc.bin"))
    stopped_after_canary(rf, lab, "catalog.json", cwd=rf.dir)
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(os.path.join(rf.dir, "catalog.json"), other / "catalog.json")
    with open(other / "bmc.bin", "wb") as f:
        f.write(("GF-IMAGE version=%s\n" % version).encode() + b"\x5a" * 4096)
    r = subprocess.run([GPUFLEET, *rf.ca, "--format", "json", "update", "resume", "--yes"],
                       env=rf.env(), cwd=str(other), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    data = {o["node"]: o for o in json.loads(r.stdout)}
    assert data["u6"]["state"] == "done" and data["u1"]["state"] == "done", r.stdout
    assert [p["sha256"] for p in pushes(lab, 6)] == [planned]


# ---- crash safety ----------------------------------------------------------

def test_kill_9_then_resume(rf, lab):
    nodes = [1, 6, 7, 8]
    for i in nodes:
        lab.override(i, update_flash=1.0)
    rng = random.Random(os.getpid())
    for attempt in range(2):
        version = fresh_version()
        cat = bmc_catalog(rf, version)
        proc = subprocess.Popen([GPUFLEET, *rf.ca, "update", "run", "--yes", "--batch", "2",
                                 "--catalog", cat, "u1,u6,u7,u8"], env=rf.env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # Some point after the first push reached a BMC, at random.
            limit = time.monotonic() + 30
            while time.monotonic() < limit and not any(
                    p["version"] == version for i in nodes for p in pushes(lab, i)):
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 3.0))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert rf.sql("PRAGMA integrity_check")[0]["integrity_check"] == "ok"
        r, data = upd(rf, "resume", "--yes")
        assert r.returncode == 0, (r.stderr, json.dumps(data))
        assert all(data[f"u{i}"]["state"] == "done" for i in nodes), json.dumps(data)
        for i in nodes:
            flashed = [p for p in pushes(lab, i) if p["version"] == version]
            assert len(flashed) == 1, (i, flashed)      # never twice for one version
        assert rf.sql("PRAGMA integrity_check")[0]["integrity_check"] == "ok"


def test_kill_9_while_the_bmc_restarts_then_resume(rf, lab):
    """Killed after its BMC reset began: resume finds the BMC refusing
    connections, waits for it, then reads back the version it flashed."""
    lab.override(6, bmc_reset_refused=3.0)
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    proc = subprocess.Popen([GPUFLEET, *rf.ca, "update", "run", "--yes", "--catalog", cat, "u6"],
                            env=rf.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        limit = time.monotonic() + 30
        while time.monotonic() < limit and not manager_resets(lab, 6):
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert manager_resets(lab, 6), "the run never reset the BMC"
    t0 = time.time()
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, (r.stderr, json.dumps(data))
    assert data["u6"]["state"] == "done"
    # It waited for the BMC instead of failing on the first refused connection.
    assert time.time() - t0 >= 1.5
    assert [p["version"] for p in pushes(lab, 6)].count(version) == 1
    assert len(manager_resets(lab, 6)) == 1       # the reset the killed run began was enough


def test_resume_without_reboot_leaves_a_staged_image_staged(rf, lab):
    """Host firmware staged by a run without --reboot: a resume without it
    pushes nothing again and keeps it pending; one with it activates it."""
    version = fresh_version()
    cat = catalog(rf, [{"component": "bios", "version": version,
                        "file": image(rf, "bios.bin", version)}])
    r, data = upd(rf, "run", "--catalog", cat, "u1")
    assert r.returncode == 1 and data["u1"]["state"] == "pending-activation", data
    assert [s["version"] for s in lab.updates(SUPERMICRO)["staged"]] == [version]
    r, data = upd(rf, "resume")
    assert r.returncode == 1, (r.stderr, data)
    assert data["u1"]["state"] == "pending-activation", data
    assert [u["state"] for u in data["u1"]["updates"]] == ["pending-activation"]
    assert "--reboot" in data["u1"]["error"]["message"]
    assert len(pushes(lab, SUPERMICRO)) == 1            # not pushed a second time
    assert [x for x in lab.updates(SUPERMICRO)["resets"] if x["kind"] == "system"] == []
    assert [s["version"] for s in lab.updates(SUPERMICRO)["staged"]] == [version]
    rows = rf.sql("SELECT state FROM rollout_items WHERE node = 'u1'")
    assert [x["state"] for x in rows] == ["pending-activation"]
    r, data = upd(rf, "resume", "--reboot")
    assert r.returncode == 0, (r.stderr, data)
    assert data["u1"]["state"] == "done" and data["u1"]["updates"][0]["state"] == "done"
    assert len(pushes(lab, SUPERMICRO)) == 1            # one push in all
    assert len([x for x in lab.updates(SUPERMICRO)["resets"] if x["kind"] == "system"]) == 1
    assert lab.updates(SUPERMICRO)["staged"] == []


# ---- pulls (SimpleUpdate) ------------------------------------------------------

def test_pull_sends_the_transfer_protocol_the_action_lists(rf, lab):
    """DGX requires TransferProtocol (its ActionInfo), iLO lists it inline:
    both get the image URI's scheme as they spell it, and pull the image."""
    version = fresh_version()
    image(rf, "pull-bmc.fwpkg", version, "bmc")
    with ImageServer(lab, IMAGES, rf.dir) as srv:
        cat = catalog(rf, [{"component": "bmc", "version": version,
                            "image_uri": srv.url("pull-bmc.fwpkg")}])
        r, data = upd(rf, "run", "--yes", "--catalog", cat, "u2,u5")
        assert r.returncode == 0, (r.stderr, data)
        for i in (DGX, HPE):
            assert data[f"u{i}"]["state"] == "done", data
            assert data[f"u{i}"]["updates"][0]["action"] == "simple-update"
            (p,) = pushes(lab, i)
            assert p["kind"] == "pull" and p["image_uri"] == srv.url("pull-bmc.fwpkg")
            assert p["transfer_protocol"] == "HTTPS" and p["version"] == version
            assert lab.updates(i)["refused"] == []
        assert sorted(x["status"] for x in srv.requests) == [200, 200]


def test_pull_over_a_scheme_the_bmc_does_not_list_is_not_sent(rf, lab):
    info = "/redfish/v1/UpdateService/SimpleUpdateActionInfo"
    captured = lab.resource(DGX, info)
    planted = json.loads(json.dumps(captured))
    for p in planted["Parameters"]:
        if p["Name"] == "TransferProtocol":
            p["AllowableValues"] = ["HTTPS"]
    lab.put_resource(DGX, info, planted)
    try:
        cat = catalog(rf, [{"component": "bmc", "version": fresh_version(),
                            "image_uri": "http://%s:9080/bmc.fwpkg" % IMAGES}])
        r, data = upd(rf, "run", "--catalog", cat, "u2")
        assert r.returncode == 1
        (u,) = data["u2"]["updates"]
        assert u["state"] == "failed" and u["error"]["kind"] == "unsupported", u
        assert "'HTTP'" in u["error"]["message"]
        assert pushes(lab, DGX) == [] and lab.updates(DGX)["refused"] == []
    finally:
        lab.put_resource(DGX, info, captured)


# ---- images are streamed, not read whole ----------------------------------------

def big_image(gf, name, version, size, targets=None):
    """A sparse image of @size bytes: its GF-IMAGE line, then zeros."""
    path = os.path.join(gf.dir, name)
    with open(path, "wb") as f:
        f.write(("GF-IMAGE version=%s%s\n" % (version, " targets=" + targets if targets else ""))
                .encode())
        f.truncate(size)
    return name


def run_measured(gf, *args):
    """update ARGS through the real binary: (exit code, JSON by node, peak RSS in KiB).
    Under AddressSanitizer the memory gpufleet frees is kept in a quarantine (256 MiB by
    default) rather than reused, so the peak would count every buffer libcurl and OpenSSL
    ever used for a 48 MiB upload, not what gpufleet holds: a 1 MiB quarantine here."""
    out = os.path.join(gf.dir, "measured.out")
    env = gf.env()
    env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS"), "quarantine_size_mb=1") if o)
    with open(out, "w") as fo, open(os.path.join(gf.dir, "measured.err"), "w") as fe:
        proc = subprocess.Popen([GPUFLEET, *gf.ca, "--format", "json", "update", *args],
                                env=env, stdout=fo, stderr=fe)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out) as f:
        data = {o["node"]: o for o in json.load(f)}
    return proc.returncode, data, usage.ru_maxrss


def test_images_are_streamed_memory_stays_flat(rf, lab):
    big = 48 << 20
    small_v, big_v, raw_v = fresh_version(), fresh_version(), fresh_version()
    rc, data, rss_small = run_measured(rf, "run", "--catalog", catalog(rf, [
        {"component": "bmc", "version": small_v, "file": image(rf, "small.bin", small_v)}]), "u1")
    assert rc == 0 and data["u1"]["state"] == "done", data
    rc, data, rss_big = run_measured(rf, "run", "--catalog", catalog(rf, [
        {"component": "bmc", "version": big_v,
         "file": big_image(rf, "big.bin", big_v, big)}]), "u1")
    assert rc == 0 and data["u1"]["state"] == "done", data
    # the raw push (iLO's HttpPushUri) streams too
    rc, data, rss_raw = run_measured(rf, "run", "--catalog", catalog(rf, [
        {"component": "bmc", "version": raw_v,
         "file": big_image(rf, "big-raw.bin", raw_v, big, "bmc")}]), "u5")
    assert rc == 0 and data["u5"]["state"] == "done", data
    with open(os.path.join(rf.dir, "big.bin"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    p = pushes(lab, SUPERMICRO)[-1]
    assert p["version"] == big_v and p["size"] == big and p["sha256"] == want
    assert p["kind"] == "multipart" and p["filename"] == "big.bin"
    p = pushes(lab, HPE)[-1]
    assert p["version"] == raw_v and p["kind"] == "raw" and p["size"] == big
    # a 48 MiB image costs the client far less than its size in memory
    assert rss_big - rss_small < 12 * 1024, (rss_small, rss_big)
    assert rss_raw - rss_small < 12 * 1024, (rss_small, rss_raw)


def test_an_image_over_the_1_gib_sanity_limit_is_not_sent(rf, lab):
    v = fresh_version()
    cat = catalog(rf, [{"component": "bmc", "version": v,
                        "file": big_image(rf, "huge.bin", v, (1 << 30) + 1)}])
    r, data = upd(rf, "run", "--catalog", cat, "u1")
    assert r.returncode == 1
    (u,) = data["u1"]["updates"]
    assert u["state"] == "failed" and "larger than 1 GiB" in u["error"]["message"], u
    assert pushes(lab, SUPERMICRO) == [] and lab.updates(SUPERMICRO)["refused"] == []


# ---- HttpPushUriTargets -----------------------------------------------------------

UPDATE_SERVICE = "/redfish/v1/UpdateService"


def xcc_bmc_update(rf):
    """update run of a fresh BMC version on the XCC (u3): its one update, run ok."""
    version = fresh_version()
    cat = catalog(rf, [{"component": "bmc", "version": version,
                        "file": image(rf, "xcc.bin", version)}])
    r, data = upd(rf, "run", "--catalog", cat, "u3")
    assert r.returncode == 0, (r.stderr, data)
    (u,) = data["u3"]["updates"]
    return u


def test_raw_push_sets_http_push_uri_targets_and_puts_them_back(rf, lab):
    """An XCC without MultipartHttpPushUri: a raw push flashes what
    HttpPushUriTargets lists, so it is set to the component's members first
    (busy while it runs) and put back afterwards; the image names nothing."""
    lab.override(LENOVO, update_multipart=False)
    try:
        assert "MultipartHttpPushUri" not in lab.resource(LENOVO, UPDATE_SERVICE)
        u = xcc_bmc_update(rf)
        assert u["action"] == "http-push" and u["state"] == "done", u
        (p,) = pushes(lab, LENOVO)
        member = "/redfish/v1/UpdateService/FirmwareInventory/BMC-Primary"
        assert p["kind"] == "raw" and p["targets"] == [member] and p["members"] == [member]
        seen = lab.updates(LENOVO)["push_targets"]
        assert [(x["targets"], x["busy"]) for x in seen] == [([member], True), ([], False)]
        assert seen[0]["t"] < p["t"] < seen[1]["t"]
        us = lab.resource(LENOVO, UPDATE_SERVICE)
        assert us["HttpPushUriTargets"] == [] and us["HttpPushUriTargetsBusy"] is False
        # iLO has no HttpPushUriTargets: its raw push PATCHes nothing
        r, data = upd(rf, "run", "--catalog", bmc_catalog(rf), "u5")
        assert r.returncode == 0 and data["u5"]["state"] == "done", data
        assert lab.updates(HPE)["push_targets"] == []
        assert not [e for e in lab.events(HPE, kind="patch")]
    finally:
        lab.override(LENOVO, update_multipart=True)


def test_http_push_uri_targets_patch_names_the_etag_it_read(rf, lab):
    """An XCC that requires If-Match on writes: the PATCH of HttpPushUriTargets
    names the ETag of the UpdateService as just read (and is refused without one),
    both when it takes the targets and when it puts them back."""
    lab.override(LENOVO, update_multipart=False, require_if_match=True)
    try:
        u = xcc_bmc_update(rf)
        assert u["state"] == "done", u
        seen = lab.updates(LENOVO)["push_targets"]
        assert [x["busy"] for x in seen] == [True, False], seen
        assert all(x["if_match"] for x in seen), seen
        assert seen[0]["if_match"] != seen[1]["if_match"], seen   # each read fresh
    finally:
        lab.override(LENOVO, update_multipart=True, require_if_match=False)


def test_http_push_uri_targets_held_by_another_client_is_waited_for(rf, lab):
    lab.override(LENOVO, update_multipart=False)
    other = ["/redfish/v1/UpdateService/FirmwareInventory/UEFI"]
    try:
        st = lab_patch(lab, LENOVO, {"HttpPushUriTargets": other, "HttpPushUriTargetsBusy": True})
        assert st in (200, 204)
        version = fresh_version()
        cat = catalog(rf, [{"component": "bmc", "version": version,
                            "file": image(rf, "xcc.bin", version)}])
        proc = subprocess.Popen([GPUFLEET, *rf.ca, "--format", "json", "update", "run",
                                 "--catalog", cat, "u3"], env=rf.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            # It waits: no push while the other client holds the targets.
            limit = time.monotonic() + 4
            while time.monotonic() < limit and proc.poll() is None:
                assert pushes(lab, LENOVO) == []
                time.sleep(0.2)
            assert proc.poll() is None, proc.communicate()
            st = lab_patch(lab, LENOVO, {"HttpPushUriTargets": [],
                                         "HttpPushUriTargetsBusy": False})
            assert st in (200, 204)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        assert json.loads(out)[0]["state"] == "done"
        (p,) = pushes(lab, LENOVO)
        assert p["members"] == ["/redfish/v1/UpdateService/FirmwareInventory/BMC-Primary"]
    finally:
        lab.override(LENOVO, update_multipart=True)


def lab_patch(lab, i, body):
    """PATCH the UpdateService of node @i as another client would."""
    from redfish_update import request
    return request(lab, i, "PATCH", UPDATE_SERVICE, body)[0]


# ---- progress on a terminal --------------------------------------------------------

def run_on_terminal(gf, *args):
    """gpufleet ARGS with stderr on a terminal (a pty) and stdout a pipe:
    (exit code, stdout, all the terminal got)."""
    master, slave = os.openpty()
    proc = subprocess.Popen([GPUFLEET, *gf.ca, *args], env=gf.env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    got = []
    try:
        limit = time.monotonic() + 120
        while time.monotonic() < limit:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:       # EIO: every writer of the terminal has gone
                break
            if not data:
                break
            got.append(data)
        out = proc.stdout.read()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        os.close(master)
    return proc.returncode, out.decode(), b"".join(got).decode(errors="replace")


def test_upload_bar_on_a_terminal_only(rf, lab):
    v = fresh_version()
    cat = catalog(rf, [{"component": "bmc", "version": v,
                        "file": big_image(rf, "bar.bin", v, 2 << 20)}])
    rc, out, tty = run_on_terminal(rf, "update", "run", "--format", "json", "--yes",
                                   "--canary", "0", "--catalog", cat, "u1,u6")
    assert rc == 0, tty
    assert all(o["state"] == "done" for o in json.loads(out))
    assert re.search(r"batch 1/1: uploads \[#{30}\] 100% 4\.0/4\.0 MiB, 2/2 nodes done", tty), tty
    assert "\r\033[K" in tty and "batch 1/1: 2 nodes, 2 ok, 0 not ok" in tty
    # Not on a pipe, and not with -q on a terminal.
    v = fresh_version()
    cat = catalog(rf, [{"component": "bmc", "version": v,
                        "file": big_image(rf, "bar.bin", v, 2 << 20)}])
    r = rf.run(*rf.ca, "update", "run", "--yes", "--catalog", cat, "u1,u6")
    assert r.returncode == 0, r.stderr
    assert "uploads [" not in r.stderr and "\r" not in r.stderr
    v = fresh_version()
    cat = catalog(rf, [{"component": "bmc", "version": v,
                        "file": big_image(rf, "bar.bin", v, 2 << 20)}])
    rc, out, tty = run_on_terminal(rf, "-q", "update", "run", "--yes", "--catalog", cat, "u1,u6")
    assert rc == 0, tty
    assert "uploads [" not in tty
    for i in (1, 6):
        assert [p["version"] for p in pushes(lab, i)][-1] == v


# ---- on a terminal -----------------------------------------------------------

def test_plan_fits_a_terminal_of_120_columns(rf, lab):
    """update plan on a terminal 120 columns wide (issue 22, point 1): no line wider,
    and every node's SHA256 cell still holds its image's whole hash (wrapped in its
    column when it must be)."""
    from test_terminal_fit_and_problems import assert_fits, on_tty
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    want = {name: hashlib.sha256(open(os.path.join(rf.dir, name), "rb").read()).hexdigest()
            for name in ("bmc.bin", "hpe-bmc.bin")}
    rc, lines, err = on_tty(rf, *rf.ca, "update", "plan", "--catalog", cat, "u[1-8]", cols=120)
    assert rc == 0, err
    assert_fits(lines, 120)
    assert lines[0].split() == ["NODE", "COMPONENT", "FROM", "TO", "ACTION", "ACTIVATION",
                                "SHA256"], lines[:2]
    start = lines[0].index("SHA256")
    rows = {}
    for line in lines[1:]:
        if re.match(r"u\d+ ", line):
            rows[line.split()[0]] = line[start:].strip()
        elif rows and line.startswith(" ") and not line[:start].strip():
            rows[list(rows)[-1]] += line[start:].strip()   # the rest of a wrapped cell
    assert sorted(rows) == [f"u{i}" for i in range(1, len(VENDORS) + 1)], rows
    for node, cell in rows.items():
        assert cell == want["hpe-bmc.bin" if node == f"u{HPE}" else "bmc.bin"], (node, cell)
