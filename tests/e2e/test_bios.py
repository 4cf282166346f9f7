"""gpufleet bios show|set and BIOS settings in the inventory, through the real
binary against the Redfish emulator (tests/lab/redfish_emu.py with
tests/lab/redfish_bios.py: the five captured dialects' Bios resources and
settings objects, ETags, a synthesized AttributeRegistry on Dell, HPE and
Lenovo) and one ipmi_sim BMC. Every set is checked against what the BMC
received (the PATCH body and its If-Match) and what it holds afterwards."""
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import DEFAULT_CREDS, PASSWORD, TOP, deadline, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402
from ipmilab import IpmiLab  # noqa: E402

PREFIX = loopback(__name__, "lab")  # Redfish nodes .1-.12
VENDORS = ["supermicro-sys-821ge-tnhr", "nvidia-dgx-h100", "lenovo-sr670-v2", "dell-r750",
           "hpe-dl385-gen10plus-v2"]
# Nodes 1-5: one per dialect, read-only tests. Nodes 6-10: the same dialects
# for the tests that change settings. Nodes 11-14: four Dell nodes for drift.
COUNT = 14
OVERRIDES = {}
# The dialect gpufleet detects for each captured vendor.
DIALECT = {"supermicro-sys-821ge-tnhr": "supermicro", "nvidia-dgx-h100": "nvidia",
           "lenovo-sr670-v2": "lenovo", "dell-r750": "dell", "hpe-dl385-gen10plus-v2": "hpe"}


def default_ignore():
    """The rules of data/bios-ignore.conf: (dialect, key glob)."""
    rules = []
    with open(os.path.join(TOP, "data", "bios-ignore.conf"), encoding="utf-8") as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                rules.append((words[0], words[1]))
    assert len(rules) > 20
    return rules


def ignored(rules, dialect, key):
    return any(d in ("*", dialect) and fnmatch.fnmatchcase(key, g) for d, g in rules)


def setting_key(name):
    """The component key of attribute @name, as gf_bios_component_key() makes it."""
    return "bios." + "".join(c.lower() if c.isascii() and c.isalnum() else
                             c if c in ".-_" else "_" for c in name)


def setting_text(v):
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


@pytest.fixture(scope="module")
def lab():
    workdir = tempfile.mkdtemp(prefix="gf-bioslab-")
    vendors = [VENDORS[(i - 1) % 5] if i <= 10 else "dell-r750" for i in range(1, COUNT + 1)]
    lab = RedfishLab(workdir, prefix=PREFIX, count=COUNT, user="admin", password=PASSWORD,
                     vendors=vendors, overrides=OVERRIDES)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def rf(gf, lab):
    """The lab's nodes registered as b1..b14 (protocol redfish), counters cleared."""
    lines = ["name,bmc,protocol,groups"]
    for i in lab.indices():
        lines.append(f"b{i},{lab.addr(i)}:{lab.port},redfish,bios")
        lab.clear(i)
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    gf.ca = ["--cacert", lab.cacert]
    return gf


def objs(gf, *args, rc=0):
    r, data = gf.json(*args, *gf.ca)
    assert r.returncode == rc, (r.returncode, r.stderr, data)
    return {o["node"]: o for o in data}


def patches(lab, i):
    return [e for e in lab.events(i, kind="patch")]


def test_show_every_dialect(rf, lab):
    got = objs(rf, "bios", "show", "b[1-5]")
    for i in range(1, 6):
        o = got[f"b{i}"]
        st = lab.state(i)["bios"]
        assert o["ok"], o
        # every attribute, in its JSON type, exactly as the BMC holds it
        assert o["bios"]["attributes"] == st["attributes"], lab.vendor(i)
        assert o["bios"]["pending"] == {}
        assert o["bios"]["registry"] == lab.resource(i, st["uri"])["AttributeRegistry"]
    counts = sorted(len(got[f"b{i}"]["bios"]["attributes"]) for i in range(1, 6))
    assert counts == [223, 277, 348, 379, 455]
    dell = got["b4"]["bios"]["attributes"]
    assert dell["AcPwrRcvryUserDelay"] == 120 and dell["AesNi"] == "Enabled"
    dgx = got["b2"]["bios"]["attributes"]
    assert dgx["AcpiSpcrConsoleRedirectionEnable"] is True
    # HPE links its Bios in lower case: the path was resolved without case
    paths = [a["path"] for a in lab.access_log(5)]
    assert "/redfish/v1/systems/1/bios" in paths or "/redfish/v1/systems/1/bios/" in paths


def test_show_pattern_and_table(rf, lab):
    got = objs(rf, "bios", "show", "--attribute", "Sys*", "b4")
    names = set(got["b4"]["bios"]["attributes"])
    assert names and all(n.startswith("Sys") for n in names), names
    assert "SystemServiceTag" in names
    r = rf.run("bios", "show", "--attribute", "AesNi", "b4", "b9", *rf.ca)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "ATTRIBUTE", "VALUE", "PENDING"], lines
    assert len(lines) == 3, lines
    r = rf.run("-C", "bios", "show", "--attribute", "AesNi", "b4", "b9", *rf.ca)
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[1].split()[:3] == ["b[4,9]", "AesNi", "Enabled"], lines


def test_set_patch_if_match_read_back_and_reset(rf, lab):
    i = 9  # Dell: ETag header, settings object of changes only, a registry
    before = lab.state(i)["bios"]["attributes"]["ProcVirtualization"]
    want = "Disabled" if before == "Enabled" else "Enabled"
    got = objs(rf, "bios", "set", f"ProcVirtualization={want}", "AcPwrRcvryUserDelay=90", "b9")
    o = got["b9"]
    assert o["ok"], o
    assert o["bios"]["pending"] == {"ProcVirtualization": want, "AcPwrRcvryUserDelay": 90}
    ev = patches(lab, i)
    assert len(ev) == 1, ev
    # what the BMC received: typed values, and the settings object's ETag as If-Match
    assert ev[0]["body"] == {"Attributes": {"ProcVirtualization": want,
                                            "AcPwrRcvryUserDelay": 90}}
    assert ev[0]["if_match"] and ev[0]["if_match"].startswith('W/"'), ev[0]
    st = lab.state(i)["bios"]
    assert st["pending"] == {"ProcVirtualization": want, "AcPwrRcvryUserDelay": 90}
    assert st["attributes"]["ProcVirtualization"] == before
    # the audit log has the set
    rows = rf.sql("SELECT verb, node, result FROM audit")
    assert {"verb": "bios set ProcVirtualization=%s AcPwrRcvryUserDelay=90" % want,
            "node": "b9", "result": "ok"} in rows, rows
    # a restart applies it
    r = rf.run("power", "cycle", "b9", *rf.ca)
    assert r.returncode == 0, r.stderr
    st = lab.state(i)["bios"]
    assert st["pending"] == {} and st["attributes"]["ProcVirtualization"] == want
    got = objs(rf, "bios", "show", "--attribute", "ProcVirtualization", "b9")
    assert got["b9"]["bios"]["attributes"] == {"ProcVirtualization": want}


def test_show_pending(rf, lab):
    i = 9
    attrs = lab.state(i)["bios"]["attributes"]
    want = "Disabled" if attrs["LogicalProc"] == "Enabled" else "Enabled"
    objs(rf, "bios", "set", f"LogicalProc={want}", "b9")
    got = objs(rf, "bios", "show", "--pending", "b9")
    assert got["b9"]["bios"]["pending"] == {"LogicalProc": want}
    assert got["b9"]["bios"]["attributes"] == {"LogicalProc": attrs["LogicalProc"]}
    r = rf.run("bios", "show", "--pending", "b9", *rf.ca)
    lines = r.stdout.splitlines()
    assert lines[1].split() == ["b9", "LogicalProc", attrs["LogicalProc"], want], lines
    rf.run("power", "cycle", "b9", *rf.ca)
    assert lab.state(i)["bios"]["pending"] == {}


@pytest.mark.parametrize("i", [6, 7, 8, 10])
def test_set_other_dialects(rf, lab, i):
    attrs = lab.state(i)["bios"]["attributes"]
    name = sorted(k for k, v in attrs.items() if v in ("Enabled", "Disabled"))[0]
    want = "Disabled" if attrs[name] == "Enabled" else "Enabled"
    got = objs(rf, "bios", "set", f"{name}={want}", f"b{i}")
    assert got[f"b{i}"]["ok"], got
    ev = patches(lab, i)
    assert ev[-1]["body"] == {"Attributes": {name: want}}
    # the ETag each dialect gives (payload @odata.etag or header) was sent
    assert ev[-1]["if_match"], (lab.vendor(i), ev[-1])
    assert lab.state(i)["bios"]["pending"] == {name: want}


def test_registry_checks_send_nothing(rf, lab):
    i = 4  # Dell, registry published
    cases = [
        ("NoSuchAttribute=1", "has no BIOS attribute 'NoSuchAttribute'"),
        ("SystemServiceTag=ABC", "is read-only"),
        ("AcPwrRcvryUserDelay=soon", "takes an integer"),
        ("SysProfile=Fastest", "'Fastest' is not an allowed value"),
        ("AcPwrRcvryUserDelay=999999", "out of range"),
    ]
    for arg, msg in cases:
        got = objs(rf, "bios", "set", arg, "b4", rc=1)
        o = got["b4"]
        assert not o["ok"] and o["error"]["kind"] == "unsupported", o
        assert msg in o["error"]["message"] and "\n" not in o["error"]["message"], o
    assert patches(lab, i) == []
    assert lab.state(i)["bios"]["pending"] == {}


def test_refused_value(rf, lab):
    i = 10  # HPE
    attrs = lab.state(i)["bios"]["attributes"]
    lab.override(i, bios_refuse={"AcpiHpet": attrs["AcpiHpet"]})
    want = "Disabled" if attrs["AcpiHpet"] == "Enabled" else "Enabled"
    try:
        got = objs(rf, "bios", "set", f"AcpiHpet={want}", "b10", rc=1)
    finally:
        lab.override(i, bios_refuse={})
    o = got["b10"]
    assert o["error"]["kind"] == "refused", o
    assert f"AcpiHpet=\"{want}\" but holds \"{attrs['AcpiHpet']}\"" in o["error"]["message"]
    assert patches(lab, i)[-1]["body"] == {"Attributes": {"AcpiHpet": want}}
    rows = rf.sql("SELECT result FROM audit WHERE node = 'b10'")
    assert rows[-1]["result"] == "refused"


def test_several_nodes_need_yes_and_dry_run_sends_nothing(rf, lab):
    r = rf.run("bios", "set", "AesNi=Enabled", "b4", "b9", *rf.ca)
    assert r.returncode == 4, (r.returncode, r.stderr)
    got = objs(rf, "bios", "set", "--dry-run", "AesNi=Disabled", "b4", "b9")
    assert all(o["ok"] and o["dry_run"] for o in got.values()), got
    assert got["b4"]["requested"] == {"AesNi": "Disabled"}
    assert patches(lab, 4) == [] and patches(lab, 9) == []
    r = rf.run("bios", "set", "b4", *rf.ca)
    assert r.returncode == 2 and "NAME=VALUE" in r.stderr
    r = rf.run("bios", "set", "--apply-time", "later", "AesNi=Enabled", "b4", *rf.ca)
    assert r.returncode == 2 and "on-reset or immediate" in r.stderr


def test_immediate_apply_time(rf, lab):
    i = 7  # DGX: no SupportedApplyTimes, Immediate accepted
    attrs = lab.state(i)["bios"]["attributes"]
    want = "Disable" if attrs["ARIEnable"] == "Enable" else "Enable"
    got = objs(rf, "bios", "set", "--apply-time", "immediate", f"ARIEnable={want}", "b7")
    assert got["b7"]["ok"], got
    assert patches(lab, i)[-1]["body"]["@Redfish.SettingsApplyTime"] == {"ApplyTime": "Immediate"}
    assert lab.state(i)["bios"]["attributes"]["ARIEnable"] == want


def test_ipmi_node_unsupported(gf, tmp_path):
    d = str(tmp_path / "ipmilab")
    os.makedirs(d)
    sim = IpmiLab(d, prefix=PREFIX, count=1, first=200, user="admin", password=PASSWORD)
    with sim:
        r = gf.run("nodes", "add", "ip1", "--bmc", sim.addr(200), "--protocol", "ipmi")
        assert r.returncode == 0, r.stderr
        r, data = gf.json("bios", "show", "ip1")
        assert r.returncode == 1 and data[0]["error"]["kind"] == "unsupported", data


def test_sweep_drift_finds_one_planted_setting_and_baseline_fixes_it(rf, lab, tmp_path):
    """Four Dell nodes (455 attributes each): one setting changed behind the
    tool's back on one of them is the one thing drift reports; a baseline made
    from a good node puts exactly that setting right."""
    nodes = "b[11-14]"
    attrs = lab.state(12)["bios"]["attributes"]
    planted = "SriovGlobalEnable"
    good = attrs[planted]
    bad = "Disabled" if good == "Enabled" else "Enabled"
    lab.override(12, bios={planted: bad})
    r = rf.run("sweep", nodes, *rf.ca)
    assert r.returncode == 0, r.stderr
    # every attribute with a value is a component, per-node ones are not kept
    rows = rf.sql("SELECT DISTINCT c.key, c.source, c.name FROM components c"
                  " WHERE c.kind = 'setting'")
    keys = {row["key"] for row in rows}
    rules = default_ignore()
    want = {"bios." + k.lower() for k, v in attrs.items()
            if v is not None and not ignored(rules, "dell", "bios." + k.lower())}
    assert want >= {"bios.sriovglobalenable", "bios.procvirtualization"}
    assert not want & ({"bios.systemservicetag", "bios.assettag", "bios.sha256setuppassword",
                        "bios.iscsiinitiatorname"} | {"bios.sataport%smodel" % c for c in "ab"})
    assert keys == want, (sorted(keys ^ want))[:10]
    assert all(row["source"] == "redfish" for row in rows)
    assert "bios.systemservicetag" not in keys
    # the settings of the four nodes are two lists, shared
    assert rf.sql("SELECT count(DISTINCT bios_cset) AS n FROM sweep_nodes")[0]["n"] == 2
    r, data = rf.json("drift", "--component", "bios.*")
    assert r.returncode == 0, r.stderr
    found = [(o["node"], d["component"]) for o in data for d in o.get("drift", [])]
    # shown in the BMC's case, as `bios set` takes it
    assert found == [("b12", "bios." + planted)], data
    r, data = rf.json("drift", "--component", "bios." + planted.upper())   # matched without case
    assert [(o["node"], d["component"]) for o in data for d in o.get("drift", [])] == found
    r = rf.run("metrics", nodes)
    assert r.returncode == 0, r.stderr
    drifted = [ln for ln in r.stdout.splitlines() if ln.startswith("gpufleet_drift_info{")]
    assert len(drifted) == 1 and 'component="bios.%s"' % planted in drifted[0], drifted
    assert 'node="b11",component="bios.%s"' % planted in r.stdout
    assert "bios." + planted.lower() not in r.stdout
    html = tmp_path / "report.html"
    r = rf.run("report", "--html", str(html), nodes)
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    assert "bios." + planted in page and "bios." + planted.lower() not in page
    # the fix: a baseline from a good node, applied where nodes differ
    r = rf.run("inventory", "export", "--baseline", "b11")
    assert r.returncode == 0, r.stderr
    base = tmp_path / "golden.json"
    base.write_text(r.stdout)
    for i in (11, 12, 13, 14):
        lab.clear(i)
    got = objs(rf, "bios", "set", "--from-baseline", str(base), "--yes", nodes)
    assert all(o["ok"] for o in got.values()), got
    assert got["b12"]["requested"] == {planted: good}
    assert [e["body"] for e in patches(lab, 12)] == [{"Attributes": {planted: good}}]
    for i in (11, 13, 14):
        assert patches(lab, i) == [] and got[f"b{i}"]["requested"] == {}
    assert lab.state(12)["bios"]["pending"] == {planted: good}
    # the audit holds what each node was sent, not just the file's name
    rows = {x["node"]: x for x in rf.sql("SELECT node, verb, detail FROM audit"
                                         " WHERE verb LIKE 'bios set --from-baseline%'")}
    assert json.loads(rows["b12"]["detail"]) == {planted: good}, rows
    assert json.loads(rows["b11"]["detail"]) == {}


def test_a_failed_bios_read_is_not_every_setting_missing(rf, lab):
    """Node 13's Bios resource answers 500: the sweep keeps the node partial
    with a bios error and its firmware, says its settings were not read, and
    drift finds no setting missing on it (the other three read theirs)."""
    uri = lab.state(13)["bios"]["uri"]
    lab.override(13, faults={uri: 500})
    try:
        r, data = rf.json("sweep", "b[11-14]", *rf.ca)
    finally:
        lab.override(13, faults={})
    assert r.returncode == 1, (r.stderr, data)
    nodes = {o["node"]: o for o in data}
    assert nodes["b13"]["status"] == "partial", nodes["b13"]
    assert [e["op"] for e in nodes["b13"]["errors"]] == ["bios"], nodes["b13"]["errors"]
    r, show = rf.json("inventory", "show", "b13")
    assert r.returncode == 0, r.stderr
    stored = show[0]
    assert stored["collected"] == {"firmware": True, "bios": False, "host": False}, stored
    assert not [c for c in stored["components"] if c["kind"] == "setting"]
    # its firmware was read, Dell's "bios.current" and "bios.previous" among it
    assert {"bios.current", "bios.previous"} <= {c["key"] for c in stored["components"]}
    r, show = rf.json("inventory", "show", "b14")
    assert show[0]["collected"]["bios"] is True
    assert len([c for c in show[0]["components"] if c["kind"] == "setting"]) > 400
    r, drift = rf.json("drift", "--component", "bios.*")
    assert r.returncode == 0, r.stderr
    by = {o["node"]: o for o in drift}
    assert by["b13"]["drift"] == [], by["b13"]


def test_sweep_stores_the_settings_of_every_dialect(rf, lab):
    """One node per dialect: every attribute with a value is a component
    bios.<name> (source redfish, kind setting, its name and id the attribute's),
    its value the version, except those the default list of that node's
    dialect names, and each dialect's list leaves out something it serves."""
    # A whole sweep of five TLS BMCs (a DGX with its GPUs' health among them): a
    # deadline the node's reads meet on a loaded machine too.
    r, data = rf.json("sweep", "b[1-5]", "--timeout", deadline(30), *rf.ca)
    assert r.returncode == 0, (r.stderr, data)
    rules = default_ignore()
    for i in range(1, 6):
        dialect = DIALECT[lab.vendor(i)]
        attrs = {setting_key(k): (k, v) for k, v in lab.state(i)["bios"]["attributes"].items()
                 if v is not None}
        r, show = rf.json("inventory", "show", f"b{i}")
        assert r.returncode == 0, r.stderr
        assert show[0]["collected"]["bios"] is True, show[0]["collected"]
        stored = {c["key"]: c for c in show[0]["components"] if c["kind"] == "setting"}
        want = {k: setting_text(v) for k, (_, v) in attrs.items()
                if not ignored(rules, dialect, k)}
        assert {k: c["version"] for k, c in stored.items()} == want, dialect
        assert all(c["source"] == "redfish" and c["name"] == c["id"] == attrs[k][0]
                   for k, c in stored.items()), dialect
        # Each dialect's own rules (not those for every dialect) name attributes it
        # serves; the Supermicro capture's (passwords) all have null values.
        served = {setting_key(k) for k in lab.state(i)["bios"]["attributes"]}
        own = {k for k in served if ignored(rules, dialect, k) and not ignored(rules, "generic", k)}
        assert own, f"{dialect}: its own rules name nothing it serves"
        left_out = set(attrs) - set(want)
        assert bool(left_out) == (dialect != "supermicro"), (dialect, sorted(left_out)[:5])


def test_ignore_lists_per_node_settings_and_the_fix_holds(rf, lab, tmp_path):
    """Four Dell nodes (455 attributes). Three attributes differ on every node:
    the service tag (the default list of the dell dialect), HttpDev1Ip (added
    by the profile's bios_ignore) and IscsiDev1Con1TargetName (added by the
    baseline's "ignore"); one real setting is planted on b14. Drift reports
    the planted one only; --from-baseline sends only it; after the node's reset
    a second sweep and drift find nothing; history and export show it."""
    nodes = "b[11-14]"
    planted = "ProcVirtualization"
    good = lab.state(11)["bios"]["attributes"][planted]
    bad = "Disabled" if good == "Enabled" else "Enabled"
    base_attrs = lab.state(11)["bios"]["attributes"]
    for i in (11, 12, 13, 14):
        lab.override(i, bios={"SystemServiceTag": f"SVC{i:04d}", "HttpDev1Ip": f"10.1.0.{i}",
                              "IscsiDev1Con1TargetName": f"iqn.2026-12.com.example:t{i}",
                              "SriovGlobalEnable": base_attrs["SriovGlobalEnable"],
                              planted: bad if i == 14 else good})
        lab.clear(i)
    rf.write_creds(DEFAULT_CREDS + "bios_ignore = bios.httpdev?ip\n")
    r = rf.run("sweep", nodes, *rf.ca)
    assert r.returncode == 0, r.stderr
    r, show = rf.json("inventory", "show", "b12")
    keys = {c["key"] for c in show[0]["components"]}
    assert "bios.systemservicetag" not in keys and "bios.httpdev1ip" not in keys
    assert "bios.iscsidev1con1targetname" in keys and "bios.httpdev1vlanid" in keys

    def found(*args):
        r, data = rf.json("drift", "--component", "bios.*", *args)
        assert r.returncode == 0, (r.stderr, data)
        return sorted((o["node"], d["component"]) for o in data for d in o.get("drift", []))

    iscsi = "bios.iscsidev1con1targetname"
    # drift shows the names in the BMC's case; --component and --ignore match without it
    shown, iscsi_shown = "bios." + planted, "bios.IscsiDev1Con1TargetName"
    majority = found()
    assert ("b14", shown) in majority
    assert {k for _, k in majority} == {shown, iscsi_shown}, majority
    assert found("--ignore", "bios.iscsidev1con1*") == [("b14", shown)]
    # names as `bios show` prints them (the BMC's case) match as the lists do: without case
    assert found("--ignore", "bios.IscsiDev1Con1*") == [("b14", shown)]
    r, data = rf.json("drift", "--component", "bios.IscsiDev1Con1TargetName")
    assert sorted((o["node"], d["component"]) for o in data for d in o.get("drift", [])) == [
        k for k in majority if k[1] == iscsi_shown], data
    # a baseline from b11, with and without its own ignore list
    r = rf.run("inventory", "export", "--baseline", "b11")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["components"][iscsi] == "iqn.2026-12.com.example:t11"
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(doc))
    assert found("--baseline", str(plain)) == sorted(
        [("b12", iscsi_shown), ("b13", iscsi_shown), ("b14", iscsi_shown), ("b14", shown)])
    doc["ignore"] = ["bios.IscsiDev1Con1TargetName"]
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(doc))
    assert found("--baseline", str(golden)) == [("b14", shown)]
    # the fix sends the planted setting only: not the per-node names the baseline ignores
    got = objs(rf, "bios", "set", "--from-baseline", str(golden), "--yes", nodes)
    assert all(o["ok"] for o in got.values()), got
    assert got["b14"]["requested"] == {planted: good}, got["b14"]
    assert [e["body"] for e in patches(lab, 14)] == [{"Attributes": {planted: good}}]
    for i in (11, 12, 13):
        assert patches(lab, i) == [] and got[f"b{i}"]["requested"] == {}, got[f"b{i}"]
    r = rf.run("power", "reset", "b14", *rf.ca)
    assert r.returncode == 0, r.stderr
    assert lab.state(14)["bios"]["attributes"][planted] == good
    assert lab.state(14)["bios"]["pending"] == {}
    r = rf.run("sweep", nodes, *rf.ca)
    assert r.returncode == 0, r.stderr
    assert found("--baseline", str(golden)) == []
    assert found("--ignore", "bios.iscsidev1con1*") == []
    # history and export carry the settings
    r, hist = rf.json("inventory", "history", "b14")
    assert r.returncode == 0, r.stderr
    changes = [c for o in hist for c in o["changes"] if c["component"] == "bios." + planted.lower()]
    assert changes and changes[-1]["before"] == bad and changes[-1]["after"] == good, hist
    r = rf.run("inventory", "export")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    b14 = [rec for rec in recs if rec["node"] == "b14"]
    vals = [next(c["version"] for c in rec["components"] if c["key"] == "bios." + planted.lower())
            for rec in b14]
    assert vals[-2:] == [bad, good], vals
    assert all(rec["collected"]["bios"] for rec in b14[-2:])
    assert all(c["source"] == "redfish" for rec in b14 for c in rec["components"]
               if c["kind"] == "setting")
    # imported into another inventory, the settings drift there as here
    (tmp_path / "site.ndjson").write_text(r.stdout)
    other = type(rf)(str(tmp_path))
    other.db = str(tmp_path / "other.db")
    r = other.run("inventory", "import", str(tmp_path / "site.ndjson"))
    assert r.returncode == 0, r.stderr
    assert other.run("inventory", "export").stdout == rf.run("inventory", "export").stdout
    for args in ((), ("--ignore", "bios.iscsidev1con1*"), ("--baseline", str(golden))):
        here, there = rf.json("drift", "--component", "bios.*", *args), \
            other.json("drift", "--component", "bios.*", *args)
        assert here[0].returncode == there[0].returncode == 0, (here[0].stderr, there[0].stderr)
        assert there[1] == here[1], (args, there[1], here[1])
    r, hist = other.json("inventory", "history", "b14")
    assert [c for o in hist for c in o["changes"] if c["component"] == "bios." + planted.lower()] \
        == changes


def test_a_bad_bios_ignore_is_a_usage_error(rf, lab):
    rf.write_creds(DEFAULT_CREDS + "bios_ignore = SystemServiceTag\n")
    r = rf.run("sweep", "b1", *rf.ca)
    assert r.returncode == 2, r.stderr
    assert "bios_ignore 'SystemServiceTag'" in r.stderr and len(r.stderr.splitlines()) == 1


# ---- secrets and hostile values (issue 18, point 7) -----------------------------------

def db_text(gf):
    """Everything the inventory holds, as SQL text."""
    return subprocess.run(["sqlite3", gf.db, ".dump"], capture_output=True, text=True,
                          check=True).stdout


def test_password_attribute_from_a_file_or_stdin_never_shown(rf, lab, tmp_path):
    """A DGX's AddBmcUserPassword (registry type Password): refused from the
    command line with nothing sent; from a 0600 file or standard input it is
    sent, and neither printed, nor audited, nor stored."""
    i = 7  # DGX, with its registry served
    lab.override(i, bios_registry=True)
    secret, secret2 = "S3cret-" + os.urandom(4).hex(), "Other-" + os.urandom(4).hex()
    path = tmp_path / "pw"
    try:
        got = objs(rf, "bios", "set", f"AddBmcUserPassword={secret}", "b7", rc=1)
        assert got["b7"]["error"]["kind"] == "refused", got
        assert "--secret-from AddBmcUserPassword=FILE" in got["b7"]["error"]["message"]
        assert secret not in got["b7"]["error"]["message"]
        assert patches(lab, i) == []
        path.write_text(secret + "\n")
        os.chmod(path, 0o644)
        r = rf.run("bios", "set", "--secret-from", f"AddBmcUserPassword={path}", "b7", *rf.ca)
        assert r.returncode == 2 and "chmod 600" in r.stderr, r.stderr
        assert patches(lab, i) == []
        os.chmod(path, 0o600)
        for fmt in ("json", "table"):
            r = rf.run("--format", fmt, "bios", "set", "--secret-from",
                       f"AddBmcUserPassword={path}", "b7", *rf.ca)
            assert r.returncode == 0, (r.stdout, r.stderr)
            assert secret not in r.stdout + r.stderr and "(secret)" in r.stdout, r.stdout
            assert patches(lab, i)[-1]["body"]["Attributes"] == {"AddBmcUserPassword": secret}
        r = rf.run("bios", "set", "--secret-from", "AddBmcUserPassword=-", "b7", *rf.ca,
                   input=secret2 + "\n")
        assert r.returncode == 0, r.stderr
        assert secret2 not in r.stdout + r.stderr
        assert patches(lab, i)[-1]["body"]["Attributes"] == {"AddBmcUserPassword": secret2}
        rows = rf.sql("SELECT verb, detail FROM audit WHERE node = 'b7' AND result = 'ok'")
        assert len(rows) == 3 and all("AddBmcUserPassword=(secret)" in x["verb"] for x in rows)
        dump = db_text(rf)
        assert secret not in dump and secret2 not in dump
    finally:
        lab.override(i, bios_registry=False)


def test_from_baseline_audits_the_values_sent_but_never_a_password(rf, lab, tmp_path):
    """bios set --from-baseline audits each value it sends; a Password-type
    attribute in the baseline (a BMC never shows one back, so it never
    drifts) is not sent from it, nor printed, audited or stored."""
    i = 7  # DGX, with its registry served
    lab.override(i, bios_registry=True)
    secret = "S3cret-" + os.urandom(4).hex()
    try:
        want = "Disable" if lab.state(i)["bios"]["attributes"]["ARIEnable"] == "Enable" \
            else "Enable"
        base = tmp_path / "golden.json"
        base.write_text(json.dumps({"components": {"bios.addbmcuserpassword": secret,
                                                   "bios.arienable": want}}))
        r = rf.run("--format", "json", "bios", "set", "--from-baseline", str(base), "--yes",
                   "b7", *rf.ca)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert secret not in r.stdout + r.stderr
        (sent,) = [e["body"]["Attributes"] for e in patches(lab, i)]
        assert sent == {"ARIEnable": want}, sent
        rows = rf.sql("SELECT verb, result, detail FROM audit WHERE node = 'b7'")
        assert [json.loads(x["detail"]) for x in rows] == [{"ARIEnable": want}], rows
        assert secret not in db_text(rf)
    finally:
        lab.override(i, bios_registry=False)


def test_a_value_nested_2000_deep_costs_its_node_only(rf, lab):
    """The BMC holds an attribute as an array nested 2,000 deep: bios set
    reads it back without crashing, the node fails alone, the other node's
    result (a Dell, which has no such attribute) is there and every session
    is closed."""
    i = 7  # DGX: Immediate, so the value read back is the one it holds now
    attrs = lab.state(i)["bios"]["attributes"]
    want = "Disable" if attrs["ARIEnable"] == "Enable" else "Enable"
    lab.override(i, bios_deep={"ARIEnable": 2000})
    try:
        r = rf.run("--format", "json", "bios", "set", "--yes", "--apply-time", "immediate",
                   f"ARIEnable={want}", "b9", "b7", *rf.ca)
    finally:
        lab.override(i, bios_deep={})
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    got = {o["node"]: o for o in json.loads(r.stdout)}
    assert got["b9"]["ok"] is False and "ARIEnable" in got["b9"]["error"]["message"], got["b9"]
    assert got["b7"]["ok"] is False and got["b7"]["error"]["kind"] == "refused", got["b7"]
    assert len(got["b7"]["error"]["message"]) < 600
    assert patches(lab, i)[-1]["body"]["Attributes"] == {"ARIEnable": want}
    for n in (9, 7):
        assert lab.state(n)["sessions"]["open"] == 0
