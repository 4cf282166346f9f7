"""gpufleet report --html through the real binary, on a lab swept for real:
Redfish BMCs (DGX dialect) from the emulator (.101-104 of the module's range) and sshd
hosts with fake NVIDIA tools (.1-4), plus a node nothing answers
for. The page is opened in headless Chromium: a screenshot that is not
blank and shows the heat map's colours, and a DOM with an entry for every
(node, component) that `drift --format json` reports for the same
inventory, every string from the BMCs escaped. A report of a synthetic
10,000-node inventory (bench/inventory-gen.py) opens in under 5 s."""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import pytest

from conftest import PASSWORD, TOP, Gf, loopback, started_lab

sys.path.insert(0, os.path.join(TOP, "tests", "lab"))
import sshlab  # noqa: E402
from redfish_emu import RedfishLab  # noqa: E402

PREFIX = loopback(__name__, "lab")
RF_FIRST = 101   # Redfish BMCs on .101-.104, their hosts on .1-.4
N = 4
DEAD = f"{PREFIX}.250"  # nothing listens there
SLOW = "30"
CHROMIUM = shutil.which("chromium")
HOSTILE = '2.37<img src=x onerror=alert(1)>&"\''
# The DGX tree's GPU serials (Processors GPU_SXM_1..8) and their firmware.
BMC_SERIALS = ["1652923003067", "1652923004435", "1652923004252", "1652923004442",
               "1652923003447", "1652923003973", "1652923003348", "1652923001497"]
GPU_FW = "96.00.89.00.01"
STAGED = "96.00.AA.00.02"
OTHER_SERIAL = "1650000009999"


def host_gpus(**edit):
    """An 8-GPU host whose nvidia-smi shows the BMC's GPUs (same serials, VBIOS)."""
    node = dict(profile="h100x8-535",
                gpu_set={i: {"serial": s, "vbios_version": GPU_FW} for i, s in enumerate(BMC_SERIALS)})
    for k, v in edit.items():
        if k == "gpu_set":
            for i, vals in v.items():
                node["gpu_set"][i].update(vals)
        else:
            node[k] = v
    return node


class Lab:
    def __init__(self, workdir):
        self.rf = RedfishLab(os.path.join(workdir, "rf"), prefix=PREFIX, first=RF_FIRST, count=N,
                             vendors=["dgx"], user="admin", password=PASSWORD,
                             overrides={RF_FIRST + 1: {"bmc_firmware": "24.05.99"},
                                        RF_FIRST + 2: {"firmware": {"HGX_FW_FPGA_0": HOSTILE}},
                                        # staged: the BMC holds a GPU firmware the host does not run
                                        RF_FIRST + 3: {"gpu_firmware": {"3": STAGED}}})
        self.ssh = sshlab.SshLab(os.path.join(workdir, "ssh"), prefix=PREFIX, nodes=[
            host_gpus(xids="dmesg_xid-79_fallen-off-bus.txt"),
            host_gpus(gpu_hide=[3]),                              # GPU_SXM_4 fell off the bus
            host_gpus(gpu_set={5: {"serial": OTHER_SERIAL}}),     # not the board the BMC lists
            host_gpus(),
        ])

    def start(self):
        self.rf.start()
        self.ssh.start()

    def stop(self):
        for lab in (self.rf, self.ssh):
            lab.stop()

    def bmc_gpu_serials(self, i):
        """The GPU serials BMC i serves (what gpufleet must have read)."""
        return sorted(self.rf.resource(RF_FIRST + i - 1, f"/redfish/v1/Systems/HGX_Baseboard_0/"
                                       f"Processors/GPU_SXM_{g}")["SerialNumber"] for g in range(1, 9))

    def creds(self):
        return (f"[default]\nbmc_user = admin\nbmc_password = {PASSWORD}\n"
                f"redfish_cacert = {self.rf.cacert}\n"
                f"ssh_user = {self.ssh.user}\nssh_key = {self.ssh.key}\n"
                f"ssh_known_hosts = {self.ssh.known_hosts}\n")

    def nodes_csv(self):
        lines = ["name,bmc,protocol,ssh,groups"]
        for i in range(1, N + 1):
            lines.append(f"rf{i},{self.rf.addr(RF_FIRST + i - 1)}:{self.rf.port},redfish,"
                         f"{self.ssh.spec(i)},lab")
        lines.append(f"dead1,{DEAD}:{self.rf.port},redfish,{DEAD}:{sshlab.PORT},lab")
        return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def lab():
    if not os.access(sshlab.SSHD, os.X_OK):
        pytest.skip("sshd is not installed")
    yield from started_lab("gf-report-", Lab)


@pytest.fixture(scope="module")
def swept(lab, tmp_path_factory):
    """One sweep of the lab, stored in a DB of the module's own."""
    gf = Gf(str(tmp_path_factory.mktemp("gf")))
    gf.write_creds(lab.creds())
    r = gf.run("nodes", "import", "-", input=lab.nodes_csv())
    assert r.returncode == 0, r.stderr
    r = gf.run("--format", "json", "sweep", "--timeout", SLOW, "--retries", "0", "@lab")
    assert r.returncode == 1, (r.returncode, r.stderr)  # dead1 failed, the rest stored
    return gf


# ---- reading what Chromium made ------------------------------------------------------

def chromium(*args, timeout=60):
    if not CHROMIUM:
        pytest.fail("chromium is not installed (tests/install-deps.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="gf-chromium-") as profile:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--no-first-run", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG, stdlib only."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ftype == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def expand(nodes):
    """The names of a folded node list: 'rf[1-2,4],dead1' (one bracket per term, as made)."""
    out = []
    for term in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,]*)?", nodes):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", term)
        if not m:
            out.append(term)
            continue
        pre, ranges, post = m.groups()
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            for k in range(int(lo), int(hi or lo) + 1):
                out.append(f"{pre}{str(k).zfill(len(lo))}{post}")
    return out


class Dom(html.parser.HTMLParser):
    """The heat map's (node, component) entries, the sections, and every element seen."""

    def __init__(self):
        super().__init__()
        self.section = None
        self.row_nodes = None
        self.cells = set()        # (node, component) of coloured heat-map cells
        self.rows = {}            # section id -> [data-nodes of its rows]
        self.tags = set()
        self.loads = []           # attributes that would fetch something
        self.texts = {}           # section id -> its text

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        self.loads += [(tag, k, v) for k, v in attrs
                       if k in ("src", "href", "srcset", "action", "data", "poster", "background")
                       or k.startswith("on")]
        if tag == "section":
            self.section = a.get("id")
        if tag == "tr" and "data-nodes" in a:
            self.row_nodes = a["data-nodes"]
            self.rows.setdefault(self.section, []).append(a["data-nodes"])
        if tag == "td" and "data-c" in a and self.section == "heatmap":
            for node in expand(self.row_nodes):
                self.cells.add((node, a["data-c"]))

    def handle_data(self, data):
        if self.section:
            self.texts[self.section] = self.texts.get(self.section, "") + data


def dom_of(path):
    r = chromium("--dump-dom", f"file://{path}")
    assert r.returncode == 0, r.stderr[-2000:]
    d = Dom()
    d.feed(r.stdout)
    return d, r.stdout


def report(gf, path, *args, rc=0):
    r = gf.run("report", "--html", str(path), *args)
    assert r.returncode == rc, (r.returncode, r.stdout, r.stderr)
    return r


def drift_pairs(gf, *args):
    r, data = gf.json("drift", *args)
    return {(o["node"], it["component"]) for o in data for it in o["drift"]}, data


# ---- the lab's report ------------------------------------------------------------------

def test_report_is_self_contained_and_escaped(swept, tmp_path):
    page = tmp_path / "fleet.html"
    r = report(swept, page)
    assert re.search(r"report of 5 nodes written to .*fleet\.html \(\d+ bytes\)", r.stdout), r.stdout
    text = page.read_text(encoding="utf-8")
    # The hostile version from the BMC is text, not markup.
    assert "<img" not in text
    assert "2.37&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;" in text
    # Nothing external: only these elements, no attribute that loads anything, no
    # url() or @import in the style sheet (URLs in BMC messages are text).
    d, dom = dom_of(page)
    assert d.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "section", "p",
                      "div", "span", "table", "thead", "tbody", "tr", "th", "td", "details",
                      "summary"}, d.tags
    assert not d.loads, d.loads
    style = re.search(r"<style>(.*?)</style>", text, flags=re.S).group(1)
    assert "url(" not in style and "@import" not in style
    assert HOSTILE in d.texts["versions"]
    # Nothing left over in the folder: the file was renamed into place.
    assert sorted(os.listdir(tmp_path)) == ["fleet.html"]


def test_dom_has_every_drifted_node_and_component(swept, tmp_path):
    want, data = drift_pairs(swept)
    assert ("rf2", "bmc") in want and ("rf3", "hgx.fpga") in want, sorted(want)
    page = tmp_path / "fleet.html"
    report(swept, page)
    d, _ = dom_of(page)
    assert d.cells == want
    # The failed node is listed with its error kinds; the Xid 79 of rf1's host is there.
    failures = [expand(n) for n in d.rows["failures"]]
    assert ["dead1"] in failures, d.rows
    assert "failed: bmc connect" in d.texts["failures"], d.texts["failures"]
    assert "Xid 79" in d.texts["gpu-health"] and ["rf1"] in [expand(n) for n in d.rows["gpu-health"]]
    # Every heat-map row together names each node once.
    names = [n for nodes in d.rows["heatmap"] for n in expand(nodes)]
    assert sorted(names) == sorted(o["node"] for o in data) and "dead1" in names


def test_baseline_and_targets(swept, tmp_path):
    """--baseline colours what the baseline file disagrees with; TARGETS narrow the page."""
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"components": {"bmc": "24.05.99"}}))
    want, _ = drift_pairs(swept, "--baseline", str(base), "rf[1-3]")
    assert want == {("rf1", "bmc"), ("rf3", "bmc")}, want
    page = tmp_path / "b.html"
    report(swept, page, "--baseline", str(base), "rf[1-3]")
    d, _ = dom_of(page)
    assert d.cells == want
    assert "baseline" in d.texts["summary"]
    # A target never swept: the page shows the others, exit 1.
    r = report(swept, page, "rf1", "ghost1", rc=1)
    assert "1 of the 2 TARGETS have not been swept" in r.stderr


def test_usage_errors(swept, tmp_path):
    for args in ([], ["--html", str(tmp_path / "x.html"), "--baseline", "b", "--since", "1"],
                 ["--html", str(tmp_path / "x.html"), "--since", "yesterday-ish"],
                 ["--html", str(tmp_path / "x.html"), "--baseline", str(tmp_path / "none.json")]):
        r = swept.run("report", *args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    assert not (tmp_path / "x.html").exists()
    # An unwritable place: exit 1, one line.
    r = swept.run("report", "--html", str(tmp_path / "no" / "such" / "dir.html"))
    assert r.returncode == 1 and "no/such" in r.stderr, r.stderr


def test_screenshot_is_not_blank(swept, tmp_path):
    page = tmp_path / "fleet.html"
    report(swept, page)
    shot = tmp_path / "shot.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1000,900", f"file://{page}")
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    w, h, rows = png_pixels(shot)
    assert (w, h) == (1000, 900)
    colours = {}
    for row in rows:
        for px in row:
            colours[px] = colours.get(px, 0) + 1
    white = colours.get((255, 255, 255), 0)
    assert white < 0.97 * w * h, "the page is (almost) all white"
    # The heat map's colours are on screen: agreeing cells and cells off the majority.
    assert colours.get((0xcf, 0xe8, 0xcf), 0) > 200, "no green heat-map cells"
    assert colours.get((0xe5, 0x53, 0x3d), 0) > 50, "no red heat-map cells"


def test_ten_thousand_nodes_open_in_chromium(tmp_path):
    """10,000 nodes: the page opens and shows every drift pair, folded. How
    long it takes is a benchmark (bench/report.sh), not a test: a timed
    assertion here failed whenever the machine was busy."""
    gf = Gf(str(tmp_path))
    gen = subprocess.run([sys.executable, os.path.join(TOP, "bench", "inventory-gen.py"),
                          "10000", "20", "20"], capture_output=True, check=True)
    r = gf.run("inventory", "import", "-", input=gen.stdout.decode(), timeout=300)
    assert r.returncode == 0, r.stderr
    page = tmp_path / "big.html"
    t0 = time.monotonic()
    report(gf, page)
    built = time.monotonic() - t0
    want, _ = drift_pairs(gf)
    t0 = time.monotonic()
    d, dom = dom_of(page)
    opened = time.monotonic() - t0
    print(f"10,000 nodes: report {built:.2f} s, {page.stat().st_size} bytes, "
          f"chromium --dump-dom {opened:.2f} s, {len(d.rows['heatmap'])} heat-map rows")
    assert d.cells == want and len(want) > 20000
    assert len(d.rows["heatmap"]) < 3000  # folded: far fewer rows than nodes


# ---- drift --reconcile: the BMC's GPUs against the host's --------------------------------

def reconcile(gf, *args, rc=0):
    r, data = gf.json("drift", "--reconcile", *args)
    assert r.returncode == rc, (r.returncode, r.stderr)
    return {o["node"]: [it for it in o["drift"] if it.get("reconcile")] for o in data}, data


def test_reconcile_finds_hidden_gpu_foreign_serial_and_staged_firmware(swept, lab):
    got, data = reconcile(swept, rc=1)  # dead1 is not compared
    by_node = {o["node"]: o for o in data}
    # What the peers hold: the BMCs serve the DGX serials, rf3's host one of its own.
    assert lab.bmc_gpu_serials(3) == sorted(BMC_SERIALS)
    assert got["rf1"] == [], got["rf1"]  # same serials, same firmware: nothing
    assert by_node["rf1"]["reconciled"] is True and by_node["dead1"]["reconciled"] is False
    assert got["dead1"] == []
    view = {n: sorted(((it["component"], it["check"], it["expected"], it["actual"]) for it in items),
                      key=lambda t: tuple(x or "" for x in t))
            for n, items in got.items()}
    assert view["rf2"] == [("gpus", "count", "8", "7"),
                           ("gpus", "serial", BMC_SERIALS[3], None)], view["rf2"]
    assert view["rf3"] == [("gpus", "serial", None, OTHER_SERIAL),
                           ("gpus", "serial", BMC_SERIALS[5], None)], view["rf3"]
    assert view["rf4"] == [("gpu3.firmware", "firmware", STAGED, GPU_FW)], view["rf4"]
    assert all(it["reconcile"] is True and it["detail"] for items in got.values() for it in items)
    # Plain drift has none of these.
    r, plain = swept.json("drift")
    assert not any(it.get("reconcile") for o in plain for it in o["drift"])


def test_reconcile_counts_for_fail_on_drift(swept):
    # rf4 alone has no peers to drift from; only its staged firmware counts.
    r = swept.run("drift", "--fail-on-drift", "rf4")
    assert r.returncode == 0, r.stdout + r.stderr
    r = swept.run("drift", "--reconcile", "--fail-on-drift", "rf4")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "gpu3.firmware" in r.stdout and STAGED in r.stdout and GPU_FW in r.stdout
    assert "reconcile: 1 finding on 1 of 1 node with GPUs on both sides" in r.stdout, r.stdout
    r = swept.run("drift", "--reconcile", "--fail-on-drift", "rf1")
    assert r.returncode == 0, r.stdout + r.stderr


def test_report_shows_reconcile_findings(swept, tmp_path):
    got, _ = reconcile(swept, rc=1)
    page = tmp_path / "fleet.html"
    report(swept, page)
    d, _ = dom_of(page)
    rows = d.rows.get("reconcile", [])
    want = sorted(n for n, items in got.items() for _ in items)
    assert sorted(n for nodes in rows for n in expand(nodes)) == want
    assert STAGED in d.texts["reconcile"] and OTHER_SERIAL in d.texts["reconcile"]


def test_since_colours_what_changed(swept, lab, tmp_path):
    """Last here: it changes a BMC and sweeps again. --since 1 colours only that change."""
    lab.rf.override(RF_FIRST + 3, gpu_firmware={"3": "96.00.BB.00.03"})
    r = swept.run("sweep", "--timeout", SLOW, "--retries", "0", "rf4")
    assert r.returncode == 0, r.stderr
    want, _ = drift_pairs(swept, "--since", "1")
    assert want == {("rf4", "gpu3.firmware")}, want
    page = tmp_path / "since.html"
    report(swept, page, "--since", "1")
    d, _ = dom_of(page)
    assert d.cells == want
    assert "changes since 1" in d.texts["summary"]


def test_reconcile_flags_a_gpu_the_bmc_calls_critical(swept, lab):
    """After the last sweep above: rf1's BMC calls GPU_SXM_5 Critical (a row
    remapping pending) while rf1's host sees that GPU and reports no error."""
    got, _ = reconcile(swept, "rf1")
    assert got["rf1"] == []
    lab.rf.override(RF_FIRST, gpu_health={"5": {"health": "Critical", "remap_pending": True}})
    proc = lab.rf.resource(RF_FIRST, "/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_5")
    assert (proc["Status"]["Health"], proc["SerialNumber"]) == ("Critical", BMC_SERIALS[4])
    r = swept.run("sweep", "--timeout", SLOW, "--retries", "0", "rf1")
    assert r.returncode == 0, r.stderr
    got, _ = reconcile(swept, "rf1")
    view = [(it["component"], it["check"], it["expected"], it["actual"]) for it in got["rf1"]]
    assert view == [("gpu5", "health", "Critical", "ok")], got["rf1"]
    assert BMC_SERIALS[4] in got["rf1"][0]["detail"]
    assert "row remapping pending" in got["rf1"][0]["detail"]
