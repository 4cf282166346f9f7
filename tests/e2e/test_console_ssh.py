"""gpufleet console over a BMC's SSH serial console: a Redfish BMC (the
emulator) advertises Manager.SerialConsole.SSH on port 2200, a real OpenSSH
sshd listens there whose ForceCommand plays the host's serial port
(tests/lab/sshconsole.py). Checked through the real binary: what the port
prints reaches the terminal, what is typed reaches the port, `~.` ends and
the session ends on the server too, the window size goes through, the host
key rules are those of `gpufleet host`, and `console log` logs it read-only,
its bytes in `gpufleet metrics` as the port sent them, and opens it again by
itself when the BMC ends the session."""
import os
import re
import signal
import struct
import sys
import termios
import fcntl
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, started_lab
from test_console import STAMP, Logger, Term, log_lines, prom_samples, raw, wait_logged

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402
from sshconsole import BOOT, BMC_USER, SshConsole  # noqa: E402

PREFIX = loopback(__name__, "lab")
SSH_PORT = 2200


class Lab:
    def __init__(self, workdir):
        self.rf = RedfishLab(workdir, prefix=PREFIX, count=2, user=BMC_USER, password=PASSWORD,
                             vendors=["supermicro"], overrides={1: {"serial_console_ssh": SSH_PORT}})
        self.con = SshConsole(os.path.join(workdir, "console"), self.rf.addr(1), SSH_PORT,
                              PASSWORD)

    def start(self):
        os.makedirs(self.con.dir, exist_ok=True)
        self.rf.start()
        try:
            self.con.start()
        except BaseException:
            self.rf.stop()
            raise

    def stop(self):
        self.con.stop()
        self.rf.stop()


@pytest.fixture(scope="module")
def lab():
    yield from started_lab("gf-conssh-", Lab)


@pytest.fixture
def sgf(gf, lab):
    gf.known_hosts = os.path.join(gf.workdir, "known_hosts")
    with open(gf.known_hosts, "w") as f:
        f.write(lab.con.known_hosts_line())
    gf.write_creds(f"[default]\nbmc_user = {BMC_USER}\nbmc_password = {PASSWORD}\n"
                   f"redfish_cacert = {lab.rf.cacert}\nssh_known_hosts = {gf.known_hosts}\n")
    lines = ["name,bmc,protocol,groups",
             f"rf1,{lab.rf.addr(1)}:{lab.rf.port},redfish,all",
             f"rf2,{lab.rf.addr(2)}:{lab.rf.port},redfish,all"]
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    return gf


def wait_for(pred, what, timeout=20):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)  # polling the lab's files against a deadline


def test_terminal_and_serial_port_both_ways_and_tilde_dot_ends(sgf, lab):
    con = lab.con
    sessions = len(con.session())
    t = Term([GPUFLEET, "console", "rf1"], env=sgf.env())
    try:
        t.expect(b"Starting kernel")  # the boot lines the port printed
        assert b"[connected to the serial console of rf1" in t.out
        with open(f"/proc/{t.proc.pid}/cmdline", "rb") as f:
            assert PASSWORD.encode() not in f.read()
        assert raw(t.attrs())
        con.feed(b"\x1b[1mlive\x1b[0m line from the host\r\n")
        t.expect(b"\x1b[1mlive\x1b[0m line from the host")  # as sent: the interactive session
        t.type(b"typed at the terminal\r")
        wait_for(lambda: b"typed at the terminal\r" in con.received(), con.received())
        # A terminal was asked for, at the terminal's size; a new size goes through.
        assert con.session()[sessions:][:2] == ["tty 1", "size 80x24"], con.session()
        fcntl.ioctl(t.master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        os.kill(t.proc.pid, signal.SIGWINCH)
        wait_for(lambda: "size 100x30" in con.session()[sessions:], con.session())
        t.type(b"\r~?")
        t.expect(b"~.")  # the list of escapes, not sent
        t.type(b"\r~.")
        assert t.wait() == 0, bytes(t.out[-400:])
        assert not raw(t.attrs())
    finally:
        t.close()
    assert b"~" not in con.received()
    wait_for(lambda: con.session()[-1] == "end", con.session())  # the server side ended too


def test_host_key_rules_are_those_of_host(sgf, lab):
    with open(sgf.known_hosts, "w") as f:
        f.write("")
    t = Term([GPUFLEET, "console", "rf1"], env=sgf.env())
    try:
        assert t.wait() == 1
    finally:
        t.close()
    assert b"[hostkey]" in t.out and b"SHA256:" in t.out, bytes(t.out)
    assert os.path.getsize(sgf.known_hosts) == 0
    # --ssh-accept-new records an unknown key (trust on first use), as host does.
    t = Term([GPUFLEET, "console", "--ssh-accept-new", "rf1"], env=sgf.env())
    try:
        t.expect(b"Starting kernel")
        t.type(b"\r~.")
        assert t.wait() == 0
    finally:
        t.close()
    with open(sgf.known_hosts) as f:
        assert f"[{lab.rf.addr(1)}]:{SSH_PORT} ssh-ed25519 " in f.read()
    # A changed key is refused, --ssh-accept-new or not.
    other = lab.con.known_hosts_line().split()
    other[2] = other[2][:-8] + "AAAAAAAA"
    with open(sgf.known_hosts, "w") as f:
        f.write(" ".join(other) + "\n")
    r = sgf.run("console", "--ssh-accept-new", "rf1", input="")
    assert r.returncode == 1 and "[hostkey]" in r.stderr, r.stderr


def test_a_bmc_without_ssh_console_is_unsupported(sgf, lab):
    r = sgf.run("console", "rf2", input="")
    assert r.returncode == 1, r.stderr
    assert "SerialConsole.SSH" in r.stderr and "[unsupported]" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_console_log_of_an_ssh_console(sgf, lab, tmp_path):
    con = lab.con
    d = str(tmp_path / "logs")
    sessions = len(con.session())
    received = len(con.received())
    lg = Logger(sgf, "rf1", "--dir", d, "--duration", "120")
    try:
        lg.wait_state("rf1", "connected")
        wait_logged(os.path.join(d, "rf1.log"), "Starting kernel")
        sent = len(BOOT)
        for k in range(50):
            line = b"ssh log line %03d \x1b[31mred\x1b[0m\r\n" % k
            con.feed(line)
            sent += len(line)
        wait_logged(os.path.join(d, "rf1.log"), "ssh log line 049")
        deadline = time.monotonic() + 40
        while True:  # the state is refreshed every 10 s
            m = prom_samples(sgf.run("metrics", "--console-dir", d).stdout)
            if m.get('gpufleet_console_bytes{node="rf1"}') == sent or time.monotonic() > deadline:
                break
            time.sleep(0.5)  # polling the scrape against its deadline
        assert m['gpufleet_console_bytes{node="rf1"}'] == sent, log_lines(os.path.join(d, "rf1.log"))[:6]
        assert m['gpufleet_console_up{node="rf1"}'] == 1
    finally:
        rc = lg.stop()
    assert rc == 128 + signal.SIGTERM, lg.stderr
    lines = [ln for ln in log_lines(os.path.join(d, "rf1.log")) if "ssh log line" in ln]
    assert [int(ln.split("line ")[1][:3]) for ln in lines] == list(range(50))
    assert all(re.match(STAMP + r"ssh log line \d{3} \\x1b\[31mred\\x1b\[0m$", ln)
               for ln in lines), lines[:3]
    # Read-only, with no terminal: nothing typed, nothing echoed.
    assert con.session()[sessions] == "tty 0", con.session()
    assert len(con.received()) == received
    wait_for(lambda: con.session()[-1] == "end", con.session())


def test_console_log_reconnects_when_the_bmc_ends_the_session(sgf, lab, tmp_path):
    """The BMC ends the SSH console session under `console log`: the node goes
    reconnecting, then connected again by itself; the log says so between what
    came before and what the host prints after."""
    con = lab.con
    log = os.path.join(str(tmp_path / "logs"), "rf1.log")
    lg = Logger(sgf, "rf1", "--dir", str(tmp_path / "logs"), "--duration", "120")
    try:
        lg.wait_state("rf1", "connected")
        con.feed(b"before the drop\r\n")
        wait_logged(log, "before the drop")
        at = len(lg.states)
        con.drop()
        k = lg.wait_state("rf1", "reconnecting", timeout=60, after=at)
        lg.wait_state("rf1", "connected", timeout=60, after=k)
        # The new session's boot lines are out: what is fed now is printed on it.
        wait_for(lambda: "\n".join(log_lines(log)).count("Starting kernel") == 2,
                 log_lines(log), timeout=30)
        con.feed(b"after the drop\r\n")
        wait_logged(log, "after the drop")
    finally:
        rc = lg.stop()
    assert rc == 128 + signal.SIGTERM, lg.stderr
    assert "dropped" in con.session(), con.session()
    text = "\n".join(log_lines(log))
    assert text.index("before the drop") < text.index("-- gpufleet: console reconnecting") < \
        text.index("after the drop"), text
