"""Fixtures for end-to-end tests: the real gpufleet binary against real peers on loopback."""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "lab"))

from ipmilab import IpmiLab  # noqa: E402

GPUFLEET = os.environ.get("GPUFLEET_BIN") or os.path.join(TOP, "build", "cli", "gpufleet")
PASSWORD = "lab-Pa55word"


class Gf:
    """Runs the binary with its own DB and credentials file."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.db = os.path.join(workdir, "inventory.db")
        self.creds = os.path.join(workdir, "credentials")

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
        env["GPUFLEET_DB"] = self.db
        env["GPUFLEET_CREDENTIALS"] = self.creds
        env["HOME"] = self.workdir
        env["XDG_CACHE_HOME"] = os.path.join(self.workdir, "cache")
        env.pop("SUDO_USER", None)
        if extra:
            env.update(extra)
        return env

    def run(self, *args, input=None, env=None, timeout=120):
        return subprocess.run([GPUFLEET, *args], input=input, capture_output=True, text=True,
                              env=self.env(env), timeout=timeout)

    def json(self, *args, **kw):
        r = self.run("--format", "json", *args, **kw)
        try:
            data = json.loads(r.stdout)
        except json.JSONDecodeError:
            raise AssertionError(f"not JSON (rc {r.returncode}): {r.stdout!r} {r.stderr!r}")
        return r, data

    def sql(self, query):
        out = subprocess.run(["sqlite3", "-json", self.db, query], capture_output=True, text=True,
                             check=True).stdout
        return json.loads(out) if out.strip() else []

    def write_creds(self, text, mode=0o600):
        fd = os.open(self.creds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(self.creds, mode)


DEFAULT_CREDS = f"""[default]
bmc_user = admin
bmc_password = {PASSWORD}
ipmi_workarounds = opensesspriv
"""


@pytest.fixture
def gf(tmp_path):
    g = Gf(str(tmp_path))
    g.write_creds(DEFAULT_CREDS)
    return g


@pytest.fixture(scope="module")
def fleet(request):
    """20 ipmi_sim BMCs on 127.31.<module>.1-20, one lab per test module."""
    subnet = getattr(request.module, "LAB_SUBNET", 1)
    count = getattr(request.module, "LAB_COUNT", 20)
    with started(lambda d: IpmiLab(d, prefix=f"127.31.{subnet}", count=count, user="admin",
                                   password=PASSWORD), "gf-lab-") as lab:
        yield lab


@contextlib.contextmanager
def started(make, prefix):
    """A lab made by @make(workdir) in a new temporary folder, started, stopped and removed."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    lab = make(workdir)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def started_lab(prefix, make):
    """For a module fixture: the lab @make(workdir) builds in a new temporary
    folder (readable by the SSH lab's login user), started; yields it, and
    stops it and removes the folder also when the tests fail."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    os.chmod(workdir, 0o755)
    lab = make(workdir)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def register(gf, lab, names=None, extra_cols=""):
    """Register every sim of @lab as gpuNN through nodes import."""
    lines = ["name,bmc,protocol,groups"]
    for i in range(1, lab.count + 1):
        group = "rackA" if i <= lab.count // 2 else "rackB"
        lines.append(f"gpu{i:02d},{lab.addr(i)},ipmi,{group};all")
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr


def register_redfish(gf, lab, group=lambda i: "all"):
    """The Redfish lab's nodes registered as rf1..rfN (groups @group(i)), with the lab CA."""
    gf.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n"
                   f"redfish_cacert = {lab.cacert}\n")
    lines = ["name,bmc,protocol,groups"]
    for i in lab.indices():
        lines.append(f"rf{i},{lab.addr(i)}:{lab.port},redfish,{group(i)}")
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
