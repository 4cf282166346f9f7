"""Pin on first use means the first certificate, for the whole run (issue 10,
point 11): the real binary against the Redfish emulator (nodes .101-103),
whose BMCs close kept-alive connections after a few requests
(`keepalive_max`) and show another certificate on later connections
(`cert_change_after`). Checked: what gpufleet printed and stored, and what
the BMC saw (its access log by connection, its TLS failure count)."""
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import GPUFLEET, PASSWORD, TOP, loopback, register_redfish

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "redfish")
FIRST = 101
RECONNECT, RACE, REPIN = 101, 102, 103


@pytest.fixture(scope="module")
def lab():
    with tempfile.TemporaryDirectory(prefix="gf-tls-pins-") as workdir, \
            RedfishLab(workdir, prefix=PREFIX, count=3, first=FIRST,
                       vendors=["supermicro", "dell", "hpe"], user="admin",
                       password=PASSWORD) as lab:
        yield lab


@pytest.fixture
def rf(gf, lab):
    for i in lab.indices():
        lab.clear(i)
        lab.override(i, keepalive_max=0, cert_change_after=0, slow=0)
        lab.set_mode(i, hang=False)
    register_redfish(gf, lab)
    # No CA: the certificates are trusted on first use and pinned.
    gf.write_creds(f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n")
    yield gf
    for i in lab.indices():
        lab.override(i, keepalive_max=0, cert_change_after=0, slow=0)
        lab.set_mode(i, hang=False)


def pin_of(gf, node):
    rows = gf.sql(f"SELECT fingerprint FROM tls_pins WHERE node = '{node}'")
    return rows[0]["fingerprint"] if rows else None


def conns(lab, i):
    """The BMC's access log by connection: {conn: [(method, path, auth)]}."""
    out = {}
    for e in lab.access_log(i):
        out.setdefault(e["conn"], []).append((e["method"], e["path"], e["auth"]))
    return out


def pinned(gf, lab, i):
    """Node rf@i pinned on first use to the certificate it shows: (i, name, pin)."""
    node = f"rf{i}"
    r, _ = gf.json("power", "status", node, "--tls-pin", "new")
    assert r.returncode == 0, r.stderr
    pin = pin_of(gf, node)
    assert pin == lab.fingerprint(i)
    return i, node, pin


def colons(fp):
    return "SHA256:" + ":".join(fp[k:k + 2] for k in range(0, len(fp), 2)).upper()


# ---- every connection of a run is checked against the first --------------------

def test_one_connection_is_one_certificate(rf, lab):
    """The control case: a BMC that would show another certificate on a second
    connection, but keeps the first one open: the run succeeds and pins."""
    i = RECONNECT
    lab.override(i, cert_change_after=1)
    r, data = rf.json("power", "status", f"rf{i}", "--tls-pin", "new", "--retries", "0")
    assert r.returncode == 0, (r.stderr, data)
    assert list(conns(lab, i)) == [min(conns(lab, i))], conns(lab, i)   # one connection
    assert pin_of(rf, f"rf{i}") == lab.fingerprint(i)


@pytest.mark.parametrize("verb,keep", [(["hardware"], 2), (["power", "status"], 1)])
def test_a_reconnection_with_another_certificate_fails_and_sends_nothing(rf, lab, verb, keep):
    i = RECONNECT
    # The BMC closes each connection after two requests (the service root and
    # the login: hardware), or after the root alone (power status, whose one
    # read would carry Basic credentials), and shows its second certificate
    # from the second connection on.
    lab.override(i, keepalive_max=keep, cert_change_after=1)
    first, second = lab.fingerprint(i), lab.state(i)["alt_fingerprint"]
    assert second and second != first
    r, data = rf.json(*verb, f"rf{i}", "--tls-pin", "new", "--retries", "0")
    assert r.returncode == 1, (r.stderr, data)
    err = data[0]["error"]
    assert data[0]["ok"] is False and err["kind"] == "tls", data
    assert "changed during the run" in err["message"], err
    assert first in err["message"] and second in err["message"], err

    # What the BMC saw: every request on the first connection, none on a later one.
    seen = conns(lab, i)
    assert len(seen) == 1, seen
    (c1, reqs), = seen.items()
    assert reqs[0][:2] == ("GET", "/redfish/v1") and reqs[0][2] == "none", reqs
    assert len(reqs) == keep, reqs
    if keep == 2:
        assert ("POST", "/redfish/v1/SessionService/Sessions", "none") in reqs, reqs
    # the client refused the second certificate: a TLS failure, no request, no token
    assert lab.state(i)["counters"]["tls_failures"] >= 1, lab.state(i)["counters"]
    assert not [e for e in lab.access_log(i) if e["conn"] != c1], lab.access_log(i)
    # the pin is the first certificate, the one the run trusted
    assert pin_of(rf, f"rf{i}") == first


def test_a_retry_of_the_node_is_held_to_the_first_certificate(rf, lab):
    """A retried node opens a new session: it must show the certificate the
    first attempt trusted, or nothing (credentials included) goes out. The BMC
    closes each connection after two requests; the first two connections show
    its certificate, later ones the second; reading the System drops the
    connection unanswered (a connect failure, so the node is tried again)."""
    i = RECONNECT
    system = lab.state(i)["main_system"]
    lab.override(i, keepalive_max=2, cert_change_after=2,
                 faults={"/redfish/v1/Systems": "close", system: "close"})
    r, data = rf.json("hardware", f"rf{i}", "--tls-pin", "new", "--retries", "2",
                      "--timeout", "20")
    lab.override(i, faults={})
    assert r.returncode == 1, (r.stderr, data)
    assert data[0]["error"]["kind"] == "tls", data
    assert lab.fingerprint(i) in data[0]["error"]["message"], data
    seen = conns(lab, i)
    first = min(seen)
    # requests only on the two connections that showed the first certificate:
    # the retry's service root and login never went out on a later one
    assert set(seen) == {first, first + 1}, seen
    logins = [c for c, reqs in seen.items()
              if ("POST", "/redfish/v1/SessionService/Sessions", "none") in reqs]
    assert logins == [first], seen
    assert any(st == 0 for st in (e["status"] for e in lab.access_log(i))), lab.access_log(i)
    assert lab.state(i)["counters"]["tls_failures"] >= 1
    assert pin_of(rf, f"rf{i}") == lab.fingerprint(i)


def test_a_pinned_node_is_checked_on_every_connection_too(rf, lab):
    i = RECONNECT
    r, _ = rf.json("power", "status", f"rf{i}", "--tls-pin", "new")
    assert r.returncode == 0, r.stderr
    assert pin_of(rf, f"rf{i}") == lab.fingerprint(i)
    lab.clear(i)
    lab.override(i, keepalive_max=2, cert_change_after=1)
    r, data = rf.json("hardware", f"rf{i}", "--retries", "0")
    assert r.returncode == 1 and data[0]["error"]["kind"] == "tls", (r.stderr, data)
    assert len(conns(lab, i)) == 1, conns(lab, i)
    assert pin_of(rf, f"rf{i}") == lab.fingerprint(i)


# ---- concurrent first use ---------------------------------------------------------

def test_concurrent_first_use_keeps_the_first_stored_pin(rf, lab):
    i = RACE
    node = f"rf{i}"
    # Each answer takes a second, so both runs have read the (absent) pin long
    # before either stores one; the first connection shows the node's certificate,
    # the other run's connection the second one.
    lab.override(i, slow=1.0, cert_change_after=1)
    fps = {lab.fingerprint(i), lab.state(i)["alt_fingerprint"]}
    assert len(fps) == 2
    cmd = [GPUFLEET, "--format", "json", "power", "status", node, "--tls-pin", "new",
           "--retries", "0", "--timeout", "60"]
    procs = [subprocess.Popen(cmd, env=rf.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    stored = pin_of(rf, node)
    assert stored in fps, (stored, fps)

    # The runs overlapped: each connection's first request came before the other's last.
    log = lab.access_log(i)
    by = {}
    for e in log:
        by.setdefault(e["conn"], []).append(e["t"])
    assert len(by) == 2, by
    (a, ta), (b, tb) = by.items()
    assert min(ta) < max(tb) and min(tb) < max(ta), by

    won = [k for k, (out, err) in enumerate(outs) if f"pinned the certificate of '{node}'" in err]
    lost = [k for k, (out, err) in enumerate(outs) if "pinned by another run meanwhile" in err]
    assert len(won) == 1 and len(lost) == 1, outs
    w_out, w_err = outs[won[0]]
    l_out, l_err = outs[lost[0]]
    assert procs[won[0]].returncode == 0, w_err
    assert f"(sha256 {stored})" in w_err, w_err
    assert procs[lost[0]].returncode == 1, l_err
    other = (fps - {stored}).pop()
    # the loser names the pin that was kept and the certificate it saw itself
    assert stored in l_err and f"this run saw sha256 {other}" in l_err, l_err
    assert len([line for line in l_err.splitlines() if "meanwhile" in line]) == 1, l_err
    assert json.loads(w_out)[0]["ok"] is True


def test_a_sweep_that_loses_the_first_use_race_fails(rf, lab):
    """A sweep and a power status pin the same node on first use at once: power
    status (a few answers) stores its pin long before the sweep (a whole walk) is
    done, so the sweep loses: it keeps the other pin, says so and exits 1."""
    i = RACE
    node = f"rf{i}"
    lab.override(i, slow=0.3, cert_change_after=1)
    env = rf.env()
    sweep = subprocess.Popen([GPUFLEET, "sweep", node, "--tls-pin", "new", "--retries", "0",
                              "--timeout", "120"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        # the sweep's first request is in: it has read the (absent) pin already
        limit = time.monotonic() + 30
        while not lab.access_log(i) and time.monotonic() < limit:
            time.sleep(0.02)
        assert lab.access_log(i), "the sweep never reached the BMC"
        r = rf.run("power", "status", node, "--tls-pin", "new", "--retries", "0",
                   "--timeout", "60")
        s_out, s_err = sweep.communicate(timeout=180)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    assert r.returncode == 0 and f"pinned the certificate of '{node}'" in r.stderr, r.stderr
    stored = pin_of(rf, node)
    assert f"(sha256 {stored})" in r.stderr
    assert "pinned by another run meanwhile" in s_err, s_err
    assert sweep.returncode == 1, s_err
    assert pin_of(rf, node) == stored


# ---- nodes repin ------------------------------------------------------------------

def test_repin_keeps_the_pin_of_a_node_it_cannot_reach(rf, lab):
    i, node, old = pinned(rf, lab, REPIN)
    lab.set_mode(i, hang=True)
    r, data = rf.json("nodes", "repin", node, "--timeout", "2", "--retries", "0")
    lab.set_mode(i, hang=False)
    assert r.returncode == 1, (r.stderr, data)
    assert data[0]["ok"] is False and data[0]["error"]["kind"] == "timeout", data
    assert data[0]["previous"] == old
    assert pin_of(rf, node) == old        # kept, not forgotten


def test_repin_expect_stores_only_the_expected_certificate(rf, lab):
    i, node, old = pinned(rf, lab, REPIN)
    new = lab.rotate_cert(i)
    assert new != old

    # another certificate than the one announced: refused, the old pin kept
    r, data = rf.json("nodes", "repin", node, "--expect", "ab" * 32)
    assert r.returncode == 1, (r.stderr, data)
    assert data[0]["error"]["kind"] == "tls", data
    msg = data[0]["error"]["message"]
    assert new in msg and "ab" * 32 in msg and "not changed" in msg, msg
    assert pin_of(rf, node) == old
    r, data = rf.json("power", "status", node)
    assert data[0]["error"]["kind"] == "tls", data       # still pinned to the old one

    # a malformed fingerprint: a usage error, nothing contacted
    lab.clear(i)
    r = rf.run("nodes", "repin", node, "--expect", "SHA256:xyz")
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "--expect" in r.stderr, r.stderr
    assert lab.access_log(i) == []
    assert pin_of(rf, node) == old

    # the announced one, as a browser would print it: pinned, no credentials sent for it
    r, data = rf.json("nodes", "repin", node, "--expect", colons(new))
    assert r.returncode == 0, (r.stderr, data)
    assert data[0]["pin"] == new and data[0]["previous"] == old, data
    assert pin_of(rf, node) == new
    log = lab.access_log(i)
    assert log and all(e["auth"] == "none" for e in log), log
    r, data = rf.json("power", "status", node)
    assert r.returncode == 0 and data[0]["ok"] is True, (r.stderr, data)
