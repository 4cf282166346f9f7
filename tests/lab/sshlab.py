#!/usr/bin/python3
"""A fleet of GPU hosts behind real OpenSSH sshd instances on loopback, for
tests and benchmarks of `gpufleet host`.

Each node gets a loopback address (prefix.1, prefix.2, ...; then the next
third octet) and port 2222 on it. One sshd listens on at most 16 addresses
(more are silently skipped by sshd), so the lab starts one sshd per 16 nodes,
each with its own config, host keys (ed25519 and ECDSA), pid file and log.
`Match LocalAddress` gives each address a ForceCommand, the node's `enter`
script, which logs the command the client sent (commands.log) and runs it
with the node's fake tool directory first on a closed PATH: the fake
`nvidia-smi`, `nvcc`, `ofed_info`, `nv-fabricmanager`, `journalctl`,
`dmesg`, `uname` and `cat` print real captured outputs
(tests/data/gpu-node-outputs) for the node's profile, and log how they were
called (calls.log). The fake `cat` reads absolute paths under the node's own
root (root/proc/driver/nvidia/version, root/etc/os-release,
root/usr/local/cuda/version.json), never the real files: the machine running
the lab may have a real CUDA toolkit or driver. The same bin directory, put
first on PATH, is how `gpufleet host --local` is tested.

Logins are for LAB_USER when the lab runs as root (a system user it makes,
shell /bin/sh, password field '*'), else for the user running it, with an
ed25519 key the lab makes (libssh2 1.10 cannot sign with RSA SHA-2, so RSA
user keys fail against OpenSSH 9). Also made: a key that is not authorized,
and an authorized key with a passphrase. known_hosts holds the nodes' ed25519
host keys only (half of the entries hashed), except for nodes marked
`hostkey: unknown` (absent) or `hostkey: changed` (another key).

As a module:

    lab = SshLab(workdir, nodes=default_nodes())
    lab.start(); ... lab.addr(1), lab.spec(1), lab.expected(1), lab.commands(1)
    lab.stop()

As a command (for benchmarks):

    sshlab.py start --dir D [--prefix 127.33.10] [--count N] [--profile h100]
    sshlab.py stop --dir D

Only the Python standard library, ssh-keygen and sshd. Processes are stopped
by the PIDs the lab started, never by name.
"""

import argparse
import base64
import fcntl
import getpass
import hashlib
import hmac
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labutil import LabError, node_address, stop_popen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(TOP, 'tests', 'data', 'gpu-node-outputs')
SSHD = '/usr/sbin/sshd'
PORT = 2222
PER_SSHD = 16
# Run as root, the lab logs in as this user, made when missing: a system user
# with /bin/sh as shell (a login shell that reads a heavy ~/.bashrc would be
# timed with every command) and password field '*' (sshd with UsePAM no
# refuses a locked '!' account). Run as anyone else, it logs in as that user.
LAB_USER = 'gpufleet-lab'

# The --query-gpu fields gpufleet asks for first (gpufleet host --commands).
# Outputs for this list and for its successive reductions are made ahead of
# time; any other list is answered by the slow path (python, same rules).
QUERY_FIELDS = [
    'index', 'name', 'serial', 'uuid', 'pci.bus_id', 'vbios_version', 'memory.total',
    'mig.mode.current', 'persistence_mode',
    'ecc.errors.corrected.volatile.total', 'ecc.errors.uncorrected.volatile.total',
    'ecc.errors.corrected.aggregate.total', 'ecc.errors.uncorrected.aggregate.total',
    'retired_pages.pending', 'remapped_rows.pending', 'inforom.img',
]
QUERY_FORMAT = '--format=csv,noheader,nounits'


def read(name):
    with open(os.path.join(DATA, name), encoding='utf-8') as f:
        return f.read()


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    os.chmod(path, mode)


def _na(v):
    """nvidia-smi CSV spelling of a missing value."""
    v = (v or '').strip()
    return '[N/A]' if v in ('', 'N/A') else v


# ---- GPU values from the captures ------------------------------------------

def gpus_from_csv(name):
    """Per-GPU {field: value as printed with nounits} from an all-fields capture."""
    lines = read(name).splitlines()
    head = [h.strip() for h in lines[0].split(', ')]
    units = [' [' in h for h in head]
    head = [h.split(' [')[0] for h in head]
    gpus = []
    for line in lines[1:]:
        vals = line.split(', ')
        if len(vals) != len(head):
            raise LabError('%s: a row has %d values for %d fields' % (name, len(vals), len(head)))
        g = {}
        for h, u, v in zip(head, units, vals):
            if u and not v.startswith('['):
                v = v.split(' ')[0]
            g[h] = v
        gpus.append(g)
    return gpus


def _q_tree(text):
    """nvidia-smi -q as a list of per-GPU {path tuple: value}; plus the header."""
    header, gpus, cur, stack = {}, [], None, []
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith('='):
            continue
        indent = (len(raw) - len(raw.lstrip(' '))) // 4
        line = raw.strip()
        if indent == 0 and re.match(r'GPU [0-9A-Fa-f]+:', line) and ' : ' not in raw:
            cur = {}
            gpus.append(cur)
            stack = []
            continue
        if indent == 0:
            if ' : ' in raw or raw.rstrip().endswith(':'):
                k, _, v = raw.partition(':')
                header[k.strip()] = v.strip()
            continue
        if cur is None:
            continue
        stack = stack[:indent - 1]
        if ' : ' in raw or raw.rstrip().endswith(' :'):
            k, _, v = line.partition(':')
            cur[tuple(stack + [k.strip()])] = v.strip()
        else:
            stack.append(line)
    return header, gpus


def _ecc_sum(d, section, word):
    vals = [v for k, v in d.items()
            if len(k) == 3 and k[0] == 'ECC Errors' and k[1] == section and word in k[2]
            and 'Threshold' not in k[2]]
    if not vals or any(not v.isdigit() for v in vals):
        return '[N/A]'
    return str(sum(int(v) for v in vals))


def gpus_from_q(name):
    """Per-GPU CSV values as nvidia-smi --query-gpu prints them, read from -q."""
    header, trees = _q_tree(read(name))
    gpus = []
    for i, d in enumerate(trees):
        def get(*path):
            return _na(d.get(tuple(path)))
        mem = get('FB Memory Usage', 'Total')
        gpus.append({
            'index': str(i), 'name': get('Product Name'), 'serial': get('Serial Number'),
            'uuid': get('GPU UUID'), 'pci.bus_id': get('PCI', 'Bus Id'),
            'vbios_version': get('VBIOS Version'),
            'memory.total': mem.split(' ')[0] if mem != '[N/A]' else mem,
            'mig.mode.current': get('MIG Mode', 'Current'),
            'persistence_mode': get('Persistence Mode'),
            'ecc.errors.corrected.volatile.total': _ecc_sum(d, 'Volatile', 'Correctable'),
            'ecc.errors.uncorrected.volatile.total': _ecc_sum(d, 'Volatile', 'Uncorrectable'),
            'ecc.errors.corrected.aggregate.total': _ecc_sum(d, 'Aggregate', 'Correctable'),
            'ecc.errors.uncorrected.aggregate.total': _ecc_sum(d, 'Aggregate', 'Uncorrectable'),
            'retired_pages.pending': get('Retired Pages', 'Pending Page Blacklist'),
            'remapped_rows.pending': get('Remapped Rows', 'Pending'),
            'inforom.img': get('Inforom Version', 'Image Version'),
        })
    return header['Driver Version'], header['CUDA Version'], gpus


def gpus_from_xml(name):
    """Per-GPU CSV values read from -q -x; and the driver and CUDA versions."""
    root = ET.fromstring(read(name))
    gpus = []
    for i, g in enumerate(root.findall('gpu')):
        def get(path):
            e = g.find(path)
            return _na(e.text if e is not None and len(e) == 0 else None)

        def ecc(section, word):
            e = g.find('ecc_errors/' + section)
            vals = [c.text.strip() for c in e if word in c.tag] if e is not None else []
            if not vals or any(not v.isdigit() for v in vals):
                return '[N/A]'
            return str(sum(int(v) for v in vals))
        mem = get('fb_memory_usage/total')
        gpus.append({
            'index': str(i), 'name': get('product_name'), 'serial': get('serial'),
            'uuid': get('uuid'), 'pci.bus_id': get('pci/pci_bus_id'),
            'vbios_version': get('vbios_version'),
            'memory.total': mem.split(' ')[0] if mem != '[N/A]' else mem,
            'mig.mode.current': get('mig_mode/current_mig'),
            'persistence_mode': get('persistence_mode'),
            'ecc.errors.corrected.volatile.total': ecc('volatile', '_correctable'),
            'ecc.errors.uncorrected.volatile.total': ecc('volatile', 'uncorrectable'),
            'ecc.errors.corrected.aggregate.total': ecc('aggregate', '_correctable'),
            'ecc.errors.uncorrected.aggregate.total': ecc('aggregate', 'uncorrectable'),
            'retired_pages.pending': get('retired_pages/pending_retirement'),
            'remapped_rows.pending': get('remapped_rows/remapped_row_pending')
            if g.find('remapped_rows/remapped_row_pending') is not None else get('remapped_rows'),
            'inforom.img': get('inforom_version/img_version'),
        })
    return root.find('driver_version').text, root.find('cuda_version').text, gpus


def synth_table(driver, cuda):
    """The header of the default table for a capture that has none (535 layout, real values)."""
    bar = '+' + '-' * 87 + '+'
    mid = ' NVIDIA-SMI %-21s Driver Version: %-13s CUDA Version: %-9s' % (driver, driver, cuda)
    return '%s\n|%s|\n%s\n' % (bar, mid.ljust(87)[:87], bar)


# The GPU side of each node profile: where its outputs come from.
PROFILES = {
    'h100': dict(csv='h100-80gb-hbm3_590.48.01_query-gpu-allfields.csv',
                 table='h100-80gb-hbm3_590.48.01_nvidia-smi.txt',
                 q='h100-80gb-hbm3_590.48.01_nvidia-smi-q.txt',
                 version='h100-80gb-hbm3_590.48.01_nvidia-smi--version.txt',
                 driver='590.48.01', cuda='13.1'),
    'h100-mig': dict(csv='h100-mig_590.48.01_query-gpu-allfields.csv',
                     table='h100-mig_590.48.01_nvidia-smi.txt',
                     q='h100-mig_590.48.01_nvidia-smi-q.txt',
                     version='h100-mig_590.48.01_nvidia-smi--version.txt',
                     driver='590.48.01', cuda='13.1'),
    'h200': dict(csv='h200_590.48.01_query-gpu-allfields.csv', table='h200_590.48.01_nvidia-smi.txt',
                 q='h200_590.48.01_nvidia-smi-q.txt', version='h200_590.48.01_nvidia-smi--version.txt',
                 driver='590.48.01', cuda='13.1'),
    'h200-mig': dict(csv='h200-mig_590.48.01_query-gpu-allfields.csv',
                     table='h200-mig_590.48.01_nvidia-smi.txt',
                     q='h200-mig_590.48.01_nvidia-smi-q.txt',
                     version='h200-mig_590.48.01_nvidia-smi--version.txt',
                     driver='590.48.01', cuda='13.1'),
    'l40s': dict(csv='l40s_595.80_query-gpu-allfields.csv', table='l40s_595.80_nvidia-smi.txt',
                 q='l40s_595.80_nvidia-smi-q.txt', version='l40s_595.80_nvidia-smi--version.txt',
                 driver='595.80', cuda='13.2'),
    'rtx2080': dict(csv='rtx-2080-super_610.57.04_query-gpu-allfields.csv',
                    table='rtx-2080-super_610.57.04_nvidia-smi.txt',
                    q='rtx-2080-super_610.57.04_nvidia-smi-q.txt',
                    version='rtx-2080-super_610.57.04_nvidia-smi--version.txt',
                    driver='610.57.04', cuda='13.3'),
    # 8 GPUs: the --query-gpu values and the table header are read from the real -q capture
    'h100x8-535': dict(q='h100x8_535.161.08_nvidia-smi-q.txt',
                       proc='proc-driver-nvidia-version_535.161.08_proprietary.txt'),
    'h100x8-535.183': dict(q='h100x8_535.183.01_nvidia-smi-q.txt'),
    # one A100 in MIG mode: values read from the real -q -x capture
    'a100-535': dict(xml='a100-sxm4-80gb-mig_535.54.03_nvidia-smi-q-x.xml'),
    'no-smi': dict(smi='missing'),
    'no-driver': dict(smi='error', error='nvidia-smi_error_no-driver.txt', exit=9),
    'gpu-lost': dict(smi='error', error='nvidia-smi_error_gpu-fallen-off-bus.txt', exit=15),
    'hang': dict(smi='hang'),
    # hangs and ignores TERM (a process stuck in the driver that catches it)
    'hang-hard': dict(smi='hang', ignore_term=True),
    # nvidia-smi fails for a reason it does not name (a container that lost its device
    # cgroup): the host answers in part, its driver read from /proc
    'nvml-unknown': dict(smi='error', error='nvidia-smi_error_nvml-unknown-error.txt', exit=255,
                         health='unknown',
                         proc='proc-driver-nvidia-version_535.161.08_proprietary.txt'),
    # a driver installed without a reboot: module 535.161.08 loaded, library 570.124 installed
    'driver-mismatch': dict(smi='error', error='nvidia-smi_error_driver-library-mismatch.txt',
                            exit=18, health='driver-mismatch', library='570.124',
                            proc='proc-driver-nvidia-version_535.161.08_proprietary.txt'),
}


def profile_gpus(prof):
    """(driver, cuda, [per-GPU values]) of a profile; (None, None, []) without GPUs."""
    if 'csv' in prof:
        return prof['driver'], prof['cuda'], gpus_from_csv(prof['csv'])
    if 'q' in prof:
        return gpus_from_q(prof['q'])
    if 'xml' in prof:
        return gpus_from_xml(prof['xml'])
    return None, None, []


def edit_gpus(node, gpus):
    """The GPUs node @node's host shows: the profile's, with the node's own values
    ('gpu_set': {index: {query field: value}}, e.g. a serial or a VBIOS) and
    without the GPUs in 'gpu_hide' (fallen off the bus: the others are
    renumbered, as nvidia-smi numbers what it sees)."""
    out = []
    for g in gpus:
        i = int(g['index'])
        if i in node.get('gpu_hide', ()):
            continue
        g = dict(g)
        g.update(node.get('gpu_set', {}).get(i, {}))
        g['index'] = str(len(out))
        out.append(g)
    return out


def query_answer(gpus, known, args):
    """What nvidia-smi --query-gpu=... prints and its exit status."""
    fields = None
    for a in args:
        if a.startswith('--query-gpu='):
            fields = a[len('--query-gpu='):].split(',')
    nounits = any(a.startswith('--format=') and 'nounits' in a for a in args)
    if fields is None:
        return "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n", 2
    for f in fields:
        if f not in known:
            return 'Field "%s" is not a valid field to query.\n\n' % f, 2
    rows = []
    for g in gpus:
        vals = []
        for f in fields:
            v = g.get(f, '[N/A]')
            if f == 'memory.total' and not nounits and not v.startswith('['):
                v += ' MiB'
            vals.append(v)
        rows.append(', '.join(vals) + '\n')
    return ''.join(rows), 0


def journal_lines(dmesg_text, host):
    """A dmesg capture as journalctl -k prints it."""
    out = []
    for line in dmesg_text.splitlines():
        text = re.sub(r'^\[[^]]*\]\s*', '', line).strip()
        if text:
            out.append('Feb 23 16:24:18 %s kernel: %s\n' % (host, text))
    return ''.join(out)


def expected_xids(text):
    counts = {}
    for m in re.finditer(r'NVRM: Xid \([^)]*\): (\d+),', text or ''):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def _num(v):
    return int(v) if v.isdigit() else None


def _tri(v, yes='Yes'):
    return {'Yes': True, 'No': False, 'Enabled': True, 'Disabled': False}.get(v)


def _mode(v):
    return {'Enabled': 'enabled', 'Disabled': 'disabled'}.get(v)


def expected_gpu(g):
    """A GPU as gpufleet's JSON must show it."""
    def s(f):
        v = g.get(f, '[N/A]')
        return None if v.startswith('[') or v == 'N/A' else v
    return {
        'index': int(g['index']), 'name': s('name'), 'serial': s('serial'), 'uuid': s('uuid'),
        'pci': s('pci.bus_id'), 'vbios': s('vbios_version'),
        'memory_total_mib': _num(g.get('memory.total', '')),
        'mig_mode': _mode(g.get('mig.mode.current')),
        'persistence_mode': _mode(g.get('persistence_mode')),
        'ecc': {
            'volatile': {'corrected': _num(g['ecc.errors.corrected.volatile.total']),
                         'uncorrected': _num(g['ecc.errors.uncorrected.volatile.total'])},
            'aggregate': {'corrected': _num(g['ecc.errors.corrected.aggregate.total']),
                          'uncorrected': _num(g['ecc.errors.uncorrected.aggregate.total'])},
        },
        'retired_pages_pending': _tri(g.get('retired_pages.pending')),
        'remapped_rows_pending': _tri(g.get('remapped_rows.pending')),
        'inforom': s('inforom.img'),
    }


def default_nodes():
    """The test fleet: 34 nodes on three sshd instances, every case of the issue."""
    n = []

    def add(profile, **opts):
        n.append(dict(profile=profile, **opts))
    add('h100', toolkit=('nvcc', 'nvcc--version_12.8.93.txt'), ofed='ofed_info-s_23.10-3.2.2.0.txt',
        kernel='5.15.0-112-generic', old_xids='dmesg-decode-iso_xid-13.txt')
    add('h200-mig', kernel='6.8.0-45-generic')
    add('l40s', toolkit=('nvcc', 'nvcc--version_12.8.93.txt'), kernel='6.8.0-45-generic')
    add('rtx2080', toolkit=('json', 'cuda-version-json_13.3.1.json'),
        fabricmanager='nv-fabricmanager--version_610.57.04_no-trailing-newline.txt',
        kernel='6.14.0-27-generic')
    add('a100-535', toolkit=('nvcc', 'nvcc--version_11.1.105.txt'), xids='dmesg-decode-iso_xid-13.txt')
    add('h100x8-535', toolkit=('nvcc', 'nvcc--version_12.5.82.txt'),
        fabricmanager='nv-fabricmanager--version_535.161.08.txt', ofed='ofed_info-s_23.10-3.2.2.0.txt',
        xids='dmesg_xid-119_gsp-timeout.txt')
    add('h100-mig')
    add('h200', toolkit=('nvcc', 'nvcc--version_10.1.243_no-build-line.txt'))
    add('no-smi', toolkit=('json', 'cuda-version-json_13.3.1.json'))
    add('no-driver')
    add('gpu-lost', xids='dmesg_xid-79_fallen-off-bus.txt')
    add('hang')
    # an nvidia-smi that does not know remapped_rows.pending (as before R460): asked again without it
    add('h100x8-535.183', unknown_fields=['remapped_rows.pending'])
    add('h100', journal='missing', xids='dmesg_xid-79_fallen-off-bus.txt',  # dmesg fallback
        old_xids='dmesg_xid-119_gsp-timeout.txt')
    add('h100', journal='denied', dmesg='denied')                           # no permission
    add('l40s')
    # util-linux before 2.37: dmesg has no --since, read since boot
    add('h100', journal='missing', dmesg='old', xids='dmesg_xid-79_fallen-off-bus.txt',
        old_xids='dmesg_xid-119_gsp-timeout.txt')
    while len(n) < 32:
        add(['h100', 'h200', 'l40s', 'rtx2080', 'h100x8-535'][len(n) % 5])
    add('h100', hostkey='unknown')
    add('h200', hostkey='changed')
    return n



# How the enter script ends each session's entry in commands.log.
SESSION_END = '\n\x1e\n'


def _sh_unquote(s):
    """The text of one sh single-quoted word 'it'\\''s' (s starts at its quote)."""
    out, i = [], 0
    while i < len(s) and s[i] == "'":
        j = s.index("'", i + 1)
        out.append(s[i + 1:j])
        i = j + 1
        if s[i:i + 2] == "\\'":
            out.append("'")
            i += 2
    return ''.join(out), s[i:]


def script_commands(entry):
    """The commands of a session: gpufleet's round script (host/script.c)
    yields each command it runs; anything else is one command."""
    head = "exec /bin/sh -c "
    if not entry.startswith(head):
        return [entry]
    script, _ = _sh_unquote(entry[len(head):])
    cmds = []
    for line in script.split('\n'):
        m = re.match(r"\(trap : TERM; (.*); echo \d+ \$\? >>t\) </dev/null ", line)
        if m and m.group(1).startswith("/bin/sh -c '"):
            cmds.append(_sh_unquote(m.group(1)[len("/bin/sh -c "):])[0])
        elif m and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", m.group(1)):
            cmds.append("env " + m.group(1))   # the shell sets the variables, as env(1) would
        elif m:
            cmds.append(m.group(1))
    return cmds


class SshLab:
    def __init__(self, workdir, nodes=None, prefix='127.33.0', names=None, sshd_options=()):
        self.dir = os.path.abspath(workdir)
        self.sshd_options = list(sshd_options)  # extra sshd_config lines (MaxSessions 3)
        self.prefix = prefix
        self.nodes = nodes if nodes is not None else default_nodes()
        self.count = len(self.nodes)
        self.names = names or ['gpu%02d' % i for i in range(1, self.count + 1)]
        self.user = LAB_USER if os.geteuid() == 0 else getpass.getuser()
        self.procs = []           # [(Popen, instance dir)]
        self.key = os.path.join(self.dir, 'user_ed25519')
        self.wrong_key = os.path.join(self.dir, 'wrong_ed25519')
        self.pass_key = os.path.join(self.dir, 'pass_ed25519')
        self.passphrase = 'lab-key-Pa55'
        self.known_hosts = os.path.join(self.dir, 'known_hosts')

    # ---- addresses and files ----
    def addr(self, i):
        return node_address(self.prefix, i)

    def spec(self, i):
        return '%s:%d' % (self.addr(i), PORT)

    def node_dir(self, i):
        return os.path.join(self.dir, 'hosts', self.names[i - 1])

    def instance(self, i):
        return (i - 1) // PER_SSHD

    def _lines(self, i, name):
        try:
            with open(os.path.join(self.node_dir(i), name), encoding='utf-8') as f:
                return [line.rstrip('\n') for line in f]
        except FileNotFoundError:
            return []

    def sessions(self, i):
        """What the client sent to node i, one entry per SSH session (exec request)."""
        p = os.path.join(self.node_dir(i), 'commands.log')
        if not os.path.exists(p):
            return []
        with open(p, encoding='utf-8', errors='replace') as f:
            return [e for e in f.read().split(SESSION_END) if e]

    def commands(self, i):
        """The command lines that ran on node i, in order: each session's, and
        where a session is gpufleet's one shell for a round (host/script.c),
        the commands of its script."""
        out = []
        for entry in self.sessions(i):
            out += script_commands(entry)
        return out

    def calls(self, i):
        """How the fake tools of node i were called: 'tool args'."""
        return self._lines(i, 'calls.log')

    def clear_logs(self):
        for i in range(1, self.count + 1):
            for name in ('commands.log', 'calls.log'):
                p = os.path.join(self.node_dir(i), name)
                if os.path.exists(p):
                    open(p, 'w').close()

    def bin_dir(self, i):
        return os.path.join(self.node_dir(i), 'bin')

    def local_env(self, i):
        """PATH for gpufleet host --local to see node i's fake tools and nothing else."""
        return {'PATH': '%s:%s' % (self.bin_dir(i), os.path.join(self.dir, 'sysbin'))}

    def sshd_log(self, k):
        with open(os.path.join(self.dir, 'sshd%d' % k, 'log'), encoding='utf-8',
                  errors='replace') as f:
            return f.read()

    # ---- expected facts ----
    def expected(self, i):
        """The host object gpufleet must report for node i, from the captures."""
        node = self.nodes[i - 1]
        prof = PROFILES[node['profile']]
        driver, cuda, gpus = profile_gpus(prof)
        gpus = edit_gpus(node, gpus)
        health = {'missing': 'no-nvidia-smi', 'hang': 'timeout'}.get(prof.get('smi'), 'ok')
        if prof.get('smi') == 'error':
            health = prof.get('health') or ('no-driver' if prof['exit'] == 9 else 'gpu-lost')
        if prof.get('smi') in ('missing', 'error', 'hang'):
            driver = cuda = None
            gpus = []
            if prof.get('proc'):  # the loaded module, from /proc
                driver = re.search(r'Kernel Module +([\d.]+)', read(prof['proc'])).group(1)
        toolkit = None
        if node.get('toolkit'):
            kind, name = node['toolkit']
            text = read(name)
            m = (re.search(r'release [\d.]+, V([\d.]+)', text) if kind == 'nvcc'
                 else re.search(r'"cuda"\s*:\s*{[^}]*"version"\s*:\s*"([\d.]+)"', text))
            toolkit = m.group(1)
        fm = ofed = None
        if node.get('fabricmanager'):
            fm = re.search(r'version is : ([\d.]+)', read(node['fabricmanager'])).group(1)
        if node.get('ofed'):
            ofed = read(node['ofed']).strip().rstrip(':')
        since_boot = node.get('journal') == 'missing' and node.get('dmesg') == 'old'
        xids = expected_xids((read(node['xids']) if node.get('xids') else '') +
                             (read(node['old_xids']) if since_boot and node.get('old_xids') else ''))
        denied = node.get('journal') == 'denied' and node.get('dmesg') == 'denied'
        for g in gpus:
            for f in node.get('unknown_fields', []):
                g.pop(f, None)  # asked again without it: unknown
        return {
            'driver': driver, 'cuda_driver': cuda, 'cuda_toolkit': toolkit,
            'kernel': node.get('kernel', '6.1.0-lab'), 'os': self._os_pretty(),
            'fabricmanager': fm, 'ofed': ofed,
            'gpus': [expected_gpu(g) for g in gpus],
            'health': health,
            'driver_library': prof.get('library'),
            'xid': None if denied else xids,
            'xid_source': None if denied else ('dmesg-boot' if since_boot else
                                               'dmesg' if node.get('journal') == 'missing'
                                               else 'journal'),
        }

    @staticmethod
    def _os_pretty():
        with open('/etc/os-release', encoding='utf-8') as f:
            m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', f.read(), flags=re.M)
        return m.group(1) if m else None

    # ---- building ----
    def _keygen(self, path, passphrase=''):
        if not os.path.exists(path):
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', passphrase, '-C', 'gpufleet-lab',
                            '-f', path], check=True)
        with open(path + '.pub', encoding='ascii') as f:
            return f.read().strip()

    def _host_keys(self, k, fresh=False):
        d = os.path.join(self.dir, 'sshd%d' % k)
        os.makedirs(d, exist_ok=True)
        for t in ('ed25519', 'ecdsa'):
            p = os.path.join(d, 'ssh_host_%s_key' % t)
            if fresh:
                for q in (p, p + '.pub'):
                    if os.path.exists(q):
                        os.unlink(q)
            if not os.path.exists(p):
                subprocess.run(['ssh-keygen', '-q', '-t', t, '-N', '', '-f', p], check=True)
        with open(os.path.join(d, 'ssh_host_ed25519_key.pub'), encoding='ascii') as f:
            return ' '.join(f.read().split()[:2])

    def _sysbin(self):
        d = os.path.join(self.dir, 'sysbin')
        os.makedirs(d, exist_ok=True)
        for tool in ('env', 'sh', 'sleep', 'python3', 'mktemp', 'wc', 'rm'):
            real = shutil.which(tool, path='/usr/bin:/bin')
            link = os.path.join(d, tool)
            if real and not os.path.lexists(link):
                os.symlink(real, link)

    def _tool(self, i, name, body):
        d = self.node_dir(i)
        calls = os.path.join(d, 'calls.log')
        _write(os.path.join(d, 'bin', name),
               "#!/bin/sh\n# fake %s of node %s (profile %s)\nprintf '%%s\\n' \"%s $*\" >> '%s'\n%s"
               % (name, self.names[i - 1], self.nodes[i - 1]['profile'], name, calls, body), 0o755)

    def _build_node(self, i):
        node = self.nodes[i - 1]
        prof = PROFILES[node['profile']]
        d = self.node_dir(i)
        out = os.path.join(d, 'out')
        root = os.path.join(d, 'root')
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(out)
        os.makedirs(os.path.join(d, 'bin'))

        # files that `cat` serves
        _write(os.path.join(root, 'etc', 'os-release'), open('/etc/os-release').read())
        if prof.get('proc'):
            _write(os.path.join(root, 'proc', 'driver', 'nvidia', 'version'), read(prof['proc']))
        if node.get('toolkit') and node['toolkit'][0] == 'json':
            _write(os.path.join(root, 'usr', 'local', 'cuda', 'version.json'), read(node['toolkit'][1]))
        self._tool(i, 'cat', """rc=0
for f in "$@"; do
	case "$f" in
	/*) if [ -f '%s'"$f" ]; then /bin/cat '%s'"$f"; else echo "cat: $f: No such file or directory" >&2; rc=1; fi ;;
	*) /bin/cat "$f" || rc=1 ;;
	esac
done
exit $rc
""" % (root, root))
        self._tool(i, 'uname', """if [ "$*" = "-r" ]; then echo '%s'; exit 0; fi
exec /bin/uname "$@"
""" % node.get('kernel', '6.1.0-lab'))

        # nvidia-smi
        smi = prof.get('smi', 'ok')
        if smi == 'ok':
            driver, cuda, gpus = profile_gpus(prof)
            gpus = edit_gpus(node, gpus)
            known = set(gpus[0].keys()) - set(node.get('unknown_fields', []))
            with open(os.path.join(d, 'gpus.json'), 'w') as f:
                json.dump({'gpus': gpus, 'known': sorted(known)}, f)
            _write(os.path.join(out, 'table.txt'),
                   read(prof['table']) if prof.get('table') else synth_table(driver, cuda))
            arms = ["'') exec /bin/cat '%s/table.txt' ;;" % out]
            for flag, key in (('-q', 'q'), ('--version', 'version')):
                if prof.get(key):
                    _write(os.path.join(out, key + '.txt'), read(prof[key]))
                    arms.append("'%s') exec /bin/cat '%s/%s.txt' ;;" % (flag, out, key))
            fields = list(QUERY_FIELDS)
            for k in range(len(QUERY_FIELDS)):
                args = ['--query-gpu=' + ','.join(fields), QUERY_FORMAT]
                text, rc = query_answer(gpus, known, args)
                if node.get('smi_flood'):
                    # prints its first row without end, like a tool stuck in a loop
                    # (flood.pids: its PID, to tell that it was stopped)
                    _write(os.path.join(out, 'row.txt'), text.splitlines()[0])
                    arms.append("'%s') echo $$ >> '%s/flood.pids'; exec /usr/bin/yes \"$(/bin/cat '%s/row.txt')\" ;;"
                                % (' '.join(args), d, out))
                    break
                if node.get('gpu_rows'):
                    # that many GPUs: the first row again with other indices
                    first = text.splitlines()[0].split(', ', 1)[1]
                    text = ''.join('%d, %s\n' % (g, first) for g in range(node['gpu_rows']))
                _write(os.path.join(out, 'query%d.txt' % k), text)
                arms.append("'%s') /bin/cat '%s/query%d.txt'; exit %d ;;" % (' '.join(args), out, k, rc))
                bad = re.match(r'Field "([^"]+)"', text)
                if not bad:
                    break
                fields.remove(bad.group(1))
            arms.append("--query-gpu=*|*' --query-gpu='*) exec /usr/bin/python3 '%s' fake-query '%s' \"$@\" ;;"
                        % (os.path.abspath(__file__), d))
            arms.append("*) echo \"Invalid combination of input arguments. Please run 'nvidia-smi -h' "
                        "for help.\"; exit 2 ;;")
            self._tool(i, 'nvidia-smi', 'case "$*" in\n%s\nesac\n' % '\n'.join(arms))
        elif smi == 'error':
            _write(os.path.join(out, 'error.txt'), read(prof['error']))
            self._tool(i, 'nvidia-smi', "/bin/cat '%s/error.txt'\nexit %d\n" % (out, prof['exit']))
        elif smi == 'hang':
            # hangs like nvidia-smi on a sick GPU; the lab kills it by PID when it stops
            # (hang.conns: PID and $SSH_CONNECTION, so that a test can tell which
            # client's session started it)
            self._tool(i, 'nvidia-smi', "%secho \"$$ ${SSH_CONNECTION:--}\" >> '%s/hang.conns'\n"
                       "echo $$ >> '%s/hang.pids'\nexec /bin/sleep 60\n"
                       % ("trap '' TERM\n" if prof.get('ignore_term') else '', d, d))

        # toolkit, fabric manager, OFED
        if node.get('toolkit') and node['toolkit'][0] == 'nvcc':
            _write(os.path.join(out, 'nvcc.txt'), read(node['toolkit'][1]))
            self._tool(i, 'nvcc', "[ \"$*\" = --version ] || exit 1\nexec /bin/cat '%s/nvcc.txt'\n" % out)
        if node.get('fabricmanager'):
            _write(os.path.join(out, 'fm.txt'), read(node['fabricmanager']))
            self._tool(i, 'nv-fabricmanager', "exec /bin/cat '%s/fm.txt'\n" % out)
        if node.get('ofed'):
            _write(os.path.join(out, 'ofed.txt'), read(node['ofed']))
            self._tool(i, 'ofed_info', "[ \"$*\" = -s ] || exit 1\nexec /bin/cat '%s/ofed.txt'\n" % out)

        # kernel log: the last 24 hours are `xids`; `old_xids` are older (same boot), and
        # shown only to a journalctl or dmesg that is not asked for --since=-24h
        xtext = read(node['xids']) if node.get('xids') else ''
        otext = read(node['old_xids']) if node.get('old_xids') else ''
        if otext and not otext.endswith('\n'):
            otext += '\n'
        host = self.names[i - 1]
        _write(os.path.join(out, 'journal.txt'), journal_lines(xtext, host) or '-- No entries --\n')
        _write(os.path.join(out, 'journal-all.txt'),
               journal_lines(otext + xtext, host) or '-- No entries --\n')
        _write(os.path.join(out, 'dmesg.txt'), xtext)
        _write(os.path.join(out, 'dmesg-all.txt'), otext + xtext)
        since = ('case " $* " in *" --since=-24h "*) exec /bin/cat \'%s/%s.txt\' ;; esac\n'
                 "exec /bin/cat '%s/%s-all.txt'\n")
        journal = node.get('journal', 'ok')
        if journal == 'ok':
            self._tool(i, 'journalctl', since % (out, 'journal', out, 'journal'))
        elif journal == 'trickle':
            # a kernel log that never ends: 32 KiB every 10 ms, so that sshd is always
            # busy sending output (flood.pids: its PID, to stop it)
            self._tool(i, 'journalctl', "echo $$ >> '%s/flood.pids'\nexec /usr/bin/python3 -c "
                       "'import sys, time\nline = b\"kernel: lab trickle \" * 1638 + b\"\\n\"\n"
                       "while True:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()\n"
                       "    time.sleep(0.01)\n' trickle\n" % d)
        elif journal == 'denied':
            self._tool(i, 'journalctl', "echo '-- No entries --'\necho 'Hint: You are currently not seeing "
                       "messages from other users and the system.' >&2\nexit 0\n")
        dmesg = node.get('dmesg', 'ok')
        if dmesg == 'ok':
            self._tool(i, 'dmesg', since % (out, 'dmesg', out, 'dmesg'))
        elif dmesg == 'old':
            # util-linux before 2.37: no --since
            self._tool(i, 'dmesg', 'case " $* " in *" --since"*) echo "dmesg: unrecognized option '
                       "'$1'\" >&2; echo \"Try 'dmesg --help' for more information.\" >&2; exit 1 ;; esac\n"
                       "exec /bin/cat '%s/dmesg-all.txt'\n" % out)
        elif dmesg == 'denied':
            self._tool(i, 'dmesg', "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2\n"
                       "exit 1\n")

        # the logs are written by the login user
        for name in ('commands.log', 'calls.log', 'hang.pids', 'hang.conns', 'flood.pids'):
            _write(os.path.join(d, name), '', 0o666)
        # a login that prints without end beside the command (a profile gone wrong), so
        # that sshd always has output on its way (flood.pids: its PID, to stop it)
        login = ''
        if node.get('login') == 'trickle':
            login = ("/usr/bin/python3 -c 'import sys, time\nline = b\"login: lab trickle \" * 1638 + "
                     "b\"\\n\"\nwhile True:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()\n"
                     "    time.sleep(0.01)\n' trickle </dev/null 2>/dev/null &\necho $! >> '%s/flood.pids'\n" % d)
        # the ForceCommand: log the command, run it with only this node's tools on PATH
        _write(os.path.join(d, 'enter'), """#!/bin/sh
printf '%%s\\n\\036\\n' "$SSH_ORIGINAL_COMMAND" >> '%s/commands.log'
%sPATH='%s/bin:%s/sysbin'
export PATH
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
""" % (d, login, d, self.dir), 0o755)

    def _sshd_config(self, k, members):
        d = os.path.join(self.dir, 'sshd%d' % k)
        lines = ['Port %d' % PORT]
        lines += ['ListenAddress %s' % self.addr(i) for i in members]
        lines += [
            'HostKey %s/ssh_host_ed25519_key' % d,
            'HostKey %s/ssh_host_ecdsa_key' % d,
            'PidFile %s/sshd.pid' % d,
            'AuthorizedKeysFile %s/authorized_keys' % self.dir,
            'StrictModes no', 'UsePAM no', 'PasswordAuthentication no',
            'KbdInteractiveAuthentication no', 'PubkeyAuthentication yes',
            'PermitRootLogin prohibit-password', 'AllowUsers %s' % self.user,
            'UseDNS no', 'PrintMotd no', 'PrintLastLog no', 'X11Forwarding no',
            'AllowTcpForwarding no', 'AllowAgentForwarding no', 'PermitTTY no',
            'MaxStartups 1000:30:2000', 'LoginGraceTime 30', 'LogLevel VERBOSE',
        ] + self.sshd_options
        for i in members:
            # exec: the command the client sent runs as the session's leader, as
            # under an sshd without a ForceCommand (the login shell execs it)
            lines += ['Match LocalAddress %s' % self.addr(i),
                      '\tForceCommand exec %s/enter' % self.node_dir(i)]
        _write(os.path.join(d, 'sshd_config'), '\n'.join(lines) + '\n', 0o600)

    def write_known_hosts(self):
        """ed25519 host keys of every node; hashed for even nodes; unknown/changed as marked."""
        other = self._keygen(os.path.join(self.dir, 'other_host_ed25519'))
        other = ' '.join(other.split()[:2])
        lines = []
        for i in range(1, self.count + 1):
            mode = self.nodes[i - 1].get('hostkey', 'known')
            if mode == 'unknown':
                continue
            key = other if mode == 'changed' else self.hostkeys[self.instance(i)]
            name = '[%s]:%d' % (self.addr(i), PORT)
            if i % 2 == 0:
                salt = os.urandom(20)
                digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
                name = '|1|%s|%s' % (base64.b64encode(salt).decode(), base64.b64encode(digest).decode())
            lines.append('%s %s\n' % (name, key))
        _write(self.known_hosts, ''.join(lines), 0o600)

    def known_hosts_line(self, i):
        return '[%s]:%d %s\n' % (self.addr(i), PORT, self.hostkeys[self.instance(i)])

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        if os.geteuid() == 0:
            # sshd's privilege separation directory (labs start side by side: exist_ok)
            os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
        if os.geteuid() == 0:
            ensure_lab_user()
        os.chmod(self.dir, 0o755)  # the login user reads the lab's scripts
        if pwd.getpwnam(self.user).pw_shell.endswith(('nologin', 'false')):
            raise LabError("user '%s' has no login shell" % self.user)
        self._sysbin()
        keys = [self._keygen(self.key), self._keygen(self.pass_key, self.passphrase)]
        self._keygen(self.wrong_key)
        _write(os.path.join(self.dir, 'authorized_keys'), '\n'.join(keys) + '\n', 0o644)
        for i in range(1, self.count + 1):
            self._build_node(i)
        ninst = (self.count + PER_SSHD - 1) // PER_SSHD
        self.hostkeys = [self._host_keys(k) for k in range(ninst)]
        self.write_known_hosts()
        try:
            for k in range(ninst):
                self._start_sshd(k)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self._write_state()

    def _members(self, k):
        return list(range(k * PER_SSHD + 1, min((k + 1) * PER_SSHD, self.count) + 1))

    def _start_sshd(self, k):
        d = os.path.join(self.dir, 'sshd%d' % k)
        self._sshd_config(k, self._members(k))
        p = subprocess.Popen([SSHD, '-D', '-f', os.path.join(d, 'sshd_config'), '-E', os.path.join(d, 'log')],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append((p, d))

    def _wait_ready(self, timeout=20):
        until = time.monotonic() + timeout
        for i in range(1, self.count + 1):
            while True:
                for p, d in self.procs:
                    if p.poll() is not None:
                        raise LabError('sshd in %s exited (%d); see %s/log' % (d, p.returncode, d))
                try:
                    with socket.create_connection((self.addr(i), PORT), timeout=1) as s:
                        if s.recv(64).startswith(b'SSH-2.0-'):
                            break
                except OSError:
                    pass
                if time.monotonic() > until:
                    raise LabError('node %d (%s) does not answer on port %d' % (i, self.addr(i), PORT))
                time.sleep(0.05)

    def rekey(self, k):
        """New host keys for sshd instance k (restarted): its nodes' keys have changed."""
        for p, d in list(self.procs):
            if d == os.path.join(self.dir, 'sshd%d' % k):
                self._stop_proc(p)
                self.procs.remove((p, d))
        self.hostkeys[k] = self._host_keys(k, fresh=True)
        self._start_sshd(k)
        self._wait_ready()
        self._write_state()

    def _write_state(self):
        state = {'pids': [p.pid for p, _ in self.procs], 'count': self.count, 'prefix': self.prefix,
                 'port': PORT, 'key': self.key, 'known_hosts': self.known_hosts,
                 'names': self.names, 'user': self.user,
                 'nodes': [{'name': self.names[i - 1], 'ssh': self.spec(i),
                            'bin': self.bin_dir(i)} for i in range(1, self.count + 1)]}
        _write(os.path.join(self.dir, 'lab.json'), json.dumps(state, indent=1) + '\n')

    @staticmethod
    def _stop_proc(p):
        stop_popen(p)

    def stop(self):
        for p, _ in self.procs:
            self._stop_proc(p)
        self.procs = []
        kill_hung(self.dir)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


def ensure_lab_user():
    """Make LAB_USER when it does not exist (root only). Labs start side by side
    (e2e modules run in parallel): the look and the useradd are done under a lock,
    so that two labs never both make the user (the second useradd would fail)."""
    with open('/run/gpufleet-lab-user.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            pwd.getpwnam(LAB_USER)
            return
        except KeyError:
            pass
        subprocess.run(['useradd', '--system', '--no-create-home', '--home-dir', '/nonexistent',
                        '--shell', '/bin/sh', '--password', '*', LAB_USER], check=True)


def kill_hung(workdir):
    """Kill the hanging fake nvidia-smi processes that the lab's nodes started (by PID)."""
    for pidfile in _glob_hang(workdir):
        with open(pidfile) as f:
            for line in f:
                try:
                    pid = int(line)
                    with open('/proc/%d/cmdline' % pid, 'rb') as c:
                        cmd = c.read()
                        if b'sleep' not in cmd and b'yes' not in cmd and b'trickle' not in cmd:
                            continue
                    os.kill(pid, signal.SIGKILL)
                except (ValueError, OSError):
                    pass
        open(pidfile, 'w').close()


def _glob_hang(workdir):
    hosts = os.path.join(workdir, 'hosts')
    if not os.path.isdir(hosts):
        return []
    return [os.path.join(hosts, h, f) for h in os.listdir(hosts)
            for f in ('hang.pids', 'flood.pids')
            if os.path.exists(os.path.join(hosts, h, f))
            and os.path.getsize(os.path.join(hosts, h, f)) > 0]


def fake_query(node_dir, args):
    """The slow path of a fake nvidia-smi --query-gpu (a field list made on the fly)."""
    with open(os.path.join(node_dir, 'gpus.json')) as f:
        data = json.load(f)
    text, rc = query_answer(data['gpus'], set(data['known']), args)
    sys.stdout.write(text)
    return rc


def main(argv):
    if argv[:1] == ['fake-query']:
        return fake_query(argv[1], argv[2:])
    ap = argparse.ArgumentParser(description='sshd lab of fake GPU hosts')
    ap.add_argument('action', choices=['start', 'stop'])
    ap.add_argument('--dir', required=True)
    ap.add_argument('--prefix', default='127.33.10')
    ap.add_argument('--count', type=int, default=50)
    ap.add_argument('--profile', default='h100')
    a = ap.parse_args(argv)
    if a.action == 'stop':
        path = os.path.join(a.dir, 'lab.json')
        if os.path.exists(path):
            with open(path) as f:
                state = json.load(f)
            for pid in state['pids']:
                try:
                    with open('/proc/%d/cmdline' % pid, 'rb') as c:
                        if b'sshd' in c.read():
                            os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
        kill_hung(a.dir)
        return 0
    nodes = [dict(profile=a.profile, toolkit=('nvcc', 'nvcc--version_12.8.93.txt'),
                  ofed='ofed_info-s_23.10-3.2.2.0.txt') for _ in range(a.count)]
    lab = SshLab(a.dir, nodes=nodes, prefix=a.prefix)
    lab.start()
    # sshd keeps running after this process exits: `stop` ends it by the PIDs in lab.json
    for p, _ in lab.procs:
        p.returncode = 0  # do not let Popen's destructor wait on it
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
