"""The Redfish backend through the real binary, against the Redfish emulator
(tests/lab/redfish_emu.py) serving the five captured vendor dialects over
HTTPS with a test CA: every verb per dialect, checked against what the
emulator holds; TLS verification and pinning; sessions; paging, $expand,
503 Retry-After, redirects, oversized answers, Ctrl-C; --protocol auto on a
fleet that mixes IPMI (ipmi_sim) and Redfish nodes."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402
from ipmilab import IpmiLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
IPMI_PREFIX = loopback(__name__, "ipmi")
# Nodes 1-5: one per dialect, for the verbs. Nodes 6-10: the same dialects
# again, for the tests that change how a BMC behaves. Node 11 (Supermicro):
# broken answers on a BMC with sessions, and last a service root that moves.
VENDORS = ["supermicro-sys-821ge-tnhr", "nvidia-dgx-h100", "lenovo-sr670-v2", "dell-r750",
           "hpe-dl385-gen10plus-v2"]
GPU_SERVERS = {1, 2, 3}
OVERRIDES = {
    6: {"sessions": False},                   # Basic only
    7: {"page_size": 10, "page_overlap": 3},  # DGX, merged-looking pages
    8: {"password": "not-the-password"},      # a login that must fail
}
NODES = [(i, v) for i, v in enumerate(VENDORS, start=1)]


@pytest.fixture(scope="module")
def lab():
    workdir = tempfile.mkdtemp(prefix="gf-rflab-")
    lab = RedfishLab(workdir, prefix=PREFIX, count=11, user="admin", password=PASSWORD,
                     overrides=OVERRIDES)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def rf(gf, lab):
    """The lab's nodes registered as rf1..rf11 (protocol redfish), counters cleared."""
    lines = ["name,bmc,protocol,groups"]
    for i in lab.indices():
        lines.append(f"rf{i},{lab.addr(i)}:{lab.port},redfish,{'verbs' if i <= 5 else 'odd'}")
        lab.clear(i)
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    gf.ca = ["--cacert", lab.cacert]
    return gf


def one(gf, *args, ok=True):
    """Run a verb on one node with JSON output; its object."""
    r, data = gf.json(*args)
    assert len(data) == 1, (r.stderr, data)
    obj = data[0]
    if ok:
        assert obj["ok"] is True and r.returncode == 0, (obj, r.stderr)
    else:
        assert obj["ok"] is False and r.returncode == 1, (obj, r.stderr)
    return obj


def assert_no_sessions_left(lab, i):
    st = lab.state(i)["sessions"]
    assert st["open"] == 0, st
    assert st["created"] == st["deleted"], st


def resets(lab, i):
    return [(e["type"], e["from"], e["to"]) for e in lab.events(i) if e["kind"] == "reset"]


def main_system(lab, i):
    members = lab.resource(i, "/redfish/v1/Systems")["Members"]
    return members[0]["@odata.id"]


# ---- power ----------------------------------------------------------------

@pytest.mark.parametrize("i,vendor", NODES)
def test_power_every_verb(rf, lab, i, vendor):
    node = f"rf{i}"
    lab.set_power(i, "On")
    assert one(rf, "power", "status", node, *rf.ca)["power"] == "on"
    lab.set_power(i, "Off")
    assert one(rf, "power", "status", node, *rf.ca)["power"] == "off"

    obj = one(rf, "power", "on", node, "--wait", *rf.ca)
    assert obj["power"] == "on" and lab.power(i) == "On"
    one(rf, "power", "off", node, *rf.ca)
    assert lab.power(i) == "Off" and resets(lab, i)[-1] == ("ForceOff", "On", "Off")
    one(rf, "power", "on", node, *rf.ca)
    lab.clear(i)
    one(rf, "power", "cycle", node, "--wait", *rf.ca)
    # PowerCycle where the BMC allows it (Supermicro via ActionInfo, Dell inline),
    # ForceOff then On where it does not (DGX, Lenovo, HPE).
    if vendor.startswith(("supermicro", "dell")):
        assert resets(lab, i) == [("PowerCycle", "On", "On")]
    else:
        assert resets(lab, i) == [("ForceOff", "On", "Off"), ("On", "Off", "On")]
    assert lab.power(i) == "On"
    lab.clear(i)
    one(rf, "power", "reset", node, *rf.ca)
    assert resets(lab, i) == [("ForceRestart", "On", "On")]
    one(rf, "power", "soft", node, "--wait", *rf.ca)
    assert resets(lab, i)[-1] == ("GracefulShutdown", "On", "Off") and lab.power(i) == "Off"
    one(rf, "power", "on", node, *rf.ca)
    lab.clear(i)
    if vendor.startswith("nvidia"):
        # The DGX allows only four reset types, NMI not among them.
        obj = one(rf, "power", "nmi", node, *rf.ca, ok=False)
        assert obj["error"]["kind"] == "unsupported"
        assert resets(lab, i) == []
    else:
        one(rf, "power", "nmi", node, *rf.ca)
        assert resets(lab, i) == [("Nmi", "On", "On")]
    assert_no_sessions_left(lab, i)
    audit = rf.sql(f"SELECT verb, result FROM audit WHERE node = '{node}' ORDER BY id")
    assert {"verb": "power cycle", "result": "ok"} in audit


def test_power_wait_reads_power_state(rf, lab):
    """--wait polls PowerState through the BMC's PoweringOff until it reads Off."""
    lab.set_power(3, "On")
    lab.override(3, transition=1.5)
    try:
        lab.clear(3)
        obj = one(rf, "power", "off", "rf3", "--wait", *rf.ca)
        assert obj["power"] == "off" and lab.power(3) == "Off"
        assert obj["waited"] >= 1.0
        system = main_system(lab, 3)
        polls = [a for a in lab.access_log(3) if a["method"] == "GET" and a["path"] == system]
        assert len(polls) >= 2, polls
        # Without --wait the answer comes while the BMC is still on its way.
        lab.set_power(3, "Off")
        obj = one(rf, "power", "on", "rf3", *rf.ca)
        assert "waited" not in obj and lab.power(3) == "PoweringOn"
    finally:
        lab.override(3, transition=0)
        lab.set_power(3, "On")
    assert_no_sessions_left(lab, 3)


def test_libcurl_is_loaded_on_the_first_redfish_session(rf, lab):
    """libcurl and libssl are not linked: the first Redfish session loads them."""
    lab.set_power(2, "On")
    r, data = rf.json("power", "status", "rf2", *rf.ca, env={"LD_DEBUG": "files"})
    assert r.returncode == 0 and data[0]["power"] == "on", r.stderr[-2000:]
    lines = r.stderr.splitlines()
    for so in ("libcurl.so.4", "libssl.so.3"):
        how = [ln for ln in lines if f"file={so} " in ln and " by " in ln]
        assert how, r.stderr[-2000:]
        assert not any("gpufleet" in ln and "needed by" in ln for ln in how), how
    # dlopen()ed (by gpufleet, or by ASan's interceptor in a sanitizer build)
    assert any("file=libcurl.so.4 " in ln and "dynamically loaded by" in ln
               for ln in lines), r.stderr[-2000:]
    assert_no_sessions_left(lab, 2)


def test_power_on_when_on_is_fine_on_dell(rf, lab):
    """iDRAC answers 409 to a Reset that changes nothing; that is no failure."""
    lab.set_power(4, "On")
    one(rf, "power", "on", "rf4", *rf.ca)
    assert lab.power(4) == "On"
    lab.set_power(4, "Off")
    lab.clear(4)
    one(rf, "power", "cycle", "rf4", *rf.ca)
    assert lab.power(4) == "On"
    assert resets(lab, 4)[-1] == ("On", "Off", "On")


# ---- boot -----------------------------------------------------------------

@pytest.mark.parametrize("i,vendor", NODES)
def test_boot(rf, lab, i, vendor):
    node = f"rf{i}"
    obj = one(rf, "boot", "pxe", node, *rf.ca)
    assert obj["boot"]["device"] == "pxe" and obj["boot"]["persistent"] is False
    held = lab.boot(i)
    assert held["BootSourceOverrideTarget"] == "Pxe"
    assert held["BootSourceOverrideEnabled"] == "Once"
    patches = [e for e in lab.events(i) if e["kind"] == "patch"]
    assert patches and patches[-1]["uri"] == main_system(lab, i)

    r, data = rf.json("boot", "bios", "--persistent", "--uefi", node, *rf.ca)
    if vendor.startswith("lenovo"):
        # The XCC allows Once and Disabled only: refused before anything is sent.
        assert data[0]["ok"] is False and data[0]["error"]["kind"] == "unsupported"
        assert lab.boot(i)["BootSourceOverrideTarget"] == "Pxe"
    else:
        assert data[0]["ok"] is True, data
        assert data[0]["boot"] == {"device": "bios", "persistent": True, "mode": "uefi"}
        held = lab.boot(i)
        assert (held["BootSourceOverrideTarget"], held["BootSourceOverrideEnabled"],
                held["BootSourceOverrideMode"]) == ("BiosSetup", "Continuous", "UEFI")

    obj = one(rf, "boot", "none", node, *rf.ca)
    assert obj["boot"]["device"] == "none"
    assert lab.boot(i)["BootSourceOverrideEnabled"] == "Disabled"
    assert one(rf, "boot", "status", node, *rf.ca)["boot"]["device"] == "none"
    assert_no_sessions_left(lab, i)


def test_boot_if_match_required(rf, lab):
    """A BMC that insists on If-Match gets the ETag it sent with the resource."""
    lab.override(5, require_if_match=True)
    try:
        one(rf, "boot", "cd", "rf5", *rf.ca)
        assert lab.boot(5)["BootSourceOverrideTarget"] == "Cd"
    finally:
        lab.override(5, require_if_match=False)
    one(rf, "boot", "none", "rf5", *rf.ca)


# ---- sensors --------------------------------------------------------------

@pytest.mark.parametrize("i,vendor", NODES)
def test_sensors(rf, lab, i, vendor):
    node = f"rf{i}"
    obj = one(rf, "sensors", node, *rf.ca)
    sensors = obj["sensors"]
    assert len(sensors) > 10
    temps = [s for s in sensors if s["type"] == "temperature" and s["reading"] is not None]
    assert temps and all(s["unit"] == "C" for s in temps)
    assert {s["state"] for s in sensors} <= {"nominal", "warning", "critical", "unknown"}
    # Change one under the tool: the reading and the state follow.
    name = temps[0]["name"]
    lab.override(i, sensors={name: {"reading": 151, "health": "Critical"}})
    try:
        again = one(rf, "sensors", node, *rf.ca)["sensors"]
        hot = [s for s in again if s["name"] == name][0]
        assert hot["reading"] == 151 and hot["state"] == "critical"
    finally:
        lab.override(i, sensors={name: {"reading": temps[0]["reading"], "health": "OK"}})
    assert_no_sessions_left(lab, i)


# ---- event log ------------------------------------------------------------

@pytest.mark.parametrize("i,vendor", NODES)
def test_sel_list_and_clear(rf, lab, i, vendor):
    node = f"rf{i}"
    lab.override(i, sel_entries=3)
    obj = one(rf, "sel", "list", node, *rf.ca)
    entries = obj["entries"]
    assert len(entries) == 3
    for e in entries:
        assert e["severity"] in ("info", "warning", "critical")
        assert e["direction"] in ("assertion", "deassertion")
        assert e["id"]
    one(rf, "sel", "clear", node, "--yes", *rf.ca)
    clears = [e for e in lab.events(i) if e["kind"] == "clearlog"]
    # The log cleared is the one the emulator calls the system event log.
    assert clears and clears[-1]["uri"] == lab.state(i)["sel"]
    assert one(rf, "sel", "list", node, *rf.ca)["entries"] == []
    assert_no_sessions_left(lab, i)


def test_sel_log_by_name(rf, lab):
    """--log NAME reads another log service; a name the BMC lacks lists the ones it has."""
    iel = lab.resource(5, "/redfish/v1/Managers/1/LogServices/IEL/Entries")
    obj = one(rf, "sel", "list", "--log", "IEL", "rf5", *rf.ca)
    assert len(obj["entries"]) == len(iel["Members"])
    assert any("/LogServices/IEL/Entries" in a["path"] for a in lab.access_log(5))
    obj = one(rf, "sel", "list", "--log", "NoSuchLog", "rf5", *rf.ca, ok=False)
    assert obj["error"]["kind"] == "unsupported"
    assert "IML" in obj["error"]["message"] and "IEL" in obj["error"]["message"]


# ---- firmware -------------------------------------------------------------

def fixture_versions(lab, i):
    """Member Id -> Version, as the emulator holds them now."""
    inv = lab.resource(i, "/redfish/v1/UpdateService/FirmwareInventory")
    out = {}
    for m in inv["Members"]:
        r = lab.resource(i, m["@odata.id"])
        out[r["Id"]] = r.get("Version")
    return out


@pytest.mark.parametrize("i,vendor", NODES)
def test_firmware(rf, lab, i, vendor):
    node = f"rf{i}"
    comps = one(rf, "firmware", node, *rf.ca)["components"]
    want = fixture_versions(lab, i)
    # Every member, once, each with the fixture's version.
    assert sorted(c["id"] for c in comps) == sorted(want)
    for c in comps:
        assert c["version"] == want[c["id"]], c
        assert c["kind"] in ("bmc", "bios", "gpu", "nic", "psu", "cpld", "baseboard", "other")
    keys = [c["key"] for c in comps]
    assert len(keys) == len(set(keys))
    by_key = {c["key"]: c for c in comps}
    assert by_key["bmc"]["kind"] == "bmc" and by_key["bios"]["kind"] == "bios"
    if i in GPU_SERVERS:
        for g in range(1, 9):
            assert by_key[f"gpu{g}.firmware"]["kind"] == "gpu"
    else:
        assert not any(k.startswith("gpu") and k.endswith(".firmware") for k in keys)
    assert_no_sessions_left(lab, i)


@pytest.mark.parametrize("i,vendor", NODES)
def test_firmware_keys_survive_an_upgrade(rf, lab, i, vendor):
    """New versions (Dell renames the member) keep their keys."""
    node = f"rf{i}"
    before = {c["key"]: c for c in one(rf, "firmware", node, *rf.ca)["components"]}
    lab.override(i, bmc_firmware="9.99.1", bios_firmware="8.88.2")
    if i in GPU_SERVERS:
        lab.override(i, gpu_firmware={"3": "97.00.00.00.77"})
    after = {c["key"]: c for c in one(rf, "firmware", node, *rf.ca)["components"]}
    assert set(after) == set(before)
    assert "9.99.1" in after["bmc"]["version"]
    assert "8.88.2" in after["bios"]["version"]
    if vendor.startswith("dell"):
        assert after["bmc"]["id"] != before["bmc"]["id"] and "9.99.1" in after["bmc"]["id"]
    if i in GPU_SERVERS:
        assert after["gpu3.firmware"]["version"] == "97.00.00.00.77"
        assert after["gpu2.firmware"]["version"] == before["gpu2.firmware"]["version"]


def test_firmware_paged_with_overlap(rf, lab):
    """Pages of 10 that repeat 3 members: the 66 DGX members come once each."""
    comps = one(rf, "firmware", "rf7", *rf.ca)["components"]
    assert sorted(c["id"] for c in comps) == sorted(fixture_versions(lab, 7))
    log = lab.access_log(7)
    assert any("$skip=" in a["path"] for a in log)


def test_firmware_uses_expand_where_advertised(rf, lab):
    one(rf, "firmware", "rf2", *rf.ca)
    gets = [a for a in lab.access_log(2) if a["method"] == "GET"]
    assert any("$expand=" in a["path"] for a in gets)
    # One expanded collection instead of 66 member requests.
    assert not any(a["path"].startswith("/redfish/v1/UpdateService/FirmwareInventory/")
                   for a in gets)
    lab.override(2, expand=False)
    try:
        lab.clear(2)
        comps = one(rf, "firmware", "rf2", *rf.ca)["components"]
        assert len(comps) == 66
        gets = [a for a in lab.access_log(2) if a["method"] == "GET"]
        assert not any("$expand" in a["path"] for a in gets)
    finally:
        lab.override(2, expand=True)


# ---- hardware -------------------------------------------------------------

@pytest.mark.parametrize("i,vendor", NODES)
def test_hardware(rf, lab, i, vendor):
    node = f"rf{i}"
    lab.override(i, serial=f"SER-{i}-X")
    obj = one(rf, "hardware", node, *rf.ca)
    sysres = lab.resource(i, main_system(lab, i))
    assert obj["system"]["model"] == sysres["Model"]
    assert obj["system"]["serial"] == f"SER-{i}-X"
    assert obj["system"]["uuid"] == sysres["UUID"]
    assert obj["memory_gib"] == sysres["MemorySummary"]["TotalSystemMemoryGiB"]
    assert len(obj["cpus"]) >= 2
    if i in GPU_SERVERS:
        assert len(obj["gpus"]) == 8
        assert all(g["serial"] and g["firmware"] for g in obj["gpus"])
    assert_no_sessions_left(lab, i)


# ---- TLS ------------------------------------------------------------------

def test_tls_wrong_ca_refused_before_any_request(rf, lab):
    r, data = rf.json("power", "status", "rf1", "--cacert", lab.other_cacert)
    assert r.returncode == 1 and data[0]["error"]["kind"] == "tls", data
    r, data = rf.json("power", "status", "rf1")  # the system CAs know nothing of the lab
    assert data[0]["error"]["kind"] == "tls", data
    assert lab.access_log(1) == []
    assert lab.state(1)["sessions"]["created"] == 0


def test_tls_cacert_from_the_profile(rf, lab):
    rf.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n"
                   f"redfish_cacert = {lab.cacert}\n")
    assert one(rf, "power", "status", "rf1")["power"] in ("on", "off")


def test_insecure_works_and_warns(rf, lab):
    r, data = rf.json("power", "status", "rf1", "--insecure")
    assert r.returncode == 0 and data[0]["ok"] is True
    assert "insecure" in r.stderr and "not checked" in r.stderr


def test_pinning(rf, lab):
    i, node = 10, "rf10"
    lab.rotate_cert(i)  # a fresh certificate, as a BMC might have on first contact
    r, data = rf.json("power", "status", node, "--tls-pin", "new")
    assert data[0]["ok"] is True, data
    assert "pinned" in r.stderr
    pins = rf.sql(f"SELECT fingerprint, first_seen FROM tls_pins WHERE node = '{node}'")
    assert pins and pins[0]["fingerprint"] == lab.fingerprint(i)
    # Later contacts need no CA: the pin is the trust.
    assert one(rf, "power", "status", node)["ok"] is True

    old = lab.fingerprint(i)
    new = lab.rotate_cert(i, self_signed=True)
    lab.clear(i)
    r, data = rf.json("power", "status", node, "--tls-pin", "new", *rf.ca)
    err = data[0]["error"]
    assert err["kind"] == "tls" and old in err["message"] and new in err["message"], err
    # Refused in the handshake: not one request, so no password, reached the BMC.
    assert lab.access_log(i) == []
    assert rf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'")[0]["fingerprint"] == old

    r, data = rf.json("nodes", "repin", node)
    assert r.returncode == 0 and data[0]["pin"] == new and data[0]["previous"] == old, data
    assert rf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'")[0]["fingerprint"] == new
    assert one(rf, "power", "status", node)["ok"] is True


# ---- sessions and auth ----------------------------------------------------

def test_one_session_per_node_and_run(rf, lab):
    r, data = rf.json("hardware", "@verbs", *rf.ca)
    assert r.returncode == 0 and all(o["ok"] for o in data)
    for i in range(1, 6):
        st = lab.state(i)
        assert st["sessions"]["created"] == 1 and st["sessions"]["open"] == 0
        log = lab.access_log(i)
        assert {a["auth"] for a in log if a["path"].startswith("/redfish/v1/")
                and a["path"] not in ("/redfish/v1", "/redfish/v1/SessionService/Sessions")} \
            == {"session"}
        # Keep-alive: the whole run on one or two connections, not one per request.
        assert len({a["conn"] for a in log}) <= 2 < len(log)


def test_basic_where_sessions_are_missing(rf, lab):
    """hardware reads many resources, so it logs in where it can: rf6 has no
    SessionService, so Basic on every request."""
    one(rf, "hardware", "rf6", *rf.ca)
    log = lab.access_log(6)
    assert {a["auth"] for a in log if a["path"] != "/redfish/v1"} == {"basic"}, log
    assert not any(a["method"] == "POST" for a in log), log
    assert lab.state(6)["sessions"]["open"] == 0


@pytest.mark.parametrize("verb", [["power", "status"], ["hardware"]])
def test_wrong_password_is_an_auth_error(rf, lab, verb):
    """Refused with Basic (power status reads once) or at the login (hardware)."""
    r, data = rf.json(*verb, "rf8", *rf.ca)
    assert data[0]["error"]["kind"] == "auth", data
    assert "401" in data[0]["error"]["message"]
    assert lab.state(8)["sessions"]["open"] == 0
    # One failed attempt either way.
    assert sum(a["status"] == 401 for a in lab.access_log(8)) == 1, lab.access_log(8)


def test_session_limit_falls_back_to_basic(rf, lab):
    """No session to be had (503 SessionLimitExceeded): Basic on every request."""
    lab.override(9, max_sessions=0)
    try:
        one(rf, "hardware", "rf9", *rf.ca)
        assert lab.state(9)["sessions"]["refused"] == 1
        assert any(a["auth"] == "basic" for a in lab.access_log(9))
    finally:
        lab.override(9, max_sessions=None)


def test_expired_session_is_renewed(rf, lab):
    """A BMC that drops the token mid-run costs one more login, not the run."""
    lab.set_mode(9, slow=0.5)
    try:
        p = subprocess.Popen([GPUFLEET, "--format", "json", "bios", "show", "rf9", *rf.ca],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=rf.env())
        deadline = time.monotonic() + 20
        while lab.state(9)["sessions"]["open"] == 0:
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.05)
        lab.expire_sessions(9)
        out, errs = p.communicate(timeout=60)
        assert p.returncode == 0, errs
        assert json.loads(out)[0]["ok"] is True
        st = lab.state(9)["sessions"]
        assert st["created"] == 2 and st["open"] == 0, st
        assert any(a["status"] == 401 for a in lab.access_log(9))
    finally:
        lab.set_mode(9, slow=0)


# ---- deadlines, 503, redirects, sizes, Ctrl-C ------------------------------

def test_503_retry_after_is_waited_out(rf, lab):
    lab.set_mode(9, resetting=2, retry_after=1)
    t0 = time.monotonic()
    obj = one(rf, "power", "status", "rf9", "--timeout", "10", *rf.ca)
    assert obj["power"] in ("on", "off")
    assert time.monotonic() - t0 >= 1.0
    assert any(a["status"] == 503 for a in lab.access_log(9))


def test_503_past_the_deadline_fails_in_time(rf, lab):
    lab.set_mode(9, resetting=60, retry_after=30)
    try:
        t0 = time.monotonic()
        r, data = rf.json("power", "status", "rf9", "--timeout", "3", "--retries", "0", *rf.ca)
        assert data[0]["error"]["kind"] == "timeout", data
        assert "503" in data[0]["error"]["message"]
        assert time.monotonic() - t0 < 3
    finally:
        lab.set_mode(9, resetting=0)


def test_hanging_bmc_meets_the_deadline(rf, lab):
    lab.set_mode(9, hang=True)
    try:
        t0 = time.monotonic()
        r, data = rf.json("power", "status", "rf9", "--timeout", "2", "--retries", "0", *rf.ca)
        assert data[0]["error"]["kind"] == "timeout", data
        assert time.monotonic() - t0 < 6
    finally:
        lab.set_mode(9, hang=False)


def test_ctrl_c_stops_repin_and_keeps_the_pins_it_did_not_read(rf, lab):
    """nodes repin on Ctrl-C: exit 130 at once; the node that answered is re-pinned,
    the one that still hangs keeps the pin it had rather than losing it."""
    r, data = rf.json("nodes", "repin", "rf1,rf9")
    assert r.returncode == 0, r.stderr
    before = {o["node"]: o["pin"] for o in data}
    lab.set_mode(9, hang=True)
    try:
        p = subprocess.Popen([GPUFLEET, "-v", "--format", "json", "nodes", "repin", "rf1,rf9",
                              "--timeout", "60", "--retries", "0"], env=rf.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # -v prints a line per node as it finishes: rf1 done means rf9 hangs in the run.
        seen = []
        for line in p.stderr:
            seen.append(line)
            if line.startswith("gpufleet: rf1: ok"):
                break
        else:
            raise AssertionError(f"rf1 never finished: {seen}")
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        lab.set_mode(9, hang=False)
    assert p.returncode == 130, (p.returncode, err)
    assert took < 10, took
    assert "interrupted" in err
    data = {o["node"]: o for o in json.loads(out)}
    assert data["rf1"]["ok"] is True, data
    assert data["rf9"]["ok"] is False and "interrupted" in data["rf9"]["error"]["message"], data
    pins = {row["node"]: row["fingerprint"] for row in rf.sql("SELECT node, fingerprint FROM tls_pins")}
    assert pins["rf1"] == data["rf1"]["pin"], pins
    assert pins["rf9"] == before["rf9"], pins        # not forgotten


def test_redirect_to_another_host_is_refused(rf, lab):
    uri, moved = "/redfish/v1/UpdateService", "/redfish/v1/UpdateService-moved"
    saved = lab.resource(9, uri)
    lab.redirect(9, uri, f"https://{loopback('*', 'redirect')}.9:{lab.port}{uri}")
    try:
        r, data = rf.json("firmware", "rf9", *rf.ca)
        assert data[0]["error"]["kind"] == "protocol", data
        assert "another host" in data[0]["error"]["message"]
        # firmware reads with Basic: the credentials did not follow, and no session was left.
        st = lab.state(9)["sessions"]
        assert st["open"] == 0 and st["created"] == st["deleted"], st
        # A redirect on the same host is followed.
        lab.put_resource(9, moved, saved)
        lab.redirect(9, uri, moved)
        comps = one(rf, "firmware", "rf9", *rf.ca)["components"]
        assert len(comps) == len(fixture_versions(lab, 9))
    finally:
        # Redirects cannot be taken back: leave one that works.
        lab.put_resource(9, moved, saved)
        lab.redirect(9, uri, moved)


def test_oversized_answer_is_cut(rf, lab):
    uri = "/redfish/v1/UpdateService"
    saved = lab.resource(6, uri)
    lab.put_resource(6, uri, b'{"Junk": "' + b"x" * (40 << 20) + b'"}')
    try:
        r, data = rf.json("firmware", "rf6", "--timeout", "30", *rf.ca)
        assert data[0]["error"]["kind"] == "protocol", data
        assert "MiB" in data[0]["error"]["message"]
    finally:
        lab.put_resource(6, uri, saved)


@pytest.mark.parametrize("body", [b'{"FirmwareInventory": {"@odata.id": ', b"[1, 2]", b"",
                                  b'{"FirmwareInventory": 5}'])
def test_broken_answers(rf, lab, body):
    uri = "/redfish/v1/UpdateService"
    saved = lab.resource(11, uri)
    lab.put_resource(11, uri, body)
    try:
        r, data = rf.json("firmware", "rf11", *rf.ca)
        assert data[0]["ok"] is False
        assert data[0]["error"]["kind"] in ("protocol", "unsupported"), data
        # A failed node leaves no session behind (firmware reads with Basic).
        st = lab.state(11)["sessions"]
        assert st["open"] == 0 and st["created"] == st["deleted"], st
    finally:
        lab.put_resource(11, uri, saved)


def test_ctrl_c_closes_the_sessions(rf, lab):
    lab.set_mode(10, slow=1.0)
    try:
        p = subprocess.Popen([GPUFLEET, "hardware", "rf10", *rf.ca, "--tls-pin", "new"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=rf.env())
        deadline = time.monotonic() + 20
        while lab.state(10)["sessions"]["open"] == 0:
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, errs = p.communicate(timeout=20)
        assert p.returncode == 130, errs
        assert "interrupted" in errs
        st = lab.state(10)["sessions"]
        assert st["open"] == 0 and st["deleted"] == st["created"] == 1, st
    finally:
        lab.set_mode(10, slow=0)


def test_session_deleted_when_open_fails_after_login(rf, lab):
    """A BMC that hides its root (401 without credentials) is logged in to first;
    when the root then fails, the session made for it is deleted before the node
    is reported. (Node 11's root stays moved: this test runs last on it.)"""
    lab.redirect(11, "/redfish/v1", "/redfish/v1/RootMoved")
    r, data = rf.json("power", "status", "rf11", *rf.ca)
    assert data[0]["ok"] is False and data[0]["error"]["kind"] == "protocol", data
    st = lab.state(11)["sessions"]
    assert st["created"] == 1 and st["open"] == 0 and st["deleted"] == 1, st
    assert [a["method"] for a in lab.access_log(11)
            if a["path"].startswith("/redfish/v1/SessionService/Sessions")] == ["POST", "DELETE"]


def test_pinning_from_the_profile(rf, lab):
    """redfish_tls_pin = new in a profile pins like --tls-pin new (node 10 shows a
    self-signed certificate since test_pinning)."""
    i, node = 10, "rf10"
    new = lab.rotate_cert(i, self_signed=True)
    # Without pinning, a self-signed certificate is not trusted.
    r, data = rf.json("power", "status", node, *rf.ca)
    assert data[0]["error"]["kind"] == "tls", data
    assert rf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'") == []
    rf.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n"
                   "redfish_tls_pin = new\n")
    r, data = rf.json("power", "status", node)
    assert data[0]["ok"] is True, (data, r.stderr)
    assert "pinned" in r.stderr
    assert rf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'")[0]["fingerprint"] \
        == new == lab.fingerprint(i)
    # The profile pins on first use only: a changed certificate is refused.
    newer = lab.rotate_cert(i, self_signed=True)
    r, data = rf.json("power", "status", node)
    err = data[0]["error"]
    assert err["kind"] == "tls" and new in err["message"] and newer in err["message"], err
    assert rf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'")[0]["fingerprint"] \
        == new
    assert_no_sessions_left(lab, i)


# ---- --protocol auto ------------------------------------------------------

@pytest.fixture(scope="module")
def ipmi():
    assert shutil.which("ipmi_sim"), "needs openipmi (ipmi_sim): tests/install-deps.sh"
    workdir = tempfile.mkdtemp(prefix="gf-lab-auto-")
    lab = IpmiLab(workdir, prefix=IPMI_PREFIX, count=2, user="admin", password=PASSWORD,
                  power="on")
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_protocol_auto_on_a_mixed_fleet(gf, lab, ipmi):
    lines = ["name,bmc,protocol"]
    for i in (1, 2):
        lines.append(f"sim{i},{ipmi.addr(i)},auto")
    for i in (1, 4):
        lines.append(f"rf{i},{lab.addr(i)}:{lab.port},auto")
    assert gf.run("nodes", "import", "-", input="\n".join(lines) + "\n").returncode == 0
    for i in (1, 4):
        lab.clear(i)
    r, data = gf.json("power", "status", "sim[1-2],rf[1,4]", "--cacert", lab.cacert)
    assert r.returncode == 0, (r.stderr, data)
    got = {o["node"]: o for o in data}
    assert got["sim1"]["protocol"] == "ipmi" and got["sim2"]["protocol"] == "ipmi"
    assert got["rf1"]["protocol"] == "redfish" and got["rf4"]["protocol"] == "redfish"
    assert got["sim1"]["power"] == ipmi.power(1)
    assert got["rf4"]["power"] == lab.power(4).lower()
    # What each peer saw: the Redfish BMCs one read with Basic (no session for
    # one read), the sims their chassis queries.
    for i in (1, 4):
        assert lab.state(i)["sessions"]["created"] == 0
        assert any(a["auth"] == "basic" and a["status"] == 200 for a in lab.access_log(i))
    assert any(e == "status" for _, e, _ in ipmi.chassis_log(1))
