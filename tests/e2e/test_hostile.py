"""Hostile and broken Redfish BMCs cost their own node only (issue 10), through
the real binary against the Redfish emulator (tests/lab/redfish_emu.py): a
walk that misses members after a tolerated 404 is never ok
with less, nor stored as complete."""
import os
import sys
import tempfile

import pytest

from conftest import PASSWORD, TOP, loopback, register_redfish

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
# Nodes 1-5: one good BMC per dialect. Node 6: a DGX whose walks meet faults.
# Node 7: a Supermicro whose reset types are an array nested 1,500 deep.
VENDORS = ["supermicro", "dgx", "lenovo", "dell", "hpe", "dgx", "supermicro"]
FAULTY = 6
DEEP = 7
FW_INV = "/redfish/v1/UpdateService/FirmwareInventory"
# What a member that does not answer well does, and how the node must then fail.
FAULTS = {"hang": {"timeout"}, "close": {"connect", "protocol"}, "garbage": {"protocol"},
          500: {"protocol"}}


@pytest.fixture(scope="module")
def lab():
    with tempfile.TemporaryDirectory(prefix="gf-hostile-") as workdir, \
            RedfishLab(workdir, prefix=PREFIX, count=len(VENDORS), vendors=VENDORS,
                       user="admin", password=PASSWORD,
                       overrides={DEEP: {"deep_reset_values": 1500}}) as lab:
        yield lab


@pytest.fixture
def rf(gf, lab):
    """The lab's nodes registered as rf1..rf6, with the lab CA; faults cleared after each test."""
    for i in lab.indices():
        lab.clear(i)
    register_redfish(gf, lab, lambda i: "good" if i <= 5 else "odd")
    yield gf
    for i in lab.indices():
        lab.override(i, faults={})


def members(lab, i, uri):
    return [m["@odata.id"] for m in lab.resource(i, uri)["Members"]]


def plant(lab, i, uri, fault):
    """The first member of collection @uri answers 404, the second @fault."""
    ids = members(lab, i, uri)
    lab.override(i, faults={ids[0]: 404, ids[1]: fault})
    return ids


def failed_on_fault(r, data, fault):
    assert len(data) == 1, (r.stderr, data)
    obj = data[0]
    assert obj["ok"] is False and r.returncode == 1, (
        f"ok with a member that answered {fault!r} left out", r.stderr,
        {k: (len(v) if isinstance(v, list) else v) for k, v in obj.items()})
    assert obj["error"]["kind"] in FAULTS[fault], obj["error"]
    return obj


# ---- point 7: errors are never swallowed -----------------------------------

@pytest.mark.parametrize("fault", list(FAULTS), ids=str)
def test_firmware_after_a_404_member_never_ok_with_less(rf, lab, fault):
    plant(lab, FAULTY, FW_INV, fault)
    r, data = rf.json("firmware", f"rf{FAULTY}", "--timeout", "4", "--retries", "0")
    failed_on_fault(r, data, fault)


def test_sensors_after_a_404_member_never_ok_with_less(rf, lab):
    plant(lab, FAULTY, "/redfish/v1/Chassis/DGX/Sensors", "garbage")
    r, data = rf.json("sensors", f"rf{FAULTY}", "--timeout", "20", "--retries", "0")
    failed_on_fault(r, data, "garbage")


def test_hardware_after_a_404_member_never_ok_with_less(rf, lab):
    plant(lab, FAULTY, "/redfish/v1/Systems/HGX_Baseboard_0/Processors", "hang")
    r, data = rf.json("hardware", f"rf{FAULTY}", "--timeout", "4", "--retries", "0")
    failed_on_fault(r, data, "hang")


def test_a_404_member_alone_is_tolerated(rf, lab):
    ids = members(lab, FAULTY, FW_INV)
    lab.override(FAULTY, faults={ids[0]: 404})
    r, data = rf.json("firmware", f"rf{FAULTY}")
    assert r.returncode == 0 and data[0]["ok"] is True, (r.stderr, data)
    assert len(data[0]["components"]) == len(ids) - 1
    assert ids[0].rsplit("/", 1)[1] not in {c["id"] for c in data[0]["components"]}


def test_sweep_does_not_store_a_truncated_walk_as_complete(rf, lab):
    plant(lab, FAULTY, FW_INV, "garbage")
    r, data = rf.json("sweep", f"rf{FAULTY}", "rf2", "--timeout", "30", "--retries", "0")
    assert r.returncode == 1, (r.stderr, data)
    nodes = {o["node"]: o for o in data}
    assert nodes["rf2"]["status"] == "ok", nodes["rf2"]
    bad = nodes[f"rf{FAULTY}"]
    assert bad["status"] == "partial" and bad["ok"] is False, bad
    assert ("firmware", "protocol") in [(e["op"], e["kind"]) for e in bad["errors"]], bad
    # What was stored: partial, the firmware not collected, no BMC component from a half walk.
    r, show = rf.json("inventory", "show", f"rf{FAULTY}")
    assert r.returncode == 0, r.stderr
    stored = show[0]
    assert stored["status"] == "partial", stored["status"]
    assert stored["collected"]["firmware"] is False, stored["collected"]
    # The BIOS settings are a read of their own (the Bios resource, not the walk):
    # kept, and said to be collected, so drift compares them and nothing else.
    walked = [c for c in stored["components"]
              if c["source"] == "redfish" and not c["key"].startswith("bios.")]
    assert not walked, walked
    settings = [c for c in stored["components"] if c["key"].startswith("bios.")]
    assert stored["collected"]["bios"] is True and settings, stored["collected"]
    assert {c["kind"] for c in settings} == {"setting"}, settings[:3]


# ---- point 9: a BMC's own judgement is not overruled by its bad data ----------

DGX = 2
ENERGY = "ENERGY_GB_SXM2"   # an energy counter at 1.9 MJ, thresholds 272850, Health OK
TEMP = "TEMP_AMBIENT"       # 22 C, UpperCaution 37, UpperCritical 40, UpperFatal 42


def dgx_sensors(rf):
    r, data = rf.json("sensors", f"rf{DGX}")
    assert r.returncode == 0 and data[0]["ok"] is True, (r.stderr, data)
    return {s["name"]: s for s in data[0]["sensors"]}


def set_sensor(lab, name, **spec):
    lab.override(DGX, sensors={name: spec})


def test_healthy_dgx_has_no_critical_sensor(rf, lab):
    sensors = dgx_sensors(rf)
    assert [n for n, s in sensors.items() if s["state"] in ("critical", "warning")] == []
    # The counters the BMC carries thresholds for: their own judgement (OK) rules, the
    # crossing is a note.
    energy = sensors[ENERGY]
    assert energy["type"] == "energy" and energy["reading"] > 272850, energy
    assert energy["state"] == "nominal" and "upper_critical" in energy["note"], energy
    assert "note" not in sensors[TEMP], sensors[TEMP]
    r, data = rf.json("sensors", "--state", "critical", "@good")
    assert r.returncode == 0, r.stderr
    assert {o["node"]: len(o["sensors"]) for o in data} == {f"rf{i}": 0 for i in range(1, 6)}


def test_the_bmc_health_decides_where_it_gives_one(rf, lab):
    try:
        set_sensor(lab, TEMP, reading=30, health="Critical")
        assert dgx_sensors(rf)[TEMP]["state"] == "critical"
        set_sensor(lab, TEMP, reading=30, health="Warning")
        assert dgx_sensors(rf)[TEMP]["state"] == "warning"
        # Past every threshold, yet the BMC says OK: nominal, with the crossing as a note.
        set_sensor(lab, TEMP, reading=45, health="OK")
        hot = dgx_sensors(rf)[TEMP]
        assert hot["state"] == "nominal" and "upper_non_recoverable" in hot["note"], hot
        # No Health at all: the thresholds decide.
        set_sensor(lab, TEMP, reading=45, health=None)
        assert dgx_sensors(rf)[TEMP]["state"] == "critical"
        set_sensor(lab, TEMP, reading=38, health=None)
        assert dgx_sensors(rf)[TEMP]["state"] == "warning"
        # ... but never for a counter.
        set_sensor(lab, ENERGY, health=None)
        energy = dgx_sensors(rf)[ENERGY]
        assert energy["state"] == "nominal" and "upper_critical" in energy["note"], energy
        set_sensor(lab, ENERGY, health="Critical")
        assert dgx_sensors(rf)[ENERGY]["state"] == "critical"
    finally:
        set_sensor(lab, TEMP, reading=22, health="OK")
        set_sensor(lab, ENERGY, health="OK")


def test_sweep_counts_no_critical_sensor_on_a_healthy_dgx(rf, lab):
    r, data = rf.json("sweep", f"rf{DGX}", "--timeout", "30")
    assert r.returncode == 0, (r.stderr, data)
    assert data[0]["sensors"]["critical"] == 0 and data[0]["sensors"]["warning"] == 0, data[0]
    assert rf.sql("SELECT node, status, sens_warning, sens_critical FROM sweep_nodes") == [
        {"node": f"rf{DGX}", "status": "ok", "sens_warning": 0, "sens_critical": 0}]


# ---- point 4: no crash ----------------------------------------------------

def resets(lab, i):
    return [(e["type"], e["from"], e["to"]) for e in lab.events(i, kind="reset")]


def by_node(r, data):
    assert r.returncode >= 0, f"gpufleet died of signal {-r.returncode}: {r.stderr[-2000:]}"
    return {o["node"]: o for o in data}


def test_deep_json_costs_its_node_only(rf, lab):
    good = [f"rf{i}" for i in range(1, 6)]
    for i in range(1, 6):
        lab.set_power(i, "On")
    r, data = rf.json("power", "cycle", "--yes", "@good", f"rf{DEEP}", "--timeout", "30")
    nodes = by_node(r, data)
    assert r.returncode == 1, r.stderr
    for name in good:
        assert nodes[name]["ok"] is True, nodes[name]
    for i in range(1, 6):
        assert resets(lab, i), f"rf{i} saw no reset"
    deep = nodes[f"rf{DEEP}"]
    assert deep["ok"] is False and deep["error"]["kind"] == "protocol", deep
    assert "[[" not in deep["error"]["message"] and len(deep["error"]["message"]) < 300, deep
    assert resets(lab, DEEP) == []
    # Whatever reads the System itself still works: the PowerState is there to read.
    for verb in (["power", "status"], ["boot", "status"], ["hardware"]):
        r, data = rf.json(*verb, "@good", f"rf{DEEP}", "--timeout", "30")
        nodes = by_node(r, data)
        assert r.returncode == 0 and all(o["ok"] for o in nodes.values()), (verb, r.stderr, data)


# ---- what a BMC says reaches a terminal or a scraper as text only ---------------

HOSTILE_MESSAGE = "fan\x1b[2J\x1b]0;owned\x07 ok\x0bgone\x7f\u0085\u009b31m\r\n# TYPE fake gauge\nfake 1"


def raw_controls(text):
    """Characters of @text that a terminal or a text-format parser would act on:
    C0 controls but the line feed, DEL, and C1 controls."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]


@pytest.mark.parametrize("fmt", ["prometheus", "table"])
def test_a_bmc_error_message_with_controls_is_printed_escaped(rf, lab, fmt):
    """The BMC's own message of a failed request is part of the node's error: in a
    table and in the Prometheus text's comment lines, its control characters come
    out escaped, and no line of it can pose as a sample."""
    lab.override(FAULTY, faults={"/redfish/v1/Chassis/DGX/Sensors": 500},
                 fault_message=HOSTILE_MESSAGE)
    try:
        r = rf.run("--format", fmt, "sensors", f"rf{FAULTY}", "--timeout", "20", "--retries", "0")
    finally:
        lab.override(FAULTY, fault_message=None)
    assert r.returncode == 1, r.stderr
    assert "owned" in r.stdout, r.stdout                # the message is shown...
    assert raw_controls(r.stdout) == [], r.stdout       # ...as text only
    assert raw_controls(r.stderr) == [], r.stderr
    assert "fake 1" not in r.stdout.splitlines()
    if fmt == "prometheus":
        (line,) = [x for x in r.stdout.splitlines() if "owned" in x]
        assert line.startswith(f"# gpufleet: node rf{FAULTY} failed: protocol: "), line
        assert not any(x.startswith("fake") or x == "# TYPE fake gauge" for x in r.stdout.splitlines())
