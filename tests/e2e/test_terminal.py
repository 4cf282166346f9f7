"""The terminal is safe (issue 10, point 12): strings a hostile BMC sends
(firmware names, a sensor name, a SEL message) reach tables, CSV and stderr
with every control escaped, while JSON keeps them exactly. Through the real
binary against the Redfish emulator (tests/lab/redfish_emu.py)."""
import os
import re
import subprocess
import sys
import tempfile

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
NODE = 1  # a Supermicro
FW = "/redfish/v1/UpdateService/FirmwareInventory/BIOS"
SENSOR = "/redfish/v1/Chassis/1/Sensors/1"
SEL = "/redfish/v1/Systems/1/LogServices/Log1/Entries"

# ESC sequences (set the title, clear the screen), a C1 CSI as UTF-8, DEL, a line feed.
FW_NAME = "BIOS\x1b]0;pwned\x07"
FW_VERSION = "1.4\x1b[2J\u009b31m\x7f"
SENSOR_NAME = "VBAT\x1b[2J\nfake row"
SEL_MESSAGE = "[MEL-0207] \x1b]0;pwned\x07removed\u009b2J\x7f\tend"

# What must never reach a terminal: C0 but line feed, DEL, C1 (as UTF-8 or raw).
RAW = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


@pytest.fixture(scope="module")
def lab():
    with tempfile.TemporaryDirectory(prefix="gf-term-") as workdir, \
            RedfishLab(workdir, prefix=PREFIX, count=1, vendors=["supermicro"],
                       user="admin", password=PASSWORD) as lab:
        fw = lab.resource(NODE, FW)
        fw.update(Name=FW_NAME, Version=FW_VERSION)
        lab.put_resource(NODE, FW, fw)
        sensor = lab.resource(NODE, SENSOR)
        sensor["Name"] = SENSOR_NAME
        lab.put_resource(NODE, SENSOR, sensor)
        coll = lab.resource(NODE, SEL)
        first = coll["Members"][0]
        if "Message" in first:      # entries inline in the collection
            first["Message"] = SEL_MESSAGE
            lab.put_resource(NODE, SEL, coll)
        entry = lab.resource(NODE, first["@odata.id"])
        entry["Message"] = SEL_MESSAGE
        lab.put_resource(NODE, first["@odata.id"], entry)
        yield lab


@pytest.fixture
def rf(gf, lab):
    gf.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n"
                   f"redfish_cacert = {lab.cacert}\n")
    r = gf.run("nodes", "import", "-",
               input=f"name,bmc,protocol\nrf1,{lab.addr(NODE)}:{lab.port},redfish\n")
    assert r.returncode == 0, r.stderr
    return gf


def raw_run(gf, *args):
    """gpufleet's stdout and stderr as bytes: nothing decoded away."""
    return subprocess.run([GPUFLEET, *args], capture_output=True, env=gf.env(), timeout=120)


def assert_safe(r, *expect):
    for name, out in (("stdout", r.stdout), ("stderr", r.stderr)):
        bad = RAW.search(out)
        assert bad is None, f"raw control {bad.group()!r} on {name}: {out[-3000:]!r}"
        out.decode("utf-8")  # and well-formed UTF-8
    for e in expect:
        assert e.encode() in r.stdout, (e, r.stdout[-3000:])


VERB = {"firmware": ["firmware"], "sensors": ["sensors"], "sel": ["sel", "list"]}
SHOWN = {  # the escaped form in table and CSV cells
    "firmware": [r"BIOS\x1b]0;pwned\x07", r"1.4\x1b[2J\u009b31m\x7f"],
    "sensors": [r"VBAT\x1b[2J\nfake row"],
    "sel": [r"[MEL-0207] \x1b]0;pwned\x07removed\u009b2J\x7f\tend"],
}


@pytest.mark.parametrize("verb", list(VERB))
def test_table_and_csv_escape_controls(rf, verb):
    r = raw_run(rf, *VERB[verb], "rf1")
    assert r.returncode == 0, r.stderr
    assert_safe(r, *SHOWN[verb])
    # A line feed inside a cell does not break its row.
    assert not any(line.startswith(b"fake row") for line in r.stdout.splitlines())
    r = raw_run(rf, "--format", "csv", *VERB[verb], "rf1")
    assert r.returncode == 0, r.stderr
    assert_safe(r, *SHOWN[verb])
    assert not any(line.startswith(b"fake row") for line in r.stdout.splitlines())


def test_json_keeps_the_exact_strings(rf):
    r, data = rf.json("firmware", "rf1")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout  # C0 JSON-escaped on the wire
    comps = data[0]["components"]
    assert FW_NAME in [c.get("name") for c in comps], comps
    assert FW_VERSION in [c.get("version") for c in comps], comps
    r, data = rf.json("sensors", "rf1")
    assert SENSOR_NAME in [s["name"] for s in data[0]["sensors"]], data
    r, data = rf.json("sel", "list", "rf1")
    assert SEL_MESSAGE in [e.get("event") for e in data[0]["entries"]], data

