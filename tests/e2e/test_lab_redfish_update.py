"""The Redfish emulator's UpdateService contract (tests/lab/REDFISH-EMU.md,
"UpdateService"), checked directly over HTTPS: pushes per dialect, the task
state machine, activation by BMC or host reset, the faults, and what each BMC
saw. No gpufleet binary here (tests/e2e/test_update.py drives the product)."""
import os
import sys
import tempfile
import time

import pytest

from conftest import TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import SESSIONS, RedfishLab  # noqa: E402
from redfish_update import (ImageServer, members, multipart_body, push, request,  # noqa: E402
                            reset_manager, wait_back, wait_task)

PREFIX = loopback(__name__, "redfish")
IMAGES = PREFIX + ".250"
SUPERMICRO, DGX, LENOVO, DELL, HPE = 1, 2, 3, 4, 5
FAST = {"update_new": 0.1, "update_flash": 0.3, "update_result": "ok", "update_purge": "none",
        "update_conflict": 409, "update_busy": 0, "bmc_reset_refused": 0.4,
        "bmc_reset_busy": 0.4, "retry_after": 1, "update_tasks_lost": False}


@pytest.fixture(scope="module")
def lab():
    with tempfile.TemporaryDirectory(prefix="gf-emu-upd-") as workdir, \
            RedfishLab(workdir, prefix=PREFIX, count=5,
                       overrides={i: dict(FAST) for i in range(1, 6)}) as lab:
        yield lab


@pytest.fixture(autouse=True)
def fresh(lab):
    for i in lab.indices():
        lab.override(i, **FAST)
        lab.clear_updates(i)
    yield


def image(version, targets=None, pad=512):
    line = "GF-IMAGE version=%s%s\n" % (version, " targets=" + targets if targets else "")
    return line.encode() + b"\xa5" * pad


def versions(lab, i, kind):
    return [request(lab, i, "GET", u)[2]["Version"] for u in members(lab, i, kind)]


def test_update_service_as_captured(lab):
    want = {SUPERMICRO: ("/redfish/v1/UpdateService/upload", None),
            DGX: ("/redfish/v1/UpdateService/upload", None),
            LENOVO: ("/mfwupdate", "/fwupdate"),
            DELL: ("/redfish/v1/UpdateService/MultipartUpload",
                   "/redfish/v1/UpdateService/FirmwareInventory"),
            HPE: (None, "/cgi-bin/uploadFile")}
    for i, (multipart, raw) in want.items():
        us = request(lab, i, "GET", "/redfish/v1/UpdateService")[2]
        assert us.get("MultipartHttpPushUri") == multipart
        assert us.get("HttpPushUri") == raw
        assert "#UpdateService.SimpleUpdate" in us["Actions"]
        st, _, coll = request(lab, i, "GET", "/redfish/v1/TaskService/Tasks")
        assert st == 200 and "Members" in coll
    # pushes need auth, also outside /redfish
    st = request(lab, LENOVO, "POST", "/mfwupdate", b"x", token="nope")[0]
    assert st == 401


@pytest.mark.parametrize("i", [SUPERMICRO, DGX, LENOVO, DELL, HPE])
def test_push_then_bmc_reset(lab, i):
    token = request(lab, i, "POST", SESSIONS, {"UserName": lab.user,
                                               "Password": lab.password})[1]["x-auth-token"]
    before = versions(lab, i, "bmc")
    version = "E2E-%d.%d" % (i, int(time.time()) % 1000)
    st, h, doc = push(lab, i, image(version, "bmc"), targets=members(lab, i, "bmc"),
                      token=token)
    assert st == 202 and doc["TaskState"] == "New"
    final, seen = wait_task(lab, i, h["location"], token=token)
    assert final["TaskState"] == "Completed" and final["PercentComplete"] == 100
    assert seen[0] in ("New", "Starting") and seen[-1] == "Completed"
    assert versions(lab, i, "bmc") == before          # not before the activation
    assert reset_manager(lab, i, token) in (200, 204)
    back = wait_back(lab, i)
    assert "refused" in back and 503 in back and back.index("refused") < back.index(503)
    assert request(lab, i, "GET", "/redfish/v1/Systems", token=token)[0] == 401
    assert set(versions(lab, i, "bmc")) == {version}
    mgr = request(lab, i, "GET", request(lab, i, "GET", "/redfish/v1/Managers")[2]
                  ["Members"][0]["@odata.id"])[2]
    assert mgr["FirmwareVersion"] == version
    seen_by_bmc = lab.updates(i)
    assert len(seen_by_bmc["pushes"]) == 1
    p = seen_by_bmc["pushes"][0]
    assert p["version"] == version and p["size"] == len(image(version, "bmc"))
    assert p["kind"] == ("raw" if i == HPE else "multipart")
    assert [r["kind"] for r in seen_by_bmc["resets"]] == ["manager"]
    assert [a["by"] for a in seen_by_bmc["applied"]] == ["manager-reset"] * len(before)


def test_raw_push_targets_from_image(lab):
    st, h, doc = push(lab, LENOVO, image("9.9.1", "gpu2"), raw=True)
    assert st == 202 and h["location"] == doc["@odata.id"]     # Lenovo: the Task itself
    assert wait_task(lab, LENOVO, h["location"])[0]["TaskState"] == "Completed"
    rec = lab.updates(LENOVO)["pushes"][0]
    assert rec["kind"] == "raw" and rec["uri"] == "/fwupdate"
    assert rec["members"] == ["/redfish/v1/UpdateService/FirmwareInventory/GPU2"]


def test_one_update_at_a_time(lab):
    lab.override(DGX, update_flash=2)
    st, h, _ = push(lab, DGX, image("C-1", "bmc"))
    assert st == 202
    assert push(lab, DGX, image("C-2", "bmc"))[0] == 409
    lab.override(DGX, update_conflict=503)
    st2, h2, _ = push(lab, DGX, image("C-3", "bmc"))
    assert st2 == 503 and h2["retry-after"] == "1"
    wait_task(lab, DGX, h["location"])
    seen = lab.updates(DGX)
    assert len(seen["pushes"]) == 1
    assert [(r["status"], r["reason"]) for r in seen["refused"]] == [(409, "conflict"),
                                                                     (503, "conflict")]
    assert push(lab, DGX, image("C-4", "bmc"))[0] == 202      # free again
    wait_task(lab, DGX, lab.updates(DGX)["pushes"][-1]["task"])


def test_busy_bmc_answers_503(lab):
    lab.override(HPE, update_busy=30)
    st, h, _ = push(lab, HPE, image("B-1", "bmc"))
    assert st == 503 and "retry-after" in h
    lab.override(HPE, update_busy=0)
    st, h, _ = push(lab, HPE, image("B-2", "bmc"))
    assert st == 202
    wait_task(lab, HPE, h["location"])
    assert [r["reason"] for r in lab.updates(HPE)["refused"]] == ["busy"]


def test_exception_and_noop(lab):
    lab.override(SUPERMICRO, update_result="exception", update_message="flash write error")
    st, h, _ = push(lab, SUPERMICRO, image("X-1", "bios"))
    final, _ = wait_task(lab, SUPERMICRO, h["location"])
    assert final["TaskState"] == "Exception" and final["TaskStatus"] == "Critical"
    assert final["Messages"][0]["Message"] == "flash write error"
    assert lab.updates(SUPERMICRO)["staged"] == []
    lab.override(SUPERMICRO, update_result="noop")
    before = versions(lab, SUPERMICRO, "bios")
    st, h, _ = push(lab, SUPERMICRO, image("X-2", "bios"))
    assert wait_task(lab, SUPERMICRO, h["location"])[0]["TaskState"] == "Completed"
    sysuri = lab.state(SUPERMICRO)["main_system"]
    target = request(lab, SUPERMICRO, "GET", sysuri)[2]["Actions"]["#ComputerSystem.Reset"]
    request(lab, SUPERMICRO, "POST", target["target"], {"ResetType": "ForceRestart"})
    assert versions(lab, SUPERMICRO, "bios") == before    # Completed, nothing applied


def test_invalid_image_ends_in_exception(lab):
    st, h, _ = push(lab, DELL, b"not an image at all", targets=members(lab, DELL, "bmc"))
    assert st == 202
    final, _ = wait_task(lab, DELL, h["location"])
    assert final["TaskState"] == "Exception"
    assert final["Messages"][0]["MessageId"] == "Update.1.0.VerificationFailed"


def test_purged_task_monitor(lab):
    lab.override(SUPERMICRO, update_purge="monitor")
    st, h, doc = push(lab, SUPERMICRO, image("P-1", "bmc"))
    mon, task = h["location"], doc["@odata.id"]
    assert mon.startswith("/redfish/v1/TaskMonitor/") and mon != task
    st, h2, _ = request(lab, SUPERMICRO, "GET", mon)
    assert st == 202 and h2["location"] == mon
    final, _ = wait_task(lab, SUPERMICRO, mon)
    assert final is None                                  # 404 once finished
    assert request(lab, SUPERMICRO, "GET", task)[2]["TaskState"] == "Completed"
    lab.override(SUPERMICRO, update_purge="task")
    assert request(lab, SUPERMICRO, "GET", task)[0] == 404
    coll = request(lab, SUPERMICRO, "GET", "/redfish/v1/TaskService/Tasks")[2]
    assert {"@odata.id": task} not in coll["Members"]


def test_host_version_needs_a_restarting_reset(lab):
    st, h, _ = push(lab, DGX, image("H-7", "bios"), targets=["/redfish/v1/Systems/DGX"])
    assert wait_task(lab, DGX, h["location"])[0]["TaskState"] == "Completed"
    assert reset_manager(lab, DGX) in (200, 204)
    wait_back(lab, DGX)
    assert "H-7" not in versions(lab, DGX, "bios")        # a BMC reset is not enough
    sysuri = "/redfish/v1/Systems/DGX"
    target = request(lab, DGX, "GET", sysuri)[2]["Actions"]["#ComputerSystem.Reset"]["target"]
    assert request(lab, DGX, "POST", target, {"ResetType": "ForceRestart"})[0] in (200, 204)
    assert set(versions(lab, DGX, "bios")) == {"H-7"}
    assert request(lab, DGX, "GET", sysuri)[2]["BiosVersion"] == "H-7"
    kinds = [(r["kind"], r["type"]) for r in lab.updates(DGX)["resets"]]
    assert kinds[-1] == ("system", "ForceRestart")


def test_pull_from_https(lab, tmp_path):
    (tmp_path / "bmc.fwpkg").write_bytes(image("PULL-1", "bmc", pad=8192))
    with ImageServer(lab, IMAGES, str(tmp_path)) as srv:
        target = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
        body = {"ImageURI": srv.url("bmc.fwpkg"), "TransferProtocol": "HTTPS",
                "Targets": ["/redfish/v1/Managers/1"]}
        st, h, doc = request(lab, SUPERMICRO, "POST", target, body)
        assert st == 202 and doc["TaskState"] == "New"
        assert wait_task(lab, SUPERMICRO, h["location"])[0]["TaskState"] == "Completed"
        assert [r["status"] for r in srv.requests] == [200]
        rec = lab.updates(SUPERMICRO)["pushes"][0]
        assert rec["kind"] == "pull" and rec["version"] == "PULL-1"
        assert rec["members"] == ["/redfish/v1/UpdateService/FirmwareInventory/BMC"]
        # Lenovo's SimpleUpdate takes only BMC-Backup as a target
        st, _, doc = request(lab, LENOVO, "POST", target, dict(
            body, Targets=["/redfish/v1/UpdateService/FirmwareInventory/BMC-Primary"]))
        assert st == 400
        # DGX requires TransferProtocol
        st = request(lab, DGX, "POST", "/redfish/v1/UpdateService/Actions/SimpleUpdate",
                     {"ImageURI": srv.url("bmc.fwpkg")})[0]
        assert st == 400
    # nothing listens there any more: the download fails, the task says so
    st, h, _ = request(lab, HPE, "POST", target, {"ImageURI": srv.url("bmc.fwpkg"),
                                                  "TransferProtocol": "HTTPS"})
    final, _ = wait_task(lab, HPE, h["location"])
    assert final["TaskState"] == "Exception"
    assert final["Messages"][0]["MessageId"] == "Update.1.0.TransferFailed"


def test_bad_pushes_are_refused(lab):
    uri = "/redfish/v1/UpdateService/MultipartUpload"
    ctype, body = multipart_body({"Targets": ["/redfish/v1/Nowhere"]}, image("Z"))
    assert request(lab, DELL, "POST", uri, body, {"Content-Type": ctype})[0] == 400
    ctype, body = multipart_body({"@Redfish.OperationApplyTime": "Someday"}, image("Z", "bmc"))
    assert request(lab, DELL, "POST", uri, body, {"Content-Type": ctype})[0] == 400
    assert request(lab, DELL, "POST", uri, b"raw", {"Content-Type": "application/octet-stream"}
                   )[0] == 415
    seen = lab.updates(DELL)
    assert seen["pushes"] == [] and [r["reason"] for r in seen["refused"]] == ["bad-request"] * 3


def test_on_start_update_and_long_new(lab):
    st, h, _ = push(lab, DELL, image("S-1", "bmc"), apply_time="OnStartUpdateRequest")
    assert st == 202
    time.sleep(0.6)   # flash is 0.3 s: without StartUpdate nothing moves
    assert request(lab, DELL, "GET", h["location"])[2]["TaskState"] == "New"
    start = "/redfish/v1/UpdateService/Actions/UpdateService.StartUpdate"
    assert request(lab, DELL, "POST", start, {})[0] in (200, 204)
    assert wait_task(lab, DELL, h["location"])[0]["TaskState"] == "Completed"
    lab.override(LENOVO, update_new=1.5)
    st, h, _ = push(lab, LENOVO, image("N-1", "bmc"))
    time.sleep(0.5)
    assert request(lab, LENOVO, "GET", h["location"])[2]["TaskState"] == "New"
    final, seen = wait_task(lab, LENOVO, h["location"])
    assert final["TaskState"] == "Completed" and seen[0] == "New"


def test_http_push_uri_targets(lab):
    us = "/redfish/v1/UpdateService"
    gpu5 = "/redfish/v1/UpdateService/FirmwareInventory/GPU5"
    assert request(lab, LENOVO, "PATCH", us, {"HttpPushUriTargets": ["/nope"]})[0] == 400
    assert request(lab, LENOVO, "PATCH", us, {"HttpPushUriTargets": [gpu5]})[0] == 204
    try:
        st, h, _ = push(lab, LENOVO, image("T-5", "bmc"), raw=True)   # the setting wins
        assert wait_task(lab, LENOVO, h["location"])[0]["TaskState"] == "Completed"
        assert lab.updates(LENOVO)["pushes"][0]["members"] == [gpu5]
        staged = lab.updates(LENOVO)["staged"]     # a GPU waits for a host reset
        assert [(x["member"], x["version"], x["activation"]) for x in staged] == [
            (gpu5, "T-5", "host-reset")]
    finally:
        request(lab, LENOVO, "PATCH", us, {"HttpPushUriTargets": []})
    assert request(lab, HPE, "PATCH", us, {"HttpPushUriTargets": []})[0] == 405


@pytest.mark.parametrize("result,state", [("killed", "Killed"), ("cancelled", "Cancelled")])
def test_task_killed_or_cancelled(lab, result, state):
    lab.override(HPE, update_result=result)
    st, h, doc = push(lab, HPE, image("K-1", "bmc"))
    assert h["location"].startswith("/redfish/v1/TaskService/TaskMonitors/")
    final, _ = wait_task(lab, HPE, h["location"])
    assert final["TaskState"] == state and lab.updates(HPE)["staged"] == []


def test_tasks_lost_in_a_bmc_reset(lab):
    lab.override(DGX, update_tasks_lost=True)
    st, h, doc = push(lab, DGX, image("L-1", "bmc"))
    assert wait_task(lab, DGX, h["location"])[0]["TaskState"] == "Completed"
    assert reset_manager(lab, DGX) in (200, 204)
    wait_back(lab, DGX)
    assert request(lab, DGX, "GET", doc["@odata.id"])[0] == 404
    assert request(lab, DGX, "GET", h["location"])[0] == 404
    assert set(versions(lab, DGX, "bmc")) == {"L-1"}       # the inventory decides


def test_every_option_of_the_command(tmp_path):
    import subprocess
    emu = os.path.join(TOP, "tests", "lab", "redfish_emu.py")
    d = str(tmp_path / "lab")
    r = subprocess.run(["/usr/bin/python3", emu, "start", "--dir", d, "--prefix", PREFIX,
                        "--first", "200", "--count", "2", "--vendors", "hpe",
                        "--every", "update_flash=0.1", "--every", "update_result=exception",
                        "--node", "201:update_result=ok"],
                       capture_output=True, text=True, timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        lab = RedfishLab.attach(d)
        finals = []
        for i in (200, 201):
            st, h, _ = push(lab, i, image("EV-1", "bmc"))
            finals.append(wait_task(lab, i, h["location"])[0]["TaskState"])
        assert finals == ["Exception", "Completed"]
    finally:
        subprocess.run(["/usr/bin/python3", emu, "stop", "--dir", d], timeout=60)
