"""Round trips per BMC, counted where they arrive: the emulator's access log
(issue 23, point 4). A verb asks a Redfish BMC for no more than the protocol
needs: the service root, a session, the data with $expand (and $select where
the root allows it), each collection once per session, and the logout; a
verb that reads once or twice (firmware, power status) sends Basic
credentials with its reads instead of a login and a logout. Also the
emulator's one-request-at-a-time mode the benchmarks use."""
import collections
import os
import subprocess
import sys
import threading
import time
import http.client
import ssl

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register_redfish, started

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import FW_INV, RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
DGX = "nvidia-dgx-h100"
# 1: DGX as captured; 2: DGX whose root does not offer $select; 3: HPE ($expand
# one level only); 4: DGX paging every 10 members; 5: DGX one request at a time;
# 6: DGX whose logout (the session's DELETE) takes 0.5 s; 7: DGX that takes
# no Basic (sessions only); 8: DGX whose root offers no $expand.
OVERRIDES = {
    2: {"select": False},
    3: {"vendor": "hpe-dl385-gen10plus-v2"},
    4: {"page_size": 10},
    5: {"one_at_a_time": True, "slow": 0.2},
    6: {"logout_delay": 0.5},
    7: {"basic": False},
    8: {"expand": False},
}
SESSIONS = "/redfish/v1/SessionService/Sessions"


@pytest.fixture(scope="module")
def lab():
    with started(lambda d: RedfishLab(d, prefix=PREFIX, count=8, vendors=[DGX], user="admin",
                                      password=PASSWORD, overrides=OVERRIDES),
                 "gf-rflab-rt-") as lab:
        yield lab


@pytest.fixture
def rf(gf, lab):
    register_redfish(gf, lab)
    for i in lab.indices():
        lab.clear(i)
    return gf


def firmware(gf, lab, i, sessions=0):
    r, data = gf.json("firmware", f"rf{i}")
    assert r.returncode == 0 and len(data) == 1 and data[0]["ok"], (r.stderr, data)
    comps = data[0]["components"]
    assert len(comps) == len(lab.resource(i, FW_INV)["Members"])
    st = lab.state(i)["sessions"]
    assert st["created"] == sessions and st["open"] == 0, st
    if not sessions:
        # The root needs no credentials; every read came with Basic ones.
        auth = [(a["path"], a["auth"]) for a in lab.access_log(i)]
        assert auth[0] == ("/redfish/v1", "none") and {a for _, a in auth[1:]} == {"basic"}, auth
    return sorted((c["id"], c["version"]) for c in comps)


def requests(lab, i):
    return [(a["method"], a["path"]) for a in lab.access_log(i)]


def wrong_creds(gf):
    """A credentials file beside gf's with another password, for env=."""
    path = os.path.join(gf.workdir, "credentials-wrong")
    with open(gf.creds) as f:
        text = f.read().replace(f"bmc_password = {PASSWORD}", "bmc_password = not-" + PASSWORD)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def test_firmware_in_two_round_trips(rf, lab):
    """The root, then the inventory inside its UpdateService with Basic: no
    login and no logout, which would cost more round trips than the read."""
    firmware(rf, lab, 1)
    log = requests(lab, 1)
    assert log == [
        ("GET", "/redfish/v1"),
        ("GET", "/redfish/v1/UpdateService?$select=FirmwareInventory&$expand=.($levels=2)"),
    ], log
    assert len({a["conn"] for a in lab.access_log(1)}) == 1


@pytest.mark.parametrize("verb,key", [(["power", "status"], "power"),
                                     (["boot", "status"], "boot")])
def test_power_and_boot_status_in_two_round_trips(rf, lab, verb, key):
    r, data = rf.json(*verb, "rf1")
    assert r.returncode == 0 and data[0]["ok"] and key in data[0], (r.stderr, data)
    if key == "power":
        assert data[0]["power"] == lab.power(1).lower(), data
    log = [(a["method"], a["path"], a["auth"]) for a in lab.access_log(1)]
    assert log == [("GET", "/redfish/v1", "none"),
                   ("GET", "/redfish/v1/Systems?$expand=.($levels=1)", "basic")], log
    assert lab.state(1)["sessions"]["created"] == 0


def test_a_bmc_without_basic_gets_a_session(rf, lab):
    """rf7 takes sessions only (its 401 offers no Basic): one refused read,
    then the login, the read again, and the logout; the same components."""
    assert firmware(rf, lab, 7, sessions=1) == firmware(rf, lab, 1)
    log = [(a["method"], a["path"].split("?")[0], a["auth"], a["status"])
           for a in lab.access_log(7)]
    assert [x[:3] for x in log[:4]] == [
        ("GET", "/redfish/v1", "none"), ("GET", "/redfish/v1/UpdateService", "bad-basic"),
        ("POST", SESSIONS, "none"), ("GET", "/redfish/v1/UpdateService", "session")], log
    assert log[1][3] == 401 and log[4][0] == "DELETE" and len(log) == 5, log


def test_a_wrong_password_is_tried_once(rf, lab):
    """A 401 that offers Basic refused the password: an auth error after one
    failed attempt, no login with the same password on top (lockouts count
    failures)."""
    r, data = rf.json("firmware", "rf1", env={"GPUFLEET_CREDENTIALS": wrong_creds(rf)})
    assert data[0]["ok"] is False and data[0]["error"]["kind"] == "auth", data
    log = [(a["method"], a["auth"]) for a in lab.access_log(1)]
    assert log == [("GET", "none"), ("GET", "bad-basic")], log
    assert lab.state(1)["sessions"]["created"] == 0


def test_a_profile_can_ask_for_sessions(rf, lab):
    """redfish_auth = session: firmware logs in (and out) as every other verb does."""
    with open(rf.creds) as f:
        text = f.read()
    rf.write_creds(text + "redfish_auth = session\n")
    assert firmware(rf, lab, 1, sessions=1)
    log = requests(lab, 1)
    assert log[1] == ("POST", SESSIONS) and log[-1][0] == "DELETE" and len(log) == 4, log
    assert {a["auth"] for a in lab.access_log(1)[2:-1]} == {"session"}
    # A word it does not know is refused before any BMC is asked.
    lab.clear(1)
    rf.write_creds(text + "redfish_auth = basic\n")
    r = rf.run("firmware", "rf1")
    assert r.returncode == 2 and "redfish_auth 'basic' is not session or auto" in r.stderr, r
    assert lab.access_log(1) == []


def test_without_expand_a_session(rf, lab):
    """No $expand at rf8: the inventory is read member by member, so a
    session (one login) costs less than a password check per request."""
    assert firmware(rf, lab, 8, sessions=1) == firmware(rf, lab, 1)
    log = requests(lab, 8)
    assert log[1] == ("POST", SESSIONS) and log[-1][0] == "DELETE", log
    assert {a["auth"] for a in lab.access_log(8)[2:-1]} == {"session"}


def test_firmware_without_select_takes_one_more(rf, lab):
    """Where the root does not offer $select: the UpdateService, then its
    expanded inventory; the same components."""
    assert firmware(rf, lab, 2) == firmware(rf, lab, 1)
    gets = [p for m, p in requests(lab, 2) if m == "GET"]
    assert gets == ["/redfish/v1", "/redfish/v1/UpdateService",
                    FW_INV + "?$expand=.($levels=1)"], gets


def test_firmware_one_level_expand(rf, lab):
    """HPE expands one level only: no $levels=2 is asked for."""
    firmware(rf, lab, 3)
    gets = [p for m, p in requests(lab, 3) if m == "GET"]
    assert not any("$select" in p or "levels=2" in p for p in gets), gets
    assert len(gets) == 3, gets


def test_firmware_deep_expand_that_pages(rf, lab):
    """An inventory that comes expanded inside the UpdateService but paged:
    the next pages, expanded, never a member one by one."""
    assert firmware(rf, lab, 4) == firmware(rf, lab, 1)
    gets = [p for m, p in requests(lab, 4) if m == "GET"]
    assert sum("$skip=" in p and "$expand=" in p for p in gets) == 6, gets
    assert not any(p.startswith(FW_INV + "/") for p in gets), gets


def test_sweep_reads_each_resource_once(rf, lab):
    r = rf.run("sweep", "--no-ssh", "--quiet", "rf1")
    assert r.returncode == 0, r.stderr
    log = requests(lab, 1)
    twice = [k for k, n in collections.Counter(log).items() if n > 1]
    assert not twice, twice
    assert sum(1 for m, p in log if (m, p) == ("POST", SESSIONS)) == 1
    gets = [p for m, p in log if m == "GET"]
    # Systems, Chassis, Managers and LogServices come whole, one request each.
    for coll in ("/redfish/v1/Systems", "/redfish/v1/Chassis", "/redfish/v1/Managers",
                 "/redfish/v1/Managers/BMC/LogServices"):
        assert coll + "?$expand=.($levels=1)" in gets, (coll, gets)
    member = [p for p in gets if p.count("/") == 4 and "?" not in p
              and p.rsplit("/", 1)[0] in ("/redfish/v1/Systems", "/redfish/v1/Chassis",
                                          "/redfish/v1/Managers")]
    # The main System (BIOS) and the main Chassis (hardware), no other member alone.
    assert sorted(member) == ["/redfish/v1/Chassis/DGX", "/redfish/v1/Systems/DGX"], member
    assert lab.state(1)["sessions"]["open"] == 0


@pytest.mark.parametrize("args", [["--format", "table", "hardware"],
                                  ["--format", "ndjson", "hardware"],
                                  ["--format", "table", "sweep", "--no-ssh"]])
def test_results_are_out_before_the_logout(rf, lab, args):
    """The logout is the last round trip and nothing printed waits for it:
    the output is read before the BMC has finished deleting the session
    (rf6 takes 0.5 s over it), and the session is deleted all the same."""
    p = subprocess.Popen([GPUFLEET, "--no-progress", *args, "rf6"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=rf.env())
    try:
        first = p.stdout.readline()
        seen = time.time()
        rest = p.stdout.read()  # the rest of what readline() buffered too
        p.wait(timeout=60)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert "rf6" in first + rest, (first, rest)
    st = lab.state(6)["sessions"]
    assert st["created"] == 1 and st["open"] == 0, st
    deleted = lab.events(6, "session-delete")
    assert len(deleted) == 1, deleted
    assert seen < deleted[0]["t"], (seen, deleted[0]["t"])
    assert requests(lab, 6)[-1][0] == "DELETE"


@pytest.mark.parametrize("fanout", ["1", "64"])
def test_every_session_held_for_later_is_deleted(rf, lab, fanout):
    """Sessions left open until the results are out are all deleted, also
    past the number held (one per node at --fanout 1: the rest close at once)."""
    nodes = [1, 2, 3, 4, 6]
    r = rf.run("--format", "json", "--fanout", fanout, "hardware", *[f"rf{i}" for i in nodes])
    assert r.returncode == 0, r.stderr
    for i in nodes:
        st = lab.state(i)["sessions"]
        assert st["created"] == 1 and st["open"] == 0, (i, st)


def test_emulator_answers_one_request_at_a_time(lab):
    """Node 5 (one_at_a_time, 0.2 s a request): three requests sent at once on
    three connections are answered one after another."""
    ctx = ssl.create_default_context(cafile=lab.cacert)
    lab.clear(5)
    go = threading.Barrier(3)

    def get():
        c = http.client.HTTPSConnection(lab.addr(5), lab.port, context=ctx, timeout=30)
        try:
            c.connect()
            go.wait()
            c.request("GET", "/redfish/v1")
            c.getresponse().read()
        finally:
            c.close()
    threads = [threading.Thread(target=get) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times = sorted(a["t"] for a in lab.access_log(5))
    assert len(times) == 3
    # Each answer is logged once its 0.2 s are up, after the one before it.
    assert all(b - a >= 0.19 for a, b in zip(times, times[1:])), times
    assert lab.state(5)["modes"]["one_at_a_time"] is True
