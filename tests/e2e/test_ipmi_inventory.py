"""Firmware, hardware (FRU, GUID) and the boot override over IPMI, through the
real binary against ipmi_sim BMCs whose answers differ per node, checked
against FreeIPMI's own tools (bmc-info, ipmi-fru, ipmi-chassis) and ipmitool
run on the same simulators, and against what the simulators hold."""
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import PASSWORD, loopback, register
from ipmilab import IpmiLab, fru_image

COUNT = 8
OLD_FW = (3, 6)  # two nodes on an older BMC firmware


def product(i):
    return "HGX H100 8-GPU" if i <= 4 else "HGX H200 8-GPU"


def node_options(i):
    o = {
        "fw": "1.52" if i in OLD_FW else "2.14",
        "aux_fw": "%02x0b%02x00" % (i, 0x30 + i),
        "bios": ("SE5C620.86B.01.%02d.0031 (2023-11-02)" if i in OLD_FW
                 else "SE5C620.86B.02.%02d.0107 (2024-05-14)") % i,
        "fru": {
            "chassis": {"type": 0x17, "part": "CH-%d" % (400 + i), "serial": "CS%05d" % i},
            "board": {"manufacturer": "Lab Boards Ltd", "product": "G593-SD%d" % (i % 2),
                      "serial": "BS%05d" % i, "part": "BP-%03d" % i},
            "product": {"manufacturer": "Lab Systems Inc.", "name": product(i),
                        "part": "PN-%02d" % i, "version": "A%d" % i, "serial": "SYS%05d" % i,
                        "asset_tag": "RACK%d-U%02d" % (1 + i // 5, i)},
        },
    }
    if i == 4:
        o["manufacturer_id"] = 10876  # Supermicro
        o["product_id"] = 0x1b5d
    if i == 5:
        del o["bios"]  # a BMC that keeps no BIOS version
    if i == 7:
        o["fru"]["product"] = None  # no product area: the board stands in
    if i == 8:  # no chassis area, and a board area with a bad checksum
        o["fru"]["chassis"] = None
        img = bytearray(fru_image(**o["fru"]))
        img[img[3] * 8 + 8] ^= 0x55
        o["fru_raw"] = img.hex()
    return o


@pytest.fixture(scope="module")
def lab():
    workdir = tempfile.mkdtemp(prefix="gf-inv-")
    fleet = IpmiLab(workdir, prefix=loopback(__name__, "ipmi"), count=COUNT, user="admin",
                    password=PASSWORD, overrides={i: node_options(i) for i in range(1, COUNT + 1)})
    try:
        fleet.start()
        yield fleet
    finally:
        fleet.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def reg(gf, lab):
    register(gf, lab)
    return gf


@pytest.fixture
def needs_module(lab):
    assert lab.module, "lab module not built: %s" % lab.module_error


@pytest.fixture(scope="module")
def freeipmi_conf():
    """A FreeIPMI configuration file, so that no password goes on argv."""
    d = tempfile.mkdtemp(prefix="gf-fi-")
    path = os.path.join(d, "freeipmi.conf")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"username admin\npassword {PASSWORD}\ndriver-type LAN_2_0\n"
                "workaround-flags opensesspriv\ncipher-suite-id 3\nprivilege-level ADMIN\n")
    pwfile = os.path.join(d, "ipmitool.pw")
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(PASSWORD + "\n")
    yield {"conf": path, "pw": pwfile}
    shutil.rmtree(d, ignore_errors=True)


def tool(fi, name, host, *args):
    """Run a FreeIPMI tool on @host; returns {key: value} of its "Key : Value" lines."""
    r = subprocess.run([name, "--config-file", fi["conf"], "-h", host, *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (name, args, r.stdout, r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def ipmitool_bootparam(fi, host):
    r = subprocess.run(["ipmitool", "-I", "lanplus", "-C", "3", "-H", host, "-U", "admin",
                        "-f", fi["pw"], "chassis", "bootparam", "get", "5"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout


def by_node(data):
    return {int(o["node"][3:]): o for o in data}


# ---- firmware ----------------------------------------------------------------

def test_firmware_matches_bmc_info(reg, lab, freeipmi_conf, needs_module):
    r, data = reg.json("firmware", "@all")
    assert r.returncode == 0, r.stderr
    nodes = by_node(data)
    assert sorted(nodes) == list(range(1, COUNT + 1))
    for i, obj in nodes.items():
        assert obj["ok"] is True, obj
        comps = {c["key"]: c for c in obj["components"]}
        bmc = comps["bmc"]
        assert (bmc["id"], bmc["kind"], bmc["name"]) == ("bmc", "bmc", "BMC")
        ref = tool(freeipmi_conf, "bmc-info", lab.addr(i))
        # FreeIPMI prints the BCD minor revision as hex digits, like gpufleet.
        assert bmc["version"].lower() == ref["Firmware Revision"].lower(), (i, bmc, ref)
        d = bmc["details"]
        assert d["ipmi_version"] == ref["IPMI Version"]
        assert ref["Manufacturer ID"] == "%s (%d)" % (d["manufacturer"], d["manufacturer_id"])
        assert int(ref["Product ID"]) == d["product_id"]
        # bmc-info reads the four auxiliary bytes as one little-endian number.
        aux = bytes.fromhex(d["aux_revision"])
        assert ref["Auxiliary Firmware Revision Information"].lower() == \
            "%08xh" % int.from_bytes(aux, "little")
        if "System Firmware Version" in ref:
            assert comps["bios"]["version"] == ref["System Firmware Version"]
            assert comps["bios"]["kind"] == "bios"
        else:
            assert "bios" not in comps
        # ... and both say what the lab set up.
        want = node_options(i)
        assert bmc["version"] == want["fw"]
        assert d["aux_revision"] == want["aux_fw"]
        assert comps.get("bios", {}).get("version") == want.get("bios")
    assert sorted(i for i, o in nodes.items() if o["components"][0]["version"] == "1.52") \
        == list(OLD_FW)
    assert nodes[4]["components"][0]["details"]["manufacturer_id"] == 10876


def test_firmware_table_one_row_per_component(reg, lab, needs_module):
    r = reg.run("firmware", "gpu[04-05]")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "COMPONENT", "NAME", "VERSION"]
    rows = [line.split(None, 3) for line in lines[1:]]
    assert rows[0][:3] == ["gpu04", "bmc", "BMC"] and rows[0][3].strip() == "2.14"
    assert rows[1][:3] == ["gpu04", "bios", "BIOS"]
    assert rows[2][:3] == ["gpu05", "bmc", "BMC"]
    assert len(rows) == 3  # gpu05's BMC keeps no BIOS version


def test_firmware_of_a_dead_bmc_does_not_hold_up_the_others(reg, lab):
    lab.pause(2)
    try:
        t0 = time.monotonic()
        r, data = reg.json("firmware", "gpu[01-04]", "--timeout", "2", "--retries", "0")
        took = time.monotonic() - t0
    finally:
        lab.resume(2)
    assert r.returncode == 1
    nodes = by_node(data)
    assert nodes[2]["ok"] is False and nodes[2]["error"]["kind"] == "timeout"
    assert all(nodes[i]["ok"] for i in (1, 3, 4))
    assert took < 4.5, took


# ---- hardware ----------------------------------------------------------------

FRU_FIELDS = {
    "FRU Chassis Part Number": ("chassis", "part_number"),
    "FRU Chassis Serial Number": ("chassis", "serial"),
    "FRU Board Manufacturer": ("board", "manufacturer"),
    "FRU Board Product Name": ("board", "product"),
    "FRU Board Serial Number": ("board", "serial"),
    "FRU Board Part Number": ("board", "part_number"),
    "FRU Product Manufacturer Name": ("product", "manufacturer"),
    "FRU Product Name": ("product", "name"),
    "FRU Product Part/Model Number": ("product", "part_number"),
    "FRU Product Serial Number": ("product", "serial"),
    "FRU Product Asset Tag": ("product", "asset_tag"),
}


def test_hardware_matches_ipmi_fru_and_bmc_info(reg, lab, freeipmi_conf):
    r, data = reg.json("hardware", "@all")
    assert r.returncode == 0, r.stderr
    for i, obj in by_node(data).items():
        assert obj["ok"] is True, obj
        # FRU device 0, as ipmi-fru reads it without the SDR.
        ref = tool(freeipmi_conf, "ipmi-fru", lab.addr(i), "--ignore-sdr-cache")
        for key, (area, member) in FRU_FIELDS.items():
            assert obj[area][member] == ref.get(key), (i, key, obj[area], ref)
        info = tool(freeipmi_conf, "bmc-info", lab.addr(i))
        assert obj["system"]["uuid"] == info["System GUID"].lower(), (i, obj["system"], info)
        if lab.module:
            assert obj["system"]["bios_version"] == info.get("System Firmware Version")


def test_hardware_model_is_the_fru_product_name(reg, lab):
    r, data = reg.json("hardware", "@all")
    assert r.returncode == 0, r.stderr
    nodes = by_node(data)
    for i, obj in nodes.items():
        fru = node_options(i)["fru"]
        s = obj["system"]
        if fru["product"]:
            assert s["model"] == product(i)
            assert s["manufacturer"] == "Lab Systems Inc."
            assert s["serial"] == "SYS%05d" % i
            assert obj["product"]["asset_tag"] == fru["product"]["asset_tag"]
        else:  # no product area: the board's product and the chassis serial stand in
            assert obj["product"] == {"manufacturer": None, "name": None, "serial": None,
                                      "part_number": None, "asset_tag": None}
            assert s["model"] == fru["board"]["product"]
            assert s["manufacturer"] == "Lab Boards Ltd"
            assert s["serial"] == fru["chassis"]["serial"]
    assert nodes[8]["chassis"] == {"serial": None, "part_number": None}
    # A broken area is left out, as ipmi-fru leaves it out; the rest still reads.
    assert nodes[8]["board"] == {"manufacturer": None, "product": None, "serial": None,
                                 "part_number": None}
    assert nodes[8]["system"]["model"] == product(8)
    assert len({o["system"]["uuid"] for o in nodes.values()}) == COUNT
    # Grouping by model, as drift does: two models in this fleet, plus the board of node 7.
    assert {o["system"]["model"] for o in nodes.values()} == \
        {"HGX H100 8-GPU", "HGX H200 8-GPU", "G593-SD1"}


def test_hardware_table(reg, lab):
    r = reg.run("hardware", "gpu03")
    assert r.returncode == 0, r.stderr
    head, row = r.stdout.splitlines()
    assert head.split() == ["NODE", "MANUFACTURER", "MODEL", "SERIAL", "UUID", "BIOS"]
    assert "HGX H100 8-GPU" in row and "SYS00003" in row


# ---- boot --------------------------------------------------------------------

def boot_events(lab, i, since):
    return [(e, a) for t, e, a in lab.chassis_log(i) if t >= since and e.startswith("boot")]


def clear_boot(lab, i):
    lab.set_boot_flags(i, bytes(5))


def test_boot_pxe_is_what_the_bmc_holds(reg, lab, freeipmi_conf, needs_module):
    clear_boot(lab, 1)
    t0 = time.time()
    r, data = reg.json("boot", "pxe", "gpu01")
    assert r.returncode == 0, r.stderr
    o = data[0]
    assert o["ok"] is True and o["action"] == "pxe"
    assert o["requested"] == {"device": "pxe", "persistent": False, "mode": None}
    assert o["boot"] == {"device": "pxe", "persistent": False, "mode": "legacy"}
    # What the simulator saw and holds.
    assert boot_events(lab, 1, t0) == [("boot", ["pxe", "once", "legacy"])]
    flags = lab.boot_flags(1)
    assert (flags["valid"], flags["persistent"], flags["device"]) == (True, False, "pxe")
    # What FreeIPMI and ipmitool read from it.
    ref = tool(freeipmi_conf, "ipmi-chassis", lab.addr(1), "--get-boot-flags")
    assert ref["Boot device selector"] == "Force PXE"
    assert ref["BIOS boot type"] == "PC compatible boot"
    out = ipmitool_bootparam(freeipmi_conf, lab.addr(1))
    assert "Boot Flag Valid" in out and "Options apply to only next boot" in out
    # And gpufleet reads the same back.
    r, data = reg.json("boot", "status", "gpu01")
    assert r.returncode == 0 and data[0]["boot"]["device"] == "pxe"


@pytest.mark.parametrize("how", ["on", "reset", "cycle"])
def test_one_time_override_is_gone_after_the_next_boot(reg, lab, needs_module, how):
    i = {"on": 2, "reset": 3, "cycle": 4}[how]
    clear_boot(lab, i)
    lab.set_power(i, "off" if how == "on" else "on")
    r, data = reg.json("boot", "disk", f"gpu0{i}", "--uefi")
    assert r.returncode == 0, r.stderr
    assert data[0]["boot"] == {"device": "disk", "persistent": False, "mode": "uefi"}
    # Reading it does not use it up.
    r, data = reg.json("boot", "status", f"gpu0{i}")
    assert data[0]["boot"]["device"] == "disk"
    args = ["power", how, f"gpu0{i}"] + (["--wait"] if how == "cycle" else [])
    r = reg.run(*args)
    assert r.returncode == 0, r.stderr
    assert "boot-consumed" in lab.chassis_events(i)
    assert lab.boot_flags(i)["valid"] is False
    r, data = reg.json("boot", "status", f"gpu0{i}")
    assert r.returncode == 0, r.stderr
    assert data[0]["boot"] == {"device": "none", "persistent": False, "mode": None}


def test_power_on_of_a_running_host_keeps_the_override(reg, lab, needs_module):
    clear_boot(lab, 5)
    lab.set_power(5, "on")
    assert reg.run("boot", "cd", "gpu05").returncode == 0
    r = reg.run("power", "on", "gpu05")  # already on: no boot
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert lab.boot_flags(5)["valid"] is True and lab.boot_flags(5)["device"] == "cd"


def test_persistent_override_stays(reg, lab, freeipmi_conf, needs_module):
    clear_boot(lab, 6)
    lab.set_power(6, "on")
    r, data = reg.json("boot", "pxe", "gpu06", "--persistent", "--uefi")
    assert r.returncode == 0, r.stderr
    assert data[0]["boot"] == {"device": "pxe", "persistent": True, "mode": "uefi"}
    for how in ("reset", "off", "on"):
        r = reg.run("power", how, "gpu06")
        assert r.returncode == 0, (how, r.stdout, r.stderr)
    assert "boot-consumed" not in lab.chassis_events(6)
    flags = lab.boot_flags(6)
    assert (flags["valid"], flags["persistent"], flags["uefi"], flags["device"]) == \
        (True, True, True, "pxe")
    out = ipmitool_bootparam(freeipmi_conf, lab.addr(6))
    assert "Options apply to all future boots" in out and "BIOS EFI boot" in out
    ref = tool(freeipmi_conf, "ipmi-chassis", lab.addr(6), "--get-boot-flags")
    assert ref["Boot device selector"] == "Force PXE" and ref["BIOS boot type"] == "Extensible firmware Interface boot"
    # "none" cancels it.
    r, data = reg.json("boot", "none", "gpu06")
    assert r.returncode == 0, r.stderr
    assert data[0]["boot"]["device"] == "none" and lab.boot_flags(6)["valid"] is False


def test_boot_mode_not_asked_for_is_kept(reg, lab, needs_module):
    # The BMC holds a (used) UEFI override: a plain "boot pxe" must not make it legacy.
    lab.set_boot_flags(7, bytes([0x20, 0x08, 0, 0, 0]))
    r, data = reg.json("boot", "pxe", "gpu07")
    assert r.returncode == 0, r.stderr
    assert data[0]["boot"] == {"device": "pxe", "persistent": False, "mode": "uefi"}
    r, data = reg.json("boot", "pxe", "gpu07", "--legacy")
    assert data[0]["boot"]["mode"] == "legacy" and lab.boot_flags(7)["uefi"] is False


def test_boot_is_audited_and_dry_run_sends_nothing(reg, lab, needs_module):
    for i in (1, 2, 3):
        clear_boot(lab, i)
    t0 = time.time()
    r, data = reg.json("boot", "bios", "gpu[01-03]", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert all(o["dry_run"] is True and o["action"] == "bios" for o in data)
    assert all(boot_events(lab, i, t0) == [] for i in (1, 2, 3))
    assert all(not lab.boot_flags(i)["valid"] for i in (1, 2, 3))
    assert reg.sql("select count(*) as n from audit")[0]["n"] == 0

    r = reg.run("boot", "bios", "gpu[01-03]", "--persistent")
    assert r.returncode == 0, r.stderr
    rows = reg.sql("select node, verb, result, user from audit order by node")
    assert [(x["node"], x["verb"], x["result"]) for x in rows] == \
        [(f"gpu0{i}", "boot bios persistent", "ok") for i in (1, 2, 3)]
    assert all(x["user"] for x in rows)
    assert all(lab.boot_flags(i)["device"] == "bios" for i in (1, 2, 3))
    # Reading is not audited.
    assert reg.run("boot", "status", "gpu[01-03]").returncode == 0
    assert reg.sql("select count(*) as n from audit")[0]["n"] == 3
    for i in (1, 2, 3):
        clear_boot(lab, i)


def test_boot_usage_errors(reg):
    for args in (["boot"], ["boot", "floppy", "gpu01"], ["boot", "pxe", "gpu01", "--uefi", "--legacy"],
                 ["boot", "status", "gpu01", "--persistent"], ["boot", "none", "gpu01", "--uefi"]):
        r = reg.run(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stdout == ""


# ---- a BMC that accepts and ignores --------------------------------------------

@pytest.fixture(scope="module")
def plain_lab():
    """ipmi_sim without the lab module: it keeps the boot device only, never
    the valid, persistent or EFI bits, like a BMC that accepts and ignores."""
    workdir = tempfile.mkdtemp(prefix="gf-plain-")
    fleet = IpmiLab(workdir, prefix=loopback(__name__, "ipmi2"), count=2, user="admin", password=PASSWORD,
                    module=False)
    try:
        fleet.start()
        yield fleet
    finally:
        fleet.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_accepted_but_not_held_fails_the_node(gf, plain_lab):
    register(gf, plain_lab)
    t0 = time.time()
    r, data = gf.json("boot", "pxe", "gpu[01-02]", "--persistent")
    assert r.returncode == 1, r.stderr
    for o in data:
        assert o["ok"] is False
        assert o["error"]["kind"] == "refused"
        assert re.search(r"accepted boot pxe \(persistent\) but holds none", o["error"]["message"])
        assert o["requested"]["device"] == "pxe" and o["boot"]["device"] == "none"
    # The set did reach the BMC (its chassis program got the device)...
    assert any(e == "boot" and a == ["pxe"] for _, e, a in plain_lab.chassis_log(1)
               if _ >= t0)
    # ...and the failure is in the audit log.
    rows = gf.sql("select node, result from audit order by node")
    assert rows == [{"node": "gpu01", "result": "refused"}, {"node": "gpu02", "result": "refused"}]
    # Firmware and FRU still read fine from such a BMC, without a BIOS version.
    r, data = gf.json("firmware", "gpu01")
    assert r.returncode == 0 and [c["key"] for c in data[0]["components"]] == ["bmc"]
