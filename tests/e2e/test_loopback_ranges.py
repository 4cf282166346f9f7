"""The labs' loopback ranges are written once, in conftest.LOOPBACK, and never
meet: no two entries overlap, each module takes its ranges from the table
(no 127.a.b of its own), and every range tests/lab and bench/ start peers on
is held there too. No binary and no peer needed."""
import glob
import os
import re

from conftest import LOOPBACK, TOP

# 127.0.0.x is the host's own loopback address: where connections come from,
# and ports where nothing listens. Not a lab range.
ADDR = re.compile(r"\b127\.(\d+)\.(\d+)\b")
OWNERS_ELSEWHERE = {"*", "lab", "bench"}


def span(rng):
    """"127.a.b" or "127.a.b-c" -> (a, b, c)."""
    m = re.fullmatch(r"127\.(\d+)\.(\d+)(?:-(\d+))?", rng)
    assert m, f"'{rng}' is not 127.a.b or 127.a.b-c"
    a, b, c = int(m.group(1)), int(m.group(2)), int(m.group(3) or m.group(2))
    assert a < 256 and b <= c < 256, rng
    return a, b, c


def covered(a, b):
    return [k for k, rng in LOOPBACK.items()
            if span(rng)[0] == a and span(rng)[1] <= b <= span(rng)[2]]


def literals(path):
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            for m in ADDR.finditer(line):
                a, b = int(m.group(1)), int(m.group(2))
                if (a, b) != (0, 0):
                    yield no, a, b


def modules():
    return [p for p in sorted(glob.glob(os.path.join(TOP, "tests", "e2e", "test_*.py")))
            if os.path.basename(p) != os.path.basename(__file__)]


def test_no_two_ranges_overlap():
    seen = {}
    for key, rng in LOOPBACK.items():
        a, b, c = span(rng)
        for third in range(b, c + 1):
            assert (a, third) not in seen, \
                f"{key} ({rng}) overlaps {seen[(a, third)]} on 127.{a}.{third}"
            seen[(a, third)] = key


def test_every_owner_is_a_module_or_named_elsewhere():
    for owner, _ in LOOPBACK:
        assert owner in OWNERS_ELSEWHERE or \
            os.path.exists(os.path.join(TOP, "tests", "e2e", owner + ".py")), owner


def test_no_module_writes_a_range_of_its_own():
    found = [f"{os.path.basename(p)}:{no}: 127.{a}.{b}"
             for p in modules() for no, a, b in literals(p)]
    assert found == [], "use conftest.loopback(__name__, purpose):\n" + "\n".join(found)


def test_every_module_range_is_used_by_its_module():
    for (owner, purpose), rng in LOOPBACK.items():
        if owner in OWNERS_ELSEWHERE:
            continue
        with open(os.path.join(TOP, "tests", "e2e", owner + ".py"), encoding="utf-8") as f:
            text = f.read()
        asked = f'loopback(__name__, "{purpose}")' in text
        # conftest's fleet fixture asks for the module's "ipmi" range
        fleet = purpose == "ipmi" and re.search(r"def test_\w+\([^)]*\bfleet\b", text)
        assert asked or fleet, f"{owner} does not use its range '{purpose}' ({rng})"


def test_ranges_of_the_lab_tools_and_benchmarks_are_held():
    paths = [p for d in ("tests/lab", "bench") for ext in ("py", "sh")
             for p in sorted(glob.glob(os.path.join(TOP, d, "*." + ext)))]
    missing = [f"{os.path.relpath(p, TOP)}:{no}: 127.{a}.{b}"
               for p in paths for no, a, b in literals(p) if not covered(a, b)]
    assert missing == [], "not in conftest.LOOPBACK:\n" + "\n".join(missing)
