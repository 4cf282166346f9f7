"""Node sets as ClusterShell writes them, through the real binary: gpufleet's
folds and expansions compared with ClusterShell's `nodeset -f` and `nodeset -e`
(Debian's clustershell, a reference only), in both directions. gpufleet prints
a folded set where targets name unregistered nodes (the usage error lists them
folded), and expands a set in `nodes list --format json`. No peers needed: the
registered BMC addresses are never contacted."""
import random
import re
import shutil
import subprocess

from conftest import loopback

DEAD = loopback("*", "dead")

# Folds gpufleet must choose exactly as nodeset -f does: '^', '!', '&', several
# numeric dimensions, zero padding, steps and mixed prefixes.
SAME_FOLD = [
    "gpu[001-128]",
    "gpu[1-5,7,9-12]",
    "gpu[9-10]",
    "gpu[098-101]",
    "cn[0001-0100]!cn[0050-0060]",
    "node[1-20/3]",
    "r[1-2]n[01-03]",
    "r1n[01-03],r2n[01-03]",
    "r[01-64]n[01-32]",
    "r[1-12]n[1-3]",
    "r[1-4]n[1-8]!r3n[2-5]",
    "r[1-3]n[1-4]&r[2-4]n[3-6]",
    "gpu[01-10]^gpu[05-15]",
    "r[1-2]n[1-4]^r[2-3]n[3-6]",
    "r1n1,r2n1,r2n2",
    "x[1-3]y[1-2]z[7-9]!x2y1z8",
    "a[1-5]b[1-5]c[1-2]!a3b[2-4]c1",
    "10.0.[1-3].[1-20]",
    "rack[1-2]-gpu[001-004].ib",
    "n[1-10]-bmc,n[1-10]-ib",
    "gpu[1-4],login[1-2],head",
    "n[08-12]",
]

# Numbers of several widths in one dimension: ClusterShell 1.9 shares a bracket
# ("gpu[9-10,098-101]"), gpufleet keeps one bracket per width; both name the
# same nodes, and gpufleet reads ClusterShell's form.
SAME_NAMES = [
    "gpu[9-10],gpu[098-101]",
    "n[1,01,001]",
]


def nodeset(*args):
    return subprocess.run(["nodeset", *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def expand_cs(expr):
    return set(nodeset("-e", "-S", "\n", expr).split("\n"))


def terms(folded):
    """The top-level terms of a folded set: gpufleet keeps the order names came
    in where ClusterShell sorts patterns, so the comparison ignores that order."""
    return sorted(re.findall(r"(?:[^,\[]|\[[^\]]*\])+", folded))


def fold_gf(gf, expr):
    """gpufleet's fold of @expr, read from the error naming unregistered nodes
    (run on an empty registry)."""
    r = gf.run("nodes", "list", expr)
    assert r.returncode == 2, r.stderr
    m = re.search(r"unknown nodes? '([^']*)'", r.stderr)
    assert m, r.stderr
    return m.group(1)


def expand_gf(gf, expr):
    r, data = gf.json("nodes", "list", expr)
    assert r.returncode == 0, r.stderr
    names = [o["node"] for o in data]
    assert len(names) == len(set(names)), expr
    return set(names)


def test_folds_and_expansions_match_clustershell(gf, tmp_path):
    assert shutil.which("nodeset"), \
        "nodeset is not installed (tests/install-deps.sh installs clustershell)"
    everything = set()
    cs_fold, gf_fold = {}, {}
    for expr in SAME_FOLD + SAME_NAMES:
        names = expand_cs(expr)
        everything |= names
        cs_fold[expr] = nodeset("-f", expr)
        # gpufleet folds the expression, and what nodeset expands.
        gf_fold[expr] = fold_gf(gf, expr)
        listed = fold_gf(gf, ",".join(sorted(names)))
        if expr in SAME_FOLD:
            assert terms(gf_fold[expr]) == terms(cs_fold[expr]), expr
            assert terms(listed) == terms(cs_fold[expr]), expr
        # nodeset expands what gpufleet folds to the same names.
        assert expand_cs(gf_fold[expr]) == names, (expr, gf_fold[expr])
        assert expand_cs(listed) == names, (expr, listed)

    csv = "name,bmc\n" + "".join(f"{n},{DEAD}.1:{10000 + i}\n"
                                 for i, n in enumerate(sorted(everything)))
    r = gf.run("nodes", "import", "-", input=csv)
    assert r.returncode == 0, r.stderr
    for expr in SAME_FOLD + SAME_NAMES:
        names = expand_cs(expr)
        # gpufleet expands the expression, what nodeset folds, and its own fold.
        assert expand_gf(gf, expr) == names, expr
        assert expand_gf(gf, cs_fold[expr]) == names, (expr, cs_fold[expr])
        assert expand_gf(gf, gf_fold[expr]) == names, (expr, gf_fold[expr])


def test_a_fleet_of_64_racks_folds_to_one_range(gf):
    expr = ",".join(f"r{r:02d}n{n:02d}" for r in range(64, 0, -1) for n in range(1, 33))
    assert fold_gf(gf, expr) == "r[01-64]n[01-32]"


def test_symmetric_difference_in_targets(gf):
    csv = "name,bmc\n" + "".join(f"gpu{n},{DEAD}.{n}\n" for n in range(1, 9))
    assert gf.run("nodes", "import", "-", input=csv).returncode == 0
    assert sorted(expand_gf(gf, "gpu[1-4]^gpu[3-6]")) == ["gpu1", "gpu2", "gpu5", "gpu6"]
    r = gf.run("nodes", "list", "gpu[1-2]^")
    assert r.returncode == 2 and "empty term after '^'" in r.stderr


def test_random_subsets_fold_as_nodeset_does(gf):
    """Seeded random subsets of racks of nodes (and of a three-dimensional
    grid): the greedy merge of blocks must pick ClusterShell's fold, which
    orders blocks by their numbers as written ("10" before "9"), and puts
    r100 with r01-r99."""
    rnd = random.Random(22)
    for _ in range(24):
        keep = rnd.random()
        racks, nodes = rnd.choice([2, 3, 12, 64, 120]), rnd.choice([3, 8, 12, 32])
        pad = rnd.choice(["", "02", "03"])
        names = [f"r{r:{pad}d}n{n}" for r in range(1, racks + 1)
                 for n in range(1, nodes + 1) if rnd.random() < keep]
        names += [f"x{a}y{b}z{c}" for a in range(1, 4) for b in range(1, 4)
                  for c in range(1, 4) if rnd.random() < keep / 2]
        if not names:
            continue
        expr = ",".join(names)
        assert terms(fold_gf(gf, expr)) == terms(nodeset("-f", expr)), expr
