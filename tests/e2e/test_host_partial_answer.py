"""A host that answers in part keeps what it answered (issue 10, point 8): the
real binary against real sshd hosts (tests/lab/sshlab.py) whose
nvidia-smi fails on purpose: with a reason no health state names ("Failed to
initialize NVML: Unknown Error", as in a container that lost its devices), and
with "Driver/library version mismatch" (a driver installed without a reboot:
the 535.161.08 module loaded, the 570.124 library installed). Each case checks
what `host` prints (JSON and table), what `sweep` stores (inventory show),
that `drift` shows the half-upgraded node, and what the hosts were asked."""
import os

import pytest

from conftest import loopback, started

import sshlab

PREFIX = loopback(__name__, "ssh")
TOOLS = dict(toolkit=("nvcc", "nvcc--version_12.5.82.txt"), ofed="ofed_info-s_23.10-3.2.2.0.txt",
             kernel="5.15.0-112-generic")
# hp1-hp3: a fleet on 535.161.08; hp4 fails unexplained; hp5 is half upgraded.
NODES = [dict(profile="h100x8-535", **TOOLS) for _ in range(3)] + [
    dict(profile="nvml-unknown", **TOOLS),
    dict(profile="driver-mismatch", **TOOLS),
]
NAMES = [f"hp{i}" for i in range(1, len(NODES) + 1)]
SLOW = "20"  # two shared CPUs: the deadline is not what is tested here


@pytest.fixture(scope="module")
def lab():
    assert os.access(sshlab.SSHD, os.X_OK), "sshd is not installed (tests/install-deps.sh)"
    with started(lambda d: sshlab.SshLab(d, nodes=NODES, prefix=PREFIX, names=NAMES),
                 "gf-host-partial-") as lab:
        yield lab


@pytest.fixture
def hp(gf, lab):
    gf.write_creds(f"[default]\nssh_user = {lab.user}\nssh_key = {lab.key}\n"
                   f"ssh_known_hosts = {lab.known_hosts}\n")
    lines = ["name,ssh"] + [f"{NAMES[i - 1]},{lab.spec(i)}" for i in range(1, lab.count + 1)]
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    lab.clear_logs()
    return gf


def by_node(data):
    return {o["node"]: o for o in data}


def kept_facts(host, want):
    """Every fact other than the GPUs is what the host answered."""
    for key in ("driver", "cuda_toolkit", "kernel", "os", "ofed", "driver_library"):
        assert host[key] == want[key], (key, host[key], want[key])


def test_host_json_keeps_what_a_failing_host_answered(hp, lab):
    r, data = hp.json("host", "hp[1-5]", "--timeout", SLOW)
    assert r.returncode == 1, r.stderr          # one node answered in part
    by = by_node(data)
    # the fleet as it should be
    for n in ("hp1", "hp2", "hp3"):
        assert by[n]["ok"] is True and by[n]["status"] == "ok", by[n]
        assert by[n]["host"]["failed"] == [] and by[n]["host"]["driver_library"] is None
        assert len(by[n]["host"]["gpus"]) == 8

    # nvidia-smi failed for a reason no health state names: partial, every other fact kept
    p = by["hp4"]
    assert p["ok"] is False and p["status"] == "partial", p
    h = p["host"]
    kept_facts(h, lab.expected(4))
    assert h["driver"] == "535.161.08"              # the loaded module, from /proc
    assert h["driver_module"] == "proprietary"
    assert h["cuda_toolkit"] == "12.5.82"
    assert h["ofed"] == "MLNX_OFED_LINUX-23.10-3.2.2.0"
    assert h["kernel"] == "5.15.0-112-generic"
    assert h["os"]
    assert h["gpus"] == []
    assert h["health"]["state"] == "unknown"
    assert h["failed"] == [{"command": "nvidia-smi --query-gpu",
                            "message": "nvidia-smi --query-gpu failed (exit 255): "
                                       "Failed to initialize NVML: Unknown Error"}], h["failed"]
    assert p["error"]["kind"] == "protocol"
    assert p["error"]["message"].startswith("answered in part: nvidia-smi --query-gpu failed")

    # the mismatch is a health state of its own, with both versions: a result, not a failure
    m = by["hp5"]
    assert m["ok"] is True and m["status"] == "ok", m
    h = m["host"]
    kept_facts(h, lab.expected(5))
    assert h["health"]["state"] == "driver-mismatch"
    assert h["health"]["detail"] == "Failed to initialize NVML: Driver/library version mismatch"
    assert h["driver"] == "535.161.08"              # kernel module, /proc/driver/nvidia/version
    assert h["driver_library"] == "570.124"         # what nvidia-smi says it loaded
    assert h["failed"] == []

    # the hosts were asked every command, the failing ones included
    for i in (4, 5):
        cmds = lab.commands(i)
        assert "cat /proc/driver/nvidia/version" in cmds, cmds
        assert any("--query-gpu=" in c for c in cmds), cmds
        assert "env LC_ALL=C ofed_info -s" in cmds, cmds


def test_host_table_says_partial_and_shows_both_versions(hp, lab):
    r = hp.run("host", "hp[3-5]", "--timeout", SLOW, "--color", "never")
    assert r.returncode == 1, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[1:] if line.strip()}
    assert set(rows) == {"hp3", "hp4", "hp5"}, r.stdout
    assert "535.161.08" in rows["hp4"] and "12.5.82" in rows["hp4"], rows["hp4"]
    assert "unknown" in rows["hp4"]
    assert "protocol: answered in part: nvidia-smi --query-gpu failed (exit 255)" in rows["hp4"]
    assert "driver-mismatch (module 535.161.08, library 570.124)" in rows["hp5"], rows["hp5"]
    assert "answered in part" not in rows["hp5"] and "answered in part" not in rows["hp3"]


def test_sweep_stores_the_partial_host_and_drift_shows_the_half_upgrade(hp, lab):
    r, data = hp.json("sweep", "hp[1-5]", "--timeout", SLOW)
    assert r.returncode == 1, r.stderr           # a partial node: 1, the sweep stored
    by = by_node(data)
    assert [by[n]["status"] for n in NAMES] == ["ok", "ok", "ok", "partial", "ok"], data
    assert by["hp4"]["errors"] == [{
        "op": "ssh", "kind": "protocol",
        "message": "answered in part: nvidia-smi --query-gpu failed (exit 255): "
                   "Failed to initialize NVML: Unknown Error (the other facts are kept)"}]

    # what the store holds, read back
    s = {}
    for n in ("hp4", "hp5"):
        r, shown = hp.json("inventory", "show", n)
        assert r.returncode == 0, r.stderr
        s[n] = shown[0] if isinstance(shown, list) else shown
    assert s["hp4"]["status"] == "partial"
    assert s["hp4"]["collected"]["host"] is True
    assert s["hp4"]["errors"][0]["op"] == "ssh"
    assert s["hp4"]["host"]["failed"][0]["command"] == "nvidia-smi --query-gpu"
    assert s["hp4"]["host"]["health"]["state"] == "unknown"
    comps = {c["key"]: c["version"] for c in s["hp4"]["components"]}
    assert comps["driver"] == "535.161.08" and comps["cuda.toolkit"] == "12.5.82", comps
    assert comps["ofed"] == "MLNX_OFED_LINUX-23.10-3.2.2.0" and comps["kernel"] == "5.15.0-112-generic"
    assert not [k for k in comps if k.startswith("gpu")], comps   # the GPUs were not read

    assert s["hp5"]["status"] == "ok"
    assert s["hp5"]["host"]["health"]["state"] == "driver-mismatch"
    assert s["hp5"]["host"]["driver_library"] == "570.124"
    comps5 = {c["key"]: c for c in s["hp5"]["components"]}
    assert comps5["driver"]["version"] == "535.161.08"
    assert comps5["driver.library"]["version"] == "570.124"
    assert comps5["driver.library"]["source"] == "ssh"
    # a healthy node has no separate library component: it is the driver's
    r, shown = hp.json("inventory", "show", "hp1")
    shown = shown[0] if isinstance(shown, list) else shown
    assert "driver.library" not in {c["key"] for c in shown["components"]}

    # drift: the half-upgraded node stands out by its library; its module is the fleet's
    r, drift = hp.json("drift", "hp[1-3,5]", "--component", "driver*")
    assert r.returncode == 0, r.stderr
    d = by_node(drift)
    assert d["hp1"]["drift"] == [] and d["hp2"]["drift"] == [] and d["hp3"]["drift"] == []
    assert d["hp5"]["drift"] == [{"component": "driver.library", "expected": None,
                                  "actual": "570.124", "source": "ssh", "extra": True}], d["hp5"]
    r = hp.run("drift", "hp[1-3,5]", "--component", "driver*", "--color", "never")
    assert "driver.library" in r.stdout and "570.124" in r.stdout, r.stdout
