"""Power control through the real binary against a fleet of ipmi_sim BMCs."""
import json
import os
import time

import pytest

from conftest import loopback, register

LAB_COUNT = 20


def events(lab, i, since=0.0):
    return [e for t, e, _ in lab.chassis_log(i) if t >= since and e not in ("status", "get-boot")]


@pytest.fixture
def reg(gf, fleet):
    register(gf, fleet)
    for i in range(1, fleet.count + 1):
        fleet.set_power(i, "off" if i % 3 == 0 else "on")
    return gf


def test_status_matches_simulators(reg, fleet):
    r, data = reg.json("power", "status", "@all")
    assert r.returncode == 0, r.stderr
    assert len(data) == fleet.count
    for obj in data:
        i = int(obj["node"][3:])
        assert obj["ok"] is True
        assert obj["protocol"] == "ipmi"
        assert obj["bmc"] == fleet.addr(i)
        assert obj["power"] == fleet.power(i), obj


def loaded(stderr):
    """The shared libraries ld.so mapped (LD_DEBUG=files), by soname."""
    return {line.split("file=", 1)[1].split()[0] for line in stderr.splitlines()
            if "file=" in line and ("needed by" in line or "dynamically loaded by" in line)}


def test_an_ipmi_run_maps_neither_curl_nor_ssh(reg, fleet):
    """libcurl, libssl and libssh2 (and the thirty libraries they bring) are
    loaded on first use: an IPMI run never maps them (lib/dl.h)."""
    r, data = reg.json("power", "status", "@all", env={"LD_DEBUG": "files"})
    assert r.returncode == 0, r.stderr
    assert [o["power"] for o in data] == [fleet.power(i) for i in range(1, fleet.count + 1)]
    libs = loaded(r.stderr)
    assert "libfreeipmi.so.17" in libs, r.stderr[:2000]  # LD_DEBUG did list the libraries
    assert not {n for n in libs if n.startswith(("libcurl", "libssh2", "libssl", "libgnutls",
                                                 "libkrb5", "libldap"))}, sorted(libs)


def test_on_off_change_the_simulator(reg, fleet):
    t0 = time.time()
    r, data = reg.json("power", "on", "gpu[03,06]")
    assert r.returncode == 0, r.stderr
    assert [o["action"] for o in data] == ["on", "on"]
    assert fleet.power(3) == "on" and fleet.power(6) == "on"
    assert "on" in events(fleet, 3, t0)
    assert events(fleet, 1, t0) == []  # not a target: untouched

    r, data = reg.json("power", "off", "gpu[01-02]", "--yes", "--wait")
    assert r.returncode == 0, r.stderr
    assert all(o["power"] == "off" for o in data)
    assert fleet.power(1) == "off" and fleet.power(2) == "off"


def test_cycle_reset_soft_nmi_reach_the_bmc(reg, fleet):
    t0 = time.time()
    r = reg.run("power", "cycle", "gpu01", "--wait")
    assert r.returncode == 0, r.stderr
    ev = events(fleet, 1, t0)
    assert ev[:1] == ["off"] and ev[-1] == "on", ev  # off, then on again
    assert fleet.power(1) == "on"

    r = reg.run("power", "reset", "gpu02")
    assert r.returncode == 0, r.stderr
    assert "reset" in events(fleet, 2, t0)

    r = reg.run("power", "soft", "gpu04", "--wait")
    assert r.returncode == 0, r.stderr
    assert "soft" in events(fleet, 4, t0)
    assert fleet.power(4) == "off"

    # ipmi_sim has no diagnostic interrupt: the BMC answers "invalid data
    # field" (0xcc), and that answer is what gpufleet must report.
    r, data = reg.json("power", "nmi", "gpu05")
    assert r.returncode == 1
    assert data[0]["error"]["kind"] == "refused", data
    assert "0xcc" in data[0]["error"]["message"]
    assert fleet.power(5) == "on"


def test_destructive_needs_yes_and_sends_nothing(reg, fleet):
    t0 = time.time()
    for verb in ("off", "cycle", "reset", "soft", "nmi"):
        r = reg.run("power", verb, "gpu[01-05]")
        assert r.returncode == 4, (verb, r.stderr)
        assert "--yes" in r.stderr
    for i in range(1, 6):
        assert events(fleet, i, t0) == []
    assert reg.sql("select count(*) as n from audit")[0]["n"] == 0


def test_dry_run_sends_nothing(reg, fleet):
    t0 = time.time()
    r, data = reg.json("power", "off", "@rackA", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert len(data) == 10 and all(o["dry_run"] is True for o in data)
    for i in range(1, 11):
        assert events(fleet, i, t0) == []


def test_wrong_password_on_one_node(reg, fleet):
    reg.write_creds(open(reg.creds).read() + "\n[wrong]\nbmc_user = admin\nbmc_password = not-it\n"
                    "ipmi_workarounds = opensesspriv\n")
    r = reg.run("nodes", "add", "badpw", "--bmc", fleet.addr(7), "--protocol", "ipmi",
                "--profile", "wrong")
    assert r.returncode == 0, r.stderr
    fleet.set_power(7, "off")
    t0 = time.time()
    r, data = reg.json("power", "on", "gpu[08-09],badpw")
    assert r.returncode == 1
    by = {o["node"]: o for o in data}
    assert by["badpw"]["ok"] is False and by["badpw"]["error"]["kind"] == "auth"
    assert by["gpu08"]["ok"] and by["gpu09"]["ok"]
    assert fleet.power(7) == "off"          # the BMC refused it: nothing happened
    assert events(fleet, 7, t0) == []
    audit = reg.sql("select node, result from audit order by node")
    assert {"node": "badpw", "result": "auth"} in audit


def test_dead_address_times_out_without_delaying_others(gf, fleet):
    dead = loopback("*", "dead") + ".250"
    hosts = f"{fleet.prefix}.[1-3],{dead}"
    t0 = time.monotonic()
    r, data = gf.json("power", "status", "-H", hosts, "--protocol", "ipmi", "--timeout", "2",
                      "--retries", "0")
    took = time.monotonic() - t0
    assert r.returncode == 1
    by = {o["node"]: o for o in data}
    assert by[dead]["error"]["kind"] == "timeout"
    assert sum(o["ok"] for o in data) == 3
    assert took < 4.5, took


def test_cipher_17_refused_then_3(gf, fleet):
    # The simulators have no cipher suite 17: asked for alone it fails...
    gf.write_creds(open(gf.creds).read() + "ipmi_cipher_suite = 17\n")
    r, data = gf.json("power", "status", "-H", fleet.addr(1), "--retries", "0")
    assert r.returncode == 1
    assert data[0]["error"]["kind"] in ("protocol", "refused")
    assert "17" in data[0]["error"]["message"]
    # ...and the default (17, then 3) succeeds.
    gf.write_creds(open(gf.creds).read().replace("ipmi_cipher_suite = 17\n", ""))
    r, data = gf.json("power", "status", "-H", fleet.addr(1))
    assert r.returncode == 0, r.stderr
    assert data[0]["power"] in ("on", "off")


def test_cipher_fallback_is_remembered(gf, fleet):
    memo = os.path.join(gf.workdir, "cache", "gpufleet", "ipmi-cipher", f"{fleet.addr(3)}_0")
    r, data = gf.json("power", "status", "-H", fleet.addr(3), "--protocol", "ipmi")
    assert r.returncode == 0, r.stderr
    with open(memo) as f:
        assert f.read() == "3\n"
    assert os.stat(memo).st_mode & 0o077 == 0
    # A week later 17 is tried again, and the memo renewed after the refusal.
    os.utime(memo, (time.time() - 8 * 86400, time.time() - 8 * 86400))
    r, data = gf.json("power", "status", "-H", fleet.addr(3), "--protocol", "ipmi")
    assert r.returncode == 0, r.stderr
    assert time.time() - os.stat(memo).st_mtime < 60
    # An explicit suite in the profile ignores the memo.
    gf.write_creds(open(gf.creds).read() + "ipmi_cipher_suite = 17\n")
    r, data = gf.json("power", "status", "-H", fleet.addr(3), "--retries", "0")
    assert r.returncode == 1 and "17" in data[0]["error"]["message"]


def test_cipher_0_only_when_asked(gf, fleet):
    gf.write_creds(open(gf.creds).read() + "ipmi_cipher_suite = 0\n")
    r, data = gf.json("power", "status", "-H", fleet.addr(2))
    assert r.returncode == 0, r.stderr  # ipmi_sim accepts 0 when a profile asks for it


def test_staggered_on_visible_in_audit(reg, fleet):
    r = reg.run("power", "on", "gpu[11-16]", "--batch", "2", "--interval", "1")
    assert r.returncode == 0, r.stderr
    rows = reg.sql("select node, time, verb, user, result from audit order by node")
    assert [x["node"] for x in rows] == [f"gpu{i}" for i in range(11, 17)]
    assert all(x["verb"] == "power on" and x["result"] == "ok" and x["user"] for x in rows)
    t = [x["time"] for x in rows]
    assert t[1] - t[0] < 0.5 and t[3] - t[2] < 0.5
    assert t[2] - t[0] >= 0.95 and t[4] - t[2] >= 0.95
    for i in range(11, 17):
        assert fleet.power(i) == "on"


def test_output_formats(reg, fleet):
    for i in range(1, 21):
        fleet.set_power(i, "on")
    fleet.set_power(4, "off")
    r = reg.run("power", "status", "@all", "-C")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "POWER"]
    assert sorted(lines[1:]) == sorted(["gpu[01-03,05-20]  on", "gpu04             off"])

    r = reg.run("power", "status", "gpu[01-03]", "--format", "ndjson")
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert sorted(o["node"] for o in rows) == ["gpu01", "gpu02", "gpu03"]

    r = reg.run("power", "status", "gpu[03-04]", "--format", "csv")
    assert r.stdout.splitlines() == ["node,power,error", "gpu03,on,", "gpu04,off,"]


def test_unknown_node_is_usage_error(reg):
    r = reg.run("power", "status", "gpu[01-02],gpu99,nope")
    assert r.returncode == 2
    assert "gpu99" in r.stderr and "nope" in r.stderr
    assert r.stdout == ""
