"""What a BMC says about a node's health, as it serves it (issue 21): every
sensor by where it is served (same-name sensors kept apart, units kept as
given), the HGX management controller's firmware under one key whatever
its generation calls it, and a factory-state BMC that wants its password
changed reported once as an auth error. Against the Redfish emulator with
the extras of tests/lab/redfish_health.py; each value is compared with what
the emulator serves."""
import os
import shlex
import subprocess
import sys

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register_redfish, started_lab

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from labutil import LabError  # noqa: E402
from redfish_emu import RedfishLab  # noqa: E402
import redfish_health  # noqa: E402

PREFIX = loopback(__name__, "redfish")
SLOW = "60"  # a sweep's per-node deadline: two CPUs share the labs and the tool
VENDORS = ["supermicro-sys-821ge-tnhr", "nvidia-dgx-h100", "lenovo-sr670-v2", "dell-r750",
           "hpe-dl385-gen10plus-v2"]
# Nodes 1-5: one per dialect with the extra sensors. 6-8: DGX with the HMC's
# firmware as each generation names it. 9: a BMC in factory state. 10: a
# leaking tray (aggregate and local detectors, a leak rope past its
# threshold, every one with Health OK); 11: a dry one. 12: a DGX whose GPU 1
# the BMC calls critical (ECC, pending row remapping, NVLinks down), GPU 2
# healthy with its metrics served.
HMC = {6: "HMC_Firmware", 7: "HGX_FW_HMC_0", 8: "HGX_FW_BMC_0"}
OVERRIDES = {i: {"sensor_extras": True} for i in range(1, 6)}
OVERRIDES.update({i: {"vendor": "nvidia-dgx-h100", "hmc_firmware": {name: f"24.0{i}.1"}}
                  for i, name in HMC.items()})
OVERRIDES[9] = {"vendor": "dell-r750", "password_change_required": True}
LEAKS = {"TrayLeak": "Critical", "GPU1_ColdPlate": "Critical", "GPU2_ColdPlate": "Warning",
         "GPU3_ColdPlate": "OK"}
OVERRIDES[10] = {"vendor": "supermicro-sys-821ge-tnhr", "leak_detectors": LEAKS,
                 "leak_voltage": 2.5}
OVERRIDES[11] = {"vendor": "lenovo-sr670-v2", "leak_voltage": 0.2,
                 "leak_detectors": {"TrayLeak": "OK", "GPU1_ColdPlate": "OK"}}
GPU_HEALTH = {"1": {"health": "Critical", "ecc_corrected": 12, "ecc_uncorrected": 3,
                    "remap_pending": True, "remap_corrected": 2, "remap_uncorrected": 1,
                    "nvlinks_down": 2,
                    "nvlink_errors": {"2": {"DataCRCCount": 7, "FlitCRCCount": 11,
                                            "RecoveryCount": 1, "ReplayCount": 4096},
                                      "17": {"TrainingError": True, "RuntimeError": True}}},
              "2": {"nvlink_errors": {"0": {"ReplayCount": 3}}}}
OVERRIDES[12] = {"vendor": "nvidia-dgx-h100", "gpu_health": GPU_HEALTH}


@pytest.fixture(scope="module")
def lab():
    yield from started_lab("gf-health-", lambda d: RedfishLab(
        d, prefix=PREFIX, count=12, user="admin", password=PASSWORD, vendors=VENDORS,
        overrides=OVERRIDES))


@pytest.fixture
def rf(gf, lab):
    """The lab's nodes as rf1..rf12, the lab CA in the credentials, access logs cleared."""
    for i in lab.indices():
        lab.clear(i)
    register_redfish(gf, lab)
    return gf


def sensors_of(gf, node):
    r, data = gf.json("sensors", node)
    assert r.returncode == 0 and data[0]["ok"], (r.stderr, data)
    return data[0]["sensors"]


def served_sensors(lab, i):
    """Every Sensors member of every chassis, as the emulator holds it: {uri: resource}."""
    out = {}
    for m in lab.resource(i, "/redfish/v1/Chassis")["Members"]:
        ch = lab.resource(i, m["@odata.id"])
        coll = (ch.get("Sensors") or {}).get("@odata.id")
        if not coll:
            continue
        for s in lab.resource(i, coll)["Members"]:
            out[s["@odata.id"]] = lab.resource(i, s["@odata.id"])
    return out


@pytest.mark.parametrize("i", range(1, 6))
def test_same_name_sensors_are_kept_apart(rf, lab, i):
    got = sensors_of(rf, f"rf{i}")
    chassis = lab.resource(i, "/redfish/v1/Chassis")["Members"][0]["@odata.id"]
    chassis_id = lab.resource(i, chassis)["Id"]
    by_id = {s["id"]: s for s in got}
    # Every sensor says where it is served, and no two are the same.
    assert all(s["chassis"] and s["id"] for s in got)
    assert len({(s["chassis"], s["id"]) for s in got}) == len(got)
    for sid, name, rtype, units, reading, health in redfish_health.extras():
        uri = f"{chassis}/Sensors/{sid}"
        served = lab.resource(i, uri)
        assert served["Reading"] == reading and served["Name"] == name
        s = by_id[uri]
        assert s["chassis"] == chassis_id
        assert s["name"] == name
        assert s["reading"] == reading, s
        assert s["state"] == "nominal"
    slots = [s for s in got if s["name"] == "Slot Card Temp"]
    assert sorted(s["reading"] for s in slots) == [41.0, 43.5, 47.0]
    assert all(s["unit"] == "C" and s["type"] == "temperature" for s in slots)
    assert sorted(s["reading"] for s in got if s["name"] == "PSU Input Power") == [799.0, 812.0]


def test_sensors_table_on_a_terminal_names_the_chassis(rf, lab):
    """DGX serves sensors of one name in two chassis (CPUBaseboard and DGX):
    on a terminal 120 columns wide each row names its chassis, every line fits."""
    cmd = shlex.join([GPUFLEET, "sensors", "rf6"])
    p = subprocess.run(["script", "-qec", f"stty cols 120 && exec {cmd}", "/dev/null"],
                       env=rf.env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr)
    lines = p.stdout.replace("\r\n", "\n").splitlines()
    assert lines and max(len(ln) for ln in lines) <= 120
    head = lines[0].split()
    assert head[:3] == ["NODE", "CHASSIS", "SENSOR"], lines[0]
    at = [lines[0].index(h) for h in ("CHASSIS", "SENSOR", "TYPE")]
    rows = [(ln[at[0]:at[1]].strip(), ln[at[1]:at[2]].strip())
            for ln in lines[1:] if ln.startswith("rf6 ")]
    served = {}
    for m in lab.resource(6, "/redfish/v1/Chassis")["Members"]:
        ch = lab.resource(6, m["@odata.id"])
        coll = (ch.get("Sensors") or {}).get("@odata.id")
        try:
            members = lab.resource(6, coll)["Members"] if coll else []
        except LabError:  # linked, not served (the capture lacks it): gpufleet skips it too
            members = []
        for s in members:
            served.setdefault(lab.resource(6, s["@odata.id"])["Name"], []).append(ch["Id"])
    shared = [name for name, where in served.items() if len(set(where)) > 1]
    assert "TEMP_AMBIENT" in shared
    for name in shared:
        assert sorted(c for c, n in rows if n == name) == sorted(served[name]), name


@pytest.mark.parametrize("i", range(1, 6))
def test_units_as_served(rf, lab, i):
    got = {s["name"]: s for s in sensors_of(rf, f"rf{i}")}
    heat, air, press = got["Coolant Heat Flow"], got["Inlet Airflow"], got["Rack Pressure"]
    assert (heat["reading"], heat["unit"], heat["type"]) == (3.25, "kW", "other")
    assert (air["reading"], air["unit"], air["type"]) == (210.0, "CFM", "airflow")
    assert (press["reading"], press["unit"], press["type"]) == (101325.0, "Pa", "pressure")


def test_legacy_and_sensors_merged_only_where_the_same(rf, lab):
    """Dell serves Thermal/Power and the Sensors collection: a sensor both
    describe is one; two Sensors sharing a name stay two."""
    got = sensors_of(rf, "rf4")
    served = served_sensors(lab, 4)
    names = [r["Name"] for r in served.values()]
    for name in ("CPU1 Temp", "System Board Inlet Temp"):
        assert names.count(name) == 1
        assert [s["name"] for s in got].count(name) == 1
    dup = "InputPowerSensor"
    assert names.count(dup) == 2
    mine = [s for s in got if s["name"] == dup]
    assert sorted(s["id"] for s in mine) == sorted(u for u, r in served.items()
                                                    if r["Name"] == dup)
    assert sorted(s["reading"] for s in mine) == sorted(r["Reading"] for r in served.values()
                                                        if r["Name"] == dup)


def test_hmc_firmware_is_one_key_across_generations(rf, lab):
    for i, name in HMC.items():
        r, data = rf.json("firmware", f"rf{i}")
        assert r.returncode == 0, r.stderr
        comps = data[0]["components"]
        hmc = [c for c in comps if c["id"] == name]
        assert len(hmc) == 1, comps
        assert hmc[0]["key"] == "hgx.bmc", hmc
        assert hmc[0]["kind"] == "baseboard", hmc
        assert hmc[0]["version"] == lab.resource(
            i, f"/redfish/v1/UpdateService/FirmwareInventory/{name}")["Version"]


def test_password_change_required_is_one_auth_error(rf, lab):
    r, data = rf.json("sensors", "rf9")
    assert r.returncode == 1
    err = data[0]["error"]
    assert err["kind"] == "auth", err
    assert "PasswordChangeRequired" in err["message"] or "password" in err["message"]
    assert "change" in err["message"]
    # Once: the first refused read ends the node; nothing more was asked.
    log = lab.access_log(9)
    refused = [e for e in log if e["status"] == 403]
    assert len(refused) == 1, log
    assert r.stderr.count("rf9") <= 1, r.stderr


def test_password_change_required_stops_a_sweep_at_once(rf, lab):
    lab.clear(9)
    r, data = rf.json("sweep", "rf9", "--timeout", SLOW)
    assert r.returncode == 1, r.stderr
    errs = data[0]["errors"]
    assert [e["kind"] for e in errs] == ["auth"], errs
    assert "PasswordChangeRequired" in errs[0]["message"]
    log = lab.access_log(9)
    assert len([e for e in log if e["status"] == 403]) == 1, log


def leak_detectors_served(lab, i):
    ch = lab.resource(i, "/redfish/v1/Chassis")["Members"][0]["@odata.id"]
    ts = lab.resource(i, lab.resource(i, ch)["ThermalSubsystem"]["@odata.id"])
    ld = lab.resource(i, ts["LeakDetection"]["@odata.id"])
    coll = lab.resource(i, ld["LeakDetectors"]["@odata.id"])
    return lab.resource(i, ch)["Id"], [lab.resource(i, m["@odata.id"]) for m in coll["Members"]]


@pytest.mark.parametrize("i", [10, 11])
def test_leak_detectors_read_by_detector_state(rf, lab, i):
    r, data = rf.json("sensors", f"rf{i}")
    assert r.returncode == 0, r.stderr
    got = {s["id"]: s for s in data[0]["sensors"] if s["type"] == "leak"}
    chassis, served = leak_detectors_served(lab, i)
    assert served and all(d["Status"]["Health"] == "OK" for d in served)
    for d in served:
        s = got.pop(d["@odata.id"])
        assert s["chassis"] == chassis
        assert s["name"] == d["Name"]
        want = {"OK": "nominal", "Warning": "warning", "Critical": "critical"}[d["DetectorState"]]
        assert s["state"] == want, (s, d)
        assert s["state_text"].startswith(f"detector {d['DetectorState']}")
    # The rope: a voltage past its thresholds, with Health OK, is the leak.
    rope = got.pop(f"{lab.resource(i, '/redfish/v1/Chassis')['Members'][0]['@odata.id']}"
                   f"/Sensors/{redfish_health.LEAK_ROPE}")
    served_rope = lab.resource(i, rope["id"])
    assert rope["reading"] == served_rope["Reading"]
    assert rope["state"] == ("critical" if served_rope["Reading"] > redfish_health.LEAK_ROPE_CRITICAL
                             else "nominal")
    assert got == {}
    # Aggregate, local detectors and the rope of one tray: one leak.
    assert data[0]["leaks"] == (1 if i == 10 else 0)


def test_state_critical_and_sweep_show_the_leaking_node(rf, lab):
    r, data = rf.json("sensors", "--state", "critical", "rf10", "rf11")
    assert r.returncode == 0, r.stderr
    by = {o["node"]: o for o in data}
    crit = {s["name"] for s in by["rf10"]["sensors"] if s["type"] == "leak"}
    assert crit == {"TrayLeak", "GPU1 ColdPlate", redfish_health.LEAK_ROPE_NAME}
    assert not [s for s in by["rf11"]["sensors"] if s["type"] == "leak"]
    r, data = rf.json("sweep", "rf10", "rf11", "--timeout", SLOW)
    assert r.returncode == 0, r.stderr
    by = {o["node"]: o for o in data}
    assert by["rf10"]["sensors"]["critical"] >= 3
    assert by["rf10"]["sensors"]["warning"] >= 1
    assert by["rf11"]["sensors"]["critical"] == 0


def test_leak_state_per_detector_in_prometheus(rf, lab):
    r = rf.run("sensors", "--format", "prometheus", "rf10")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines()
             if ln.startswith("gpufleet_sensor_state{") and 'type="leak"' in ln]
    _, served = leak_detectors_served(lab, 10)
    for d in served:
        want = {"OK": 0, "Warning": 1, "Critical": 2}[d["DetectorState"]]
        mine = [ln for ln in lines if f'sensor="{d["Name"]}"' in ln]
        assert len(mine) == 1 and mine[0].endswith(f" {want}"), (d, lines)


def test_metrics_export_leak_state_per_detector_from_the_sweep(rf, lab):
    """A sweep stores each leak detector; metrics exports them from the store,
    one sample per detector, its state as the BMC serves it."""
    r, data = rf.json("sweep", "rf10", "rf11", "--timeout", SLOW)
    assert r.returncode == 0, r.stderr
    swept = {o["node"]: {d["id"]: d for d in o["leaks"]} for o in data}
    r = rf.run("metrics", "rf10", "rf11")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("gpufleet_leak_state{")]
    code = {"OK": 0, "Warning": 1, "Critical": 2}
    for i in (10, 11):
        node = f"rf{i}"
        chassis, served = leak_detectors_served(lab, i)
        main = lab.resource(i, "/redfish/v1/Chassis")["Members"][0]["@odata.id"]
        rope = lab.resource(i, f"{main}/Sensors/{redfish_health.LEAK_ROPE}")
        want = {d["@odata.id"]: (d["Name"], code[d["DetectorState"]]) for d in served}
        want[rope["@odata.id"]] = (rope["Name"],
                                   2 if rope["Reading"] > redfish_health.LEAK_ROPE_CRITICAL
                                   else 1 if rope["Reading"] > redfish_health.LEAK_ROPE_CAUTION
                                   else 0)
        mine = [ln for ln in lines if ln.startswith(f'gpufleet_leak_state{{node="{node}",')]
        assert len(mine) == len(want), (node, mine)
        for uri, (name, state) in want.items():
            sample = (f'gpufleet_leak_state{{node="{node}",chassis="{chassis}",id="{uri}",'
                      f'sensor="{name}"}} {state}')
            assert sample in mine, (sample, mine)
            # What the sweep printed is what was stored.
            assert swept[node][uri]["chassis"] == chassis
            assert swept[node][uri]["name"] == name
            assert swept[node][uri]["state"] == ["nominal", "warning", "critical"][state]
    # inventory show lists each detector of the stored sweep.
    r = rf.run("inventory", "show", "rf10")
    assert r.returncode == 0, r.stderr
    chassis, served = leak_detectors_served(lab, 10)
    for d in served:
        state = {"OK": "nominal", "Warning": "warning", "Critical": "critical"}[d["DetectorState"]]
        assert f"  leak detector {d['Name']} (chassis {chassis}): {state}" in r.stdout, r.stdout


def gpu_health_served(lab, i, n):
    """GPU_SXM_n's health as the emulator serves it, in the shape of bmc_health."""
    sys_uri = "/redfish/v1/Systems/HGX_Baseboard_0"
    proc = lab.resource(i, f"{sys_uri}/Processors/GPU_SXM_{n}")
    mm = lab.resource(i, proc["MemorySummary"]["Metrics"]["@odata.id"])
    mem = lab.resource(i, proc["Links"]["Memory"][0]["@odata.id"])
    remap = lab.resource(i, mem["Metrics"]["@odata.id"])["Oem"]["Nvidia"]["RowRemapping"]
    ports = [lab.resource(i, m["@odata.id"])
             for m in lab.resource(i, proc["Ports"]["@odata.id"])["Members"]]
    errors = [lab.resource(i, p["Metrics"]["@odata.id"])["Oem"]["Nvidia"]["NVLinkErrors"]
              for p in ports]
    return {"health": proc["Status"]["Health"],
            "ecc": {"corrected": mm["LifeTime"]["CorrectableECCErrorCount"],
                    "uncorrected": mm["LifeTime"]["UncorrectableECCErrorCount"]},
            "row_remapping": {"pending": mem["Oem"]["Nvidia"]["RowRemappingPending"],
                              "failed": mem["Oem"]["Nvidia"]["RowRemappingFailed"],
                              "corrected": remap["CorrectableRowRemappingCount"],
                              "uncorrected": remap["UncorrectableRowRemappingCount"]},
            "nvlinks": {"up": sum(p["LinkStatus"] == "LinkUp" for p in ports),
                        "down": sum(p["LinkStatus"] != "LinkUp" for p in ports),
                        "ports": [{"id": p["Id"], "link_status": p["LinkStatus"],
                                   "health": p["Status"]["Health"],
                                   "speed_gbps": p["CurrentSpeedGbps"],
                                   "errors": {"data_crc": e["DataCRCCount"],
                                              "flit_crc": e["FlitCRCCount"],
                                              "recovery": e["RecoveryCount"],
                                              "replay": e["ReplayCount"],
                                              "runtime": e["RuntimeError"],
                                              "training": e["TrainingError"]}}
                                  for p, e in zip(ports, errors)]}}


def test_gpu_health_from_the_bmc_in_hardware_and_inventory(rf, lab):
    r, data = rf.json("hardware", "rf12")
    assert r.returncode == 0, r.stderr
    gpus = {g["index"]: g for g in data[0]["gpus"]}
    assert len(gpus) == 8
    for n in (1, 2):
        assert gpus[n]["bmc_health"] == gpu_health_served(lab, 12, n), gpus[n]
    assert gpus[1]["bmc_health"]["health"] == "Critical"
    assert gpus[1]["bmc_health"]["row_remapping"]["pending"] is True
    links = gpus[1]["bmc_health"]["nvlinks"]
    assert (links["up"], links["down"], len(links["ports"])) == (16, 2, 18)
    # Each port as served, in the BMC's order: the planted counters where planted.
    assert [p["link_status"] for p in links["ports"][:3]] == ["LinkDown", "LinkDown", "LinkUp"]
    assert links["ports"][2]["errors"]["replay"] == 4096
    assert links["ports"][17]["errors"]["training"] is True
    # A GPU whose metrics the BMC does not serve: its health, the rest unknown.
    assert gpus[3]["bmc_health"]["ecc"] == {"corrected": None, "uncorrected": None}
    assert gpus[3]["bmc_health"]["nvlinks"] is None
    # Stored with the sweep, shown again by inventory show.
    r, _ = rf.json("sweep", "rf12", "--timeout", SLOW)
    assert r.returncode == 0, r.stderr
    r, show = rf.json("inventory", "show", "rf12")
    assert r.returncode == 0, r.stderr
    stored = {g["index"]: g for g in show[0]["hardware"]["gpus"]}
    for n in (1, 2, 3):
        assert stored[n]["bmc_health"] == gpus[n]["bmc_health"]
    # The table of inventory show: a line per GPU the BMC describes.
    r = rf.run("inventory", "show", "rf12")
    assert r.returncode == 0, r.stderr
    said = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ", as the BMC says:" in ln}
    assert sorted(said) == [f"gpu{n}" for n in range(1, 9)], r.stdout
    assert said["gpu1"].endswith(f"(serial {stored[1]['serial']}), as the BMC says: health "
                                 "Critical, 3 uncorrected ECC, row remapping pending, "
                                 "NVLinks 16 up 2 down"), said["gpu1"]
    assert said["gpu3"].endswith("health OK"), said["gpu3"]
    # Exported by metrics, per GPU, from the stored sweep.
    r = rf.run("metrics", "rf12")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()

    def metric(name, n, extra=""):
        serial = stored[n]["serial"]
        want = f'{name}{{node="rf12",gpu="{n}",serial="{serial}"{extra}}} '
        found = [ln[len(want):] for ln in lines if ln.startswith(want)]
        assert len(found) == 1, (want, [ln for ln in lines if ln.startswith(name)])
        return float(found[0])

    for n in (1, 2):
        h = gpu_health_served(lab, 12, n)
        code = {"OK": 0, "Warning": 1, "Critical": 2}[h["health"]]
        assert metric("gpufleet_gpu_bmc_health", n) == code
        assert metric("gpufleet_gpu_bmc_ecc_errors", n, ',type="corrected"') == \
            h["ecc"]["corrected"]
        assert metric("gpufleet_gpu_bmc_ecc_errors", n, ',type="uncorrected"') == \
            h["ecc"]["uncorrected"]
        assert metric("gpufleet_gpu_bmc_row_remap_pending", n) == int(h["row_remapping"]["pending"])
        assert metric("gpufleet_gpu_bmc_remapped_rows", n, ',type="uncorrected"') == \
            h["row_remapping"]["uncorrected"]
        assert metric("gpufleet_gpu_bmc_nvlinks", n, ',state="down"') == h["nvlinks"]["down"]
        # Each NVLink port: its state and every error counter, value by value.
        for p in h["nvlinks"]["ports"]:
            port = f',port="{p["id"]}"'
            assert metric("gpufleet_gpu_bmc_nvlink_up", n, port) == \
                (p["link_status"] == "LinkUp")
            for t in ("data_crc", "flit_crc", "recovery", "replay"):
                assert metric("gpufleet_gpu_bmc_nvlink_errors", n, f'{port},type="{t}"') == \
                    p["errors"][t]
            for t in ("runtime", "training"):
                assert metric("gpufleet_gpu_bmc_nvlink_error_flag", n, f'{port},type="{t}"') == \
                    p["errors"][t]
    # A GPU without ports served has no port samples.
    assert not [ln for ln in lines if ln.startswith("gpufleet_gpu_bmc_nvlink_up{")
                and 'gpu="3"' in ln]


def test_gpu_health_table_one_row_per_gpu(rf, lab):
    r = rf.run("hardware", "--gpus", "rf12")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = lines[0].split()
    assert head[:4] == ["NODE", "GPU", "MODEL", "SERIAL"], head
    # Cells by the header's columns: a model name has spaces.
    starts = [lines[0].index(h) for h in head] + [None]
    cells = [{h: ln[starts[k]:starts[k + 1]].strip() for k, h in enumerate(head)}
             for ln in lines[1:] if ln.startswith("rf12")]
    body = {c["GPU"]: c for c in cells}
    assert sorted(body, key=int) == [str(n) for n in range(1, 9)], r.stdout
    for n in (1, 2):
        h = gpu_health_served(lab, 12, n)
        row = body[str(n)]
        assert row["HEALTH"] == h["health"]
        assert row["ECC-UNCORR"] == str(h["ecc"]["uncorrected"])
        assert row["REMAP-PENDING"] == ("yes" if h["row_remapping"]["pending"] else "no")
        assert row["NVLINK-UP"] == str(h["nvlinks"]["up"])
        assert row["NVLINK-DOWN"] == str(h["nvlinks"]["down"])
    assert body["3"]["NVLINK-UP"] == "-" and body["3"]["NVLINK-DOWN"] == "-"
