"""GPU Xid lines that gpufleet host reads from real sshd hosts (tests/lab/sshlab.py, the
captured kernel logs) enter the events table as source host-xid, each line once: a
second run stores nothing, and events list shows them."""
import os
import shutil

import pytest

from conftest import started, loopback
import sshlab

PREFIX = loopback(__name__, "ssh")


@pytest.fixture(scope="module")
def lab():
    assert os.access(sshlab.SSHD, os.X_OK), "sshd is not installed (tests/install-deps.sh)"
    nodes = [n for n in sshlab.default_nodes()
             if n.get("xids") and n.get("journal") != "denied"][:3]
    assert len(nodes) == 3
    with started(lambda d: sshlab.SshLab(d, nodes=nodes, prefix=PREFIX), "gf-ssh-xid-") as lab:
        yield lab


@pytest.fixture
def hg(gf, lab):
    kh = os.path.join(gf.workdir, "known_hosts")
    shutil.copy(lab.known_hosts, kh)
    gf.write_creds(f"[default]\nssh_user = {lab.user}\nssh_key = {lab.key}\n"
                   f"ssh_known_hosts = {kh}\n")
    lines = ["name,ssh"] + [f"{lab.names[i - 1]},{lab.spec(i)}" for i in range(1, lab.count + 1)]
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    return gf


def stored(gf):
    rows = gf.sql("SELECT node, count(*) AS n FROM events WHERE source = 'host-xid'"
                  " GROUP BY node")
    return {r["node"]: r["n"] for r in rows}


def test_host_xids_stored_once_and_listed(hg, lab):
    want = {lab.names[i - 1]: sum((lab.expected(i)["xid"] or {}).values())
            for i in range(1, lab.count + 1)}
    assert all(want.values()), want
    r = hg.run("host", "--timeout", "20", *lab.names)
    assert r.returncode in (0, 1), r.stderr
    assert stored(hg) == want
    r = hg.run("host", "--timeout", "20", *lab.names)
    assert stored(hg) == want  # the same log again: nothing new
    r, data = hg.json("events", "list", "--source", "host-xid", lab.names[0])
    assert r.returncode == 0, r.stderr
    assert len(data) == want[lab.names[0]]
    e = data[0]
    assert e["source"] == "host-xid" and e["type"] == "xid"
    assert e["id"] == "xid-%d" % e["payload"]["xid"]
    assert "NVRM: Xid" in e["payload"]["line"] and e["message"].startswith("Xid (")
    assert e["severity"] in ("warning", "critical")
