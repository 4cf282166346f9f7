"""The layering rules of ARCHITECTURE.md hold in the code.

The rules are read from the table in ARCHITECTURE.md itself, so that the
document and the check cannot drift apart: for each folder, the folders its
files may include ("lib/..." style includes), the external libraries whose
headers it may include, and the dependencies its meson.build may link. Every
"#include" of every C file and every static_library() of every meson.build
is checked against them, and nothing below cli/ may print or exit.
"""
import os
import re

import pytest

from conftest import TOP

ARCH = os.path.join(TOP, "ARCHITECTURE.md")

# An external library: the headers that reveal it and its meson dependency name.
# (threads and libm are the C runtime: every folder has them, through lib/.)
EXTERNAL = {
    "jansson": (r"jansson\.h", "jansson"),
    "inih": (r"ini\.h", "inih"),
    "freeipmi": (r"freeipmi/", "freeipmi"),
    "libipmiconsole": (r"ipmiconsole\.h", "ipmiconsole"),
    "libcurl": (r"curl/", "curl"),
    "openssl": (r"openssl/", "openssl"),
    "libssh2": (r"libssh2", "ssh2"),
    "sqlite": (r"sqlite3\.h", "sqlite"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# What only cli/ may do: print to the terminal, prompt, end the process.
PRINTS = re.compile(r"\b(printf|puts|perror|exit|_exit|getchar)\s*\(|\bf?printf\s*\(\s*std(out|err)")


def parse_rules(text):
    """{folder: {"include": set, "libs": set}} from the ARCHITECTURE.md table."""
    rules = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"`[a-z]+/`", cells[0]):
            continue
        folder = cells[0].strip("`/")
        words = lambda cell: {w.strip("`/ ") for w in cell.split(",") if w.strip("`/ -")}
        rules[folder] = {"include": words(cells[1]) | {folder}, "libs": words(cells[2])}
    return rules


def strip_comments(src):
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", src, flags=re.S)


def include_problems(top, rules):
    """Every include that breaks a rule, as "file: message"."""
    problems = []
    for folder, rule in sorted(rules.items()):
        d = os.path.join(top, folder)
        if not os.path.isdir(d):
            problems.append(f"{folder}/: named in ARCHITECTURE.md but missing")
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(folder, name)
            with open(os.path.join(top, path), encoding="utf-8") as f:
                src = strip_comments(f.read())
            for kind, inc in INCLUDE.findall(src):
                if kind == '"':
                    other = inc.split("/")[0] if "/" in inc else folder
                    if other not in rule["include"]:
                        problems.append(f"{path}: includes \"{inc}\", but {folder}/ may "
                                        f"include only {sorted(rule['include'])}")
                    continue
                for lib, (pattern, _) in EXTERNAL.items():
                    if re.match(pattern, inc) and lib not in rule["libs"]:
                        problems.append(f"{path}: includes <{inc}> of {lib}, which {folder}/ "
                                        "may not use")
            if folder != "cli":
                for m in PRINTS.finditer(src):
                    problems.append(f"{path}: calls {m.group(0).strip()} below cli/")
    return problems


# Our own libraries' meson dependency objects, by the folder that builds them.
OURS = {"libgf_dep": "lib", "libgfipmi_dep": "ipmi", "libgfredfish_dep": "redfish",
        "libgfhost_dep": "host", "libgfhostfacts_dep": "host", "libgfinv_dep": "inventory",
        "libgffleet_dep": "fleet"}


def meson_problems(top, rules):
    """Every meson dependency of a folder's targets that its rule does not allow."""
    problems = []
    external = {name: lib for lib, (_, name) in EXTERNAL.items()}
    for folder, rule in sorted(rules.items()):
        path = os.path.join(top, folder, "meson.build")
        if not os.path.exists(path):
            problems.append(f"{folder}/meson.build: missing")
            continue
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        lists = re.findall(r"dependencies:\s*\[([^\]]*)\]", text)
        if not lists:
            problems.append(f"{folder}/meson.build: names no dependencies")
        for dep in re.findall(r"[a-z0-9_]+", " ".join(lists)):
            if dep in external and external[dep] not in rule["libs"]:
                problems.append(f"{folder}/meson.build: links {dep}, which {folder}/ "
                                "may not use")
            elif dep in OURS and OURS[dep] not in rule["include"]:
                problems.append(f"{folder}/meson.build: links {dep} of {OURS[dep]}/, which "
                                f"{folder}/ may not include")
            elif dep.startswith("libgf") and dep not in OURS:
                problems.append(f"{folder}/meson.build: links {dep}, unknown to this check")
    return problems


@pytest.fixture(scope="module")
def rules():
    with open(ARCH, encoding="utf-8") as f:
        r = parse_rules(f.read())
    assert {"lib", "ipmi", "redfish", "host", "inventory", "fleet", "cli"} <= set(r), \
        f"ARCHITECTURE.md's table misses folders: {sorted(r)}"
    return r


def test_every_include_follows_the_rules(rules):
    assert include_problems(TOP, rules) == []


def test_every_meson_dependency_follows_the_rules(rules):
    assert meson_problems(TOP, rules) == []


# What reaches a peer: a backend, SSH, the fleet layer, or their libraries.
PEER = re.compile(r"(ipmi|redfish|fleet)/|host/(ssh|hostcollect)\.h|libssh2|curl|freeipmi|ipmiconsole")


def test_the_inventory_reaches_no_peer():
    """inventory/ (the store, model, codec, analyses) includes no backend header,
    no SSH header and no fleet/ header, and links none of their libraries:
    its tests link the store alone."""
    bad = []
    d = os.path.join(TOP, "inventory")
    for name in sorted(os.listdir(d)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            for _, inc in INCLUDE.findall(strip_comments(f.read())):
                if PEER.match(inc):
                    bad.append(f"inventory/{name}: includes {inc}")
    with open(os.path.join(d, "meson.build"), encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    for dep in re.findall(r"libgf[a-z]*_dep", text):
        if dep in ("libgfipmi_dep", "libgfredfish_dep", "libgfhost_dep", "libgffleet_dep"):
            bad.append(f"inventory/meson.build: links {dep}")
    assert "store.c" in text and "db.c" in text
    assert bad == []


def test_the_peer_check_finds_a_planted_include(tmp_path):
    """The pattern above catches each kind of peer header."""
    for inc in ("ipmi/ipmi.h", "redfish/redfish.h", "fleet/bmc.h", "host/ssh.h",
                "host/hostcollect.h", "libssh2.h", "curl/curl.h"):
        assert PEER.match(inc), inc
    for inc in ("host/hostfacts.h", "lib/backend.h", "inventory/db.h"):
        assert not PEER.match(inc), inc


def test_only_cli_may_include_every_folder(rules):
    lower = {f: r for f, r in rules.items() if f != "cli"}
    for folder, rule in lower.items():
        assert "cli" not in rule["include"], f"{folder}/ may include cli/"
    assert rules["lib"]["include"] == {"lib"}, "lib/ must include only itself"


def test_the_check_finds_a_broken_rule(tmp_path, rules):
    """The checker itself: a planted include, link and print are each reported."""
    for folder in rules:
        os.makedirs(tmp_path / folder)
        (tmp_path / folder / "meson.build").write_text(
            f"x = static_library('gf{folder}', files('a.c'),\n  dependencies: [jansson])\n")
    (tmp_path / "lib" / "a.c").write_text('#include "inventory/db.h"\n#include <sqlite3.h>\n'
                                          'void f(void) { printf("x"); }\n')
    (tmp_path / "lib" / "meson.build").write_text(
        "x = static_library('gf', files('a.c'),\n  dependencies: [jansson, ssh2, libgfinv_dep])\n")
    inc = include_problems(str(tmp_path), rules)
    assert any('includes "inventory/db.h"' in p for p in inc), inc
    assert any("<sqlite3.h> of sqlite" in p for p in inc), inc
    assert any("calls printf(" in p for p in inc), inc
    mes = meson_problems(str(tmp_path), rules)
    assert any("links ssh2" in p for p in mes), mes
    assert any("links libgfinv_dep" in p for p in mes), mes


def test_a_sweep_is_typed_from_collection_to_the_store():
    """No json_t passes between collection and the store: the sweep model and the
    collector never name it (the codec alone turns facts into JSON and back)."""
    bad = []
    for name in ("inventory/sweep.h", "fleet/collect.h", "fleet/collect.c"):
        with open(os.path.join(TOP, name)) as f:
            src = strip_comments(f.read())
        if re.search(r"\bjson_t\b|jansson\.h|_to_json\s*\(", src):
            bad.append(name)
    assert bad == []


def test_no_fan_out_in_cli():
    """cli/ runs no executor of its own: every fan-out is below it, in fleet/
    (the BMC frame, the host facts, re-pinning); a verb parses, calls one
    function and renders."""
    bad = []
    d = os.path.join(TOP, "cli")
    for name in sorted(os.listdir(d)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            src = strip_comments(f.read())
        if re.search(r"\bgf_exec_run\s*\(", src):
            bad.append(f"cli/{name}: calls gf_exec_run")
    assert bad == []
