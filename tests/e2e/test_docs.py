"""The documentation agrees with the binary: --help, the man pages, the bash
completion and the man pages that meson installs."""
import functools
import glob
import os
import re
import shutil
import subprocess

import pytest

from conftest import GPUFLEET, TOP

MAN = os.path.join(TOP, "man")
COMPLETION = os.path.join(TOP, "cli", "gpufleet.bash-completion")
SOURCE_DIRS = ["cli", "lib", "ipmi", "redfish", "host", "inventory"]


def run_help(*args):
    """Run `gpufleet ARGS --help` with a clean environment; return stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
    r = subprocess.run([GPUFLEET, *args, "--help"], capture_output=True, text=True, env=env,
                       timeout=30)
    assert r.returncode == 0, f"gpufleet {' '.join(args)} --help exited {r.returncode}: {r.stderr}"
    assert r.stdout.strip(), f"gpufleet {' '.join(args)} --help printed nothing on stdout"
    assert r.stderr == "", f"gpufleet {' '.join(args)} --help wrote to stderr: {r.stderr!r}"
    return r.stdout


def section(text, title):
    """The lines of a --help section ("Verbs:", "Options:") up to the next blank line."""
    lines = text.splitlines()
    try:
        start = lines.index(title) + 1
    except ValueError:
        return []
    out = []
    for line in lines[start:]:
        if not line.strip():
            break
        out.append(line)
    return out


def long_opts(lines):
    return {m for line in lines for m in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line)}


def short_opts(lines):
    """Short options as listed in an option table: "  -C, --collapse"."""
    return {m.group(1) for line in lines for m in [re.match(r"\s+(-[A-Za-z]),", line)] if m}


@functools.lru_cache(maxsize=None)
def main_help():
    return run_help()


def verbs():
    found = [re.match(r"\s+(\S+)\s", line).group(1) for line in section(main_help(), "Verbs:")]
    assert found, "gpufleet --help lists no verbs"
    return found


def global_long_opts():
    opts = long_opts(section(main_help(), "Global options:"))
    assert "--help" in opts and "--format" in opts, opts
    return opts


def roff_text(path):
    """The text of a man page source, with the escapes that hide option names undone."""
    with open(path, encoding="utf-8") as f:
        s = f.read()
    s = re.sub(r"^\.\\\".*$", "", s, flags=re.M)      # comments
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)       # font changes
    s = s.replace("\\-", "-").replace("\\%", "").replace("\\&", "").replace("\\c", "")
    s = s.replace("\\(aq", "'").replace("\\(dq", '"')
    return s


def man_section(text, name):
    """The text of `.SH NAME` up to the next .SH."""
    m = re.search(r"^\.SH \"?" + re.escape(name) + r"\"?\s*$(.*?)(?=^\.SH |\Z)", text,
                  flags=re.M | re.S)
    return m.group(1) if m else ""


def has_word(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def man_page(name):
    path = os.path.join(MAN, name)
    assert os.path.exists(path), f"man/{name} is missing"
    return roff_text(path)


@functools.lru_cache(maxsize=None)
def verb_help(verb):
    return run_help(verb)


def subverbs(verb):
    """The subverbs named in a verb's usage lines: "gpufleet power a|b|c", "gpufleet nodes add"."""
    subs = []
    for m in re.finditer(r"gpufleet " + re.escape(verb) + r" ([a-z]+(?:\|[a-z]+)*)",
                         verb_help(verb)):
        subs.extend(s for s in m.group(1).split("|") if s not in subs)
    return subs


# Every verb of the table, read from --help at collection time.
ALL_VERBS = verbs()


# ---- --help itself ----

def test_help_exits_0_on_stdout():
    text = main_help()
    assert text.startswith("usage: gpufleet")


def test_short_help_and_version():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
    r = subprocess.run([GPUFLEET, "-h"], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0 and r.stdout == main_help() and r.stderr == ""
    r = subprocess.run([GPUFLEET, "--version"], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0 and re.fullmatch(r"gpufleet \d+\.\d+\.\d+\n", r.stdout), r.stdout


@pytest.mark.parametrize("verb", ALL_VERBS)
def test_verb_help_exits_0_on_stdout(verb):
    assert verb in verbs()
    text = verb_help(verb)
    assert text.startswith("usage: gpufleet " + verb), text
    # Every verb's help also lists the global options.
    assert global_long_opts() <= long_opts(section(text, "Global options:"))


def test_every_listed_verb_has_help():
    for verb in verbs():
        assert verb_help(verb).startswith("usage: gpufleet " + verb)


def test_no_help_without_verb_is_usage_error():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}
    r = subprocess.run([GPUFLEET], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 2 and r.stdout == "" and "usage:" in r.stderr


# ---- gpufleet(1) ----

def test_gpufleet_1_lists_every_verb():
    text = man_page("gpufleet.1")
    listed = man_section(text, "VERBS")
    assert listed, "gpufleet.1 has no VERBS section"
    for verb in verbs():
        assert re.search(r"^\.B " + re.escape(verb) + r"\s*$", listed, flags=re.M), \
            f"verb '{verb}' is not an entry of VERBS in gpufleet.1"
        assert has_word(text, f"gpufleet-{verb}"), f"gpufleet.1 does not point to gpufleet-{verb}(1)"


def test_gpufleet_1_documents_every_global_option():
    text = man_page("gpufleet.1")
    opts = man_section(text, "GLOBAL OPTIONS")
    assert opts, "gpufleet.1 has no GLOBAL OPTIONS section"
    helptext = section(main_help(), "Global options:")
    for opt in sorted(global_long_opts()):
        assert has_word(opts, opt), f"global option {opt} is not in gpufleet.1 GLOBAL OPTIONS"
    for opt in sorted(short_opts(helptext)):
        assert has_word(opts, opt), f"short option {opt} is not in gpufleet.1 GLOBAL OPTIONS"


def test_gpufleet_1_documents_the_exit_codes_of_help():
    m = re.search(r"Exit codes: (.*?)\.", main_help(), flags=re.S)
    assert m, "gpufleet --help does not state the exit codes"
    codes = re.findall(r"(\d+) ", m.group(1))
    assert codes == ["0", "1", "2", "3", "4"], codes
    status = man_section(man_page("gpufleet.1"), "EXIT STATUS")
    for code in codes:
        assert re.search(r"^\.B " + code + r"\s*$", status, flags=re.M), \
            f"exit code {code} is not in gpufleet.1 EXIT STATUS"


def test_gpufleet_1_documents_every_environment_variable():
    names = set()
    for d in SOURCE_DIRS:
        for path in glob.glob(os.path.join(TOP, d, "*.c")):
            with open(path, encoding="utf-8") as f:
                names.update(re.findall(r'getenv\("([A-Za-z_][A-Za-z0-9_]*)"\)', f.read()))
    assert "GPUFLEET_DB" in names, names
    env = man_section(man_page("gpufleet.1"), "ENVIRONMENT")
    for name in sorted(names):
        assert re.search(r"^\.B " + name + r"\s*$", env, flags=re.M), \
            f"environment variable {name} is read by the code but not in gpufleet.1 ENVIRONMENT"


def test_gpufleet_1_documents_every_error_kind():
    kinds = ["timeout", "connect", "auth", "tls", "hostkey", "protocol", "unsupported",
             "refused", "internal", "busy"]
    with open(os.path.join(TOP, "lib", "err.h"), encoding="utf-8") as f:
        enum = re.findall(r"GF_EK_([A-Z]+)", f.read())
    assert sorted(k.upper() for k in kinds) == sorted(set(enum) - {"NONE"}), enum
    out = man_section(man_page("gpufleet.1"), "OUTPUT")
    for kind in kinds:
        assert re.search(r"^\.B " + kind + r"\s*$", out, flags=re.M), \
            f"error kind {kind} is not in gpufleet.1 OUTPUT"


# ---- gpufleet-VERB(1) ----

@pytest.mark.parametrize("verb", ALL_VERBS)
def test_verb_page_documents_every_verb_option(verb):
    text = man_page(f"gpufleet-{verb}.1")
    own = long_opts(verb_help(verb).splitlines()) - global_long_opts()
    table = section(verb_help(verb), "Options:")
    for opt in sorted(own):
        assert has_word(text, opt), f"{opt} of '{verb}' is not in gpufleet-{verb}.1"
    for opt in sorted(short_opts(table)):
        assert has_word(text, opt), f"short option {opt} of '{verb}' is not in gpufleet-{verb}.1"


def test_every_verb_has_a_page():
    for verb in verbs():
        assert os.path.exists(os.path.join(MAN, f"gpufleet-{verb}.1")), f"no man/gpufleet-{verb}.1"


@pytest.mark.parametrize("verb", [v for v in ALL_VERBS if subverbs(v)])
def test_verb_page_documents_every_subverb(verb):
    subs = subverbs(verb)
    listed = man_section(man_page(f"gpufleet-{verb}.1"), "SUBVERBS")
    assert listed, f"gpufleet-{verb}.1 has no SUBVERBS section"
    for sub in subs:
        assert re.search(r"^\.BI? \"?" + sub + r"[\s\"]", listed + "\n", flags=re.M) or \
            re.search(r"^\.BR " + sub + r"\s", listed, flags=re.M), \
            f"subverb '{verb} {sub}' is not an entry of SUBVERBS in gpufleet-{verb}.1"


def test_credentials_page_documents_every_key():
    with open(os.path.join(TOP, "lib", "creds.c"), encoding="utf-8") as f:
        src = f.read()
    keys = re.findall(r"^\s+(?:STR|FN)_KEY\(([a-z]\w+),", src, flags=re.M)
    assert "bmc_password" in keys and "ipmi_cipher_suite" in keys, keys
    listed = man_section(man_page("gpufleet-credentials.5"), "KEYS")
    for key in keys:
        assert re.search(r"^\.B " + key + r"\s*$", listed, flags=re.M), \
            f"credentials key {key} is not in gpufleet-credentials.5 KEYS"


# ---- bash completion ----

def test_completion_knows_every_verb_subverb_and_option():
    with open(COMPLETION, encoding="utf-8") as f:
        comp = f.read()
    words = set(verbs()) | global_long_opts()
    for verb in verbs():
        words |= long_opts(verb_help(verb).splitlines())
        words |= set(subverbs(verb))
    for word in sorted(words):
        assert has_word(comp, word), f"'{word}' is not in cli/gpufleet.bash-completion"


def test_completion_is_valid_bash():
    r = subprocess.run(["bash", "-n", COMPLETION], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_completion_completes_verbs_and_format_values():
    script = f"""
source {COMPLETION!r}
c() {{ COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=()
      _gpufleet gpufleet; echo "${{COMPREPLY[*]}}"; }}
c gpufleet ''
c gpufleet --format ''
c gpufleet power st
c gpufleet --protocol = r
"""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [" ".join(verbs()), "table json ndjson csv", "status",
                                     "redfish"], r.stdout


# ---- the protocols: the table of backends is the one list ----

def help_protocols():
    """The protocols --protocol's help lists: made from the table of backends."""
    lines = [line for line in section(main_help(), "Global options:") if "--protocol" in line]
    assert len(lines) == 1, lines
    m = re.search(r"PROTO\s+(.*), for -H hosts$", lines[0])
    assert m, lines[0]
    names = [w.strip() for w in re.split(r",| or ", m.group(1))]
    assert names[-1] == "auto" and len(names) >= 3, names
    return names


def man_protocols(page, entry):
    """The words in bold of a man page's .TP entry that lists the protocols."""
    lines = man_page(page).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == entry) + 1
    names = []
    for line in lines[start:]:
        if line.startswith((".TP", ".PP", ".SH")) or line == "for":
            break
        m = re.match(r"\.BR? (\w+)", line)
        if m:
            names.append(m.group(1))
    return names


def test_protocol_lists_agree_with_the_table_of_backends():
    names = help_protocols()
    with open(COMPLETION, encoding="utf-8") as f:
        m = re.search(r"--protocol\) COMPREPLY=\(\$\(compgen -W '([^']*)'", f.read())
    assert m, "the completion has no list of protocols"
    assert sorted(m.group(1).split()) == sorted(names), \
        f"cli/gpufleet.bash-completion lists {m.group(1).split()}, the backends {names}"
    assert man_protocols("gpufleet.1", r".BI --protocol " + '" PROTO"') == names
    assert man_protocols("gpufleet-nodes.1", ".B protocol") == names


# ---- man pages: installed and well formed ----

def installed_man_pages():
    with open(os.path.join(MAN, "meson.build"), encoding="utf-8") as f:
        return set(re.findall(r"'([^'/]+\.[1-8])'", f.read()))


def man_files():
    pages = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MAN, "*.[1-8]")))
    assert "gpufleet.1" in pages, pages
    return pages


def test_every_man_page_is_installed():
    listed = installed_man_pages()
    for page in man_files():
        assert page in listed, f"man/{page} is not in the install list of man/meson.build"


@pytest.mark.parametrize("page", sorted(os.path.basename(p)
                                         for p in glob.glob(os.path.join(MAN, "*.[1-8]"))))
def test_man_page_header_matches_file(page):
    with open(os.path.join(MAN, page), encoding="utf-8") as f:
        src = f.read()
    name, sect = page.rsplit(".", 1)
    m = re.search(r"^\.TH (\S+) (\d)", src, flags=re.M)
    assert m, f"{page} has no .TH line"
    assert m.group(1).replace("\\-", "-") == name.upper() and m.group(2) == sect, m.group(0)
    assert re.search(r"^\.SH NAME\n" + re.escape(name).replace("-", r"\\-") + r" \\- ", src,
                     flags=re.M), f"{page}: NAME does not start with '{name} \\-'"


def test_man_pages_render_without_warnings():
    assert shutil.which("groff"), "groff is not installed (tests/install-deps.sh installs it)"
    for page in man_files():
        r = subprocess.run(["groff", "-man", "-ww", "-z", os.path.join(MAN, page)],
                           capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", f"{page}: {r.stderr}"
