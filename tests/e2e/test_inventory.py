"""Sweeps, drift, diff and the inventory through the real binary, on a mixed
lab: ipmi_sim BMCs, Redfish BMCs (DGX dialect) from the emulator, and sshd
hosts with fake NVIDIA tools, each on the module's range of its kind. Each test checks what gpufleet printed and what it stored; the change
tests change the peers themselves (a BMC firmware revision, a Redfish
inventory entry, the driver a host reports) and check that drift and diff
find exactly that. Also: crash safety under kill -9, two sweeps at once,
migration from every earlier schema, export/import round trips."""
import json
import os
import pty
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, deadline, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import ipmisensors  # noqa: E402
import sshlab  # noqa: E402
from ipmilab import IpmiLab  # noqa: E402
from redfish_emu import RedfishLab  # noqa: E402

IPMI_PREFIX = loopback(__name__, "ipmi")
RF_PREFIX = loopback(__name__, "redfish")
SSH_PREFIX = loopback(__name__, "ssh")
N = 4            # IPMI nodes ipmi1..4 and Redfish nodes rf1..4, each with an SSH host
SLOW = deadline(30)  # per-node deadline: two CPUs share the labs and the tool
DRIVER = "590.48.01"
NEW_DRIVER = "580.95.05"


class Lab:
    """The three labs, and the changes a test makes to their peers."""

    def __init__(self, workdir):
        self.dir = workdir
        self.fw = {}  # IPMI firmware revision overrides
        self.ipmi = None
        self.rf = RedfishLab(os.path.join(workdir, "rf"), prefix=RF_PREFIX, count=N,
                             vendors=["dgx"], user="admin", password=PASSWORD)
        self.ssh = sshlab.SshLab(os.path.join(workdir, "ssh"),
                                 nodes=[dict(profile="h100") for _ in range(2 * N)],
                                 prefix=SSH_PREFIX)

    def start_ipmi(self):
        healthy = {i: {} for i in range(1, N + 1)}
        self.ipmi = IpmiLab(os.path.join(self.dir, "ipmi"), prefix=IPMI_PREFIX, count=N,
                            user="admin", password=PASSWORD, power="on",
                            overrides={i: {"fw": v} for i, v in self.fw.items()},
                            emu_extra=ipmisensors.emu_extra(healthy))
        self.ipmi.start()
        ipmisensors.set_sel_time(self.ipmi)

    def start(self):
        self.start_ipmi()
        self.rf.start()
        self.ssh.start()

    def stop(self):
        for lab in (self.ipmi, self.rf, self.ssh):
            if lab:
                lab.stop()

    def flash_ipmi(self, i, fw):
        """A new BMC firmware revision: the BMC restarts with it, as after a real flash."""
        self.ipmi.stop()
        if fw is None:
            self.fw.pop(i, None)
        else:
            self.fw[i] = fw
        self.start_ipmi()

    def set_driver(self, k, old, new):
        """SSH host k now reports another driver version (and nothing else changes)."""
        out = os.path.join(self.ssh.node_dir(k), "out")
        for name in os.listdir(out):
            path = os.path.join(out, name)
            with open(path) as f:
                text = f.read()
            if old in text:
                with open(path, "w") as f:
                    f.write(text.replace(old, new))

    def creds(self):
        return (f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n"
                f"ipmi_workarounds = opensesspriv\nredfish_cacert = {self.rf.cacert}\n"
                f"ssh_user = {self.ssh.user}\nssh_key = {self.ssh.key}\n"
                f"ssh_known_hosts = {self.ssh.known_hosts}\n")

    def nodes_csv(self, extra=()):
        lines = ["name,bmc,protocol,ssh,groups"]
        for i in range(1, N + 1):
            lines.append(f"ipmi{i},{self.ipmi.addr(i)},ipmi,{self.ssh.spec(i)},ipmi;all")
        for i in range(1, N + 1):
            lines.append(f"rf{i},{self.rf.addr(i)}:{self.rf.port},redfish,{self.ssh.spec(N + i)},"
                         "redfish;all")
        lines.extend(extra)
        return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def lab():
    if not os.access(sshlab.SSHD, os.X_OK):
        pytest.skip("sshd is not installed")
    workdir = tempfile.mkdtemp(prefix="gf-inv-")
    os.chmod(workdir, 0o755)  # the SSH lab's login user reads its keys and scripts under it
    lab = Lab(workdir)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def inv(gf, lab):
    gf.write_creds(lab.creds())
    r = gf.run("nodes", "import", "-", input=lab.nodes_csv())
    assert r.returncode == 0, r.stderr
    return gf


def sweep(gf, *args, rc=0):
    r, data = gf.json("sweep", "--timeout", SLOW, *args)
    assert r.returncode == rc, (r.returncode, r.stderr, data)
    return {o["node"]: o for o in data}


def drift(gf, *args, rc=0):
    r, data = gf.json("drift", *args)
    assert r.returncode == rc, (r.returncode, r.stderr)
    return data


def items(data):
    """{(node, component): (expected, actual, source)} of a drift result."""
    return {(o["node"], d["component"]): (d["expected"], d["actual"], d["source"])
            for o in data for d in o["drift"]}


def diff_items(data):
    return {(o["node"], c["component"]): (c["before"], c["after"], c["change"])
            for o in data for c in o["components"]}


def integrity(gf):
    con = sqlite3.connect(gf.db)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


# ---- a sweep --------------------------------------------------------------------

def test_sweep_reads_every_source_and_stores_one_sweep(inv, lab):
    nodes = sweep(inv)
    assert sorted(nodes) == [f"ipmi{i}" for i in range(1, N + 1)] + [f"rf{i}" for i in range(1, N + 1)]
    for name, o in nodes.items():
        assert o["ok"] is True and o["status"] == "ok", o
        assert o["errors"] == [], o
        assert o["sweep"] == 1
        assert o["sensors"]["nominal"] > 0, o
        assert o["sel"]["total"] >= 2, o
        assert o["protocol"] == ("ipmi" if name.startswith("ipmi") else "redfish")
    assert nodes["ipmi1"]["model"] == "ipmi_sim node"
    assert nodes["rf1"]["model"] == lab.rf.resource(1, "/redfish/v1/Systems/DGX")["Model"]

    # What was stored: one sweep, one row per node, components under canonical keys.
    assert inv.sql("SELECT id, nodes, ok, partial, failed FROM sweeps") == [
        {"id": 1, "nodes": 2 * N, "ok": 2 * N, "partial": 0, "failed": 0}]
    r, show = inv.json("inventory", "show", "ipmi2")
    assert r.returncode == 0, r.stderr
    comps = {c["key"]: c for c in show[0]["components"]}
    assert comps["bmc"]["version"] == "1.00" and comps["bmc"]["source"] == "ipmi"
    assert comps["driver"]["version"] == DRIVER and comps["driver"]["source"] == "ssh"
    assert comps["gpu0.vbios"]["source"] == "ssh"
    assert {"cuda.driver", "kernel", "os"} <= set(comps)
    assert show[0]["host"]["driver"] == DRIVER
    assert show[0]["hardware"]["product"]["name"] == "ipmi_sim node"
    r, show = inv.json("inventory", "show", "rf3")
    comps = {c["key"]: c for c in show[0]["components"]}
    assert comps["bmc"]["source"] == "redfish"
    assert comps["gpu3.firmware"]["id"] == "HGX_FW_GPU_SXM_3"
    assert integrity(inv) == "ok"


def test_sel_counts_only_new_entries(inv, lab):
    first = sweep(inv, "ipmi[1-2]")
    # Every entry is new at the first sweep.
    assert first["ipmi1"]["sel"]["new"]["info"] == first["ipmi1"]["sel"]["total"]
    # The SEL clock counts whole seconds: an hour ahead, the new entry is surely the newest.
    ipmisensors.set_sel_time(lab.ipmi, [1], time.strftime("%m/%d/%Y - %H:%M:%S",
                                                          time.localtime(time.time() + 3600)))
    ipmisensors.add_event(lab.ipmi, 1, "PSU2 Status", ipmisensors.PSU_FAILED)
    second = sweep(inv, "ipmi[1-2]")
    assert second["ipmi1"]["sel"]["total"] == first["ipmi1"]["sel"]["total"] + 1
    assert second["ipmi1"]["sel"]["new"] == {"info": 0, "warning": 0, "critical": 1}, second
    assert second["ipmi2"]["sel"]["new"] == {"info": 0, "warning": 0, "critical": 0}
    third = sweep(inv, "ipmi[1-2]")
    assert third["ipmi1"]["sel"]["new"] == {"info": 0, "warning": 0, "critical": 0}


def test_partial_and_failed_nodes_are_stored(inv, lab):
    extra = [f"nobmc,,auto,{lab.ssh.spec(1)},odd",           # SSH only: ok
             f"deadbmc,{IPMI_PREFIX}.250,ipmi,{lab.ssh.spec(2)},odd",  # BMC gone, host fine
             f"nothing,{IPMI_PREFIX}.251,ipmi,,odd"]          # nothing answers
    r = inv.run("nodes", "import", "-", input="name,bmc,protocol,ssh,groups\n" + "\n".join(extra) + "\n")
    assert r.returncode == 0, r.stderr
    # the live nodes finish in it: under Valgrind on a busy machine 6 s was not enough
    r, data = inv.json("sweep", "@odd", "ipmi1", "--timeout", deadline(6), "--retries", "0")
    assert r.returncode == 1, r.stderr
    nodes = {o["node"]: o for o in data}
    assert nodes["nobmc"]["status"] == "ok" and nodes["nobmc"]["ok"] is True
    assert nodes["ipmi1"]["status"] == "ok", nodes["ipmi1"]
    dead = nodes["deadbmc"]
    assert dead["status"] == "partial" and dead["ok"] is False
    assert [(e["op"], e["kind"]) for e in dead["errors"]] == [("bmc", "timeout")], dead
    assert nodes["nothing"]["status"] == "failed"
    assert nodes["nothing"]["error"]["kind"] == "timeout"
    # Stored all the same, with the error kinds.
    rows = {r["node"]: r for r in inv.sql("SELECT node, status, errors FROM sweep_nodes")}
    assert rows["deadbmc"]["status"] == "partial"
    assert json.loads(rows["deadbmc"]["errors"])[0]["kind"] == "timeout"
    assert rows["nothing"]["status"] == "failed"
    r, show = inv.json("inventory", "show", "deadbmc")
    assert {c["source"] for c in show[0]["components"]} == {"ssh"}
    # A failed node is not compared; a partial one only on what was read.
    data = drift(inv, "@odd", "ipmi1", "--by", "fleet", rc=1)
    by = {o["node"]: o for o in data}
    assert by["nothing"]["ok"] is False
    assert all(d["source"] == "ssh" or d["component"] == "bmc" for d in by["deadbmc"]["drift"])


def test_quiet_prints_only_problems(inv, lab):
    r = inv.run("sweep", "--quiet", "--timeout", SLOW, "ipmi1", "rf1")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    r = inv.run("nodes", "add", "ghost", "--bmc", f"{IPMI_PREFIX}.252", "--protocol", "ipmi")
    assert r.returncode == 0, r.stderr
    r = inv.run("sweep", "-q", "--timeout", "2", "--retries", "0", "ipmi1", "ghost")
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines and all(line.startswith("gpufleet: ghost: failed: bmc timeout") for line in lines), lines


def run_on_tty(gf, *args):
    """Run gpufleet with its standard error on a terminal (a pty); returns (rc, stdout, stderr)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([GPUFLEET, *args], env=gf.env(), stdout=subprocess.PIPE,
                             stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        slave = None
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        out = p.stdout.read()
        p.stdout.close()
        rc = p.wait(timeout=120)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    return rc, out.decode(), b"".join(chunks).decode()


def test_progress_on_a_terminal_and_never_when_quiet(inv, lab):
    # Eight nodes, standard error a terminal: the progress line counts them, and is erased.
    rc, out, err = run_on_tty(inv, "sweep", "--timeout", SLOW, "@all")
    assert rc == 0, err
    assert "\r8/8 done, 0 failed\r\033[K" in err, repr(err)  # drawn, then erased
    assert "sweep 1 stored: 8 nodes, 8 ok" in err, repr(err)
    assert "ipmi1" in out and "done" not in out  # nothing of it on standard output
    # --quiet on a terminal: a healthy sweep prints nothing at all, not even progress.
    rc, out, err = run_on_tty(inv, "sweep", "--quiet", "--timeout", SLOW, "@all")
    assert rc == 0 and out == "" and err == "", (rc, out, repr(err))
    rc, out, err = run_on_tty(inv, "sweep", "--no-progress", "--timeout", SLOW, "@all")
    assert rc == 0 and "done" not in err, repr(err)
    # Not a terminal: no progress either.
    r = inv.run("sweep", "--timeout", SLOW, "@all")
    assert r.returncode == 0 and "done" not in r.stderr, r.stderr
    assert inv.sql("SELECT count(*) AS n FROM sweeps") == [{"n": 4}]


def test_ctrl_c_stores_nothing(inv, lab):
    """Ctrl-C while a BMC hangs: exit 130, no sweep (not a sweep of failures), the lock free."""
    lab.ipmi.pause(4)
    try:
        p = subprocess.Popen([GPUFLEET, "-v", "sweep", "--timeout", "60", "--retries", "0",
                              "ipmi1", "ipmi4"], env=inv.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        # -v prints a line per node as it finishes: ipmi1 done means the fan-out runs.
        seen = []
        for line in p.stderr:
            seen.append(line)
            if line.startswith("gpufleet: ipmi1: ok"):
                break
        else:
            raise AssertionError(f"ipmi1 never finished: {seen}")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 130, (p.returncode, err)
        assert "interrupted" in err and "the sweep was not stored" in err, err
        assert out == ""
    finally:
        lab.ipmi.resume(4)
    assert inv.sql("SELECT count(*) AS n FROM sweeps") == [{"n": 0}]
    assert inv.sql("SELECT count(*) AS n FROM sweep_nodes") == [{"n": 0}]
    sweep(inv, "ipmi1", "--wait-lock", "0")


# ---- the change, found by drift and diff ------------------------------------------

def test_drift_and_diff_find_exactly_what_changed(inv, lab, tmp_path):
    before = sweep(inv)
    rf_bmc = {o["node"]: o for o in drift(inv)}  # nothing drifts yet
    assert all(o["drift"] == [] for o in rf_bmc.values()), rf_bmc
    r, show = inv.json("inventory", "show", "rf1")
    rf_versions = {c["key"]: c["version"] for c in show[0]["components"]}
    dgx = before["rf1"]["model"]
    r = inv.run("inventory", "export", "--baseline", "ipmi1")
    assert r.returncode == 0, r.stderr
    baseline_ipmi = tmp_path / "ipmi1.json"
    baseline_ipmi.write_text(r.stdout)

    # A date between the sweeps: the first began before now, the second begins after.
    # With its fraction: sweeps start at fractions of a second, and a date cut to the
    # second (before this, in CI) can fall before the first sweep's start.
    now = time.time()
    mid = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%06dZ" % int(now % 1 * 1e6)
    # Change three peers: an IPMI BMC flashed, a Redfish BMC flashed, a host's driver.
    try:
        lab.flash_ipmi(3, "1.80")
        lab.rf.override(2, bmc_firmware="24.01.05")
        lab.set_driver(2, DRIVER, NEW_DRIVER)   # the host of ipmi2
        sweep(inv)

        want = {("ipmi3", "bmc"): ("1.00", "1.80", "ipmi"),
                ("rf2", "bmc"): (rf_versions["bmc"], "24.01.05", "redfish"),
                ("ipmi2", "driver"): (DRIVER, NEW_DRIVER, "ssh")}
        assert items(drift(inv)) == want
        assert items(drift(inv, "--majority", "--by", "group")) == want
        assert items(drift(inv, "--since", "1")) == want
        assert items(drift(inv, "--since", mid)) == want  # a date between the sweeps
        assert items(drift(inv, "--since", "2")) == {}    # nothing since the last

        # A baseline file: globs, per model.
        bl = tmp_path / "baseline.json"
        bl.write_text(json.dumps({
            "components": {"driver": DRIVER, "gpu*.vbios": "96.00.A5.00.01"},
            "models": {"ipmi_sim node": {"bmc": "1.00"},
                       dgx: {"bmc": rf_versions["bmc"], "gpu*.firmware": rf_versions["gpu1.firmware"]}},
        }))
        assert items(drift(inv, "--baseline", str(bl))) == want
        # The baseline that export --baseline wrote from a node, and the node itself.
        want_ipmi = {k: v for k, v in want.items() if k[0].startswith("ipmi")}
        assert items(drift(inv, "--baseline", str(baseline_ipmi), "@ipmi")) == want_ipmi
        assert items(drift(inv, "--baseline-node", "ipmi1", "@ipmi")) == want_ipmi
        # Filters.
        assert items(drift(inv, "--component", "bmc")) == {k: v for k, v in want.items()
                                                          if k[1] == "bmc"}
        assert items(drift(inv, "--ignore", "bmc,driver")) == {}

        r = inv.run("drift", "--fail-on-drift")
        assert r.returncode == 3, r.stderr
        assert "3 of 8 nodes differ on 2 components" in r.stdout
        assert "ipmi3" in r.stdout and "1.80" in r.stdout
        r = inv.run("drift", "--fail-on-drift", "--component", "cpld*")
        assert r.returncode == 0 and "no drift" in r.stdout, r.stdout
        # A table of a filter: only the nodes it matched, the others in the summary's count.
        r = inv.run("drift", "--component", "bmc")
        bmc = sorted({k[0] for k in want if k[1] == "bmc"})
        lines = r.stdout.splitlines()
        assert lines[0].split()[0] == "NODE", lines
        assert sorted({x.split()[0] for x in lines[1:-1]}) == bmc, r.stdout
        assert f"{len(bmc)} of 8 nodes differ on 1 component" in lines[-1], r.stdout

        r, data = inv.json("diff")
        assert r.returncode == 0, r.stderr
        assert diff_items(data) == {k: (v[0], v[1], "changed") for k, v in want.items()}
        assert all(o["change"] == "changed" and o["sweeps"] == [1, 2] for o in data)
        r, data = inv.json("diff", "1", "2", "--component", "driver")
        assert diff_items(data) == {("ipmi2", "driver"): (DRIVER, NEW_DRIVER, "changed")}
        r = inv.run("diff")
        assert "sweep 1 -> 2: 0 nodes added, 0 removed, 3 changed (3 component changes)" in r.stdout

        r, hist = inv.json("inventory", "history", "ipmi3", "--component", "bmc")
        assert [(h["sweep"], [(c["before"], c["after"]) for c in h["changes"]]) for h in hist] == \
            [(1, [(None, "1.00")]), (2, [("1.00", "1.80")])]
    finally:
        lab.set_driver(2, NEW_DRIVER, DRIVER)
        lab.rf.override(2, bmc_firmware=rf_versions["bmc"])
        lab.flash_ipmi(3, None)


# ---- the store ----------------------------------------------------------------------

def export(gf, *args):
    r = gf.run("inventory", "export", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def dump(path):
    con = sqlite3.connect(path)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def test_export_import_round_trip_and_idempotence(inv, lab, tmp_path):
    sweep(inv, "ipmi[1-2]", "rf1")
    sweep(inv, "ipmi[1-2]")
    text = export(inv)
    assert len(text.splitlines()) == 5
    (tmp_path / "site.ndjson").write_text(text)
    other = type(inv)(str(tmp_path))
    other.db = str(tmp_path / "other.db")
    r = other.run("inventory", "import", str(tmp_path / "site.ndjson"))
    assert r.returncode == 0, r.stderr
    assert "2 sweeps (2 new), 5 node rows (5 new, 0 already here)" in r.stdout
    # Nothing lost: the other DB exports the same bytes, host facts and all.
    assert export(other) == text
    assert json.loads(export(other, "--format", "json")) == [json.loads(line) for line in text.splitlines()]
    before = dump(other.db)
    r = other.run("inventory", "import", str(tmp_path / "site.ndjson"))
    assert r.returncode == 0 and "(0 new)" in r.stdout, r.stdout
    assert dump(other.db) == before
    # The JSON form imports too, and is as much a no-op the second time.
    (tmp_path / "site.json").write_text(export(inv, "--format", "json"))
    r = other.run("--format", "json", "inventory", "import", str(tmp_path / "site.json"))
    assert json.loads(r.stdout) == {"sweeps": 2, "sweeps_new": 0, "rows_new": 0, "rows_present": 5}
    assert dump(other.db) == before
    # A bad file changes nothing either.
    (tmp_path / "bad.ndjson").write_text(text + '{"node": "x", "status": "maybe", "time": "2026-01-01"}\n')
    r = other.run("inventory", "import", str(tmp_path / "bad.ndjson"))
    assert r.returncode == 2 and "line 6" in r.stderr and "nothing was imported" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr  # one line says what and that nothing changed
    assert dump(other.db) == before
    # Blank lines before the first record count: the line named is the file's own.
    (tmp_path / "bad2.ndjson").write_text("\n \n" + text + '{"node": "x", "status": "maybe"}\n')
    r = other.run("inventory", "import", str(tmp_path / "bad2.ndjson"))
    assert r.returncode == 2 and "line 8:" in r.stderr, r.stderr
    (tmp_path / "bad.json").write_text("\n\n[\n{x}]\n")
    r = other.run("inventory", "import", str(tmp_path / "bad.json"))
    assert r.returncode == 2 and "(line 4:" in r.stderr, r.stderr
    assert dump(other.db) == before


def test_prune(inv, lab):
    for _ in range(3):
        sweep(inv, "ipmi1")
    r = inv.run("inventory", "prune", "--keep", "1")
    assert r.returncode == 0 and "pruned 2 sweeps, 1 left" in r.stdout, r.stdout
    assert inv.sql("SELECT count(*) AS n FROM sweeps") == [{"n": 1}]
    r = inv.run("inventory", "prune", "--older-than", "0s")
    assert r.returncode == 0 and "pruned 1 sweep, 0 left" in r.stdout, r.stdout
    assert inv.sql("SELECT (SELECT count(*) FROM csets) + (SELECT count(*) FROM blobs)"
                   " + (SELECT count(*) FROM node_last) AS n") == [{"n": 0}]
    r = inv.run("inventory", "prune")
    assert r.returncode == 2


def gen_export(path, nodes, sweeps=1, first=1):
    """A synthetic export: @sweeps sweeps of @nodes nodes, 20 components each."""
    with open(path, "w") as f:
        for s in range(first, first + sweeps):
            for i in range(nodes):
                comps = [{"key": f"gpu{g}.firmware", "version": f"96.00.{s}", "source": "redfish",
                          "id": f"GPU{g}", "name": f"GPU {g}", "kind": "gpu"} for g in range(8)]
                comps += [{"key": f"nic{k}", "version": f"22.{i % 3}", "source": "redfish",
                           "id": f"NIC{k}", "name": "NIC", "kind": "nic"} for k in range(11)]
                comps.append({"key": "driver", "version": "550", "source": "ssh", "id": None,
                              "name": None, "kind": "driver"})
                f.write(json.dumps({"sweep": s, "sweep_uid": f"synthetic-{s}",
                                    "time": f"2026-01-{s:02d}T00:00:00.000Z", "node": f"n{i:05d}",
                                    "status": "ok", "errors": [], "protocol": "redfish",
                                    "model": "M", "components": comps,
                                    "host": {"driver": "550", "n": i}}) + "\n")


def test_kill_9_never_leaves_a_partial_sweep(inv, lab, tmp_path):
    """kill -9 at random points of an import (one long write transaction) and of
    real sweeps: the database is always intact and holds whole sweeps only."""
    big = tmp_path / "big.ndjson"
    gen_export(big, 3000, sweeps=1, first=1)
    t0 = time.monotonic()
    r = inv.run("--db", str(tmp_path / "timing.db"), "inventory", "import", str(big))
    assert r.returncode == 0, r.stderr
    took = time.monotonic() - t0
    rng = random.Random(1234)
    killed = done = 0
    text = big.read_text()
    for k in range(12):
        # Each round a sweep this database does not hold yet: a real write every time.
        path = tmp_path / f"round{k}.ndjson"
        path.write_text(text.replace("synthetic-1", f"synthetic-{k + 100}"))
        p = subprocess.Popen([GPUFLEET, "inventory", "import", str(path)], env=inv.env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, took))
        p.send_signal(signal.SIGKILL)
        if p.wait() == -signal.SIGKILL:
            killed += 1
        else:
            done += 1
        assert integrity(inv) == "ok"
        rows = inv.sql("SELECT s.id, s.nodes, (SELECT count(*) FROM sweep_nodes WHERE sweep = s.id)"
                       " AS stored FROM sweeps s")
        assert all(r["nodes"] == r["stored"] == 3000 for r in rows), rows
        assert len(rows) <= done + killed and len(rows) >= done
    assert killed >= 4, killed  # most kills landed while it ran
    for k in range(4):
        p = subprocess.Popen([GPUFLEET, "sweep", "--timeout", SLOW, "-q", "@all"], env=inv.env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 2.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert integrity(inv) == "ok"
        rows = inv.sql("SELECT s.nodes, (SELECT count(*) FROM sweep_nodes WHERE sweep = s.id)"
                       " AS stored FROM sweeps s WHERE s.imported IS NULL")
        assert all(r["nodes"] == r["stored"] == 2 * N for r in rows), rows
    # The lock of a killed sweep is free again.
    sweep(inv, "ipmi1", "--wait-lock", "0")


def test_two_sweeps_at_once(inv, lab):
    lab.ipmi.pause(4)  # ipmi4 answers nothing: the first sweep holds the lock for a while
    try:
        a = subprocess.Popen([GPUFLEET, "sweep", "--timeout", "4", "--retries", "0", "-q",
                              "ipmi[1,4]"], env=inv.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        lock = inv.db + ".sweep-lock"
        until = time.monotonic() + 20
        while time.monotonic() < until:
            if os.path.exists(lock) and open(lock).read().strip() == str(a.pid):
                break
            time.sleep(0.02)
        else:
            raise AssertionError("the first sweep never took the lock")
        r = inv.run("sweep", "--timeout", SLOW, "ipmi2")
        assert r.returncode == 1
        assert f"another sweep (pid {a.pid}) holds lock" in r.stderr, r.stderr
        assert r.stdout == ""
        r = inv.run("sweep", "--timeout", SLOW, "--wait-lock", "60", "ipmi2")
        assert r.returncode == 0, r.stderr
        out, err = a.communicate(timeout=60)
        assert a.returncode == 1, err  # ipmi4 failed
    finally:
        lab.ipmi.resume(4)
    rows = inv.sql("SELECT id, nodes, started, finished FROM sweeps ORDER BY id")
    assert [r["nodes"] for r in rows] == [2, 1]
    assert rows[1]["started"] >= rows[0]["finished"] - 0.001  # the second waited for the first
    assert integrity(inv) == "ok"


# ---- migrations -------------------------------------------------------------------------

V1 = """
CREATE TABLE nodes (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL, bmc TEXT,
  bmc_port INTEGER NOT NULL DEFAULT 0, protocol TEXT NOT NULL, ssh TEXT, profile TEXT, added REAL);
CREATE TABLE node_groups (node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  grp TEXT NOT NULL, PRIMARY KEY (node_id, grp)) WITHOUT ROWID;
CREATE INDEX node_groups_grp ON node_groups(grp);
CREATE TABLE audit (id INTEGER PRIMARY KEY, time REAL NOT NULL, user TEXT, verb TEXT NOT NULL,
  node TEXT, result TEXT, detail TEXT);
CREATE INDEX audit_time ON audit(time);
INSERT INTO audit (time, verb, node, result) VALUES (1, 'power on', 'ipmi1', 'ok');
PRAGMA user_version = 1;
"""
V2 = """
CREATE TABLE tls_pins (node TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, first_seen REAL NOT NULL);
PRAGMA user_version = 2;
"""


# Version 6 listed the sources of components in a CHECK; version 7 takes any (they are data).
# (The columns of later versions go too, so that their steps run again.)
LATER = """
ALTER TABLE sweep_nodes DROP COLUMN leaks;
ALTER TABLE rollouts DROP COLUMN holder_pid;
ALTER TABLE rollouts DROP COLUMN holder_start;
ALTER TABLE rollouts DROP COLUMN holder_boot;
"""
V6_COMPONENTS = LATER + """
DROP TABLE IF EXISTS rollout_images;
CREATE TABLE components_v6 (cset INTEGER NOT NULL REFERENCES csets(id) ON DELETE CASCADE,
  key TEXT NOT NULL, version TEXT,
  source TEXT NOT NULL CHECK (source IN ('ipmi', 'redfish', 'ssh')),
  raw_id TEXT, name TEXT, kind TEXT, PRIMARY KEY (cset, key)) WITHOUT ROWID;
INSERT INTO components_v6 SELECT cset, key, version, source, raw_id, name, kind FROM components;
DROP TABLE components;
ALTER TABLE components_v6 RENAME TO components;
PRAGMA user_version = 6;
"""
COMPONENTS = "SELECT cset, key, version, source, raw_id, name, kind FROM components ORDER BY 1, 2"
# Version 7 kept no record of a rollout's image files; version 8 does (rollout_images).
V7_ROLLOUT = LATER + """
DROP TABLE rollout_images;
INSERT INTO rollouts (id, started, user, state, catalog_path, catalog, options)
  VALUES (1, 1, 'u', 'stopped', '/nowhere/c.json', '{"images": []}', '{}');
INSERT INTO rollout_nodes VALUES (1, 'ipmi1', 0, 0, 'skipped', NULL, NULL, 1);
PRAGMA user_version = 7;
"""


@pytest.mark.parametrize("version", [0, 1, 2, 6, 7, 10])
def test_migration_from_every_earlier_schema(gf, lab, version):
    if version == 10:
        # Version 10 kept no leak detectors: its sweeps load and export without them.
        gf.write_creds(lab.creds())
        assert gf.run("nodes", "add", "ipmi1", "--bmc", lab.ipmi.addr(1), "--protocol",
                      "ipmi").returncode == 0
        assert gf.run("sweep", "--timeout", SLOW, "ipmi1").returncode == 0
        with sqlite3.connect(gf.db) as con:
            con.executescript("ALTER TABLE sweep_nodes DROP COLUMN leaks; PRAGMA user_version = 10;")
        con.close()
        r, data = gf.json("inventory", "show", "ipmi1")
        assert r.returncode == 0, r.stderr
        assert data[0]["leaks"] == []
        assert gf.sql("PRAGMA user_version")[0]["user_version"] >= 11
        assert gf.sql("SELECT leaks FROM sweep_nodes") == [{"leaks": None}]
        r = gf.run("metrics")
        assert r.returncode == 0 and "gpufleet_leak_state{" not in r.stdout, r.stderr
        assert integrity(gf) == "ok"
        return
    if version == 7:
        gf.write_creds(lab.creds())
        r = gf.run("nodes", "add", "ipmi1", "--bmc", lab.ipmi.addr(1), "--protocol", "ipmi")
        assert r.returncode == 0, r.stderr
        assert gf.sql("PRAGMA user_version")[0]["user_version"] >= 8
        con = sqlite3.connect(gf.db)
        con.executescript(V7_ROLLOUT)
        con.close()
        r, data = gf.json("update", "status")
        assert r.returncode == 0, r.stderr
        assert data[0]["node"] == "ipmi1" and data[0]["state"] == "skipped", data
        assert gf.sql("PRAGMA user_version")[0]["user_version"] >= 8
        assert gf.sql("SELECT count(*) AS n FROM rollout_images") == [{"n": 0}]
        assert integrity(gf) == "ok"
        return
    if version == 6:
        gf.write_creds(lab.creds())
        r = gf.run("nodes", "add", "ipmi1", "--bmc", lab.ipmi.addr(1), "--protocol", "ipmi")
        assert r.returncode == 0, r.stderr
        r, data = gf.json("sweep", "--timeout", SLOW, "ipmi1")
        assert r.returncode == 0, r.stderr
        before = gf.sql(COMPONENTS)
        assert before and {c["source"] for c in before} == {"ipmi"}
        assert gf.sql("PRAGMA user_version")[0]["user_version"] >= 7
        con = sqlite3.connect(gf.db)
        con.executescript(V6_COMPONENTS)
        con.close()
        assert "CHECK" in gf.sql("SELECT sql FROM sqlite_master WHERE name = 'components'")[0]["sql"]
        r, data = gf.json("sweep", "--timeout", SLOW, "ipmi1")
        assert r.returncode == 0, r.stderr
        assert data[0]["sweep"] == 2
        assert gf.sql("PRAGMA user_version")[0]["user_version"] >= 7
        assert "CHECK" not in gf.sql("SELECT sql FROM sqlite_master WHERE name = 'components'")[0]["sql"]
        after = gf.sql(COMPONENTS)
        assert all(c in after for c in before), (before, after)
        r = gf.run("drift", "--since", "1")
        assert r.returncode == 0, r.stderr
        assert integrity(gf) == "ok"
        return
    con = sqlite3.connect(gf.db)
    if version == 0:
        con.executescript("CREATE TABLE notes (x); INSERT INTO notes VALUES ('kept');")
    if version >= 1:
        con.executescript(V1)
        con.execute("INSERT INTO nodes (name, bmc, protocol) VALUES (?, ?, 'ipmi')",
                    ("ipmi1", lab.ipmi.addr(1)))
    if version >= 2:
        con.executescript(V2)
        con.execute("INSERT INTO tls_pins VALUES ('rf1', 'ab', 1)")
    con.commit()
    con.close()
    os.chmod(gf.db, 0o600)
    gf.write_creds(lab.creds())
    if version == 0:
        r = gf.run("nodes", "add", "ipmi1", "--bmc", lab.ipmi.addr(1), "--protocol", "ipmi")
        assert r.returncode == 0, r.stderr
    r, data = gf.json("sweep", "--timeout", SLOW, "ipmi1")
    assert r.returncode == 0, r.stderr
    assert data[0]["sweep"] == 1
    assert gf.sql("PRAGMA user_version")[0]["user_version"] >= 3
    if version == 0:
        assert gf.sql("SELECT x FROM notes") == [{"x": "kept"}]
    if version >= 1:
        assert gf.sql("SELECT count(*) AS n FROM audit") == [{"n": 1}]
    if version >= 2:
        assert gf.sql("SELECT fingerprint FROM tls_pins") == [{"fingerprint": "ab"}]
    assert integrity(gf) == "ok"


def test_usage_errors(inv):
    for args, msg in ((["drift", "--baseline", "x", "--since", "1"], "give one of"),
                      (["drift", "--since", "soon"], "is not a sweep number"),
                      (["drift", "--by", "rack"], "unknown --by"),
                      (["diff", "1", "2", "3"], "at most two"),
                      (["diff"], "needs two sweeps"),
                      (["inventory", "show"], "takes one NODE"),
                      (["inventory", "frob"], "unknown subverb"),
                      (["inventory", "export", "--format", "csv"], "ndjson"),
                      (["drift", "--baseline", "/nonexistent.json"], "cannot read")):
        r = inv.run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert msg in r.stderr, (args, r.stderr)
