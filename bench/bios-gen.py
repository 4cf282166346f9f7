#!/usr/bin/python3
"""A synthetic fleet history with BIOS settings, for bench/bios.sh: the lines
of bench/inventory-gen.py (NODES nodes of four models, 60 components, sweeps
FIRST..LAST one day apart) with ATTRS BIOS attributes per node added as the
components a sweep stores (bios.<name>, source redfish, kind setting).

Shaped like a real fleet's settings: each model has its own ATTRS attribute
names and defaults (enumerations, integers, booleans); a BIOS release changes
one default on half of the DGX H100 nodes from sweep 10 on; 0.2 % of the nodes
have one setting changed by hand (SR-IOV off, a power profile), and a few
of those are put right again later. The per-node attributes of a real BMC
(service tags, serial numbers, MAC addresses, password hashes) are not
emitted: a sweep does not store them (the default ignore list,
gf_bios_ignored() in lib/bios.c). PER_NODE (default 0) adds that many
attributes with a per-node value that is not on that list (an iSCSI
initiator name), the case where each node's settings are its own.
Deterministic.

    bios-gen.py NODES FIRST LAST [ATTRS [PER_NODE]]
"""
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location(
    "inventory_gen", os.path.join(os.path.dirname(os.path.abspath(__file__)), "inventory-gen.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
mix, comp, model_of = gen.mix, gen.comp, gen.model_of

ENUMS = [["Enabled", "Disabled"], ["Auto", "Manual"], ["PerfOptimized", "PerfPerWattOptimizedOs",
         "Custom"], ["UEFI", "Legacy"], ["1-way", "2-way", "4-way"]]


def attributes(m, attrs):
    """(name, default) of model m's attributes."""
    out = []
    for k in range(attrs):
        h = mix(m, k, 77)
        name = "Attr%s%03d" % (["Proc", "Mem", "Pcie", "Power", "Boot", "Sys"][h % 6], k)
        kind = h >> 8
        if kind % 5 == 0:
            v = str(kind % 300)
        elif kind % 5 == 1:
            v = "true" if kind & 64 else "false"
        else:
            e = ENUMS[kind % len(ENUMS)]
            v = e[(kind >> 4) % len(e)]
        out.append((name, v))
    return out


def bios_components(i, m, s, table, per_node):
    out = []
    hand = mix(i, 50) % 500 == 0 and s >= mix(i, 51) % 30 and not (mix(i, 52) % 4 == 0 and s > 25)
    for k, (name, v) in enumerate(table):
        if m == 0 and k == 17 and s >= 10 and i % 2 == 0:
            v = "Disabled" if v != "Disabled" else "Enabled"   # a new default, half a model
        if hand and k == 3:
            v = "Custom" if v != "Custom" else "PerfOptimized"  # changed by hand
        if k < per_node:
            v = "iqn.2026-10.com.example:node%05d" % i          # per node, not ignored
        key = "bios." + name.lower()
        out.append(comp(key, v, "redfish", name, name, "setting"))
    return out


def main():
    n, first, last = (int(a) for a in sys.argv[1:4])
    attrs = int(sys.argv[4]) if len(sys.argv) > 4 else 400
    per_node = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    tables = [attributes(m, attrs) for m in range(len(gen.MODELS))]
    w = sys.stdout.write
    for s in range(first, last + 1):
        day = f"2026-10-{s:02d}" if s <= 31 else f"2026-11-{s - 31:02d}"
        head = (f'{{"sweep":{s},"sweep_uid":"bench-{s:04d}","time":"{day}T02:00:00.000Z",'
                f'"finished":"{day}T02:09:00.000Z",')
        mid = '"status":"ok","errors":[],"protocol":"redfish","collected":{"firmware":true,"host":true},'
        for i in range(n):
            m, model = model_of(i, n)
            comps, driver, cuda = gen.node_components(i, m, s)
            comps = sorted(comps + bios_components(i, m, s, tables[m], per_node))
            hw = f'"hardware":{{"system":{{"model":{json.dumps(model)},"serial":"SN{mix(i, 7) % 10**9:09d}"}}}}'
            w(f'{head}"node":"gpu{i + 1:05d}",{mid}"model":{json.dumps(model)},')
            w('"components":[' + ",".join(comps) + "]," + hw + "}\n")


if __name__ == "__main__":
    main()
