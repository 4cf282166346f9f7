"""Sensors and the event log through the real binary against ipmi_sim BMCs
with per-node SDRs, readings and event logs, checked against FreeIPMI's own
ipmi-sensors and ipmi-sel on the same simulators."""
import calendar
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import DEFAULT_CREDS, PASSWORD, TOP, loopback, register

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import ipmisensors as S  # noqa: E402
from ipmilab import IpmiLab, fru_image  # noqa: E402
from udprelay import UdpRelay  # noqa: E402

COUNT = 13
# Node 12 and 13 are for clearing event logs; the others keep theirs.
PROFILES = {i: {} for i in range(1, COUNT + 1)}
PROFILES[3] = {"hot_gpu": 87}                                  # warning
PROFILES[5] = {"failed_psu": True}                             # critical
PROFILES[8] = {"hot_gpu": 88, "failed_psu": True, "gpus": 8}   # both, and 8 GPUs
PROFILES[10] = {"gpus": 8, "sel": 4}
PROFILES[11] = {"hot_gpu": 93}                                 # beyond upper critical (92)
PROFILES[12] = {"sel": 3}
PROFILES[13] = {"sel": 2, "failed_psu": True}

# FreeIPMI calls a reading beyond a non-critical threshold "Nominal" by
# default; gpufleet (like the design says) calls it a warning. The reference
# run gets that one rule changed, nothing else.
STATE_CONF = ("IPMI_Threshold_Sensor_At_Or_Below_Lower_Non_Critical_Threshold Warning\n"
              "IPMI_Threshold_Sensor_At_Or_Above_Upper_Non_Critical_Threshold Warning\n")
SEVERITY = {"Nominal": "info", "Warning": "warning", "Critical": "critical"}
UNIT_TYPES = {"C": "temperature", "V": "voltage", "A": "current", "W": "power", "RPM": "fan"}

def test_lab_tools_are_installed():
    missing = [t for t in ("ipmi_sim", "sdrcomp", "ipmi-sensors", "ipmi-sel")
               if not shutil.which(t)]
    assert not missing, f"missing {missing}: run tests/install-deps.sh"


@pytest.fixture(scope="module")
def lab():
    workdir = tempfile.mkdtemp(prefix="gf-lab-sensors-")
    lab = IpmiLab(workdir, prefix=loopback(__name__, "ipmi"), count=COUNT, user="admin",
                  password=PASSWORD, emu_extra=S.emu_extra(PROFILES))
    try:
        lab.start()
        S.prepare_events(lab, PROFILES)
        lab.freeipmi_conf = S.freeipmi_config(lab, os.path.join(workdir, "freeipmi.conf"))
        lab.state_conf = os.path.join(workdir, "sensor-state.conf")
        with open(lab.state_conf, "w") as f:
            f.write(STATE_CONF)
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def reg(gf, lab):
    register(gf, lab)
    return gf


def freeipmi(lab, tool, hosts, *args):
    """Run a FreeIPMI tool on @hosts (password in a config file, a fresh SDR
    cache each time); {host: [row, ...]} with rows split on '|'."""
    with tempfile.TemporaryDirectory() as cache:
        os.chmod(cache, 0o700)
        r = subprocess.run([tool, "-h", hosts, "--config-file", lab.freeipmi_conf,
                            "--sdr-cache-directory", cache, "--quiet-cache",
                            "--no-header-output", *args],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, TZ="UTC"))
    assert r.returncode == 0, r.stdout + r.stderr
    out = {}
    single = "," not in hosts and "[" not in hosts
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        host = hosts
        if not single:
            host, _, line = line.partition(": ")
        out.setdefault(host, []).append([c.strip() for c in line.split("|")])
    return out


def num(text):
    return None if text == "N/A" else float(text)


def close(a, b):
    """Equal within the reference tool's display rounding (%.2f)."""
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 0.0051


def sdr_dir(gf):
    """Where gpufleet keeps SDR caches for @gf (conftest sets XDG_CACHE_HOME)."""
    return os.path.join(gf.env()["XDG_CACHE_HOME"], "gpufleet", "sdr")


def by_node(data):
    return {o["node"]: o for o in data}


def test_sensors_match_ipmi_sensors(reg, lab):
    r, data = reg.json("sensors", "@all")
    assert r.returncode == 0, r.stderr
    mine = by_node(data)
    ref = freeipmi(lab, "ipmi-sensors", lab.hostrange(), "--output-sensor-thresholds",
                   "--output-sensor-state", "--sensor-state-config-file", lab.state_conf)
    assert len(ref) == COUNT
    compared = 0
    for i in range(1, COUNT + 1):
        node = mine[f"gpu{i:02d}"]
        assert node["ok"], node
        rows = ref[lab.addr(i)]
        assert [s["name"] for s in node["sensors"]] == [row[1] for row in rows], i
        for s, row in zip(node["sensors"], rows):
            _, name, rtype, state, reading, unit, lnr, lc, lnc, unc, uc, unr, event = row
            where = f"node {i} sensor {name}"
            assert s["state"] == state.lower(), (where, s, row)
            assert close(s["reading"], num(reading)), (where, s, row)
            assert s["unit"] == (None if unit == "N/A" else unit), (where, s, row)
            want_type = UNIT_TYPES.get(unit, rtype.lower().replace(" ", "_"))
            assert s["type"] == want_type, (where, s, row)
            t = s["thresholds"]
            for key, text in (("lower_non_recoverable", lnr), ("lower_critical", lc),
                              ("lower_non_critical", lnc), ("upper_non_critical", unc),
                              ("upper_critical", uc), ("upper_non_recoverable", unr)):
                assert close(t.get(key), num(text)), (where, key, s, row)
            if s["reading"] is None:  # discrete: the asserted states, in FreeIPMI's words
                events = [e.strip("'") for e in event.split("' '")]
                assert s.get("state_text") == ", ".join(events), (where, s, row)
            compared += 1
    assert compared == 11 * 15 + 2 * 19


def test_unhealthy_nodes_and_json_shape(reg, lab):
    r, data = reg.json("sensors", "gpu[01,03,05,08,11]")
    assert r.returncode == 0, r.stderr
    sensors = {o["node"]: {s["name"]: s for s in o["sensors"]} for o in data}
    hot = sensors["gpu03"]["GPU3 Temp"]
    # Where it is read: owner, LUN and number, as the SDR the simulator holds says.
    where = "0x%02x.0.%d" % (S.BMC, S.GPU_SENSOR_BASE + 3)
    assert hot == {"name": "GPU3 Temp", "chassis": None, "id": where,
                   "type": "temperature", "reading": 87.0, "unit": "C",
                   "state": "warning",
                   "thresholds": {"upper_non_critical": 85.0, "upper_critical": 92.0,
                                  "upper_non_recoverable": 100.0}}
    assert sensors["gpu11"]["GPU3 Temp"]["state"] == "critical"
    psu = sensors["gpu05"]["PSU2 Status"]
    assert psu["state"] == "critical" and psu["type"] == "power_supply"
    assert psu["reading"] is None and psu["unit"] is None
    assert "Power Supply Failure detected" in psu["state_text"]
    assert sensors["gpu01"]["PSU2 Status"]["state"] == "nominal"
    assert all(s["state"] == "nominal" for s in sensors["gpu01"].values())
    assert len(sensors["gpu08"]) == len(sensors["gpu01"]) + 4  # eight GPUs
    volt = sensors["gpu01"]["12V"]
    assert volt["unit"] == "V" and volt["thresholds"] == {
        "lower_critical": 10.8, "lower_non_critical": 11.4, "upper_non_critical": 12.6,
        "upper_critical": 13.2}
    assert sensors["gpu01"]["Total Power"]["type"] == "power"
    assert sensors["gpu01"]["FAN1"]["thresholds"]["lower_non_recoverable"] == 300.0


def test_type_and_state_filters(reg, lab):
    r, data = reg.json("sensors", "@all", "--state", "warning,critical")
    assert r.returncode == 0, r.stderr
    problems = {(o["node"], s["name"], s["state"]) for o in data for s in o["sensors"]}
    assert problems == {
        ("gpu03", "GPU3 Temp", "warning"), ("gpu05", "PSU2 Status", "critical"),
        ("gpu08", "GPU3 Temp", "warning"), ("gpu08", "PSU2 Status", "critical"),
        ("gpu11", "GPU3 Temp", "critical"), ("gpu13", "PSU2 Status", "critical")}
    assert len(data) == COUNT  # every node is reported, with what matched

    r, data = reg.json("sensors", "gpu[01-02]", "--type", "temp,fan")
    assert r.returncode == 0, r.stderr
    for o in data:
        assert {s["type"] for s in o["sensors"]} == {"temperature", "fan"}
        assert len(o["sensors"]) == 3 + 4 + 2
    r, data = reg.json("sensors", "gpu01", "-t", "psu", "-t", "power")
    assert sorted(s["name"] for s in data[0]["sensors"]) == ["PSU1 Status", "PSU2 Status",
                                                            "Total Power"]

    r = reg.run("sensors", "gpu01", "--state", "hot")
    assert r.returncode == 2 and "--state 'hot'" in r.stderr
    r = reg.run("sensors", "gpu01", "--type", "te mp")
    assert r.returncode == 2


def test_table_one_row_per_sensor(reg, lab):
    r = reg.run("sensors", "gpu05", "--type", "power_supply")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "SENSOR", "TYPE", "READING", "UNIT", "STATE", "EVENT"]
    assert len(lines) == 3
    assert lines[2].split()[:6] == ["gpu05", "PSU2", "Status", "power_supply", "-", "-"]
    assert "critical" in lines[2] and "Power Supply Failure detected" in lines[2]


def test_sel_matches_ipmi_sel(reg, lab):
    r, data = reg.json("sel", "list", "gpu[01-11]")
    assert r.returncode == 0, r.stderr
    mine = by_node(data)
    ref = freeipmi(lab, "ipmi-sel", f"{lab.prefix}.[1-11]", "--output-event-state", "-v")
    total = 0
    for i in range(1, 12):
        entries = mine[f"gpu{i:02d}"]["entries"]
        rows = ref.get(lab.addr(i), [])
        assert [e["id"] for e in entries] == [row[0] for row in rows], i
        for e, row in zip(entries, rows):
            rid, date, tod, name, rtype, state, direction, event = row
            where = f"node {i} entry {rid}"
            if date == "PostInit":
                assert e["time"] is None and e["time_note"] == "pre-init", (where, e)
            else:
                want = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                     time.strptime(f"{date} {tod}", "%b-%d-%Y %H:%M:%S"))
                assert e["time"] == want and "time_note" not in e, (where, e, row)
            assert e["sensor"] == name, (where, e, row)
            assert e["sensor_type"] == rtype.lower().replace(" ", "_"), (where, e, row)
            assert e["severity"] == SEVERITY[state], (where, e, row)
            assert e["direction"] == direction.split()[0].lower(), (where, e, row)
            assert e["event"] == event, (where, e, row)
            total += 1
    # Two pre-init entries everywhere, then what each profile left behind.
    assert total >= 11 * 2 + 6
    psu = [e for e in mine["gpu05"]["entries"] if e["sensor"] == "PSU2 Status"]
    assert psu[-1]["severity"] == "critical" and psu[-1]["time"] is not None
    assert psu[0]["time"] is None and psu[0]["time_note"] == "pre-init"


def test_sel_table_and_csv_say_pre_init(reg, lab):
    # Entries stamped before the BMC's clock was set say so, never 1970 or a bare dash.
    r = reg.run("sel", "list", "gpu05")
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.splitlines()
    assert head.split()[:3] == ["NODE", "ID", "TIME"]
    times = [row.split()[2] for row in rows]
    assert times[:2] == ["pre-init", "pre-init"], r.stdout
    assert all(t.startswith("20") and t.endswith("Z") for t in times[2:]), r.stdout
    assert "1970" not in r.stdout
    r = reg.run("--format", "csv", "sel", "list", "gpu05")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split(",")[:3] == ["node", "id", "time"]
    assert [x.split(",")[2] for x in lines[1:3]] == ["pre-init", "pre-init"]


def test_sel_filters(reg, lab):
    r, data = reg.json("sel", "list", "gpu[03,05,08,10]", "--severity", "critical")
    assert r.returncode == 0, r.stderr
    crit = {o["node"]: [e["sensor"] for e in o["entries"]] for o in data}
    assert crit == {"gpu03": [], "gpu05": ["PSU2 Status"], "gpu08": ["PSU2 Status"],
                    "gpu10": []}

    r, data = reg.json("sel", "list", "gpu[08,10]", "--last", "2")
    full = by_node(reg.json("sel", "list", "gpu[08,10]")[1])
    for o in data:
        assert [e["id"] for e in o["entries"]] == \
            [e["id"] for e in full[o["node"]]["entries"]][-2:]

    # Pre-init entries have no date, so no --since can include them.
    r, data = reg.json("sel", "list", "gpu10", "--since", "1h")
    assert r.returncode == 0, r.stderr
    assert data[0]["entries"] and all(e["time"] for e in data[0]["entries"])
    assert len(data[0]["entries"]) == len(full["gpu10"]["entries"]) - 2
    # Durations as drift and inventory prune take them: fractions, the same units.
    for dur in ("1.5h", "90m", "5400s", "0.25d"):
        r, d = reg.json("sel", "list", "gpu10", "--since", dur)
        assert r.returncode == 0, (dur, r.stderr)
        assert d[0]["entries"] == data[0]["entries"], dur
    r, data = reg.json("sel", "list", "gpu10", "--since", "2099-01-01T00:00Z")
    assert data[0]["entries"] == []
    r, data = reg.json("sel", "list", "gpu10", "--since", "2020-01-01")
    assert len(data[0]["entries"]) == len(full["gpu10"]["entries"]) - 2

    for bad in (["--since", "yesterday"], ["--since", "2026-13-01"], ["--since", "2026-02-31"],
                ["--since", "2026-11-29T24:00Z"], ["--since", "-1h"], ["--since", "1.5y"],
                ["--since", "1h "], ["--severity", "bad"], ["--last", "0"]):
        r = reg.run("sel", "list", "gpu10", *bad)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
    r = reg.run("sel", "frobnicate", "gpu10")
    assert r.returncode == 2 and "list, clear" in r.stderr


def test_injected_changes_are_seen(reg, lab):
    # A sensor crosses its upper critical threshold: the BMC logs it too.
    r, data = reg.json("sel", "list", "gpu02")
    before = len(data[0]["entries"])
    t0 = time.time()
    S.set_value(lab, 2, "GPU1 Temp", 95)
    S.set_bit(lab, 2, "PSU1 Status", S.PSU_FAILED, 1)
    S.add_event(lab, 2, "FAN2", S.EVENT_BIT["lnc"], data2=9, data3=10, threshold=True)
    try:
        r, data = reg.json("sensors", "gpu02")
        s = {x["name"]: x for x in data[0]["sensors"]}
        assert s["GPU1 Temp"]["reading"] == 95.0 and s["GPU1 Temp"]["state"] == "critical"
        assert s["PSU1 Status"]["state"] == "critical"

        r, data = reg.json("sel", "list", "gpu02")
        new = data[0]["entries"][before:]
        assert ("GPU1 Temp", "critical") in {(e["sensor"], e["severity"]) for e in new}, new
        assert ("PSU1 Status", "critical") in {(e["sensor"], e["severity"]) for e in new}, new
        fan = [e for e in new if e["sensor"] == "FAN2"]
        assert fan and fan[0]["severity"] == "warning" and fan[0]["direction"] == "assertion"
        assert "Sensor Reading = 900.00 RPM" in fan[0]["event"]
        stamp = calendar.timegm(time.strptime(fan[0]["time"], "%Y-%m-%dT%H:%M:%SZ"))
        assert t0 - 5 <= stamp <= time.time() + 5
    finally:
        S.set_value(lab, 2, "GPU1 Temp", 60, event=False)
        S.set_bit(lab, 2, "PSU1 Status", S.PSU_FAILED, 0, event=False)
    r, data = reg.json("sensors", "gpu02", "--state", "warning,critical")
    assert data[0]["sensors"] == []


def test_sdr_cache_is_reused_then_invalidated(reg, lab):
    cache = os.path.join(sdr_dir(reg), f"gpu04@{lab.addr(4)}.sdr")
    r = reg.run("sensors", "gpu04")
    assert r.returncode == 0, r.stderr
    assert os.stat(os.path.dirname(cache)).st_mode & 0o777 == 0o700
    # Date the file an hour back: a rewrite would show a new mtime, not only
    # a new inode (which the file system may hand out again).
    old = time.time_ns() - 3600 * 10**9
    os.utime(cache, ns=(old, old))
    st = os.stat(cache)
    for _ in range(3):
        r = reg.run("sensors", "gpu04")
        assert r.returncode == 0, r.stderr
        r = reg.run("sel", "list", "gpu04")  # the event log uses the same cache
        assert r.returncode == 0, r.stderr
    st2 = os.stat(cache)
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert not [f for f in os.listdir(os.path.dirname(cache)) if f.endswith(".tmp")]

    # A new sensor appears in the BMC's repository: its timestamp moves and
    # the next read downloads the SDR again and shows the sensor.
    S.add_gpu_sensor(lab, 4, 12, 70)
    r, data = reg.json("sensors", "gpu04", "--type", "temperature")
    assert r.returncode == 0, r.stderr
    names = [s["name"] for s in data[0]["sensors"]]
    assert "GPU12 Temp" in names
    st3 = os.stat(cache)
    assert st3.st_ino != st.st_ino


def test_sdr_cache_is_per_bmc_and_survives_garbage(reg, lab):
    d = sdr_dir(reg)
    r = reg.run("sensors", "gpu[06-07]")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(d)) == [f"gpu06@{lab.addr(6)}.sdr", f"gpu07@{lab.addr(7)}.sdr"]
    with open(os.path.join(d, f"gpu06@{lab.addr(6)}.sdr"), "wb") as f:
        f.write(b"not an sdr cache at all")
    r, data = reg.json("sensors", "gpu06")
    assert r.returncode == 0, r.stderr
    assert len(data[0]["sensors"]) == 15


def test_prometheus_output(reg, lab, tmp_path):
    r = reg.run("nodes", "add", "gone", "--bmc", f"{lab.prefix}.250", "--protocol", "ipmi")
    assert r.returncode == 0, r.stderr
    r = reg.run("sensors", "gpu[01,03,05],gone", "--format", "prometheus", "--timeout", "1",
                "--retries", "0")
    assert r.returncode == 1  # one node failed; the others are still exported
    text = r.stdout
    lines = text.splitlines()
    for fam in ("gpufleet_node_up", "gpufleet_sensor_value", "gpufleet_sensor_state"):
        assert f"# TYPE {fam} gauge" in lines and any(x.startswith(f"# HELP {fam} ") for x in lines)
    assert 'gpufleet_node_up{node="gone"} 0' in lines
    assert 'gpufleet_node_up{node="gpu03"} 1' in lines
    assert any(x.startswith("# gpufleet: node gone failed: timeout") for x in lines)
    assert ('gpufleet_sensor_value{node="gpu03",sensor="GPU3 Temp",type="temperature",'
            'unit="C"} 87') in lines
    assert 'gpufleet_sensor_value{node="gpu01",sensor="12V",type="voltage",unit="V"} 12' in lines
    assert 'gpufleet_sensor_value{node="gpu01",sensor="3.3V",type="voltage",unit="V"} 3.3' \
        in lines
    assert ('gpufleet_sensor_state{node="gpu05",sensor="PSU2 Status",type="power_supply",'
            'unit=""} 2') in lines
    assert ('gpufleet_sensor_state{node="gpu03",sensor="GPU3 Temp",type="temperature",'
            'unit="C"} 1') in lines
    assert not any(x.startswith('gpufleet_sensor_value{node="gpu05",sensor="PSU2 Status"')
                   for x in lines)  # discrete: a state, no value
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus) is not installed"
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr

    r = reg.run("power", "status", "gpu01", "--format", "prometheus")
    assert r.returncode == 2 and "prometheus" in r.stderr


def test_sel_clear_guard_dry_run_and_audit(reg, lab):
    def count(i):
        return len(freeipmi(lab, "ipmi-sel", lab.addr(i)).get(lab.addr(i), []))

    assert count(12) >= 3 and count(13) >= 3
    r = reg.run("sel", "clear", "gpu[12-13]")
    assert r.returncode == 4 and "--yes" in r.stderr
    r, data = reg.json("sel", "clear", "gpu[12-13]", "--dry-run")
    assert r.returncode == 0 and all(o["dry_run"] for o in data)
    assert count(12) >= 3 and count(13) >= 3
    assert reg.sql("select count(*) as n from audit")[0]["n"] == 0
    r = reg.run("sel", "clear", "gpu12", "--since", "1h")
    assert r.returncode == 2

    r, data = reg.json("sel", "clear", "gpu[12-13]", "--yes")
    assert r.returncode == 0, r.stderr
    assert [o["action"] for o in data] == ["clear", "clear"]
    assert count(12) == 0 and count(13) == 0
    r, data = reg.json("sel", "list", "gpu[12-13]")
    assert all(o["entries"] == [] for o in data)
    rows = reg.sql("select node, verb, result from audit order by node")
    assert rows == [{"node": "gpu12", "verb": "sel clear", "result": "ok"},
                    {"node": "gpu13", "verb": "sel clear", "result": "ok"}]

    # One node needs no --yes; new events are logged after a clear.
    S.add_event(lab, 12, "PSU2 Status", S.PSU_FAILED)
    r = reg.run("sel", "clear", "gpu12")
    assert r.returncode == 0, r.stderr
    assert count(12) == 0


RELAY = loopback(__name__, "relay") + ".1"


def test_a_sweep_asks_each_bmc_once(gf, lab):
    """A sweep reads hardware, firmware, the event log and sensors in one
    session and asks for nothing twice: the BIOS version once (hardware and
    firmware both carry it), the SDR checked against the BMC once (the event
    log and the sensors both use it), and no thresholds (a sweep keeps the
    states, which the readings carry). So the BMC gets what the four verbs
    send it, less three sessions, less those repeats: counted by a UDP relay
    in front of the BMC (a 30 s deadline: FreeIPMI resends after 1 s, which
    a loaded machine does not reach)."""
    gf.write_creds(DEFAULT_CREDS + "ipmi_cipher_suite = 3\n")
    r = gf.run("nodes", "import", "-", input=f"name,bmc,protocol\nrelayed,{RELAY},ipmi\n")
    assert r.returncode == 0, r.stderr
    with UdpRelay(RELAY, 623, lab.addr(8), 623) as relay:
        def sent(*args):
            before = relay.counts["in"]
            r = gf.run("--timeout", "30", *args, "relayed")
            assert r.returncode == 0, r.stderr
            return relay.counts["in"] - before

        sent("sensors")                               # the SDR cache filled
        # What a worker's FreeIPMI session costs around its commands: the
        # ping, Get Channel Authentication Capabilities, Open Session, RAKP
        # 1 and 3, Set Session Privilege Level and Close Session. `power
        # status` (one loop, ipmi/batch.c) sends all but the first, the
        # second and the sixth (its Open Session is its ping), and its one
        # command.
        session = sent("power", "status") - 1 + 3
        verbs = {v: sent(*v.split()) for v in ("hardware", "firmware", "sel list", "sensors")}
        sweep = sent("sweep", "--no-ssh")
    assert session >= 6 and verbs["sensors"] > 16, (session, verbs)
    assert sweep <= sum(verbs.values()) - 3 * session - 2, (sweep, session, verbs)
    # The FRU in 32-byte reads (FreeIPMI's reader asks 16): Get FRU Inventory
    # Area Info, the reads, Get System GUID, at most two for the BIOS version.
    node = lab.node(8)
    size = len(node.fru_raw if node.fru_raw is not None else fru_image(**node.fru))
    assert verbs["hardware"] - session <= 1 + -(-size // 32) + 1 + 2, (size, session, verbs)
