"""The spine's terminal behaviour against ipmi_sim: Ctrl-C, progress, colour, -q, -v, exit codes."""
import json
import os
import pty
import signal
import subprocess
import time

import pytest

from conftest import GPUFLEET, register

LAB_COUNT = 6


@pytest.fixture
def reg(gf, fleet):
    register(gf, fleet)
    for i in range(1, fleet.count + 1):
        fleet.set_power(i, "off")
    return gf


def run_on_pty(gf, *args, env=None):
    """Run with stderr on a terminal (stdout a pipe); return (rc, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([GPUFLEET, *args], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL, env=gf.env(env))
    os.close(slave)
    out = p.stdout.read()
    rc = p.wait(timeout=60)
    term = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child's end is closed and everything was read
            break
        if not chunk:
            break
        term += chunk
    os.close(master)
    return rc, out.decode(), term.decode(errors="replace")


def test_ctrl_c_stops_a_staggered_power_on(reg, fleet):
    # Six batches 30 s apart: without a clean stop this would take 150 s.
    p = subprocess.Popen([GPUFLEET, "power", "on", "@all", "--batch", "1", "--interval", "30",
                          "--format", "ndjson", "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=reg.env())
    try:
        first = json.loads(p.stdout.readline())  # ndjson streams: the first batch is done
        assert first["node"] == "gpu01" and first["ok"] is True, first
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    took = time.monotonic() - t0
    assert p.returncode == 130, err
    assert took < 5, took
    assert "interrupted" in err
    rows = [json.loads(x) for x in rest.splitlines()]
    # What finished is reported, and so is every node that was not started.
    assert sorted(o["node"] for o in rows) == [f"gpu{i:02d}" for i in range(2, 7)]
    for o in rows:
        assert o["ok"] is False and "interrupted" in o["error"]["message"], o
    assert fleet.power(1) == "on"
    for i in range(2, 7):
        assert fleet.power(i) == "off", i  # never sent
    # The audit log holds what was sent, not the nodes that never were.
    audit = reg.sql("select node, result from audit")
    assert audit == [{"node": "gpu01", "result": "ok"}], audit


def test_progress_only_on_a_terminal(reg, fleet):
    rc, out, term = run_on_pty(reg, "power", "status", "@all")
    assert rc == 0, term
    assert "6/6 done, 0 failed" in term
    assert "done" not in out  # results on stdout, progress never

    rc, out, term = run_on_pty(reg, "power", "status", "@all", "--no-progress")
    assert rc == 0 and "done" not in term, term

    r = reg.run("power", "status", "@all")  # stderr a pipe
    assert r.returncode == 0 and "done" not in r.stderr, r.stderr
    assert len(r.stdout.splitlines()) == 7


def test_color_quiet_verbose(reg, fleet):
    bad = {"GPUFLEET_BMC_PASSWORD": "not-it"}
    r = reg.run("power", "status", "gpu[01-02]", "--color", "always", env=bad)
    assert r.returncode == 1
    assert "\033[31m" in r.stdout and "auth:" in r.stdout
    assert "2 of 2 nodes failed" in r.stderr
    for when in ("never", "auto"):  # auto: stdout is a pipe here
        r = reg.run("power", "status", "gpu[01-02]", "--color", when, env=bad)
        assert r.returncode == 1 and "\033[" not in r.stdout, when
    r = reg.run("power", "status", "gpu01", "--color", "sometimes")
    assert r.returncode == 2 and "--color" in r.stderr

    r = reg.run("-q", "power", "status", "gpu[01-02]", env=bad)
    assert r.returncode == 1 and "auth:" in r.stdout
    assert "nodes failed" not in r.stderr

    r = reg.run("power", "status", "gpu[01-02]", "-v")
    assert r.returncode == 0
    for node in ("gpu01", "gpu02"):
        assert f"gpufleet: {node}: ok in " in r.stderr, r.stderr
    r = reg.run("power", "status", "gpu[01-02]")
    assert r.stderr == ""


def test_exit_codes(reg, fleet):
    assert reg.run("power", "status", "@all").returncode == 0
    r = reg.run("power", "status", "gpu[01-02]", env={"GPUFLEET_BMC_PASSWORD": "not-it"})
    assert r.returncode == 1
    for args in (("--format", "yaml", "power", "status", "gpu01"),
                 ("--fanout", "1025", "power", "status", "gpu01"),
                 ("power", "status", "gpu77"),
                 ("power", "flip", "gpu01"),
                 ("nodes", "import", "/nonexistent.csv")):
        r = reg.run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert r.stdout == ""
    t0 = time.time()
    r = reg.run("power", "off", "gpu[01-02]")
    assert r.returncode == 4 and "--yes" in r.stderr
    assert all(e not in ("off",) for i in (1, 2) for t, e, _ in fleet.chassis_log(i) if t >= t0)
