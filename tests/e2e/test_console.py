"""gpufleet console: a node's serial console (IPMI Serial over LAN) through
the real binary on a pseudo-terminal, against ipmi_sim BMCs whose serial port
is a test server (tests/lab/serialport.py) that plays the host: what the host
prints reaches the terminal, what is typed reaches the serial port, the
escapes work, the terminal is restored, and no SOL payload is left active
(a following FreeIPMI ipmiconsole starts without stealing)."""
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time

import pytest

from conftest import GPUFLEET, PASSWORD, loopback, started
from ipmilab import IpmiLab
from serialport import SerialPort

LAB_COUNT = 2
SERIAL_PORT = 7001
SOL_WORKAROUNDS = "opensesspriv,solchannelsupport,solpayloadsize"
CREDS = f"""[default]
bmc_user = admin
bmc_password = {PASSWORD}
ipmi_cipher_suite = 3
ipmi_workarounds = {SOL_WORKAROUNDS}
"""


class Term:
    """A program on a pseudo-terminal: what it prints is collected, keys are typed."""

    def __init__(self, argv, env=None):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.cooked = termios.tcgetattr(slave)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, close_fds=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.out = bytearray()

    def _pump(self, timeout):
        """Read what is there within @timeout; False at the end of the output."""
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.out += data
        return bool(data)

    def expect(self, data, timeout=20):
        deadline = time.monotonic() + timeout
        while data not in self.out:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{data!r} never came: {bytes(self.out[-800:])!r}")
            if not self._pump(min(left, 0.2)) and self.proc.poll() is not None:
                raise AssertionError(f"exited {self.proc.returncode} before {data!r}: "
                                     f"{bytes(self.out[-800:])!r}")

    def type(self, data):
        os.write(self.master, data)

    def attrs(self):
        """The terminal's settings now (tcgetattr on the master reads the slave's)."""
        return termios.tcgetattr(self.master)

    def wait(self, timeout=30):
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._pump(0.1)
        while self._pump(0.05) and select.select([self.master], [], [], 0)[0]:
            pass
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def raw(attrs):
    return not attrs[3] & (termios.ICANON | termios.ECHO | termios.ISIG)


@pytest.fixture(scope="module")
def sol_lab(request):
    """Two ipmi_sim BMCs, each connected out to its own serial port."""
    prefix = loopback(__name__, "ipmi")
    ports = {i: SerialPort(f"{prefix}.{i}", SERIAL_PORT).start() for i in (1, 2)}
    try:
        overrides = {i: {"sol": f"{prefix}.{i}:{SERIAL_PORT}"} for i in ports}
        with started(lambda d: IpmiLab(d, prefix=prefix, count=LAB_COUNT, user="admin",
                                       password=PASSWORD, overrides=overrides), "gf-con-") as lab:
            for sp in ports.values():
                sp.wait_connected(20)
            lab.serial = ports
            yield lab
    finally:
        for sp in ports.values():
            sp.stop()


@pytest.fixture
def cgf(gf, sol_lab):
    gf.write_creds(CREDS)
    lines = ["name,bmc,protocol,groups"]
    for i in range(1, LAB_COUNT + 1):
        lines.append(f"gpu{i:02d},{sol_lab.addr(i)},ipmi,all")
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    return gf


def console(gf, *args):
    return Term([GPUFLEET, "console", *args], env=gf.env())


def ipmiconsole(lab, i, *extra):
    """FreeIPMI's own client on node @i (the password in a file, not on argv)."""
    return Term(["ipmiconsole", "-h", lab.addr(i), "-u", "admin", "-p", PASSWORD, "-I", "3",
                 "-W", SOL_WORKAROUNDS, *extra])


def typed_through(term, sp, text, timeout=20):
    """Type @text until the serial port got it: the first keystroke packet of
    a new session may be lost (ipmi_sim), so a line is typed again until it
    arrives."""
    deadline = time.monotonic() + timeout
    while text not in sp.received():
        assert time.monotonic() < deadline, f"{text!r} never reached the port: {sp.received()!r}"
        term.type(text)
        try:
            sp.wait_received(text, 2)
        except TimeoutError:
            pass


def payload_free(lab, i):
    """The SOL payload of node @i is not active: ipmiconsole --dont-steal gets it."""
    t = ipmiconsole(lab, i, "--dont-steal")
    try:
        t.expect(b"[SOL established]", 30)
        t.type(b"&.")
        assert t.wait() == 0
    finally:
        t.close()


def end_session(term):
    term.type(b"\r~.")
    rc = term.wait()
    return rc


def test_output_reaches_terminal_typing_reaches_port_and_tilde_dot_ends(cgf, sol_lab):
    sp = sol_lab.serial[1]
    t = console(cgf, "gpu01")
    try:
        t.expect(b"[connected to the serial console of gpu01")
        assert raw(t.attrs()), "the terminal is not raw during the session"
        sp.send(b"Booting node one\r\nlogin: ")
        t.expect(b"Booting node one\r\nlogin: ")
        typed_through(t, sp, b"root-typed\r")
        assert b"~" not in sp.received()
        assert end_session(t) == 0, bytes(t.out)
        assert not raw(t.attrs()), "raw mode was not undone"
        assert t.attrs()[3] == t.cooked[3]
        t.expect(b"[console closed]")
    finally:
        t.close()
    assert b"~" not in sp.received(), "the escape reached the node"
    payload_free(sol_lab, 1)


def test_escapes_literal_tilde_help_break(cgf, sol_lab):
    sp = sol_lab.serial[2]
    t = console(cgf, "gpu02")
    try:
        t.expect(b"[connected to the serial console of gpu02")
        typed_through(t, sp, b"warm-up\r")
        t.type(b"~?")
        t.expect(b"~.  end the session")
        t.type(b"~~tilde-line\r")
        sp.wait_received(b"~tilde-line\r")
        assert b"~~" not in sp.received()
        t.type(b"~Bafter-break\r")
        sp.wait_received(b"after-break\r")
        assert b"~B" not in sp.received()
        assert t.proc.poll() is None
        assert end_session(t) == 0
    finally:
        t.close()
    payload_free(sol_lab, 2)


def test_other_escape_character(cgf, sol_lab):
    sp = sol_lab.serial[1]
    t = console(cgf, "--escape", "&", "gpu01")
    try:
        t.expect(b"&. ends")
        typed_through(t, sp, b"amp-warm\r")
        t.type(b"~.still-here\r")  # ~ is an ordinary byte now
        sp.wait_received(b"~.still-here\r")
        t.type(b"&.")
        assert t.wait() == 0
    finally:
        t.close()
    payload_free(sol_lab, 1)


def test_busy_while_ipmiconsole_holds_it_and_steal_takes_it(cgf, sol_lab):
    sp = sol_lab.serial[1]
    holder = ipmiconsole(sol_lab, 1)
    try:
        holder.expect(b"[SOL established]", 30)
        r = cgf.run("console", "gpu01", timeout=60)
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert "busy" in r.stderr and "--steal" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert holder.proc.poll() is None, "the holder lost its console"
        sp.send(b"still the holder's\r\n")
        holder.expect(b"still the holder's")

        t = console(cgf, "--steal", "gpu01")
        try:
            t.expect(b"[connected to the serial console of gpu01", 30)
            sp.send(b"now gpufleet's\r\n")
            t.expect(b"now gpufleet's")
            holder._pump(0.5)
            assert b"now gpufleet's" not in holder.out, "the old session still reads it"
            assert end_session(t) == 0
        finally:
            t.close()
    finally:
        holder.close()
    payload_free(sol_lab, 1)


def test_a_signal_ends_it_cleanly(cgf, sol_lab):
    t = console(cgf, "gpu02")
    try:
        t.expect(b"[connected to the serial console of gpu02")
        assert raw(t.attrs())
        t.proc.send_signal(signal.SIGTERM)
        assert t.wait() == 128 + signal.SIGTERM
        assert t.attrs()[3] == t.cooked[3], "the terminal is still raw after SIGTERM"
    finally:
        t.close()
    payload_free(sol_lab, 2)


def test_bad_input_is_a_usage_error(cgf):
    r = cgf.run("console", "--escape", "ab", "gpu01")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--escape 'ab'" in r.stderr
    r = cgf.run("console", "gpu[01-02]")
    assert r.returncode == 2 and "one node" in r.stderr, r.stderr
    r = cgf.run("console")
    assert r.returncode == 2, r.stderr
