"""gpufleet update against BMCs that bend the standard (the quirk overrides
of tests/lab/redfish_update.py): absolute task monitors, pushes answered
without a task, versions with a build suffix, a task that names the Manager
to reset, unrelated long-running tasks. Each test checks what the BMC saw
(pushes, resets, their order) as well as what gpufleet printed and stored."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import GPUFLEET, PASSWORD, TOP, loopback, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402
import updatelab  # noqa: E402
from updatelab import manager_resets, pushes  # noqa: E402

PREFIX = loopback(__name__, "lab")
OTHER_HOST = loopback(__name__, "lab") + ".250"   # nothing listens there
SUPERMICRO, DGX, LENOVO = 1, 2, 3
VENDORS = ["supermicro", "dgx", "lenovo", "supermicro"]
COUNT = len(VENDORS)
FAST = dict(updatelab.FAST, **{
        "update_monitor_absolute": "", "update_no_monitor": False,
        "update_version_suffix": "", "update_reset_required": None,
        "update_other_task": False, "update_restart_late": 0, "update_cert_on_reset": False,
        "cert_change_after": 0})

lab = updatelab.lab_fixture(VENDORS, "gf-quirks-", FAST)
rf = updatelab.rf_fixture("q", FAST)


_versions = iter(range(100, 10000))


def fresh_version():
    return "23.%d.1" % next(_versions)


def bmc_catalog(gf, version, **extra):
    path = os.path.join(gf.dir, "bmc.bin")
    with open(path, "wb") as f:
        f.write(("GF-IMAGE version=%s\n" % version).encode() + b"\x5a" * 2048)
    cat = os.path.join(gf.dir, "catalog.json")
    with open(cat, "w") as f:
        json.dump(dict({"images": [{"component": "bmc", "version": version, "file": path}]},
                       **extra), f)
    return cat


def upd(gf, *args, timeout=120):
    return updatelab.upd(gf, *args, timeout=timeout)


def task_end(lab, i, uri):
    (t,) = [t for t in lab.updates(i)["tasks"] if t["uri"] == uri]
    return t["finished"]


# ---- task monitors -----------------------------------------------------------

def test_absolute_task_monitor_on_the_same_bmc_is_followed(rf, lab):
    lab.override(SUPERMICRO, update_monitor_absolute=f"https://{lab.addr(SUPERMICRO)}:{lab.port}",
                 update_flash=1.0)
    version = fresh_version()
    t0 = time.monotonic()
    r, data = upd(rf, "run", "--yes", "--update-timeout", "20", "--catalog",
                  bmc_catalog(rf, version), f"q{SUPERMICRO}")
    assert r.returncode == 0, (r.stderr, data)
    assert time.monotonic() - t0 < 15          # followed, not waited out
    assert data[f"q{SUPERMICRO}"]["state"] == "done"
    (p,) = pushes(lab, SUPERMICRO)
    (reset,) = manager_resets(lab, SUPERMICRO)
    assert reset["t"] >= task_end(lab, SUPERMICRO, p["task"])   # reset once the task ended


def test_absolute_task_monitor_without_the_default_port_is_followed(gf, tmp_path):
    """A BMC on port 443 that writes its task monitor as https://ADDR/...:
    the same origin as https://ADDR:443."""
    prefix = loopback(__name__, "lab443")
    quirk = dict(FAST, update_flash=1.0, update_monitor_absolute=f"https://{prefix}.1")
    with started(lambda d: RedfishLab(d, prefix=prefix, count=1, vendors=["supermicro"],
                                      user="admin", password=PASSWORD, port=443,
                                      overrides={1: quirk}), "gf-quirks443-") as lab:
        r = gf.run("nodes", "add", "d1", "--bmc", lab.addr(1), "--protocol", "redfish")
        assert r.returncode == 0, r.stderr
        gf.ca, gf.dir = ["--cacert", lab.cacert], str(tmp_path)
        version = fresh_version()
        t0 = time.monotonic()
        r, data = upd(gf, "run", "--yes", "--update-timeout", "20", "--catalog",
                      bmc_catalog(gf, version), "d1")
        assert r.returncode == 0, (r.stderr, data)
        assert time.monotonic() - t0 < 15
        assert data["d1"]["state"] == "done"
        (p,) = pushes(lab, 1)
        (reset,) = manager_resets(lab, 1)
        assert reset["t"] >= task_end(lab, 1, p["task"])


def test_task_monitor_on_another_host_is_refused_at_once(rf, lab):
    lab.override(SUPERMICRO, update_monitor_absolute=f"https://{OTHER_HOST}:{lab.port}")
    t0 = time.monotonic()
    r, data = upd(rf, "run", "--yes", "--update-timeout", "20", "--catalog",
                  bmc_catalog(rf, fresh_version()), f"q{SUPERMICRO}")
    assert r.returncode == 1, (r.stderr, data)
    node = data[f"q{SUPERMICRO}"]
    assert node["state"] == "failed"
    assert "another host" in node["error"]["message"] and OTHER_HOST in node["error"]["message"]
    assert time.monotonic() - t0 < 15
    assert len(pushes(lab, SUPERMICRO)) == 1 and manager_resets(lab, SUPERMICRO) == []


def test_push_without_task_monitor_waits_for_the_task_before_the_reset(rf, lab):
    lab.override(SUPERMICRO, update_no_monitor=True, update_flash=2.0)
    version = fresh_version()
    r, data = upd(rf, "run", "--yes", "--update-timeout", "30", "--catalog",
                  bmc_catalog(rf, version), f"q{SUPERMICRO}")
    assert r.returncode == 0, (r.stderr, data)
    assert data[f"q{SUPERMICRO}"]["state"] == "done"
    (p,) = pushes(lab, SUPERMICRO)
    (reset,) = manager_resets(lab, SUPERMICRO)
    end = task_end(lab, SUPERMICRO, p["task"])
    assert end is not None and reset["t"] >= end, (reset, end)
    applied = [a for a in lab.updates(SUPERMICRO)["applied"] if a["task"] == p["task"]]
    assert applied and all(a["version"] == version and a["by"] == "manager-reset"
                           for a in applied), json.dumps(applied)


# ---- versions ----------------------------------------------------------------

def test_version_with_a_build_suffix_matches_by_its_leading_token(rf, lab):
    lab.override(SUPERMICRO, update_version_suffix=" (build 7)")
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    r, data = upd(rf, "run", "--yes", "--catalog", cat, f"q{SUPERMICRO}")
    assert r.returncode == 0, (r.stderr, data)
    assert data[f"q{SUPERMICRO}"]["state"] == "done"
    bmc = lab.resource(SUPERMICRO, "/redfish/v1/UpdateService/FirmwareInventory/BMC")
    assert bmc["Version"] == version + " (build 7)"
    rows = rf.sql("SELECT state FROM rollout_items WHERE node = 'q%d'" % SUPERMICRO)
    assert [x["state"] for x in rows] == ["done"]
    # plan and a second run see it up to date: nothing pushed again
    r, data = upd(rf, "plan", "--catalog", cat, f"q{SUPERMICRO}")
    assert r.returncode == 0 and data[f"q{SUPERMICRO}"]["updates"] == [], data
    r, data = upd(rf, "run", "--yes", "--catalog", cat, f"q{SUPERMICRO}")
    assert r.returncode == 0, (r.stderr, data)
    assert len(pushes(lab, SUPERMICRO)) == 1
    # the exact mode of the catalog wants the bytes as written
    exact = bmc_catalog(rf, version, version_match="exact")
    r, data = upd(rf, "plan", "--catalog", exact, f"q{SUPERMICRO}")
    assert r.returncode == 0, r.stderr
    (u,) = data[f"q{SUPERMICRO}"]["updates"]
    assert u["from"] == version + " (build 7)" and u["to"] == version


def test_a_version_that_only_starts_alike_does_not_match(rf, lab):
    lab.override(SUPERMICRO, update_version_suffix="1")      # 23.N.1 shows as 23.N.11
    version = fresh_version()
    r, data = upd(rf, "run", "--yes", "--readback-wait", "2", "--catalog",
                  bmc_catalog(rf, version), f"q{SUPERMICRO}")
    assert r.returncode == 1, (r.stderr, data)
    assert data[f"q{SUPERMICRO}"]["state"] == "failed"


def test_a_busy_bmc_refuses_a_push_before_its_image_is_sent(rf, lab):
    """Expect: 100-continue: a BMC busy for 3 s answers 503 to the offer, so
    the image crosses the wire once, when it is taken."""
    lab.override(SUPERMICRO, update_busy=3)
    r, data = upd(rf, "run", "--yes", "--catalog", bmc_catalog(rf, fresh_version()),
                  f"q{SUPERMICRO}")
    assert r.returncode == 0, (r.stderr, data)
    refused = lab.updates(SUPERMICRO)["refused"]
    assert refused and all(x["status"] == 503 and x.get("before_body") for x in refused), \
        refused
    assert len(pushes(lab, SUPERMICRO)) == 1


# ---- which Manager restarts ----------------------------------------------------

def test_reset_goes_to_the_manager_the_completed_task_names(rf, lab):
    hgx = "/redfish/v1/Managers/HGX_BMC_0"
    lab.override(DGX, update_reset_required=hgx)
    version = fresh_version()
    r, data = upd(rf, "run", "--yes", "--update-timeout", "30", "--catalog",
                  bmc_catalog(rf, version), f"q{DGX}")
    assert r.returncode == 0, (r.stderr, data)
    assert data[f"q{DGX}"]["state"] == "done"
    assert [x["uri"] for x in manager_resets(lab, DGX)] == [hgx]
    assert len(pushes(lab, DGX)) == 1


# ---- the restart after Manager.Reset -----------------------------------------------

def test_a_bmc_slow_to_restart_is_waited_for_not_taken_as_back(rf, lab):
    """It answers (session and all) for 22 s after Manager.Reset, then
    restarts: only the restart counts as back, and the image it applies then
    is read back."""
    lab.override(SUPERMICRO, update_restart_late=22)
    version = fresh_version()
    t0 = time.time()
    r, data = upd(rf, "run", "--yes", "--readback-wait", "1", "--update-timeout", "60",
                  "--catalog", bmc_catalog(rf, version), f"q{SUPERMICRO}")
    assert r.returncode == 0, (r.stderr, data)
    assert data[f"q{SUPERMICRO}"]["state"] == "done"
    (reset,) = manager_resets(lab, SUPERMICRO)      # recorded when it really restarted
    assert reset["t"] - t0 >= 22
    assert [a["by"] for a in lab.updates(SUPERMICRO)["applied"]] == ["manager-reset"]
    assert len(pushes(lab, SUPERMICRO)) == 1


def test_a_certificate_changed_by_the_restart_stops_the_wait_at_once(rf, lab):
    """No CA: the certificate is pinned on first use (--tls-pin new); the
    restart brings another one, which ends the wait at once with the pin's
    error."""
    lab.override(SUPERMICRO, update_cert_on_reset=True)
    t0 = time.monotonic()
    r = rf.run("--tls-pin", "new", "--format", "json", "update", "run", "--yes",
               "--update-timeout", "30",
               "--catalog", bmc_catalog(rf, fresh_version()), f"q{SUPERMICRO}")
    data = {o["node"]: o for o in json.loads(r.stdout)}
    assert r.returncode == 1, (r.stderr, data)
    node = data[f"q{SUPERMICRO}"]
    assert node["state"] == "failed" and node["error"]["kind"] == "tls", node
    assert "certificate of bmc 'q1' changed" in node["error"]["message"]
    assert time.monotonic() - t0 < 15
    assert len(pushes(lab, SUPERMICRO)) == 1 and len(manager_resets(lab, SUPERMICRO)) == 1


# ---- resume ---------------------------------------------------------------------

def test_resume_waits_for_update_tasks_only(rf, lab):
    node = 4
    lab.override(node, update_flash=1.5)
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    proc = subprocess.Popen([GPUFLEET, *rf.ca, "update", "run", "--yes", "--update-timeout",
                             "20", "--catalog", cat, f"q{node}"], env=rf.env(),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        limit = time.monotonic() + 30
        while time.monotonic() < limit and not pushes(lab, node):
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert pushes(lab, node), "the run never pushed"
    lab.override(node, update_other_task=True)    # a diagnostic collection that never ends
    t0 = time.monotonic()
    r, data = upd(rf, "resume", "--yes")
    assert r.returncode == 0, (r.stderr, data)
    assert data[f"q{node}"]["state"] == "done"
    assert time.monotonic() - t0 < 15
    assert len(pushes(lab, node)) == 1


# ---- who ran it -------------------------------------------------------------------

def test_sudo_user_is_believed_only_under_sudo(rf, lab):
    """SUDO_USER and SUDO_UID set by hand (the parent is no sudo): the audit
    and the rollout name the effective user, not the one claimed."""
    import pwd
    me = pwd.getpwuid(os.geteuid()).pw_name
    claimed = pwd.getpwuid(1).pw_name if os.geteuid() != 1 else pwd.getpwuid(2).pw_name
    r = rf.run(*rf.ca, "--format", "json", "update", "run", "--yes", "--catalog",
               bmc_catalog(rf, fresh_version()), f"q{LENOVO}",
               env={"SUDO_USER": claimed, "SUDO_UID": str(pwd.getpwnam(claimed).pw_uid)})
    assert r.returncode == 0, r.stderr
    assert len(pushes(lab, LENOVO)) == 1
    users = {x["user"] for x in rf.sql("SELECT user FROM audit")}
    assert users == {me}, users
    assert [x["user"] for x in rf.sql("SELECT user FROM rollouts")] == [me]


# ---- catalog input ------------------------------------------------------------------

def write_catalog(gf, images, name="cat.json"):
    path = os.path.join(gf.dir, name)
    with open(path, "w") as f:
        json.dump({"images": images}, f)
    return path


def test_catalog_entries_that_would_never_be_used_are_refused(rf, lab):
    img = os.path.join(rf.dir, "x.bin")
    with open(img, "wb") as f:
        f.write(b"GF-IMAGE version=1\n")
    twice = write_catalog(rf, [{"component": "bmc", "version": "1", "file": img},
                               {"component": "bmc", "version": "2", "file": img}])
    glob_first = write_catalog(rf, [{"component": "*", "version": "1", "file": img},
                                    {"component": "bios", "version": "2", "file": img}], "g.json")
    for cat, first, shadowed in ((twice, "images[0] (component 'bmc')", "images[1]"),
                                 (glob_first, "images[0] (component '*')", "images[1]")):
        for sub in ("plan", "run"):
            r = rf.run(*rf.ca, "update", sub, "--yes", "--catalog", cat, f"q{SUPERMICRO}")
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1, r.stderr
            assert f"{shadowed} " in lines[0] and "never used" in lines[0] and first in lines[0]
    # a model-specific entry before a general one is fine
    ok = write_catalog(rf, [{"model": "X*", "component": "bmc", "version": "1", "file": img},
                            {"component": "bmc", "version": "2", "file": img}], "ok.json")
    r = rf.run(*rf.ca, "update", "plan", "--catalog", ok, f"q{SUPERMICRO}")
    assert r.returncode == 0, r.stderr
    assert pushes(lab, SUPERMICRO) == []


def test_an_image_that_is_not_a_regular_file_is_refused_at_load(rf, lab):
    fifo = os.path.join(rf.dir, "image.fifo")
    os.mkfifo(fifo)
    cat = write_catalog(rf, [{"component": "bmc", "version": "1", "file": fifo}])
    r = rf.run(*rf.ca, "update", "run", "--yes", "--catalog", cat, f"q{SUPERMICRO}",
               timeout=20)
    assert r.returncode == 2, r.stderr
    assert "not a regular file" in r.stderr and fifo in r.stderr
    assert pushes(lab, SUPERMICRO) == []


# ---- what gpufleet sets on a BMC it puts back ----------------------------------------

def test_ctrl_c_during_a_raw_push_puts_http_push_uri_targets_back(rf, lab):
    """An XCC without MultipartHttpPushUri: Ctrl-C while its task runs still
    clears HttpPushUriTargetsBusy (and the targets), else every later update
    waits the flag out blaming another client."""
    us_path = "/redfish/v1/UpdateService"
    lab.override(LENOVO, update_multipart=False, update_flash=30)
    try:
        proc = subprocess.Popen([GPUFLEET, *rf.ca, "update", "run", "--yes", "--catalog",
                                 bmc_catalog(rf, fresh_version()), f"q{LENOVO}"],
                                env=rf.env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            limit = time.monotonic() + 30
            while time.monotonic() < limit and not pushes(lab, LENOVO):
                time.sleep(0.05)
            assert pushes(lab, LENOVO), "never pushed"
            assert lab.resource(LENOVO, us_path)["HttpPushUriTargetsBusy"] is True
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        us = lab.resource(LENOVO, us_path)
        assert us["HttpPushUriTargetsBusy"] is False and us["HttpPushUriTargets"] == [], us
        assert [x["busy"] for x in lab.updates(LENOVO)["push_targets"]] == [True, False]
    finally:
        lab.override(LENOVO, update_multipart=True)


def killed_with_targets_busy(rf, lab):
    """update run on the XCC (raw push, --update-timeout 20) killed -9 while
    its BMC refuses the push (503, busy): HttpPushUriTargetsBusy stays set
    with its targets. The catalog's version and the PATCHes seen."""
    # A task an earlier test left running (Ctrl-C during a 30 s flash) ends first.
    limit = time.monotonic() + 60
    while time.monotonic() < limit and lab.updates(LENOVO)["active"]:
        time.sleep(0.1)
    assert not lab.updates(LENOVO)["active"], "a task still runs"
    version = fresh_version()
    cat = bmc_catalog(rf, version)
    lab.override(LENOVO, update_multipart=False, update_busy=True)
    proc = subprocess.Popen([GPUFLEET, *rf.ca, "update", "run", "--yes", "--update-timeout",
                             "20", "--catalog", cat, f"q{LENOVO}"], env=rf.env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        limit = time.monotonic() + 30
        while time.monotonic() < limit and not lab.updates(LENOVO)["refused"]:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert lab.updates(LENOVO)["refused"], "never pushed"
    lab.override(LENOVO, update_busy=0)
    us = lab.resource(LENOVO, "/redfish/v1/UpdateService")
    assert us["HttpPushUriTargetsBusy"] is True and us["HttpPushUriTargets"] == [XCC_BMC], us
    assert pushes(lab, LENOVO) == []
    return version


XCC_BMC = "/redfish/v1/UpdateService/FirmwareInventory/BMC-Primary"


def patch_targets(lab, targets, busy):
    from redfish_update import request
    st = request(lab, LENOVO, "PATCH", "/redfish/v1/UpdateService",
                 {"HttpPushUriTargets": targets, "HttpPushUriTargetsBusy": busy})[0]
    assert st in (200, 204), st


def test_resume_clears_its_own_stale_http_push_uri_targets_busy(rf, lab):
    """The flag a killed raw push left (the rollout recorded the item in
    flight, by http-push, and the flag names its targets) is this client's:
    resume clears it and pushes, instead of waiting out the update timeout
    blaming another client."""
    try:
        version = killed_with_targets_busy(rf, lab)
        t0 = time.monotonic()
        r, data = upd(rf, "resume", "--yes")
        assert r.returncode == 0, r.stderr
        assert time.monotonic() - t0 < 15, "waited for its own flag"
        assert data[f"q{LENOVO}"]["state"] == "done", data
        (p,) = pushes(lab, LENOVO)
        assert p["version"] == version and p["members"] == [XCC_BMC]
        seen = [(x["targets"], x["busy"]) for x in lab.updates(LENOVO)["push_targets"]]
        # taken by the killed run, cleared by resume, taken and put back for its push
        assert seen == [([XCC_BMC], True), ([], False), ([XCC_BMC], True), ([], False)], seen
        us = lab.resource(LENOVO, "/redfish/v1/UpdateService")
        assert us["HttpPushUriTargetsBusy"] is False and us["HttpPushUriTargets"] == []
    finally:
        lab.override(LENOVO, update_multipart=True, update_busy=0)
        patch_targets(lab, [], False)


def test_resume_still_waits_for_a_flag_another_client_set(rf, lab):
    """After the kill, another client takes HttpPushUriTargets (the UEFI):
    that flag is not resume's to clear; it waits for it, up to the rollout's
    update timeout, then fails the node naming another client, and leaves
    the flag and targets as the other client set them."""
    other = ["/redfish/v1/UpdateService/FirmwareInventory/UEFI"]
    try:
        killed_with_targets_busy(rf, lab)
        patch_targets(lab, other, True)
        lab.clear_updates(LENOVO)
        r, data = upd(rf, "resume", "--yes")
        assert r.returncode == 1, r.stderr
        node = data[f"q{LENOVO}"]
        assert node["state"] == "failed" and "another client" in node["error"]["message"], node
        assert pushes(lab, LENOVO) == [] and lab.updates(LENOVO)["push_targets"] == []
        us = lab.resource(LENOVO, "/redfish/v1/UpdateService")
        assert us["HttpPushUriTargetsBusy"] is True and us["HttpPushUriTargets"] == other
    finally:
        lab.override(LENOVO, update_multipart=True, update_busy=0)
        patch_targets(lab, [], False)
