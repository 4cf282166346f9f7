"""What cli/ itself says: the sub-verb errors of every verb that has sub-verbs,
the notes --quiet silences and the lines --verbose adds. No BMC is needed."""
import json
import re

import pytest

from conftest import deadline
from test_docs import ALL_VERBS, subverbs

# The messages as users see them, word for word.
NEEDS = {
    "bios": "bios needs a subverb: show or set",
    "boot": "boot needs a subverb: status, pxe, disk, bios, cd, none",
    "events": "events needs a subverb: follow or list",
    "inventory": "inventory needs a subverb: show, history, export, import, prune, sweeps, audit",
    "nodes": "nodes needs a subverb: add, import, list, remove, repin, tag",
    "power": "power needs a subverb: status, on, off, cycle, reset, soft, nmi",
    "sel": "sel needs a subverb: list or clear",
    "update": "update needs a subverb: plan, run, status, resume",
}
UNKNOWN = {
    "bios": "unknown subverb 'bios frob' (show, set)",
    "boot": "unknown subverb 'boot frob' (status, pxe, disk, bios, cd, none)",
    "events": "unknown subverb 'events frob' (follow, list)",
    "inventory": "unknown subverb 'inventory frob' (show, history, export, import, prune, sweeps, audit)",
    "nodes": "unknown subverb 'nodes frob' (add, import, list, remove, repin, tag)",
    "power": "unknown subverb 'power frob' (status, on, off, cycle, reset, soft, nmi)",
    "sel": "unknown subverb 'sel frob' (list, clear)",
    "update": "unknown subverb 'update frob' (plan, run, status, resume)",
}


# Verbs whose sub-verbs are optional: "console NODE" is the console itself.
OPTIONAL_SUBVERBS = {"console"}


def test_every_verb_with_subverbs_is_covered():
    assert sorted(v for v in ALL_VERBS if subverbs(v) and v not in OPTIONAL_SUBVERBS) == \
        sorted(NEEDS)


@pytest.mark.parametrize("verb", sorted(NEEDS))
def test_missing_subverb(gf, verb):
    r = gf.run(verb)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"gpufleet: {NEEDS[verb]}\n")


@pytest.mark.parametrize("verb", sorted(UNKNOWN))
def test_unknown_subverb(gf, verb):
    r = gf.run(verb, "frob", "node1")
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"gpufleet: {UNKNOWN[verb]}\n")


@pytest.mark.parametrize("verb", sorted(UNKNOWN))
def test_subverbs_of_the_dispatcher_are_those_of_help(gf, verb):
    """The dispatcher's table and the usage lines of --help name the same sub-verbs."""
    listed = re.search(r"\((.*)\)$", gf.run(verb, "frob").stderr.strip()).group(1).split(", ")
    assert sorted(listed) == sorted(subverbs(verb))


# An option of the verb that the sub-verb given does not take: refused, not ignored.
NOT_TAKEN = [
    (["nodes", "list", "--expect", "ab"], "'--expect' does not apply to 'nodes list'"),
    (["nodes", "remove", "n1", "--replace"], "'--replace' does not apply to 'nodes remove'"),
    (["nodes", "tag", "n1", "+g", "--bmc", "127.0.0.1"], "'--bmc' does not apply to 'nodes tag'"),
    (["nodes", "import", "-", "--ssh", "h"], "'--ssh' does not apply to 'nodes import'"),
    (["nodes", "repin", "n1", "--group", "g"], "'--group' does not apply to 'nodes repin'"),
    (["update", "status", "--catalog", "c.json"], "'--catalog' does not apply to 'update status'"),
    (["update", "resume", "--catalog", "c.json"], "'--catalog' does not apply to 'update resume'"),
    (["update", "resume", "--canary", "1"], "'--canary' does not apply to 'update resume'"),
]


@pytest.mark.parametrize("argv,said", NOT_TAKEN)
def test_options_a_subverb_does_not_take_are_refused(gf, argv, said, tmp_path):
    """Refused before anything is read or changed: the inventory is not even created."""
    db = tmp_path / "fresh.db"
    r = gf.run(*argv, env={"GPUFLEET_DB": str(db)}, input="name,bmc\nn2,127.0.0.2\n")
    verb = argv[0]
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == f"gpufleet: option {said}; see 'gpufleet {verb} --help'\n"
    assert not db.exists()


def test_options_a_subverb_takes_still_work(gf):
    assert gf.run("nodes", "add", "n1", "--bmc", "127.0.0.1", "-g", "a").returncode == 0
    r = gf.run("nodes", "tag", "n1", "+b", "--group", "c", "--remove-group", "a")
    assert r.returncode == 0, r.stderr
    r = gf.run("nodes", "import", "--replace", "-", input="name,bmc\nn1,127.0.0.3\n")
    assert r.returncode == 0, r.stderr
    r = gf.run("--format", "json", "nodes", "list")
    (n,) = json.loads(r.stdout)
    assert n["bmc"] == "127.0.0.3", n


def test_subverb_errors_open_no_inventory(gf, tmp_path):
    """A wrong sub-verb is found before the inventory is opened or created."""
    for verb in sorted(UNKNOWN):
        r = gf.run(verb, "frob", env={"GPUFLEET_DB": str(tmp_path / "no" / "such" / "dir.db")})
        assert r.returncode == 2 and "unknown subverb" in r.stderr, r.stderr
    assert not (tmp_path / "no").exists()


def test_notes_and_quiet(gf, tmp_path):
    csv = tmp_path / "nodes.csv"
    csv.write_text("name,bmc\nn1,127.0.0.1:1\nn2,127.0.0.1:2\n")
    r = gf.run("nodes", "import", str(csv))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "imported 2 nodes\n")
    r = gf.run("-q", "nodes", "import", "--replace", str(csv))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = gf.run("nodes", "remove", "n1")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "removed 1 node\n")
    r = gf.run("--quiet", "nodes", "remove", "n2")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert gf.sql("SELECT count(*) AS n FROM nodes") == [{"n": 0}]


def test_verbose_lines(gf, tmp_path):
    # Nothing listens on port 1: each node fails to connect at once.
    # (Under Valgrind on a busy machine, starting took more than a second.)
    args = ["--timeout", deadline(1), "--retries", "0", "--protocol", "redfish",
            "-H", "127.0.0.1:1,127.0.0.1:2", "--format", "table", "firmware"]
    r = gf.run(*args)
    assert r.returncode == 1 and r.stderr == "2 of 2 nodes failed\n", r.stderr
    r = gf.run("-q", *args)
    assert r.returncode == 1 and r.stderr == "", r.stderr
    r = gf.run("-v", *args)
    lines = r.stderr.splitlines()
    assert r.returncode == 1 and lines[-1] == "2 of 2 nodes failed", r.stderr
    for host in ("127.0.0.1:1", "127.0.0.1:2"):
        assert any(re.match(rf"gpufleet: {re.escape(host)}: connect in \d+\.\d{{3}} s "
                            r"\(1 attempt\): connection to ", line) for line in lines), r.stderr
    # -v and -q together: the -v lines stay, the note goes.
    r = gf.run("-v", "-q", *args)
    assert len(r.stderr.splitlines()) == 2 and "nodes failed" not in r.stderr, r.stderr

    empty = tmp_path / "empty.json"
    empty.write_text("[]\n")
    r = gf.run("inventory", "import", str(empty))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = gf.run("-v", "inventory", "import", str(empty))
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"gpufleet: import: \d+\.\d{3} s in all, \d+\.\d{3} s storing "
                        r"\(\d+\.\d{3} s of it committing\), the rest reading and checking "
                        r"the file\n", r.stderr), r.stderr
