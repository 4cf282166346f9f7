"""gpufleet metrics through the real binary, on an inventory imported from
ndjson that the test writes (no BMC lab needed): the values equal what
`drift --format json` and `inventory show --format json` report, label
values are escaped, promtool accepts the text, and --output never lets a
concurrent reader see a partial file."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import TOP, loopback

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
from labutil import stop_popen  # noqa: E402

TIME = "2026-11-30T02:00:00.000Z"
WEIRD = 'rack"7\\gpu\n01'  # a node name with a quote, a backslash and a line feed


def record(node, model, comps, status="ok", errors=(), protocol="redfish", sel=None,
           sensors=None, hardware=None, host=None, sweep=1, time=TIME):
    r = {"sweep": sweep, "time": time, "node": node, "status": status, "errors": list(errors),
         "protocol": protocol, "model": model,
         "components": [{"key": k, "version": v, "source": s} for k, v, s in comps]}
    if sel is not None:
        r["sel"] = sel
    if sensors is not None:
        r["sensors"] = sensors
    if hardware is not None:
        r["hardware"] = hardware
    if host is not None:
        r["host"] = host
    return r


def host_doc(gpus, xid):
    return {"driver": "590.48.01", "gpus": [{"index": i} for i in range(gpus)],
            "health": {"state": "ok", "xid": xid}}


def base_comps(bmc="24.12.05", driver="590.48.01", gpu0='96.00.9F.00.04'):
    return [("bmc", bmc, "redfish"), ("gpu0.firmware", gpu0, "redfish"),
            ("driver", driver, "ssh"), ("cuda.driver", "13.1", "ssh")]


def lab_records(count=12):
    """Two models; drift on dgx3 (bmc), dgx5 (driver), the weird node (gpu0 firmware
    with a quote, a backslash and a line feed); a failed and a partial node; Xids,
    SEL and sensor summaries."""
    recs = []
    for i in range(1, count + 1):
        comps = base_comps(bmc="23.05.03" if i == 3 else "24.12.05",
                           driver="580.95.05" if i == 5 else "590.48.01")
        xid = {"79": 2, "13": 5} if i == 2 else {"48": 1} if i == 4 else {}
        recs.append(record(f"dgx{i}", "DGX H100", comps,
                           sel={"total": 10 + i, "new": {"info": i % 3, "warning": i % 2,
                                                         "critical": 1 if i == 6 else 0}},
                           sensors={"nominal": 40, "warning": i % 2, "critical": 1 if i == 7 else 0,
                                    "unknown": 0},
                           hardware={"gpus": [{"index": g} for g in range(8)]},
                           host=host_doc(7 if i == 8 else 8, xid)))
    for i in range(1, 5):
        recs.append(record(f"hgx{i}", "HGX B200", base_comps(bmc="1.2", gpu0="97.00.01"),
                           protocol="ipmi",
                           sel={"total": 3, "new": {"info": 0, "warning": 0, "critical": 0}},
                           sensors={"nominal": 30, "warning": 0, "critical": 0, "unknown": 1},
                           host=host_doc(8, {})))
    recs.append(record(WEIRD, "HGX B200", base_comps(bmc="1.2", gpu0='97.00."01"\\b\nrc'),
                       protocol="ipmi", host=host_doc(8, {})))
    recs.append(record("dead1", "DGX H100", [], status="failed", protocol=None,
                       errors=[{"op": "bmc", "kind": "connect", "message": "no route"},
                               {"op": "ssh", "kind": "timeout", "message": "no answer"}]))
    recs.append(record("half1", "DGX H100", [c for c in base_comps() if c[2] == "redfish"],
                       status="partial",
                       errors=[{"op": "ssh", "kind": "auth", "message": "denied"}],
                       hardware={"gpus": [{"index": g} for g in range(8)]}))
    return recs


def write_ndjson(path, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")


def unescape(v):
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\":
            out.append({"\\": "\\", '"': '"', "n": "\n"}[v[i + 1]])
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Samples as (name, frozenset of labels) -> value; every family has HELP and TYPE."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#") or not line:
            continue
        m = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        assert m, f"not a sample line: {line!r}"
        name, labels, value = m.groups()
        assert name in typed, f"{name} has no TYPE line before its samples"
        lab = {}
        if labels:
            pos = 0
            while pos < len(labels):
                lm = LABEL.match(labels, pos)
                assert lm, f"bad labels: {labels!r}"
                lab[lm.group(1)] = unescape(lm.group(2))
                pos = lm.end()
                if pos < len(labels):
                    assert labels[pos] == ","
                    pos += 1
        key = (name, frozenset(lab.items()))
        assert key not in samples, f"duplicate sample {line!r}"
        samples[key] = float(value)
    return samples


def pick(samples, name, **labels):
    """The samples of @name whose labels include @labels: {labels dict: value}."""
    want = set(labels.items())
    return {k[1]: v for k, v in samples.items() if k[0] == name and want <= set(k[1])}


def one(samples, name, **labels):
    got = pick(samples, name, **labels)
    assert len(got) == 1, (name, labels, got)
    return next(iter(got.values()))


@pytest.fixture
def inv(gf, tmp_path):
    path = tmp_path / "lab.ndjson"
    write_ndjson(path, lab_records())
    r = gf.run("inventory", "import", str(path))
    assert r.returncode == 0, r.stderr
    return gf


def metrics(gf, *args):
    r = gf.run("metrics", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_values_equal_drift_and_inventory_show(inv):
    text = metrics(inv)
    s = parse(text)
    r, drift = inv.json("drift")
    assert r.returncode in (0, 1), r.stderr
    nodes = [d["node"] for d in drift]
    assert len(nodes) == 19 and WEIRD in nodes
    drifting = 0
    for d in drift:
        node = d["node"]
        r, shown = inv.json("inventory", "show", node)
        assert r.returncode == 0, r.stderr
        (shown,) = shown
        # status: 1 for the node's, 0 for the others
        for st in ("ok", "partial", "failed"):
            assert one(s, "gpufleet_node_status", node=node, status=st) == \
                (1 if shown["status"] == st else 0)
        assert one(s, "gpufleet_node_info", node=node)  # == 1
        assert dict(pick(s, "gpufleet_node_info", node=node).popitem()[0])["model"] == shown["model"]
        # components: exactly those inventory show lists
        comps = {(dict(k)["component"], dict(k)["version"], dict(k)["source"])
                 for k in pick(s, "gpufleet_component_info", node=node)}
        assert comps == {(c["key"], c["version"] or "", c["source"])
                         for c in shown["components"]}
        # drift: the count and the items of drift --format json
        if d["ok"]:
            assert one(s, "gpufleet_drift_components", node=node) == len(d["drift"])
        else:
            assert not pick(s, "gpufleet_drift_components", node=node)
        items = {(dict(k)["component"], dict(k)["expected"], dict(k)["actual"])
                 for k in pick(s, "gpufleet_drift_info", node=node)}
        assert items == {(i["component"], i["expected"] or "", i["actual"] or "")
                         for i in d["drift"]}
        drifting += bool(d["drift"])
        # event log and sensors as stored
        if shown["sel"] is None:
            assert not pick(s, "gpufleet_sel_new_entries", node=node)
        else:
            assert one(s, "gpufleet_sel_entries", node=node) == shown["sel"]["total"]
            for sev, n in shown["sel"]["new"].items():
                assert one(s, "gpufleet_sel_new_entries", node=node, severity=sev) == n
        if shown["sensors"] is None:
            assert not pick(s, "gpufleet_sensors", node=node)
        else:
            for st, n in shown["sensors"].items():
                assert one(s, "gpufleet_sensors", node=node, state=st) == n
        # GPUs: the host's list, and the Redfish BMC's
        host = shown.get("host")
        if host and shown["collected"]["host"]:
            assert one(s, "gpufleet_gpus", node=node, source="ssh") == len(host["gpus"])
            xids = {dict(k)["xid"]: v for k, v in pick(s, "gpufleet_gpu_xid_errors",
                                                       node=node).items()}
            assert xids == {k: float(v) for k, v in host["health"]["xid"].items()}
        else:
            assert not pick(s, "gpufleet_gpus", node=node, source="ssh")
        hw = shown.get("hardware")
        if hw and shown["protocol"] == "redfish":
            assert one(s, "gpufleet_gpus", node=node, source="redfish") == len(hw["gpus"])
        else:
            assert not pick(s, "gpufleet_gpus", node=node, source="redfish")
    assert drifting == 3
    assert one(s, "gpufleet_drift_components", node="dgx3") == 1
    assert one(s, "gpufleet_gpu_xid_errors", node="dgx2", xid="79") == 2
    assert one(s, "gpufleet_gpus", node="dgx8", source="ssh") == 7
    assert one(s, "gpufleet_node_errors", node="dead1", op="bmc", kind="connect") == 1
    assert one(s, "gpufleet_sweep_timestamp_seconds") == 1796004000


def test_label_escaping_and_promtool(inv):
    text = metrics(inv)
    # The weird name: quote, backslash and line feed escaped, never raw.
    assert 'node="rack\\"7\\\\gpu\\n01"' in text
    assert 'version="97.00.\\"01\\"\\\\b\\nrc"' in text
    for line in text.splitlines():
        assert line.startswith("gpufleet_") or line.startswith("# HELP ") or \
            line.startswith("# TYPE "), repr(line)
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus) is not installed"
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_targets_output_file_and_usage(inv, tmp_path):
    s = parse(metrics(inv, "dgx[1-3]"))
    assert {dict(k)["node"] for k in pick(s, "gpufleet_node_status")} == {"dgx1", "dgx2", "dgx3"}
    # Drift is still the majority of the model among the nodes asked for.
    assert one(s, "gpufleet_drift_components", node="dgx3") == 1
    out = tmp_path / "textfile" / "gpufleet.prom"
    out.parent.mkdir()
    r = inv.run("metrics", "--output", str(out))
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert out.read_text() == metrics(inv)
    assert oct(out.stat().st_mode & 0o777) == "0o644"
    assert os.listdir(out.parent) == ["gpufleet.prom"]  # no temporary file left
    # A folder that does not exist: an error, and nothing written.
    r = inv.run("metrics", "--output", str(tmp_path / "nope" / "x.prom"))
    assert r.returncode == 1 and "nope/x.prom" in r.stderr
    # Never swept: a warning and exit 1, the others still written.
    r = inv.run("metrics", "dgx1,ghost")
    assert r.returncode == 1 and "not been swept" in r.stderr
    assert 'gpufleet_node_status{node="dgx1",status="ok"} 1' in r.stdout
    r = inv.run("--format", "json", "metrics")
    assert r.returncode == 2 and "Prometheus" in r.stderr
    assert inv.run("--format", "prometheus", "metrics").returncode == 0


def test_empty_inventory(gf):
    r = gf.run("metrics")
    assert r.returncode == 0 and "no sweep" in r.stderr
    assert all(line.startswith("#") for line in r.stdout.splitlines())
    assert "# TYPE gpufleet_node_status gauge" in r.stdout


READER = r"""
import os, sys
path, done, expect_path, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
expect = open(expect_path).read()
reads = bad = 0
while reads < limit and not os.path.exists(done):
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        continue
    reads += 1
    if text != expect:
        bad += 1
print(reads, bad)
"""


def test_atomic_write_under_a_concurrent_reader(gf, tmp_path):
    # A big file (hundreds of kB), so that a write in place would be seen half done.
    recs = [record(f"n{i:04d}", "DGX H100", base_comps(driver="580.95.05" if i % 7 == 0
                                                        else "590.48.01"),
                   host=host_doc(8, {"79": i % 3}))
            for i in range(1500)]
    write_ndjson(tmp_path / "big.ndjson", recs)
    r = gf.run("inventory", "import", str(tmp_path / "big.ndjson"))
    assert r.returncode == 0, r.stderr
    expect = metrics(gf)
    assert len(expect) > 200000
    (tmp_path / "expect.prom").write_text(expect)
    out = tmp_path / "gpufleet.prom"
    done = tmp_path / "done"
    r = gf.run("metrics", "--output", str(out))
    assert r.returncode == 0, r.stderr
    reader = subprocess.Popen([sys.executable, "-c", READER, str(out), str(done),
                               str(tmp_path / "expect.prom"), "200000"],
                              stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(25):
            r = gf.run("metrics", "--output", str(out))
            assert r.returncode == 0, r.stderr
        done.write_text("")
        stdout, _ = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    reads, bad = map(int, stdout.split())
    assert reads > 0 and bad == 0, (reads, bad)
    # No temporary file left behind by any of the writes.
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".gpufleet.prom")]


# ---- contrib/: alerting rules and the dashboard, against a real Prometheus ----

CONTRIB = os.path.join(TOP, "contrib")
MON_ADDR = loopback(__name__, "prometheus") + ".1"  # Prometheus and node_exporter


def test_alert_rules_pass_their_promtool_tests():
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus) is not installed"
    folder = os.path.join(CONTRIB, "prometheus")
    p = subprocess.run([promtool, "check", "rules", "gpufleet-alerts.yml"], cwd=folder,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "SUCCESS: 7 rules found" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([promtool, "test", "rules", "gpufleet-alerts.test.yml"], cwd=folder,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


def dashboard_queries():
    with open(os.path.join(CONTRIB, "grafana", "gpufleet.json")) as f:
        dash = json.load(f)
    exprs = [(p["title"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 8, exprs
    titles = " ".join(t for t, _ in exprs).lower()
    for want in ("status", "drift per component", "versions per model", "xid"):
        assert want in titles, f"no dashboard panel about {want}"
    # The dashboard's $instance variable, as Grafana expands "All".
    return [(t, e.replace("$instance", ".*")) for t, e in exprs]


def free_port(addr):
    import socket
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def http_json(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def poll(what, fn, deadline_s=60):
    """fn() until it returns something true, for at most @deadline_s seconds."""
    import time
    deadline = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except OSError as e:  # not listening yet
            last = e
        time.sleep(0.2)
    raise AssertionError(f"{what}: not reached in {deadline_s} s (last: {last!r})")


@pytest.fixture
def monitoring(inv, tmp_path):
    """node_exporter (textfile collector only) and Prometheus scraping it every second,
    each with its own config and data in tmp_path, stopped by PID."""
    import urllib.parse
    exporter = shutil.which("prometheus-node-exporter")
    prometheus = shutil.which("prometheus")
    assert exporter, "prometheus-node-exporter is not installed (tests/install-deps.sh)"
    assert prometheus, "prometheus is not installed (tests/install-deps.sh)"
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    r = inv.run("metrics", "--output", str(textdir / "gpufleet.prom"))
    assert r.returncode == 0, r.stderr
    ne_port, prom_port = free_port(MON_ADDR), free_port(MON_ADDR)
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: gpufleet\n    static_configs:\n"
        f"      - targets: ['{MON_ADDR}:{ne_port}']\n")
    procs = []
    try:
        procs.append(subprocess.Popen(
            [exporter, f"--web.listen-address={MON_ADDR}:{ne_port}",
             "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={textdir}"],
            stdout=open(tmp_path / "node_exporter.log", "w"), stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(
            [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address={MON_ADDR}:{prom_port}",
             "--web.console.templates=/nonexistent", "--web.console.libraries=/nonexistent"],
            stdout=open(tmp_path / "prometheus.log", "w"), stderr=subprocess.STDOUT))
        api = f"http://{MON_ADDR}:{prom_port}/api/v1"

        def up():
            for p in procs:
                assert p.poll() is None, (tmp_path / "prometheus.log").read_text() + \
                    (tmp_path / "node_exporter.log").read_text()
            t = http_json(api + "/targets")["data"]["activeTargets"]
            return t and all(x["health"] == "up" for x in t)

        poll("the node_exporter target is up in Prometheus", up)

        def query(expr):
            return http_json(api + "/query?" + urllib.parse.urlencode({"query": expr}))

        yield query
    finally:
        for p in reversed(procs):
            stop_popen(p, grace=20)


def test_prometheus_scrapes_the_textfile_and_every_dashboard_query_has_data(monitoring):
    query = monitoring

    def result(expr):
        r = query(expr)
        assert r["status"] == "success", r
        return r["data"]["result"]

    poll("the gpufleet metrics in Prometheus", lambda: result("gpufleet_node_status"))
    # The textfile collector read the file without an error.
    (err,) = result("node_textfile_scrape_error")
    assert err["value"][1] == "0"
    # Values and escaped labels come through as gpufleet wrote them.
    (d,) = result('gpufleet_drift_components{node="dgx3"}')
    assert d["value"][1] == "1"
    (w,) = result('gpufleet_node_info{node="rack\\"7\\\\gpu\\n01"}')
    assert w["metric"]["node"] == WEIRD and w["metric"]["model"] == "HGX B200"
    assert len(result('gpufleet_node_status == 1')) == 19
    for title, expr in dashboard_queries():
        assert result(expr), f"dashboard panel '{title}': no data for {expr}"


# ---- sweep --metrics: the same file, once the sweep is stored ----

# conftest's fleet fixture: two ipmi_sim BMCs
LAB_COUNT = 2


def test_sweep_writes_the_metrics_once_stored(gf, fleet, tmp_path):
    from conftest import register
    register(gf, fleet)
    r = gf.run("nodes", "add", "gone", "--bmc", f"{fleet.prefix}.250", "--protocol", "ipmi")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "textfile" / "gpufleet.prom"
    out.parent.mkdir()
    r = gf.run("--timeout", "3", "--retries", "0", "sweep", "--quiet", "--metrics", str(out))
    assert r.returncode == 1, r.stderr  # 'gone' failed; the sweep is stored all the same
    text = out.read_text()
    assert text == metrics(gf)  # exactly what gpufleet metrics writes afterwards
    s = parse(text)
    r, sweeps = gf.json("inventory", "sweeps")
    assert r.returncode == 0 and len(sweeps) == 1, r.stderr
    for node in ("gpu01", "gpu02"):
        r, (shown,) = gf.json("inventory", "show", node)
        assert shown["status"] != "failed"
        assert one(s, "gpufleet_node_status", node=node, status=shown["status"]) == 1
    assert one(s, "gpufleet_node_status", node="gone", status="failed") == 1
    assert pick(s, "gpufleet_component_info", node="gpu02")
    assert oct(out.stat().st_mode & 0o777) == "0o644"
    assert os.listdir(out.parent) == ["gpufleet.prom"]
    # A file that cannot be written: exit 1, and the sweep is stored anyway.
    r = gf.run("--timeout", "3", "--retries", "0", "sweep", "--quiet", "--metrics",
               str(tmp_path / "nope" / "x.prom"), "gpu01")
    assert r.returncode == 1 and "nope/x.prom" in r.stderr
    r, sweeps = gf.json("inventory", "sweeps")
    assert len(sweeps) == 2
