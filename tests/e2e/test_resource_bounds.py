"""No OOM and no CPU blow-up (issue 10, point 5), through the real binary against
peers that misbehave on purpose: a Redfish BMC that pages big
expanded members forever meets its node's memory budget; 20,000 firmware
members sharing one key are made unique in linear time. Each run is measured
as a child of the test (os.wait4: peak RSS and CPU seconds of the binary)."""
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register_redfish, started_lab

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import sshlab  # noqa: E402
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "lab")
# BMCs on .201-.204. 201, 202: good ones. 203: pages 8 MiB of expanded members
# forever when told to. 204: a FirmwareInventory of 20,000 members sharing one Id
# and Name. Hosts (SSH) on .1-.3.
VENDORS = ["supermicro", "dgx", "hpe", "hpe"]
FIRST = 201
GOOD = (201, 202)
BLOAT = 203
SAME = 204
FW_INV = "/redfish/v1/UpdateService/FirmwareInventory"
BUDGET_MIB = 256        # the documented budget of one node's Redfish session in one run
# Peak RSS allowed to the whole process: the budget held, one answer being read, and
# the sanitizers' shadow and quarantine (ASan); without the budget it grows by
# gigabytes, so the run is stopped as soon as it passes this.
RSS_LIMIT_MIB = 1280
SAME_COUNT = 20000
# CPU seconds allowed for `firmware` over 20,000 members (today's: about 0.3 s,
# 0.5 s under ASan; the quadratic de-duplication took 29 s).
SAME_CPU_S = 2.0


@dataclass
class Measured:
    rc: int
    stdout: str
    stderr: str
    wall: float
    cpu: float          # user + system seconds of the binary
    maxrss_mib: float   # its peak RSS
    killed: bool        # stopped for passing the RSS limit


def measured(gf, *args, rss_limit_mib=None, timeout=120):
    """Run the binary as a child, polling its RSS (stopped past @rss_limit_mib)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errf:
        t0 = time.monotonic()
        p = subprocess.Popen([GPUFLEET, *args], stdout=out, stderr=errf, env=gf.env())
        killed = False
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() - t0 > timeout:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                raise AssertionError(f"{args} ran past {timeout} s")
            if rss_limit_mib and rss_mib(p.pid) > rss_limit_mib:
                killed = True
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall = time.monotonic() - t0
        out.seek(0)
        errf.seek(0)
        print(f"measured {args[2:4]}: wall {wall:.2f} s, cpu {ru.ru_utime + ru.ru_stime:.2f} s, "
              f"peak RSS {ru.ru_maxrss / 1024:.0f} MiB")
        return Measured(p.returncode, out.read().decode(), errf.read().decode(), wall,
                        ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, killed)


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0


def json_of(m):
    import json
    try:
        return json.loads(m.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"not JSON (rc {m.rc}): {m.stdout[:300]!r} {m.stderr[-600:]!r}")


@pytest.fixture(scope="module")
def lab():
    with tempfile.TemporaryDirectory(prefix="gf-bounds-") as workdir, \
            RedfishLab(workdir, prefix=PREFIX, count=len(VENDORS), first=FIRST, vendors=VENDORS,
                       user="admin", password=PASSWORD,
                       overrides={SAME: {"page_size": SAME_COUNT + 1}}) as lab:
        coll = lab.resource(SAME, FW_INV)
        coll["Members"] = [{"@odata.id": f"{FW_INV}/M{k}", "Id": "Firmware", "Name": "Firmware",
                            "Version": f"1.{k % 7}"} for k in range(SAME_COUNT)]
        coll["Members@odata.count"] = SAME_COUNT
        lab.put_resource(SAME, FW_INV, coll)
        yield lab


@pytest.fixture
def rf(gf, lab):
    for i in lab.indices():
        lab.clear(i)
    register_redfish(gf, lab)
    yield gf
    lab.override(BLOAT, faults={})


# ---- a: a per-node memory budget for Redfish ------------------------------------

def bloat_pages(lab):
    return [e for e in lab.access_log(BLOAT) if e["path"].split("?")[0] == FW_INV]


def test_endless_big_pages_meet_the_node_budget(rf, lab):
    lab.override(BLOAT, faults={FW_INV: "bloat"})
    # The deadline far off: what stops the node is the budget (its message below),
    # however long a loaded machine takes to serve 256 MiB of pages.
    m = measured(rf, "--format", "json", "firmware", "rf201", "rf202", f"rf{BLOAT}",
                 "--timeout", "300", "--retries", "0", rss_limit_mib=RSS_LIMIT_MIB, timeout=400)
    assert not m.killed, (f"peak RSS passed {RSS_LIMIT_MIB} MiB after {len(bloat_pages(lab))} "
                          f"pages of 8 MiB", m.stderr[-400:])
    assert m.maxrss_mib < RSS_LIMIT_MIB, m.maxrss_mib
    data = {o["node"]: o for o in json_of(m)}
    assert m.rc == 1, (m.rc, m.stderr[-400:])
    assert data["rf201"]["ok"] is True and data["rf202"]["ok"] is True, (data["rf201"], data["rf202"])
    bad = data[f"rf{BLOAT}"]
    assert bad["ok"] is False and bad["error"]["kind"] == "protocol", bad
    assert f"more than {BUDGET_MIB} MiB" in bad["error"]["message"], bad["error"]
    # What the BMC saw: the walk stopped at the budget, not at the page or member caps.
    pages = len(bloat_pages(lab))
    assert BUDGET_MIB // 8 - 2 <= pages <= BUDGET_MIB // 8 + 2, pages


def test_sweep_stores_the_budget_error_and_goes_on(rf, lab):
    lab.override(BLOAT, faults={FW_INV: "bloat"})
    m = measured(rf, "--format", "json", "sweep", "rf201", f"rf{BLOAT}", "--timeout", "300",
                 "--retries", "0", rss_limit_mib=RSS_LIMIT_MIB, timeout=400)
    assert not m.killed and m.maxrss_mib < RSS_LIMIT_MIB, (m.maxrss_mib, m.stderr[-400:])
    assert m.rc == 1, (m.rc, m.stderr[-400:])
    nodes = {o["node"]: o for o in json_of(m)}
    assert nodes["rf201"]["status"] == "ok", nodes["rf201"]
    bad = nodes[f"rf{BLOAT}"]
    assert bad["status"] in ("partial", "failed"), bad
    errs = {e["op"]: e for e in bad["errors"]}
    assert errs["firmware"]["kind"] == "protocol", errs
    assert f"more than {BUDGET_MIB} MiB" in errs["firmware"]["message"], errs
    r, show = rf.json("inventory", "show", f"rf{BLOAT}")
    assert r.returncode == 0, r.stderr
    assert show[0]["collected"]["firmware"] is False, show[0]["collected"]


# ---- b: firmware members sharing one key -----------------------------------------

def test_twenty_thousand_members_sharing_one_key(rf, lab):
    m = measured(rf, "--format", "json", "firmware", f"rf{SAME}", "--timeout", "60")
    data = json_of(m)
    assert m.rc == 0 and data[0]["ok"] is True, (m.rc, m.stderr[-400:])
    comps = data[0]["components"]
    keys = [c["key"] for c in comps]
    assert len(comps) == SAME_COUNT and len(set(keys)) == SAME_COUNT
    # The keys as they always were: the plain one, then the member's id, then a count.
    assert keys[:4] == ["other.firmware", "other.firmware.firmware", "other.firmware.firmware~2",
                        "other.firmware.firmware~3"], keys[:4]
    assert keys[-1] == f"other.firmware.firmware~{SAME_COUNT - 1}", keys[-1]
    assert [c["version"] for c in comps[:8]] == [f"1.{k % 7}" for k in range(8)]
    assert m.cpu < SAME_CPU_S, f"{m.cpu:.2f} CPU seconds for {SAME_COUNT} members"


# ---- c: inventory import, rename chains -----------------------------------------

CHAIN = 5000
CHAIN_CPU_S = 10.0   # today's: about 1 s, 3 s under ASan; the rounds of sorting took hours


def test_import_of_a_long_rename_chain(gf, tmp_path):
    """Keys "x", "x", "x#2", "x#2#2", ...: renaming the second "x" to "x#2" meets the
    next key, which becomes "x#2#2", and so on down the chain, 5,000 links."""
    import json
    comps = [{"key": "x" + "#2" * max(0, j - 1), "version": str(j), "source": "redfish",
              "id": f"c{j}", "name": None, "kind": "other"} for j in range(CHAIN)]
    path = tmp_path / "chain.ndjson"
    path.write_text(json.dumps({"sweep": 1, "sweep_uid": "chain-1", "time": "2026-01-01T00:00:00.000Z",
                                "node": "n1", "status": "ok", "errors": [], "protocol": "redfish",
                                "model": "M", "components": comps, "host": None}) + "\n")
    m = measured(gf, "inventory", "import", str(path), timeout=300)
    assert m.rc == 0, m.stderr[-400:]
    assert m.cpu < CHAIN_CPU_S, f"{m.cpu:.2f} CPU seconds for a chain of {CHAIN}"
    r = gf.run("--format", "json", "inventory", "export")
    assert r.returncode == 0, r.stderr
    got = {c["id"]: c["key"] for c in json.loads(r.stdout)[0]["components"]}
    # Each link one "#2" longer than it came: what the rounds of renaming always gave.
    assert got == {f"c{j}": "x" + "#2" * j for j in range(CHAIN)}


# ---- d: SSH, a command's output and the GPU rows -------------------------------

# 1: a good host. 2: nvidia-smi --query-gpu prints its row without end.
# 3: nvidia-smi lists 20,000 GPUs (3 MiB, under the bound on output).
HOSTS = [dict(profile="h100"), dict(profile="h100", smi_flood=True),
         dict(profile="h100", gpu_rows=20000)]
GOOD_HOST, FLOOD, MANY = 1, 2, 3
# Peak RSS of `host` over the three (150 MiB in a debug build, libssh2's buffers
# included; more under ASan): what the flood and 20,000 rows may not push past.
HOST_RSS_LIMIT_MIB = 800


@pytest.fixture(scope="module")
def hosts():
    assert os.access(sshlab.SSHD, os.X_OK), "sshd is not installed (tests/install-deps.sh)"
    yield from started_lab("gf-bounds-ssh-", lambda d: sshlab.SshLab(d, nodes=HOSTS, prefix=PREFIX))


@pytest.fixture
def hg(gf, hosts):
    gf.write_creds(f"[default]\nssh_user = {hosts.user}\nssh_key = {hosts.key}\n"
                   f"ssh_known_hosts = {hosts.known_hosts}\n")
    lines = ["name,ssh"] + [f"h{i},{hosts.spec(i)}" for i in range(1, len(HOSTS) + 1)]
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    hosts.clear_logs()
    return gf


def flood_pids(hosts):
    with open(os.path.join(hosts.node_dir(FLOOD), "flood.pids")) as f:
        return [int(x) for x in f.read().split()]


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[1].split()[0] == "Z"
    except OSError:
        return True


def test_flooding_hosts_are_stopped_at_the_bounds(hg, hosts):
    m = measured(hg, "--format", "json", "host", "h[1-3]", "--timeout", "30",
                 rss_limit_mib=HOST_RSS_LIMIT_MIB)
    assert not m.killed and m.maxrss_mib < HOST_RSS_LIMIT_MIB, (m.maxrss_mib, m.stderr[-400:])
    data = {o["node"]: o for o in json_of(m)}
    assert m.rc == 1, (m.rc, m.stderr[-400:])
    good = data[f"h{GOOD_HOST}"]
    assert good["ok"] is True and len(good["host"]["gpus"]) == 1, good
    flood = data[f"h{FLOOD}"]
    assert flood["ok"] is False and flood["error"]["kind"] == "protocol", flood
    assert "printed more than 8 MiB" in flood["error"]["message"], flood["error"]
    assert "--query-gpu" in flood["error"]["message"], flood["error"]
    many = data[f"h{MANY}"]
    assert many["ok"] is False and many["error"]["kind"] == "protocol", many
    assert "more than 256 GPUs" in many["error"]["message"], many["error"]
    # Stopped at the bound, not at the deadline: and the flooding command was ended.
    assert m.wall < 15, m.wall
    pids = flood_pids(hosts)
    assert pids
    t0 = time.monotonic()
    while not all(gone(p) for p in pids) and time.monotonic() - t0 < 5:
        time.sleep(0.05)
    assert all(gone(p) for p in pids), pids


def test_local_flood_is_stopped_too(gf, hosts):
    env = gf.env(hosts.local_env(FLOOD))
    t0 = time.monotonic()
    r = subprocess.run([GPUFLEET, "--format", "json", "host", "--local", "--timeout", "30"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert time.monotonic() - t0 < 15
    import json
    data = json.loads(r.stdout)
    assert r.returncode == 1 and data[0]["ok"] is False, (r.stderr, data)
    assert "printed more than 8 MiB" in data[0]["error"]["message"], data[0]["error"]
    assert all(gone(p) for p in flood_pids(hosts))
