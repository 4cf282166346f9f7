"""gpufleet console: a node's serial console (IPMI Serial over LAN) through
the real binary on a pseudo-terminal, against ipmi_sim BMCs whose serial port
is a test server (tests/lab/serialport.py) that plays the host: what the host
prints reaches the terminal, what is typed reaches the serial port, the
escapes work, the terminal is restored, and no SOL payload is left active
(a following FreeIPMI ipmiconsole starts without stealing)."""
import fcntl
import os
import pty
import re
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


def sol_fleet(prefix, count):
    """@count ipmi_sim BMCs on @prefix, each connected out to its own serial
    port (lab.serial[i])."""
    ports = {i: SerialPort(f"{prefix}.{i}", SERIAL_PORT).start() for i in range(1, count + 1)}
    try:
        overrides = {i: {"sol": f"{prefix}.{i}:{SERIAL_PORT}"} for i in ports}
        with started(lambda d: IpmiLab(d, prefix=prefix, count=count, user="admin",
                                       password=PASSWORD, overrides=overrides), "gf-con-") as lab:
            for sp in ports.values():
                sp.wait_connected(20)
            lab.serial = ports
            yield lab
    finally:
        for sp in ports.values():
            sp.stop()


def register_sol(gf, lab, name):
    gf.write_creds(CREDS)
    lines = ["name,bmc,protocol,groups"]
    for i in lab.indices():
        lines.append(f"{name(i)},{lab.addr(i)},ipmi,all")
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    return gf


@pytest.fixture(scope="module")
def sol_lab():
    """Two BMCs with serial ports for the interactive console."""
    yield from sol_fleet(loopback(__name__, "ipmi"), LAB_COUNT)


@pytest.fixture
def cgf(gf, sol_lab):
    return register_sol(gf, sol_lab, lambda i: f"gpu{i:02d}")


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


def test_end_of_piped_input_ends_it(cgf, sol_lab):
    r = cgf.run("console", "gpu01", input="", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "[connected to the serial console of gpu01" in r.stderr
    payload_free(sol_lab, 1)


def test_bad_input_is_a_usage_error(cgf):
    r = cgf.run("console", "--escape", "ab", "gpu01")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--escape 'ab'" in r.stderr
    r = cgf.run("console", "gpu[01-02]")
    assert r.returncode == 2 and "one node" in r.stderr, r.stderr
    r = cgf.run("console")
    assert r.returncode == 2, r.stderr


# ---- console log ------------------------------------------------------------

LOG_COUNT = 4


@pytest.fixture(scope="module")
def log_lab():
    """LOG_COUNT BMCs for console log, each with its serial port."""
    yield from sol_fleet(loopback(__name__, "log"), LOG_COUNT)


@pytest.fixture
def lgf(gf, log_lab):
    return register_sol(gf, log_lab, lambda i: f"n{i}")


class Logger:
    """gpufleet console log running, its ndjson states read as they come."""

    def __init__(self, gf, *args):
        import threading
        self.states = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen([GPUFLEET, "--format", "ndjson", "console", "log", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=gf.env(), text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        import json
        for line in self.proc.stdout:
            with self.cond:
                self.states.append(json.loads(line))
                self.cond.notify_all()

    def wait_state(self, node, state, timeout=60, after=0):
        """Until node @node reports @state (at index >= @after); returns that index."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for k in range(after, len(self.states)):
                    if self.states[k]["node"] == node and self.states[k]["state"] == state:
                        return k
                left = deadline - time.monotonic()
                assert left > 0, f"{node} never {state}: {self.states}"
                self.cond.wait(min(left, 0.5))

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        self.stderr = self.proc.stderr.read()
        return rc


def log_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def wait_logged(path, text, timeout=30):
    deadline = time.monotonic() + timeout
    while not any(text in line for line in log_lines(path)):
        assert time.monotonic() < deadline, f"{text!r} not in {path}: {log_lines(path)[-5:]}"
        time.sleep(0.1)  # polling a file: the condition is checked, not slept on


STAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "


def test_log_keeps_lines_in_order_escapes_and_reconnects(lgf, log_lab, tmp_path):
    d = str(tmp_path / "logs")
    lg = Logger(lgf, "@all", "--dir", d, "--duration", "240")
    try:
        for i in range(1, LOG_COUNT + 1):
            lg.wait_state(f"n{i}", "connected")
        for k in range(30):
            for i, sp in log_lab.serial.items():
                sp.send(b"n%d line %03d \x1b[1mbold\x1b[0m\r\n" % (i, k))
        for sp in log_lab.serial.values():
            sp.send(b"same on every node\r\n")
        for i in range(1, LOG_COUNT + 1):
            wait_logged(os.path.join(d, f"n{i}.log"), f"n{i} line 029")
            wait_logged(os.path.join(d, f"n{i}.log"), "same on every node")
        for i in range(1, LOG_COUNT + 1):
            lines = [ln for ln in log_lines(os.path.join(d, f"n{i}.log")) if " line " in ln]
            assert [int(ln.split(" line ")[1][:3]) for ln in lines] == list(range(30)), lines
            for ln in lines:
                assert re.match(STAMP + f"n{i} line \\d{{3}} \\\\x1b\\[1mbold\\\\x1b\\[0m$", ln), ln
                assert f"n{i}" in ln and "\x1b" not in ln
        assert not log_lab.serial[1].received(), "the logger wrote to a console"

        # The BMC dies and comes back: the logger notices and reconnects by itself.
        at = len(lg.states)
        log_lab.kill_node(1)
        k = lg.wait_state("n1", "reconnecting", timeout=90, after=at)
        log_lab.restart_node(1)
        log_lab.serial[1].wait_connected(30, count=2)
        lg.wait_state("n1", "connected", timeout=90, after=k)
        log_lab.serial[1].send(b"after the restart\r\n")
        wait_logged(os.path.join(d, "n1.log"), "after the restart", 30)
        text = "\n".join(log_lines(os.path.join(d, "n1.log")))
        assert "-- gpufleet: console reconnecting" in text
        assert text.index("n1 line 029") < text.index("console reconnecting") < \
            text.index("after the restart")
        # The others' sessions are their own (a machine loaded enough to miss
        # keep-alives may drop one; it reconnects the same way).
        n2 = [s["state"] for s in lg.states if s["node"] == "n2"]
        assert n2[:2] == ["connecting", "connected"], [
            (s["state"], s["time"], s.get("error")) for s in lg.states if s["node"] != "n1"]
    finally:
        rc = lg.stop()
    assert rc == 128 + signal.SIGTERM, lg.stderr
    assert "console log ended" in log_lines(os.path.join(d, "n2.log"))[-1]
    payload_free(log_lab, 2)

    # grep and tail over what was logged: node names, times, escapes applied.
    r = lgf.run("console", "grep", "line 01[0-2] ", "--dir", d, "@all")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert len(out) == 3 * LOG_COUNT, out
    assert "\x1b" not in r.stdout and "\\x1b[1mbold" in r.stdout
    assert {ln.split("  ")[0] for ln in out} == {f"n{i}" for i in range(1, LOG_COUNT + 1)}
    times = [ln.split("  ")[1] for ln in out]
    assert times == sorted(times) and all(re.match(STAMP, t + " ") for t in times), out
    r = lgf.run("-C", "console", "grep", "same on every", "--dir", d, "@all")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1, r.stdout
    assert r.stdout.startswith(f"n[1-{LOG_COUNT}]  ") and "same on every node" in r.stdout
    r, data = lgf.json("console", "grep", "after the restart", "--dir", d, "@all")
    assert r.returncode == 0 and [o["node"] for o in data] == ["n1"], data
    assert data[0]["line"] == "after the restart"
    r = lgf.run("console", "grep", "no such line", "--dir", d, "@all")
    assert r.returncode == 1 and r.stdout == ""
    r = lgf.run("console", "tail", "--dir", d, "-n", "2", "n2")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert len(out) == 2 and "same on every node" in out[0] and "console log ended" in out[1], out


def logged_bytes(prom, node):
    with open(prom) as f:
        m = re.search(r'gpufleet_console_bytes\{node="%s"\} (\d+)' % node, f.read())
    return int(m.group(1)) if m else 0


def test_log_caps_hold_against_a_flood(lgf, log_lab, tmp_path):
    d = str(tmp_path / "logs")
    flooder = log_lab.serial[3]
    prom = str(tmp_path / "console.prom")
    lg = Logger(lgf, "n3", "n4", "--dir", d, "--max-size", "16K", "--keep", "2",
                "--total-size", "40K", "--duration", "120", "--metrics", prom)
    try:
        lg.wait_state("n3", "connected")
        lg.wait_state("n4", "connected")
        with open(prom) as f:
            text = f.read()
        assert 'gpufleet_console_state{node="n3",state="connected"} 1' in text, text
        log_lab.serial[4].send(b"quiet node line\r\n")
        wait_logged(os.path.join(d, "n4.log"), "quiet node line")
        flooder.flood(b"flood ")
        deadline = time.monotonic() + 120
        while logged_bytes(prom, "n3") < 64 * 1024:  # the metrics: what the logger got
            assert time.monotonic() < deadline, f"only {logged_bytes(prom, 'n3')} bytes logged"
            time.sleep(0.5)  # polling a file against its deadline
        flooder.stop_flood()
    finally:
        flooder.stop_flood()
        lg.stop()
    files = sorted(os.listdir(d))
    sizes = {f: os.path.getsize(os.path.join(d, f)) for f in files}
    assert all(s <= 16 * 1024 for s in sizes.values()), sizes
    assert sum(sizes.values()) <= 40 * 1024, sizes
    assert "n3.log.3" not in sizes, sizes
    assert "quiet node line" in "\n".join(log_lines(os.path.join(d, "n4.log")))
    assert logged_bytes(prom, "n3") >= 64 * 1024  # counted although the logs hold far less
    with open(prom) as f:
        assert 'gpufleet_console_up{node="n3"} 0' in f.read()  # it ended


def test_log_total_cap_holds_after_the_last_marker(lgf, log_lab, tmp_path):
    """The logger's own lines count against --total-size too: a log filled by the node to
    just under the cap stays under it once "console log ended" is written."""
    d = str(tmp_path / "logs")
    log = os.path.join(d, "n4.log")
    lg = Logger(lgf, "n4", "--dir", d, "--max-size", "16K", "--keep", "2", "--total-size", "4K",
                "--duration", "120")
    try:
        lg.wait_state("n4", "connected")
        wait_logged(log, "console connected")
        line = b"x" * 99  # logged as a 25-byte time, 99 bytes and a newline
        room = 4096 - os.path.getsize(log)
        n = room // 125
        assert room - n * 125 < 56, room  # less room left than the end marker takes (56 bytes)
        for k in range(n):
            log_lab.serial[4].send(b"%02d" % k + line[2:] + b"\r\n")
        wait_logged(log, "%02d" % (n - 1) + "x" * 97)
        assert os.path.getsize(log) <= 4096
    finally:
        rc = lg.stop()
    assert rc == 128 + signal.SIGTERM, lg.stderr
    sizes = {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if ".log" in f}
    assert sum(sizes.values()) <= 4096, sizes


def test_log_respects_busy(lgf, log_lab, tmp_path):
    d = str(tmp_path / "logs")
    holder = ipmiconsole(log_lab, 2)
    try:
        holder.expect(b"[SOL established]", 30)
        lg = Logger(lgf, "n2", "--dir", d, "--duration", "60")
        try:
            k = lg.wait_state("n2", "busy", timeout=30)
            assert lg.states[k]["error"]["kind"] == "busy"
            assert holder.proc.poll() is None
            log_lab.serial[2].send(b"the holder's line\r\n")
            holder.expect(b"the holder's line")
        finally:
            lg.stop()
        assert "console busy" in "\n".join(log_lines(os.path.join(d, "n2.log")))
        holder.type(b"&.")
        assert holder.wait() == 0
    finally:
        holder.close()
    payload_free(log_lab, 2)



def prom_samples(text):
    """{'name{labels}': value} of a Prometheus text."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def test_metrics_exports_what_console_log_records(lgf, log_lab, tmp_path):
    """`gpufleet metrics` reads the state `console log` keeps in its folder:
    each console's state and the bytes its serial port really sent."""
    d = str(tmp_path / "logs")
    r = lgf.run("metrics", "--console-dir", d)
    assert r.returncode == 0, r.stderr
    assert prom_samples(r.stdout)["gpufleet_console_log_up"] == 0  # no logger ran there
    lg = Logger(lgf, "n1", "n2", "--dir", d, "--duration", "240")
    try:
        lg.wait_state("n1", "connected")
        lg.wait_state("n2", "connected")
        r = lgf.run("metrics", "--console-dir", d)
        m = prom_samples(r.stdout)
        assert r.returncode == 0 and m["gpufleet_console_log_up"] == 1, r.stdout + r.stderr
        assert m['gpufleet_console_up{node="n1"}'] == 1
        assert m['gpufleet_console_state{node="n2",state="connected"}'] == 1
        assert m['gpufleet_console_state{node="n2",state="busy"}'] == 0
        base = {i: m[f'gpufleet_console_bytes{{node="n{i}"}}'] for i in (1, 2)}
        sent = {1: 0, 2: 0}
        for k in range(40):
            for i in (1, 2):
                line = b"n%d metrics line %03d %s\r\n" % (i, k, b"x" * (k * i))
                log_lab.serial[i].send(line)
                sent[i] += len(line)
        wait_logged(os.path.join(d, "n2.log"), "n2 metrics line 039")
        # The state is refreshed every 10 s: the scrape sees it by then.
        env = {"GPUFLEET_CONSOLE_DIR": d}  # as the systemd units set it
        deadline = time.monotonic() + 40
        while True:
            r = lgf.run("metrics", env=env)
            m = prom_samples(r.stdout)
            got = {i: m[f'gpufleet_console_bytes{{node="n{i}"}}'] - base[i] for i in (1, 2)}
            if got == sent or time.monotonic() > deadline:
                break
            time.sleep(0.5)  # polling the scrape against its deadline
        assert got == sent, (got, sent)
        r = lgf.run("metrics", "n2", env=env)  # TARGETS: those nodes' consoles only
        assert 'node="n2"' in r.stdout and 'node="n1"' not in r.stdout, r.stdout
        assert lgf.run("metrics", "--console-dir", d).stdout.count("gpufleet_console_up{") == 2
    finally:
        rc = lg.stop()
    assert rc == 128 + signal.SIGTERM, lg.stderr
    # The logger ended: down, every console stopped, the bytes it counted kept.
    r = lgf.run("metrics", "--console-dir", d)
    m = prom_samples(r.stdout)
    assert m["gpufleet_console_log_up"] == 0 and m['gpufleet_console_up{node="n1"}'] == 0
    assert m['gpufleet_console_state{node="n1",state="stopped"}'] == 1
    assert m['gpufleet_console_state{node="n1",state="connected"}'] == 0
    assert m['gpufleet_console_bytes{node="n2"}'] == base[2] + sent[2]
    # A state file that is not one: a one-line warning, exit 1, the rest still printed.
    with open(os.path.join(d, ".console-state.json"), "w") as f:
        f.write("{not json")
    r = lgf.run("metrics", "--console-dir", d)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "gpufleet_console_log_up 0" in r.stdout
