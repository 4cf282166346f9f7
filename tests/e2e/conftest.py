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

# Every loopback range of the labs, in one table: (owner, purpose) -> "127.a.b"
# (one /24) or "127.a.b-c" (the /24s b to c). An owner is an e2e module (its
# __name__), which asks for its ranges with loopback(__name__, purpose); "*" is
# a range where nothing listens, which any module may name as a dead address;
# "lab" and "bench" hold the ranges of tests/lab and bench/ (their defaults,
# the demo, the self tests) so that no module takes them. No two entries
# overlap and no module writes a range of its own: test_lab_registry.py.
LOOPBACK = {
    # ipmi_sim BMCs
    ("test_power", "ipmi"): "127.31.1",
    ("test_ipmi_sensors_sel", "ipmi"): "127.31.2",
    ("test_ipmi_sensors_sel", "relay"): "127.46.100",       # a UDP relay in front of one
    ("test_ipmi_inventory", "ipmi"): "127.31.4",
    ("test_ipmi_inventory", "ipmi2"): "127.31.5",           # a second lab
    ("test_ctrl_c_progress_and_exit_codes", "ipmi"): "127.31.6",
    ("test_redfish", "ipmi"): "127.31.9",
    ("test_metrics", "ipmi"): "127.31.13",
    ("test_inventory", "ipmi"): "127.36.1",
    ("test_ipmi_fleet_ping", "ipmi"): "127.44.0",           # live .1-6, dead .201-204
    ("test_events_follow", "ipmi"): "127.50.1",
    ("test_events_follow", "relay"): "127.50.3",             # UDP relays counting sessions
    ("test_console", "ipmi"): "127.52.1",                   # BMCs and their serial ports
    ("test_console", "log"): "127.52.2",                    # console log: BMCs, serial ports
    ("test_console_ssh", "lab"): "127.43.101",              # Redfish BMC .1 and its SSH console
    ("test_terminal_fit_and_problems", "ipmi"): "127.56.1",  # 200 BMCs
    ("test_terminal_fit_and_problems", "dead"): "127.56.2",  # nothing listens
    ("test_ctrl_c_in_flight", "ipmi"): "127.56.10",
    ("test_ctrl_c_in_flight", "relay"): "127.56.11",          # UDP relays in front of them
    ("test_power_loop", "ipmi"): "127.57.1",
    ("test_power_loop", "relay"): "127.57.2",               # relays counting, a hostile BMC
    # Redfish emulator BMCs
    ("test_redfish", "redfish"): "127.32.1",
    ("test_hostile", "redfish"): "127.32.10",
    ("test_terminal", "redfish"): "127.32.12",
    ("test_inventory", "redfish"): "127.32.36",
    ("test_update", "lab"): "127.41.11",                    # BMCs, one ipmi_sim .200, images .250
    ("test_bios", "lab"): "127.41.12",                      # BMCs .1-12, one ipmi_sim .200
    ("test_report", "lab"): "127.41.14",                    # BMCs .101-104, sshd .1-4, dead .250
    ("test_lab_redfish_update", "redfish"): "127.41.21",    # BMCs, images .250
    ("test_deadline", "lab"): "127.42.10",                  # every kind of slow or silent peer
    ("test_trust", "lab"): "127.42.20",                     # BMCs and sshd
    ("test_resource_bounds", "lab"): "127.42.30",           # BMCs .201-, flooding sshd
    ("test_tls_pin_first_use", "redfish"): "127.42.40",
    ("test_redfish_sse", "redfish"): "127.51.1",               # SSE streams (issue 19)
    ("test_rollout_safety", "lab"): "127.53.1",              # BMCs .1-8 (issue 18)
    ("test_update_quirks", "lab"): "127.54.1",              # BMCs that bend the standard
    ("test_update_quirks", "lab443"): "127.54.2",           # one on the default port 443
    ("test_bmc_health", "redfish"): "127.55.0",
    ("test_events_redfish", "redfish"): "127.58.1",            # events follow over SSE (issue 19)
    ("test_events_redfish_open", "redfish"): "127.44.190",     # 30 slow BMCs' streams open at once
    ("test_ctrl_c_redfish_in_flight", "redfish"): "127.41.60",  # rf1 answers, rf2 hangs
    ("test_redfish_round_trips", "redfish"): "127.47.1",      # round trips per BMC (issue 23)
    # sshd hosts
    ("test_host", "ssh"): "127.33.0",
    ("test_host", "ssh-small"): "127.33.1",                 # a one-host lab
    ("test_host", "ssh-hang"): "127.33.2",                  # a host that hangs
    ("test_host", "ssh-hard"): "127.33.3",                  # a hang that ignores TERM
    ("test_inventory", "ssh"): "127.33.36",
    ("test_host_partial_answer", "ssh"): "127.42.41",
    ("test_events_host_xid", "ssh"): "127.50.2",
    # other peers
    ("test_metrics", "prometheus"): "127.41.13",            # Prometheus and node_exporter
    # nothing listens
    ("*", "dead"): "127.31.250",                            # dead BMCs, addresses only registered
    ("*", "redirect"): "127.32.9",                          # where a BMC redirects off itself
    # tests/lab and bench/, not the e2e modules
    ("lab", "demo.sh: ipmi_sim"): "127.30.0",
    ("lab", "ipmilab.py: default prefix"): "127.31.0",
    ("lab", "redfish_emu.py: default prefix"): "127.32.0",
    ("lab", "demo.sh: Redfish"): "127.32.30",
    ("lab", "redfish_emu.py: self test"): "127.32.250-251",
    ("lab", "sshlab.py start: default prefix; bench/ssh-facts.sh"): "127.33.10-29",
    ("lab", "demo.sh: sshd"): "127.33.30",
    ("bench", "redfish-firmware.sh"): "127.32.160-199",
    ("bench", "ipmi-power.sh"): "127.34.0-255",
    ("bench", "ipmi-power.sh: DELAY_MS relays"): "127.37.0-255",
    ("bench", "ipmi-read.sh"): "127.35.0-255",
    ("bench", "dead-bmcs.sh"): "127.42.11-14",
    ("bench", "update.sh"): "127.43.0-39",
    ("bench", "console.sh"): "127.43.110",
    ("bench", "events-ipmi.sh"): "127.50.10",
    ("bench", "events.sh: ipmi_sim .0-3, Redfish .100"): "127.144.0-100",
    ("bench", "rollout.sh"): "127.41.100",
    ("bench", "ipmi-sweep.sh"): "127.46.0-15",
    ("bench", "redfish-sweep.sh"): "127.47.8",
    ("bench", "sensors.sh"): "127.42.160",
}


def loopback(module, purpose):
    """The prefix ("127.a.b") of @module's (a module's __name__) range for
    @purpose in LOOPBACK."""
    return LOOPBACK[(module.rpartition(".")[2], purpose)].partition("-")[0]


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
    """20 ipmi_sim BMCs (LAB_COUNT) on the module's "ipmi" range, one lab per test module."""
    prefix = loopback(request.module.__name__, "ipmi")
    count = getattr(request.module, "LAB_COUNT", 20)
    with started(lambda d: IpmiLab(d, prefix=prefix, count=count, user="admin",
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


# Under a slow wrapper (Valgrind's memcheck) gpufleet runs many times slower
# and a busy machine slows it further: a deadline that live peers must meet
# is scaled by GF_TEST_SLOWDOWN (run-all.sh sets it for the Valgrind pass), and
# any bound a test puts on a run is computed from the deadline it gave.
SLOWDOWN = float(os.environ.get("GF_TEST_SLOWDOWN", "1"))


def deadline(seconds):
    """The --timeout argument for a deadline of @seconds, scaled by GF_TEST_SLOWDOWN."""
    return f"{seconds * SLOWDOWN:g}"
