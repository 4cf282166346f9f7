"""The node registry and configuration errors, through the real binary (no peers needed)."""
import json
import os

from conftest import loopback

# Addresses only registered: nothing listens there.
DEAD = loopback("*", "dead")


def test_add_list_tag_remove(gf):
    assert gf.run("nodes", "add", "gpu001", "--bmc", f"{DEAD}.1", "--protocol", "ipmi",
                  "--group", "rack1", "--ssh", f"ops@{DEAD}.101:2222").returncode == 0
    assert gf.run("nodes", "add", "gpu002", "--bmc", f"{DEAD}.2:6230", "-g", "rack1").returncode == 0
    r, data = gf.json("nodes", "list")
    assert data == [
        {"node": "gpu001", "bmc": f"{DEAD}.1", "protocol": "ipmi", "ssh": f"ops@{DEAD}.101:2222",
         "profile": "default", "groups": ["rack1"]},
        {"node": "gpu002", "bmc": f"{DEAD}.2:6230", "protocol": "auto", "ssh": None,
         "profile": "default", "groups": ["rack1"]},
    ]
    assert gf.run("nodes", "tag", "gpu[001-002]", "+hot", "-rack1").returncode == 0
    r, data = gf.json("nodes", "list", "@hot")
    assert [o["groups"] for o in data] == [["hot"], ["hot"]]
    r = gf.run("nodes", "list", "@rack1")
    assert r.returncode == 2 and "rack1" in r.stderr
    r = gf.run("nodes", "add", "gpu001", "--bmc", f"{DEAD}.9")
    assert r.returncode == 2 and "already exists" in r.stderr
    assert gf.run("nodes", "remove", "gpu001").returncode == 0
    r, data = gf.json("nodes", "list")
    assert [o["node"] for o in data] == ["gpu002"]


def test_import_broken_line_imports_nothing(gf):
    csv = ("name,bmc,protocol,groups\n"
           f"n1,{DEAD}.1,ipmi,a\n"
           f"n2,{DEAD}.2,ipmi,a;b\n"
           f"n3,{DEAD}.3,telnet,a\n"
           f"n4,{DEAD}.4,ipmi,\n")
    r = gf.run("nodes", "import", "-", input=csv)
    assert r.returncode == 2
    assert "line 4" in r.stderr and "nothing imported" in r.stderr
    r, data = gf.json("nodes", "list")
    assert data == []
    r = gf.run("nodes", "import", "-", input=csv.replace("telnet", "redfish"))
    assert r.returncode == 0, r.stderr
    r, data = gf.json("nodes", "list", "@b")
    assert [o["node"] for o in data] == ["n2"]


def test_targets_syntax(gf):
    csv = "name,bmc,groups\n" + "".join(
        f"r{r}n{n:02d},{DEAD}.{r * 10 + n},{'odd' if n % 2 else 'even'}\n"
        for r in (1, 2) for n in range(1, 5))
    assert gf.run("nodes", "import", "-", input=csv).returncode == 0

    def names(*t):
        r, data = gf.json("nodes", "list", *t)
        assert r.returncode == 0, r.stderr
        return [o["node"] for o in data]

    assert names("r[1-2]n[01-02]") == ["r1n01", "r1n02", "r2n01", "r2n02"]
    assert names("r1n[01-04]!@odd") == ["r1n02", "r1n04"]
    assert names("@odd&r2n[01-03]") == ["r2n01", "r2n03"]
    r = gf.run("nodes", "list", "r1n[01-")
    assert r.returncode == 2 and r.stdout == ""


def test_credentials_mode_refused(gf):
    gf.write_creds("[default]\nbmc_user = admin\nbmc_password = x\n", mode=0o644)
    r = gf.run("power", "status", "-H", f"{DEAD}.1", "--protocol", "ipmi")
    assert r.returncode == 2
    assert "credentials" in r.stderr and "0644" in r.stderr
    assert "x\n" not in r.stderr


def test_ipmi_words_checked_when_the_file_is_read(gf):
    """A bad IPMI word in any profile stops every verb that reads the credentials,
    whatever the protocol, with the file's line; a verb that needs none still runs."""
    from conftest import DEFAULT_CREDS
    gf.write_creds(DEFAULT_CREDS + "[other]\nbmc_user = x\nipmi_cipher_suite = 4\n")
    want = (f"gpufleet: '{gf.creds}' line 7: ipmi_cipher_suite '4' is not a cipher suite"
            " FreeIPMI supports (0, 1, 2, 3, 6, 7, 8, 11, 12, 15, 16, 17, or -1 for the default)\n")
    for proto in ("ipmi", "redfish"):
        r = gf.run("power", "status", "-H", f"{DEAD}.1", "--protocol", proto,
                   "--timeout", "0.5", "--retries", "0")
        assert r.returncode == 2 and r.stderr == want and r.stdout == "", (proto, r.stderr)
    gf.write_creds(DEFAULT_CREDS + "[other]\nipmi_workarounds = authcap, nosuch\n")
    r = gf.run("power", "status", "-H", f"{DEAD}.1", "--protocol", "ipmi")
    assert r.returncode == 2 and r.stderr == (
        f"gpufleet: '{gf.creds}' line 6: ipmi_workarounds 'nosuch' is not a FreeIPMI workaround"
        " (see ipmipower(8) -W)\n"), r.stderr
    assert gf.run("nodes", "list").returncode == 0


def test_bad_options_are_usage_errors(gf):
    for args in (["power"], ["power", "warp", "x"], ["frobnicate"], ["--fanout", "0", "nodes", "list"],
                 ["nodes", "list", "--format", "xml"], ["power", "status", "--timeout", "soon", "-H", "x"]):
        r = gf.run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("gpufleet: ") or r.stderr.startswith("usage"), r.stderr
        assert r.stdout == ""


def test_password_never_in_db(gf):
    gf.run("nodes", "add", "n1", "--bmc", f"{DEAD}.1", "--protocol", "ipmi")
    gf.run("power", "on", "n1", "--timeout", "0.5", "--retries", "0")
    with open(gf.db, "rb") as f:
        assert b"lab-Pa55word" not in f.read()
    for name in os.listdir(gf.workdir):
        if name.startswith("inventory.db"):
            with open(os.path.join(gf.workdir, name), "rb") as f:
                assert b"lab-Pa55word" not in f.read()
