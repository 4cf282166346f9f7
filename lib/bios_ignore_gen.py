#!/usr/bin/python3
"""Turn data/bios-ignore.conf into the C table of lib/bios.c's default ignore
list (gf_bios_ignore_default[]), at build time. Checks every line: a known
dialect or *, a pattern that starts with "bios.", lower case, no white
space or C string specials; a bad line stops the build with its number.

    bios_ignore_gen.py INPUT OUTPUT
"""
import re
import sys

DIALECTS = {"*", "supermicro", "nvidia", "lenovo", "dell", "hpe", "generic"}
PATTERN = re.compile(r"bios\.[a-z0-9_.*?\[\]!-]+")


def rules(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 2 or words[0] not in DIALECTS or not PATTERN.fullmatch(words[1]):
                sys.exit(f"{path}:{no}: not 'DIALECT bios.PATTERN' (dialects: "
                         f"{', '.join(sorted(DIALECTS))}): {line.strip()!r}")
            out.append((words[0], words[1]))
    if not out:
        sys.exit(f"{path}: no rules")
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    lines = ["/* Made from data/bios-ignore.conf by lib/bios_ignore_gen.py: edit that file. */",
             '#include "lib/bios.h"', "",
             "const struct gf_bios_ignore gf_bios_ignore_default[] = {"]
    table = rules(src)
    lines += [f'\t{{"{d}", "{p}"}},' for d, p in table]
    lines += ["};", f"const size_t gf_bios_ignore_ndefault = {len(table)};", ""]
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
