"""What an operator sees on a terminal at a few hundred nodes (issue 22): a
folded node set too wide for its column goes on its own line above the row it
names, so no line is wider than the terminal; JSON and CSV stay as scripts
read them. Through the real binary, its stdout on a pseudo-terminal of fixed
width, against 200 ipmi_sim BMCs (tests/lab/ipmilab.py) and one dead address.
Node sets are expanded by ClusterShell's `nodeset -e` (a reference only)."""
import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, started_lab

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import ipmisensors as S  # noqa: E402
from ipmilab import IpmiLab  # noqa: E402

COUNT = 200
COLS = 120
# Per-node deadlines with room for a loaded machine (ASan, two shared cores):
# the dead BMC costs one of them per run.
TIMEOUT = "10"
SWEEP_TIMEOUT = "30"
DEAD = loopback(__name__, "dead") + ".1"
NAMES = [f"gpu{i:03d}" for i in range(1, COUNT + 1)]
ALL = NAMES + ["gpu201"]          # gpu201: a BMC address where nothing listens
# Planted: wrong passwords (the login is refused), critical PSUs, a hot GPU (a warning only).
BAD_PASSWORD = {17, 101}
FAILED_PSU = {7, 150}
CRIT_SEL = {120}                  # a new critical event log entry, sensors fine
HOT_GPU = {33}
# Power on for every third node: the folded sets have dozens of ranges.
POWER_ON = {i for i in range(1, COUNT + 1) if i % 3 == 0}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def profile(i):
    if i in FAILED_PSU:
        return {"failed_psu": True}
    if i in HOT_GPU:
        return {"hot_gpu": 87}
    return {"gpus": 4}


@pytest.fixture(scope="module")
def lab():
    if not shutil.which("nodeset"):
        pytest.skip("ClusterShell's nodeset is not installed (Debian clustershell)")
    overrides = {i: {"power": "on" if i in POWER_ON else "off"} for i in range(1, COUNT + 1)}
    for i in BAD_PASSWORD:
        overrides[i]["password"] = "not-" + PASSWORD[:12]
    profiles = {i: profile(i) for i in range(1, COUNT + 1)}
    for lab in started_lab("gf-lab-fit-", lambda d: IpmiLab(
            d, prefix=loopback(__name__, "ipmi"), count=COUNT, user="admin", password=PASSWORD,
            overrides=overrides, emu_extra=S.emu_extra(profiles))):
        for i in CRIT_SEL:
            S.add_event(lab, i, "PSU2 Status", S.PSU_FAILED)
        yield lab


@pytest.fixture
def reg(gf, lab):
    lines = ["name,bmc,protocol,groups"]
    for i, name in enumerate(NAMES, 1):
        lines.append(f"{name},{lab.addr(i)},ipmi,all")
    lines.append(f"gpu201,{DEAD},ipmi,all")
    r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    return gf


def on_tty(gf, *args, cols=COLS, env=None, timeout=240):
    """Run with stdout on a terminal @cols wide (stderr a pipe): (rc, stdout lines, stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # the lines as written, without carriage returns
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen([GPUFLEET, *args], stdout=slave, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=gf.env(env))
    os.close(slave)
    chunks = []

    def read():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child's end closed and all was read
                return
            if not chunk:
                return
            chunks.append(chunk)

    t = threading.Thread(target=read)
    t.start()
    try:
        _, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        t.join(timeout=10)
        os.close(master)
    out = ANSI.sub("", b"".join(chunks).decode())
    return p.returncode, out.splitlines(), err.decode()


def expand(nodeset):
    r = subprocess.run(["nodeset", "-e", "-S", "\n", nodeset], capture_output=True, text=True,
                       check=True)
    return r.stdout.split()


def fold(names):
    r = subprocess.run(["nodeset", "-f", *names], capture_output=True, text=True, check=True)
    return r.stdout.strip()


def assert_fits(lines, cols=COLS):
    wide = [x for x in lines if len(x) > cols]
    assert not wide, f"{len(wide)} lines wider than {cols}: {wide[0]!r}"


def attention(lines):
    """The problems block at the end of @lines: ({problem: node set}, its summary line)."""
    marks = [k for k, x in enumerate(lines) if x.startswith("NEEDS ATTENTION")]
    assert len(marks) == 1, lines[-20:]
    k = marks[0]
    assert lines[-1] == lines[-1].strip() and " ok" in lines[-1], lines[-3:]
    rows = blocks(lines[k + 1:-1]) if k + 2 < len(lines) - 1 else {}
    return rows, lines[-1], k


def named(rows):
    return sorted({n for v in rows.values() for n in expand(v)})


def blocks(lines):
    """The folded table as {row text: node set}: a set on its own line(s)
    ('gpu[...' up to the line that ends in ']') names the row under it, whose
    NODE cell is '(N nodes)'; a set that fits stands in its row. A line that
    starts with a blank continues the row above (a wrapped cell)."""
    merged = []
    for line in lines:
        if line.startswith(" ") and merged:
            merged[-1] += " " + line.strip()
        else:
            merged.append(line)
    lines = merged
    out, pending, i = {}, None, 1
    while i < len(lines):
        line = lines[i]
        if pending is None and line.startswith("gpu") and not re.match(r"\S+\s{2,}\S", line):
            text = line
            while not text.endswith("]") and i + 1 < len(lines):
                i += 1
                text += lines[i]
            pending = text
        else:
            node, _, rest = line.partition("  ")
            if pending is not None:
                count = re.fullmatch(r"\((\d+) nodes?\)", node.strip())
                assert count, (line, pending)
                assert int(count.group(1)) == len(expand(pending)), (line, pending)
                out[rest.strip()] = pending
                pending = None
            else:
                out[rest.strip()] = node
        i += 1
    assert pending is None, pending
    return out


def test_folded_power_fits_the_terminal(reg, lab):
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "power", "status", "@all")
    assert rc == 1, err  # the bad passwords and the dead BMC
    assert_fits(lines)
    assert lines[0].split()[:2] == ["NODE", "POWER"], lines[:3]
    rows = blocks(lines[:attention(lines)[2]])
    on = sorted(NAMES[i - 1] for i in POWER_ON if i not in BAD_PASSWORD)
    off = sorted(NAMES[i - 1] for i in range(1, COUNT + 1)
                 if i not in POWER_ON and i not in BAD_PASSWORD)
    assert sorted(expand(rows["on"])) == on
    assert sorted(expand(rows["off"])) == off
    assert len(fold(off)) > COLS  # the case the issue is about: a set wider than the screen
    failed = {k: v for k, v in rows.items() if k not in ("on", "off", "")}
    assert sorted(n for v in failed.values() for n in expand(v)) == \
        sorted([NAMES[i - 1] for i in BAD_PASSWORD] + ["gpu201"]), failed


def test_folded_output_for_scripts_is_unchanged(reg, lab):
    # JSON: one object per node, as without a terminal.
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "--format", "json", "power", "status",
                            "@all")
    data = json.loads("\n".join(lines))
    assert sorted(o["node"] for o in data) == ALL
    # CSV: the folded set stays in its first field, on one line, however long.
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "--format", "csv", "power", "status",
                            "@all")
    assert lines[0].startswith("node,"), lines[:2]
    sets = {}
    for line in lines[1:]:
        node, _, rest = line.partition('",' if line.startswith('"') else ",")
        sets[rest.split(",")[0]] = node.strip('"')
    assert sorted(expand(sets["off"])) == sorted(
        NAMES[i - 1] for i in range(1, COUNT + 1) if i not in POWER_ON and i not in BAD_PASSWORD)
    assert any(len(x) > COLS for x in lines)


FAILED = sorted([NAMES[i - 1] for i in BAD_PASSWORD] + ["gpu201"])
CRITICAL = sorted(NAMES[i - 1] for i in FAILED_PSU | CRIT_SEL)


def test_sweep_ends_with_what_needs_attention(reg, lab):
    rc, lines, err = on_tty(reg, "-C", "--timeout", SWEEP_TIMEOUT, "sweep", "--no-ssh", "@all")
    assert rc == 1, err
    assert_fits(lines)
    rows, summary, k = attention(lines)
    assert k > 3  # after the per-node table
    assert named(rows) == sorted(FAILED + CRITICAL), rows
    failed = {p: v for p, v in rows.items() if p.startswith("failed")}
    assert named(failed) == FAILED, rows
    assert named({p: v for p, v in rows.items() if "critical sensor" in p}) == \
        sorted(NAMES[i - 1] for i in FAILED_PSU), rows
    assert named({p: v for p, v in rows.items() if "critical SEL" in p}) == \
        sorted(NAMES[i - 1] for i in CRIT_SEL), rows
    assert summary == f"{COUNT + 1} nodes: {COUNT + 1 - 3} ok, 0 partial, 3 failed", summary


def test_quiet_sweep_prints_only_the_block(reg, lab):
    rc, quiet, err = on_tty(reg, "-q", "-C", "--timeout", SWEEP_TIMEOUT, "sweep", "--no-ssh", "@all")
    assert rc == 1, err
    assert quiet[0].startswith("NEEDS ATTENTION"), quiet[:3]
    rows, summary, k = attention(quiet)
    assert k == 0 and named(rows) == sorted(FAILED + CRITICAL), rows
    assert summary == f"{COUNT + 1} nodes: {COUNT + 1 - 3} ok, 0 partial, 3 failed", summary
    assert not err.strip(), err  # nothing more on stderr either
    # In a pipe: as before, no block.
    r = reg.run("-C", "--timeout", SWEEP_TIMEOUT, "sweep", "--no-ssh", "@all")
    assert "NEEDS ATTENTION" not in r.stdout


def test_power_ends_with_the_failed_nodes(reg, lab):
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "power", "status", "@all")
    assert rc == 1, err
    rows, summary, k = attention(lines)
    assert named(rows) == FAILED, rows
    assert summary == f"{COUNT + 1} nodes: {COUNT + 1 - 3} ok, 3 failed", summary
    rc, quiet, err = on_tty(reg, "-q", "-C", "--timeout", TIMEOUT, "power", "status", "@all")
    assert quiet == lines[k:], quiet
    r = reg.run("-C", "--timeout", TIMEOUT, "power", "status", "@all")
    assert "NEEDS ATTENTION" not in r.stdout and r.returncode == 1


def test_sensors_end_with_the_critical_nodes(reg, lab):
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "sensors", "@all")
    assert rc == 1, err
    assert_fits(lines)
    rows, summary, k = attention(lines)
    assert named(rows) == sorted(FAILED + [NAMES[i - 1] for i in FAILED_PSU]), rows


def table_nodes(lines):
    """The nodes a folded table names (its NODE cells and the sets above its rows)."""
    return named({k: v for k, v in blocks(lines).items() if v})


def test_a_filter_prints_only_what_matched(reg, lab):
    crit = sorted(NAMES[i - 1] for i in FAILED_PSU)
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "sensors", "--state", "critical",
                            "@all")
    assert rc == 1, err
    assert_fits(lines)
    rows, summary, k = attention(lines)
    table = lines[:k - 1]
    assert not any(re.fullmatch(r"\S+(\s+-)+", x) for x in table), table  # no rows of dashes
    assert table_nodes(table) == sorted(crit + FAILED), table
    assert all("PSU2 Status" in x for x in table[1:] if x.startswith(("gpu007", "gpu150"))), table
    nothing = COUNT + 1 - len(crit) - len(FAILED)
    assert summary == (f"{COUNT + 1} nodes: {COUNT + 1 - 3} ok, 3 failed; "
                       f"{nothing} with nothing that matched"), summary
    # In a pipe: the same rows, the count on stderr.
    r = reg.run("-C", "--timeout", TIMEOUT, "sensors", "--state", "critical", "@all")
    assert table_nodes(r.stdout.splitlines()) == sorted(crit + FAILED), r.stdout
    assert f"{nothing} of {COUNT + 1} nodes had nothing that matched" in r.stderr, r.stderr
    # JSON keeps every node, the empty ones with an empty list.
    r, data = reg.json("--timeout", TIMEOUT, "sensors", "--state", "critical", "@all")
    assert len(data) == COUNT + 1
    assert sum(1 for o in data if o["ok"] and not o["sensors"]) == nothing


def test_sel_severity_prints_only_what_matched(reg, lab):
    r, data = reg.json("--timeout", TIMEOUT, "sel", "list", "--severity", "critical", "@all")
    with_crit = sorted(o["node"] for o in data if o["ok"] and o["entries"])
    assert set(NAMES[i - 1] for i in CRIT_SEL) <= set(with_crit), with_crit
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "sel", "list", "--severity",
                            "critical", "@all")
    rows, summary, k = attention(lines)
    assert table_nodes(lines[:k - 1]) == sorted(with_crit + FAILED), lines[:k]
    assert summary.endswith(f"; {COUNT + 1 - 3 - len(with_crit)} with nothing that matched")


def test_firmware_ends_with_the_failed_nodes(reg, lab):
    """firmware, another fan-out verb the issue names: its folded table fits, the block
    names exactly the nodes that failed, -q prints only the block and the summary."""
    rc, lines, err = on_tty(reg, "-C", "--timeout", TIMEOUT, "firmware", "@all")
    assert rc == 1, err
    assert_fits(lines)
    rows, summary, k = attention(lines)
    assert k > 1  # after the per-node table
    assert named(rows) == FAILED, rows
    assert summary == f"{COUNT + 1} nodes: {COUNT + 1 - 3} ok, 3 failed", summary
    rc, quiet, err = on_tty(reg, "-q", "-C", "--timeout", TIMEOUT, "firmware", "@all")
    assert rc == 1 and quiet == lines[k:], quiet
