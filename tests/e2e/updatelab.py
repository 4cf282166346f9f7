"""What the update modules (test_update, test_update_quirks, test_rollout_safety)
share: a module's lab of Redfish BMCs with fast update timings, its nodes
registered with those timings restored before each test, and `update` run
with its JSON per node. Each module still takes its addresses from its own
LOOPBACK rows (loopback(module, "lab"))."""
import json

import pytest

from conftest import PASSWORD, loopback, started
from redfish_emu import RedfishLab

# Update timings of a lab BMC that make a test take seconds, not minutes.
FAST = {"update_new": 0.1, "update_flash": 0.3, "update_result": "ok", "update_purge": "none",
        "update_conflict": 409, "update_busy": 0, "bmc_reset_refused": 0.3,
        "bmc_reset_busy": 0.5, "retry_after": 1}


def lab_fixture(vendors, workdir_prefix, fast=FAST):
    """A module fixture "lab": len(@vendors) BMCs of those dialects on the module's
    "lab" range, each with the overrides @fast."""
    @pytest.fixture(scope="module", name="lab")
    def lab(request):
        prefix = loopback(request.module.__name__, "lab")
        count = len(vendors)
        with started(lambda d: RedfishLab(d, prefix=prefix, count=count, vendors=vendors,
                                          user="admin", password=PASSWORD,
                                          overrides={i: dict(fast)
                                                     for i in range(1, count + 1)}),
                     workdir_prefix) as lab:
            yield lab
    return lab


def rf_fixture(name_prefix, fast=FAST, power=None):
    """A fixture "rf": every lab node registered as <@name_prefix><i>, its overrides
    back to @fast (and its main System's power to @power, when given), its updates
    and counters cleared; gf.ca the lab's CA, gf.dir a folder for catalogs."""
    @pytest.fixture(name="rf")
    def rf(gf, lab, tmp_path):
        lines = ["name,bmc,protocol"]
        for i in lab.indices():
            lab.override(i, **fast)
            if power:
                lab.set_power(i, power)
            lab.clear_updates(i)
            lab.clear(i)
            lines.append(f"{name_prefix}{i},{lab.addr(i)}:{lab.port},redfish")
        r = gf.run("nodes", "import", "-", input="\n".join(lines) + "\n")
        assert r.returncode == 0, r.stderr
        gf.ca = ["--cacert", lab.cacert]
        gf.dir = str(tmp_path)
        return gf
    return rf


def upd(gf, *args, fmt="json", timeout=180):
    """gpufleet update ARGS: the completed process and, for JSON, its objects by node."""
    r = gf.run(*gf.ca, "--format", fmt, "update", *args, timeout=timeout)
    data = None
    if fmt == "json" and r.stdout.strip():
        data = {o["node"]: o for o in json.loads(r.stdout)}
    return r, data


def pushes(lab, i):
    return lab.updates(i)["pushes"]


def manager_resets(lab, i):
    return [r for r in lab.updates(i)["resets"] if r["kind"] == "manager"]
