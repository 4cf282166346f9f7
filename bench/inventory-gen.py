#!/usr/bin/python3
"""A synthetic fleet history for bench/inventory.sh, as `gpufleet inventory
export` lines (ndjson) on stdout: NODES nodes of four hardware models, 60
components each, sweeps FIRST..LAST one day apart.

The fleet is shaped like a real one: a rolling driver upgrade reaches a
thirtieth of the nodes each night, a BMC update reaches one model halfway
through, PSUs and NICs come from different lots (their versions vary per node
and slot, so most nodes' component lists are unlike their neighbours'), 1 % of
the nodes sit on an old BMC, and GPUs are occasionally reflashed. Host facts
and hardware documents are per node (serials, UUIDs) and change with the
driver. Deterministic: the same arguments give the same bytes.

    inventory-gen.py NODES FIRST LAST
"""
import json
import sys

MODELS = [("DGX H100", 5000), ("HGX H200", 3000), ("PowerEdge XE9680", 1500), ("ThinkSystem SR675 V3", 500)]


def mix(*xs):
    """A small deterministic hash."""
    h = 0x9E3779B97F4A7C15
    for x in xs:
        h = ((h ^ x) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
    return h


def comp(key, version, source, cid, name, kind):
    return json.dumps({"key": key, "version": version, "source": source, "id": cid,
                       "name": name, "kind": kind}, separators=(",", ":"))


def model_of(i, n):
    scaled = i * 10000 // n
    acc = 0
    for m, (name, count) in enumerate(MODELS):
        acc += count
        if scaled < acc:
            return m, name
    return len(MODELS) - 1, MODELS[-1][0]


def node_components(i, m, s):
    """The 60 components of node i at sweep s."""
    src = "redfish"
    upgraded = mix(i, 1) % 30 < s            # the rolling driver upgrade
    driver = "570.133.20" if upgraded else "550.163.01"
    cuda = "12.8" if upgraded else "12.4"
    bmc = ["24.09.17", "6.10.30.00", "7.10.50.00", "9.88"][m]
    if m == 0 and s > 15:
        bmc = "24.12.05"                     # a BMC release for one model, mid-way
    if mix(i, 2) % 100 == 0:
        bmc = "23.05.03"                     # stragglers
    gpu = "96.00.9F.00.04"
    if mix(i, 3, s // 10) % 500 == 0:
        gpu = "96.00.74.00.01"               # a reflashed board now and then
    out = [
        comp("bmc", bmc, src, "HostBMC_0", "BMC", "bmc"),
        comp("bmc.erot", "00.04.0026.0000_n00", src, "EROT_BMC_0", "BMC ERoT", "other"),
        comp("bios", ["1.5.0", "2.19.1", "2.3.5", "KAE124D"][m], src, "HostBIOS_0", "BIOS", "bios"),
        comp("bios.erot", "00.04.0026.0000_n00", src, "EROT_BIOS_0", "BIOS ERoT", "other"),
        comp("cpld", "0.2.1.8", src, "CPLDMB_0", "CPLD", "cpld"),
        comp("hgx.bmc", "HGX-22.10-1-rc80", src, "HGX_FW_BMC_0", "HGX BMC", "bmc"),
        comp("hgx.fpga", "2.37", src, "HGX_FW_FPGA_0", "HGX FPGA", "other"),
    ]
    for g in range(8):
        out.append(comp(f"gpu{g}.firmware", gpu, src, f"HGX_FW_GPU_SXM_{g + 1}", f"GPU SXM {g + 1}", "gpu"))
        out.append(comp(f"gpu{g}.inforom", "G520.0200.00.05", src, f"HGX_InfoROM_GPU_SXM_{g + 1}",
                        f"GPU SXM {g + 1} InfoROM", "gpu"))
        out.append(comp(f"gpu{g}.vbios", gpu, "ssh", f"nvidia-smi:0000000{g}:19:00.0:vbios_version",
                        f"GPU {g} VBIOS", "gpu"))
    for k in range(8):
        # Most NICs on the current release, some from older lots.
        lot = mix(i, 10 + k) % 100
        nic = "28.42.1000" if lot >= 12 else ["28.39.1002", "28.39.2048", "28.41.1000"][lot % 3]
        out.append(comp(f"nic{k}", nic, src, f"NIC.Slot.{k + 1}", f"ConnectX-7 {k}", "nic"))
    for k in range(6):
        lot = mix(i, 20 + k) % 100
        psu = "01.03.00" if lot >= 6 else ["01.02.03", "01.02.05"][lot % 2]
        out.append(comp(f"psu{k}", psu, src, f"PSU_{k}", f"Power Supply {k}", "psu"))
    for k in range(4):
        out.append(comp(f"nvswitch{k}.firmware", "96.10.6D.00.01", src, f"HGX_FW_NVSwitch_{k}",
                        f"NVSwitch {k}", "baseboard"))
    for k in range(4):
        out.append(comp(f"drive{k}", "GDC7302Q", src, f"Disk.Bay.{k}", f"NVMe {k}", "other"))
    out += [
        comp("driver", driver, "ssh", "nvidia-smi:driver_version", "NVIDIA driver", "driver"),
        comp("cuda.driver", cuda, "ssh", "nvidia-smi:cuda_version", "CUDA version of the driver", "cuda"),
        comp("cuda.toolkit", "12.4.131", "ssh", "cuda:toolkit", "CUDA toolkit", "cuda"),
        comp("kernel", "6.8.0-45-generic", "ssh", "uname -r", "Linux kernel", "os"),
        comp("os", "Ubuntu 24.04.1 LTS", "ssh", "os-release:PRETTY_NAME", "Operating system", "os"),
        comp("fabricmanager", driver, "ssh", "nv-fabricmanager", "NVIDIA Fabric Manager", "driver"),
        comp("ofed", "MLNX_OFED_LINUX-24.07-0.6.1.0", "ssh", "ofed_info", "MLNX OFED", "driver"),
    ]
    out.sort()
    return out, driver, cuda


def main():
    n, first, last = (int(a) for a in sys.argv[1:4])
    w = sys.stdout.write
    for s in range(first, last + 1):
        day = f"2026-10-{s:02d}" if s <= 31 else f"2026-11-{s - 31:02d}"
        head = (f'{{"sweep":{s},"sweep_uid":"bench-{s:04d}","time":"{day}T02:00:00.000Z",'
                f'"finished":"{day}T02:09:00.000Z",')
        mid = '"status":"ok","errors":[],"protocol":"redfish","collected":{"firmware":true,"host":true},'
        for i in range(n):
            m, model = model_of(i, n)
            comps, driver, cuda = node_components(i, m, s)
            gpus = ",".join(f'{{"index":{g},"serial":"{mix(i, 100 + g) % 10**13:013d}",'
                            f'"uuid":"GPU-{mix(i, 200 + g):016x}"}}' for g in range(8))
            host = (f'"host":{{"driver":"{driver}","cuda_driver":"{cuda}","kernel":"6.8.0-45-generic",'
                    f'"gpus":[{gpus}],"health":{{"state":"ok"}}}}')
            hw = (f'"hardware":{{"system":{{"model":{json.dumps(model)},"serial":"SN{mix(i, 7) % 10**9:09d}"}}}}')
            w(f'{head}"node":"gpu{i + 1:05d}",{mid}"model":{json.dumps(model)},')
            w('"components":[' + ",".join(comps) + "]," + hw + "," + host + "}\n")


if __name__ == "__main__":
    main()
