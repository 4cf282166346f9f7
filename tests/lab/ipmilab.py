#!/usr/bin/python3
"""A fleet of OpenIPMI ipmi_sim BMCs on loopback addresses, for tests and benchmarks.

Each node i gets its own address (prefix.i for i <= 254, then the next
third octet), UDP port 623, a state directory D/node<i> that holds its
lan.conf, emu.cmds, power ("on"/"off"), chassis.log and ipmi_sim's own
persistent data, and a TCP console (ipmi_sim_cmd(5) commands) on
<addr>:<console_port>.

As a module:

    with IpmiLab(workdir, count=20, overrides={3: {'password': 'wrong'}}) as lab:
        lab.addr(1), lab.password, lab.power(1), lab.chassis_log(1)
        lab.console(1, 'sel_add ...')   # ipmi_sim_cmd(5) at run time
        lab.pause(2); lab.resume(2)     # a BMC that stops answering
        lab.fail_chassis(4)             # chassis commands get a completion code

Users: USER (admin privilege), "operator" and "viewer" (user privilege), all
with the lab password. Per-node overrides: password, power ('on'/'off' at
start), port; and what the BMC reports of itself: fw ('1.74': Get Device ID
major.minor), aux_fw ('0a0b0c0d': auxiliary revision), manufacturer_id,
product_id, bios (system firmware version), fru ({'chassis': {...},
'board': {...}, 'product': {...}}, see fru_image(); default: a full image
that names the node), fru_raw (a whole FRU image in hex). The
emulator commands come from emu.template ($extra: the emu_extra argument),
the LAN set-up from lan.conf.template. ipmi_sim (OpenIPMI 2.0.33) refuses
cipher suite 17 and every SHA-256 suite, needs FreeIPMI's opensesspriv
workaround for RMCP+, and answers "pulse diagnostic interrupt" (NMI) with
completion code 0xcc without running the chassis program.

Boot options: ipmi_sim itself keeps only the boot device and always answers
"not valid, one-time, legacy". When the lab module (labbmc.c, compiled at
start when libopenipmi-dev is there; lab.module tells) is loaded, the BMC
keeps the whole boot flags in D/node<i>/bootflags (lab.boot_flags(i)) and a
one-time override is cleared when the host boots (power on from off, reset,
the second half of a cycle), as on a real BMC. The module also serves the
system firmware (BIOS) version and the auxiliary firmware revision.

As a command (writes D/pids, D/lab.json and D/password, returns once every
sim answers):

    ipmilab.py start --dir D [--prefix 127.31.0] [--count N] [--first K]
                     [--user U] [--password-file F] [--power on|off]
                     [--node-power I=on] [--node-password-file I=F]
                     [--sensors]   (sensors and event logs: ipmisensors.py)
    ipmilab.py stop --dir D
    ipmilab.py status --dir D

Only the Python standard library; ipmi_sim must run as root for port 623.
"""

import argparse
import errno
import json
import os
import secrets
import select
import shlex
import shutil
import signal
import socket
import string
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labutil import LabError, node_address, pid_alive, pid_cmdline, wait_gone, write_atomic  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHASSIS_CONTROL = os.path.join(HERE, 'chassis-control')
LAN_TEMPLATE = os.path.join(HERE, 'lan.conf.template')
EMU_TEMPLATE = os.path.join(HERE, 'emu.template')

IPMI_PORT = 623
CONSOLE_PORT = 9000


def _fru_field(text):
    data = text.encode('ascii')
    if len(data) > 63:
        raise LabError("fru field '%s' is too long" % text)
    return bytes([0xc0 | len(data)]) + data


def fru_bytes(manufacturer, product, serial, part='LAB-1', version='1.0'):
    """A FRU image with a common header and a product info area."""
    area = bytes([0x01, 0x00, 0x00])  # version, length (set below), English
    for field in (manufacturer, product, part, version, serial, '', ''):
        area += _fru_field(field)  # ..., asset tag, FRU file id
    area += b'\xc1'  # end of fields
    while (len(area) + 1) % 8:
        area += b'\x00'
    area = bytearray(area)
    area[1] = (len(area) + 1) // 8
    area.append((-sum(area)) & 0xff)
    header = bytearray([0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
    header.append((-sum(header)) & 0xff)
    return bytes(header) + bytes(area)


def _fru_area(head, fields):
    """One info area: @head bytes after version and length, the fields,
    the end marker, padding to 8 bytes and the checksum."""
    area = bytes([0x01, 0x00]) + bytes(head)
    for field in fields:
        area += _fru_field(field or '')
    area += b'\xc1'
    while (len(area) + 1) % 8:
        area += b'\x00'
    area = bytearray(area)
    area[1] = (len(area) + 1) // 8
    area.append((-sum(area)) & 0xff)
    return bytes(area)


# Minutes from 1996-01-01 to 2024-03-01 00:00 UTC, the lab boards' make date.
FRU_MFG_MINUTES = 14757120


def fru_image(chassis=None, board=None, product=None):
    """A FRU image (IPMI Platform Management FRU Information Storage
    Definition 1.0) with the areas given, each a dict of strings:
    chassis: type (int, SMBIOS chassis type), part, serial;
    board: manufacturer, product, serial, part, mfg_minutes (int);
    product: manufacturer, name, part, version, serial, asset_tag.
    An area that is None is left out."""
    areas = []
    if chassis is not None:
        areas.append(_fru_area([chassis.get('type', 0x17)],
                               [chassis.get('part'), chassis.get('serial')]))
    else:
        areas.append(None)
    if board is not None:
        m = int(board.get('mfg_minutes', FRU_MFG_MINUTES))
        areas.append(_fru_area([0x00, m & 0xff, (m >> 8) & 0xff, (m >> 16) & 0xff],
                               [board.get('manufacturer'), board.get('product'),
                                board.get('serial'), board.get('part'), '']))
    else:
        areas.append(None)
    if product is not None:
        areas.append(_fru_area([0x00],
                               [product.get('manufacturer'), product.get('name'),
                                product.get('part'), product.get('version'),
                                product.get('serial'), product.get('asset_tag'), '']))
    else:
        areas.append(None)
    offsets = []
    at = 8
    body = b''
    for a in areas:
        if a is None:
            offsets.append(0)
            continue
        offsets.append(at // 8)
        body += a
        at += len(a)
    header = bytearray([0x01, 0x00, offsets[0], offsets[1], offsets[2], 0x00, 0x00])
    header.append((-sum(header)) & 0xff)
    return bytes(header) + body


def default_fru(index):
    """What a lab node's FRU says when the test does not choose."""
    return {
        'chassis': {'type': 0x17, 'part': 'CH-4U-8GPU', 'serial': 'CHS%06d' % index},
        'board': {'manufacturer': 'gpufleet lab', 'product': 'LAB-BOARD-X1',
                  'serial': 'BRD%06d' % index, 'part': 'PN-BRD-001'},
        'product': {'manufacturer': 'gpufleet lab', 'name': 'ipmi_sim node',
                    'part': 'LAB-1', 'version': '1.0', 'serial': 'LAB%06d' % index,
                    'asset_tag': 'ASSET-%04d' % index},
    }


def parse_fw(text):
    """'1.74' -> (1, 0x74): Get Device ID keeps the minor revision in BCD."""
    major, sep, minor = str(text).partition('.')
    if (not sep or not major.isdigit() or not minor.isdigit() or len(minor) != 2
            or int(major) > 127):
        raise LabError("firmware revision '%s' is not MAJOR.MM (MAJOR <= 127)" % text)
    return int(major), int(minor, 16)


def build_module(outdir, cc='cc'):
    """Compile labbmc.c into @outdir; returns (path, None) or (None, why)."""
    src = os.path.join(HERE, 'labbmc.c')
    out = os.path.join(outdir, 'labbmc.so')
    if not os.path.exists('/usr/include/OpenIPMI/mcserv.h'):
        return None, 'libopenipmi-dev is not installed'
    if shutil.which(cc) is None:
        return None, "no C compiler '%s'" % cc
    r = subprocess.run([cc, '-O1', '-shared', '-fPIC', '-o', out, src],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, 'labbmc.c did not build: %s' % r.stderr.strip()[-500:]
    return out, None


# IPMI 1.5 session-less Get Channel Authentication Capabilities (channel
# "this one", IPMI 2.0 data, admin). Its answer comes from the emulated BMC
# itself, so it proves that the MC is enabled, not just that the socket is
# bound.
def _auth_caps_request():
    msg = bytes([0x20, 0x06 << 2])
    msg += bytes([(-sum(msg)) & 0xff])
    body = bytes([0x81, 0x00, 0x38, 0x8e, 0x04])
    msg += body + bytes([(-sum(body)) & 0xff])
    return (bytes([0x06, 0x00, 0xff, 0x07])           # RMCP, IPMI class
            + bytes([0x00]) + bytes(4) + bytes(4)      # auth none, seq, session
            + bytes([len(msg)]) + msg)


AUTH_CAPS_REQUEST = _auth_caps_request()


def _is_auth_caps_answer(data):
    # RMCP(4) + auth type(1) + seq(4) + session(4) + len(1) + rqAddr, netfn,
    # csum, rsAddr, seq, cmd, completion code
    return (len(data) >= 21 and data[0] == 0x06 and data[3] == 0x07
            and data[15] >> 2 == 0x07 and data[19] == 0x38 and data[20] == 0x00)


class Node:
    """One simulated BMC."""

    def __init__(self, lab, index):
        self.index = index
        self.addr = node_address(lab.prefix, index)
        opts = lab.overrides.get(index, {})
        unknown = set(opts) - {'password', 'power', 'port', 'fw', 'aux_fw', 'manufacturer_id',
                               'product_id', 'bios', 'fru', 'fru_raw', 'sol'}
        if unknown:
            raise LabError('node %d: unknown override %s' % (index, ', '.join(sorted(unknown))))
        self.password = opts.get('password', lab.password)
        self.initial_power = opts.get('power', lab.initial_power)
        self.port = int(opts.get('port', lab.port))
        self.fw = parse_fw(opts.get('fw', '1.00'))
        aux = str(opts.get('aux_fw', ''))
        if aux and (len(aux) != 8 or any(c not in string.hexdigits for c in aux)):
            raise LabError("node %d: aux_fw '%s' is not 8 hex digits" % (index, aux))
        self.aux_fw = aux.lower()
        self.manufacturer_id = int(opts.get('manufacturer_id', 0x001647))
        self.product_id = int(opts.get('product_id', 0x0001))
        self.bios = opts.get('bios')
        self.fru = opts.get('fru') or default_fru(index)
        # A whole FRU image (hex), e.g. a broken one; replaces fru.
        self.fru_raw = bytes.fromhex(opts['fru_raw']) if opts.get('fru_raw') else None
        # Serial-over-LAN: "ADDRESS:PORT" the sim connects out to (tests/lab/serialport.py).
        self.sol = opts.get('sol')
        self.dir = os.path.join(lab.workdir, 'node%d' % index)
        self.pid = None
        self.proc = None


class IpmiLab:
    """A fleet of ipmi_sim processes. See the module documentation."""

    def __init__(self, workdir, prefix='127.31.0', count=20, user='admin', password=None,
                 first=1, port=IPMI_PORT, console_port=CONSOLE_PORT, power='off',
                 overrides=None, start_timeout=None, sim='ipmi_sim', emu_extra=None,
                 module=True):
        self.workdir = os.path.abspath(workdir)
        self.prefix = prefix
        self.count = int(count)
        self.first = int(first)
        self.user = user
        self.password = password if password is not None else 'secret-' + secrets.token_hex(6)
        self.port = int(port)
        self.console_port = int(console_port)
        if power not in ('on', 'off'):
            raise LabError("initial power '%s' is not on or off" % power)
        self.initial_power = power
        self.overrides = {int(k): dict(v) for k, v in (overrides or {}).items()}
        self.start_timeout = start_timeout
        self.sim = sim
        # More emulator commands (sensors, SDRs, SEL entries) for each node's
        # emu.cmds, before mc_enable: a string, or a function of the Node.
        self.emu_extra = emu_extra
        # The lab module (labbmc.c): real boot options, BIOS version, aux
        # firmware revision. Built at start; None (and module_error) when not.
        self.want_module = module
        self.module = None
        self.module_error = None if module else 'not asked for'
        for what, value in (('user', self.user), ('password', self.password)):
            self._check_conf_string(what, value)
        if self.count < 1:
            raise LabError('count %d is below 1' % self.count)
        self.nodes = {i: Node(self, i) for i in range(self.first, self.first + self.count)}
        for n in self.nodes.values():
            self._check_conf_string('password of node %d' % n.index, n.password)
            if n.initial_power not in ('on', 'off'):
                raise LabError("node %d: initial power '%s' is not on or off"
                               % (n.index, n.initial_power))
        self.started = False

    # ---- description -------------------------------------------------

    @staticmethod
    def _check_conf_string(what, value):
        # lan.conf strings are double quoted with no escapes; the IPMI 2.0
        # limits are 16 bytes for user names and 20 for passwords.
        limit = 16 if what == 'user' else 20
        if not value or len(value.encode()) > limit or any(c in value for c in '"\n\\\0'):
            raise LabError('%s must be 1 to %d bytes without quotes or backslashes'
                           % (what, limit))

    def node(self, i):
        try:
            return self.nodes[i]
        except KeyError:
            raise LabError('no node %d in this lab (%d..%d)'
                           % (i, self.first, self.first + self.count - 1)) from None

    def addr(self, i):
        return self.node(i).addr

    def indices(self):
        return list(self.nodes)

    def hostrange(self):
        """The nodes in FreeIPMI hostrange syntax, e.g. 127.31.0.[1-20]."""
        groups = {}
        for n in self.nodes.values():
            net, host = n.addr.rsplit('.', 1)
            groups.setdefault(net, []).append(int(host))
        parts = []
        for net, hosts in groups.items():
            lo, hi = min(hosts), max(hosts)
            parts.append('%s.%d' % (net, lo) if lo == hi else '%s.[%d-%d]' % (net, lo, hi))
        return ','.join(parts)

    def node_dir(self, i):
        return self.node(i).dir

    def describe(self):
        """What other processes need to use the lab (no password)."""
        return {
            'prefix': self.prefix, 'first': self.first, 'count': self.count,
            'user': self.user, 'port': self.port, 'console_port': self.console_port,
            'power': self.initial_power,
            'overrides': {str(k): {kk: vv for kk, vv in v.items() if kk != 'password'}
                          for k, v in self.overrides.items()},
            'password_overridden': sorted(k for k, v in self.overrides.items()
                                          if 'password' in v),
            'nodes': [{'index': n.index, 'addr': n.addr, 'port': n.port, 'dir': n.dir,
                       'pid': n.pid} for n in self.nodes.values()],
        }

    @classmethod
    def attach(cls, workdir):
        """An IpmiLab for sims that `ipmilab.py start` left running in @workdir.
        Per-node password overrides are not recorded: node.password is the
        lab password for every node."""
        workdir = os.path.abspath(workdir)
        with open(os.path.join(workdir, 'lab.json')) as f:
            desc = json.load(f)
        with open(os.path.join(workdir, 'password')) as f:
            password = f.read().rstrip('\n')
        lab = cls(workdir, prefix=desc['prefix'], count=desc['count'], first=desc['first'],
                  user=desc['user'], password=password, port=desc['port'],
                  console_port=desc['console_port'], power=desc['power'],
                  overrides=desc['overrides'])
        for rec in desc['nodes']:
            lab.nodes[rec['index']].pid = rec['pid']
        lab.started = True
        return lab

    # ---- start and stop ----------------------------------------------

    def _render(self, path, values):
        with open(path) as f:
            return string.Template(f.read()).substitute(values)

    def _prepare(self, n):
        if os.path.isdir(n.dir):
            shutil.rmtree(n.dir)
        os.makedirs(n.dir)
        guid = '6770756c6162%04x%016x' % (self.port & 0xffff, n.index)
        if any(c in n.dir for c in '"\\\n') or '$' in n.dir:
            raise LabError("state directory '%s' cannot go into lan.conf" % n.dir)
        ctl = '/bin/bash %s %s' % (shlex.quote(CHASSIS_CONTROL), shlex.quote(n.dir))
        if '"' in ctl:
            raise LabError("chassis control path '%s' cannot go into lan.conf" % ctl)
        if self.module:
            if '"' in self.module:
                raise LabError("module path '%s' cannot go into lan.conf" % self.module)
            modules = 'loadlib "%s" "%s"' % (self.module, n.dir)
        else:
            modules = '# no lab module: %s' % self.module_error
        lan = self._render(LAN_TEMPLATE, {
            'index': n.index, 'addr': n.addr, 'port': n.port, 'guid': guid,
            'chassis_control': ctl, 'user': self.user, 'password': n.password,
            'console_port': self.console_port, 'modules': modules,
            'sol': ('sol "tcp:%s" 115200' % n.sol) if n.sol else '# no serial port',
        })
        fru = n.fru_raw if n.fru_raw is not None else fru_image(**n.fru)
        if self.module and n.aux_fw:
            aux = 'lab_set_aux_fw 0x20 ' + ' '.join(
                '0x' + n.aux_fw[k:k + 2] for k in range(0, 8, 2))
        else:
            aux = '# auxiliary firmware revision: 00000000'
        if n.bios is not None:
            write_atomic(os.path.join(n.dir, 'bios-version'), n.bios + '\n')
        emu = self._render(EMU_TEMPLATE, {
            'index': n.index, 'guid': guid, 'fw_major': '0x%02x' % n.fw[0],
            'fw_minor': '0x%02x' % n.fw[1], 'aux_fw': aux,
            'manufacturer_id': '0x%06x' % n.manufacturer_id,
            'product_id': '0x%04x' % n.product_id,
            'fru_size': len(fru), 'fru_data': ' '.join('0x%02x' % b for b in fru),
            'extra': (self.emu_extra(n) if callable(self.emu_extra)
                      else self.emu_extra or ''),
        })
        write_atomic(os.path.join(n.dir, 'lan.conf'), lan, 0o600)
        write_atomic(os.path.join(n.dir, 'emu.cmds'), emu)
        write_atomic(os.path.join(n.dir, 'power'), n.initial_power + '\n')
        open(os.path.join(n.dir, 'chassis.log'), 'a').close()

    def _live_recorded_pids(self):
        path = os.path.join(self.workdir, 'pids')
        live = []
        try:
            with open(path) as f:
                for line in f:
                    pid = int(line.split()[0])
                    if pid_alive(pid) and self._is_our_sim(pid, None):
                        live.append(pid)
        except FileNotFoundError:
            pass
        return live

    def _is_our_sim(self, pid, n):
        """@pid runs ipmi_sim with a lan.conf of this lab (of node @n when given)."""
        argv = pid_cmdline(pid)
        if not argv or not argv[0].endswith(b'ipmi_sim'):
            return False
        want = os.path.join(n.dir if n else self.workdir, '').encode()
        return any(a.startswith(want) for a in argv)

    def start(self):
        """Start every sim and return once each one answers over IPMI."""
        os.makedirs(self.workdir, exist_ok=True)
        if self._live_recorded_pids():
            raise LabError("a lab is already running in '%s'" % self.workdir)
        if shutil.which(self.sim) is None:
            raise LabError("'%s' not found (Debian package openipmi)" % self.sim)
        write_atomic(os.path.join(self.workdir, 'password'), self.password + '\n', 0o600)
        if self.want_module:
            self.module, self.module_error = build_module(self.workdir)
        for n in self.nodes.values():
            self._prepare(n)
        self.started = True
        try:
            for n in self.nodes.values():
                self._spawn(n)
            self._write_pids()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, n):
        log = open(os.path.join(n.dir, 'sim.log'), 'ab')
        try:
            n.proc = subprocess.Popen(
                [self.sim, '-n', '-c', os.path.join(n.dir, 'lan.conf'),
                 '-f', os.path.join(n.dir, 'emu.cmds'), '-s', n.dir],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=n.dir, start_new_session=True)
        finally:
            log.close()
        n.pid = n.proc.pid

    def kill_node(self, i):
        """SIGKILL node @i's sim (a BMC that dies) and wait until it is gone."""
        n = self.node(i)
        self._signal(i, signal.SIGKILL)
        self._reap([n], time.monotonic() + 5.0)
        if n.proc is not None:
            n.proc.poll()

    def restart_node(self, i):
        """Start node @i's sim again with its configuration (after kill_node)."""
        n = self.node(i)
        if n.proc is not None and n.proc.poll() is None:
            raise LabError('node %d is still running' % i)
        self._spawn(n)
        self._write_pids()

    def _write_pids(self):
        write_atomic(os.path.join(self.workdir, 'pids'),
               ''.join('%d %d %s %d %s\n' % (n.pid, n.index, n.addr, n.port, n.dir)
                       for n in self.nodes.values() if n.pid))
        write_atomic(os.path.join(self.workdir, 'lab.json'), json.dumps(self.describe(), indent=1))

    def _sim_failed(self, n):
        if n.proc is not None:
            dead = n.proc.poll() is not None
        else:
            dead = not pid_alive(n.pid)
        if not dead:
            return None
        try:
            with open(os.path.join(n.dir, 'sim.log'), errors='replace') as f:
                out = f.read().strip()
        except OSError:
            out = ''
        return 'ipmi_sim for node %d (%s) exited: %s' % (n.index, n.addr, out or 'no output')

    def _wait_ready(self):
        timeout = self.start_timeout or 20 + 0.1 * self.count
        deadline = time.monotonic() + timeout
        pending = {(n.addr, n.port): n for n in self.nodes.values()}
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            resend = 0.0
            while pending:
                now = time.monotonic()
                if now >= deadline:
                    left = sorted(n.index for n in pending.values())
                    raise LabError('%d sims did not answer within %.0f s (nodes %s)'
                                   % (len(left), timeout, ' '.join(map(str, left[:20]))))
                if now >= resend:
                    for key, n in list(pending.items()):
                        why = self._sim_failed(n)
                        if why:
                            raise LabError(why)
                        try:
                            sock.sendto(AUTH_CAPS_REQUEST, key)
                        except OSError as e:
                            if e.errno not in (errno.EAGAIN, errno.ECONNREFUSED, errno.ENOBUFS):
                                raise
                    resend = now + 0.25
                ready, _, _ = select.select([sock], [], [], max(0.0, min(resend, deadline) - now))
                while ready:
                    try:
                        data, src = sock.recvfrom(512)
                    except BlockingIOError:
                        break
                    except ConnectionRefusedError:
                        continue
                    if _is_auth_caps_answer(data):
                        pending.pop(src, None)
        finally:
            sock.close()

    def stop(self, grace=5.0):
        """SIGTERM every sim of this lab (by recorded PID), SIGKILL what is
        left after @grace seconds. Never signals a PID that is not one of
        this lab's ipmi_sim processes."""
        victims = []
        for n in self.nodes.values():
            if n.proc is not None:
                # Our own child: its PID cannot be reused before we reap it,
                # and right after exec its cmdline may still read empty.
                if n.proc.poll() is None:
                    victims.append(n)
                    n.proc.send_signal(signal.SIGCONT)
                    n.proc.send_signal(signal.SIGTERM)
                continue
            if n.pid and pid_alive(n.pid) and self._is_our_sim(n.pid, n):
                victims.append(n)
                try:
                    os.kill(n.pid, signal.SIGCONT)
                    os.kill(n.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self._reap(victims, time.monotonic() + grace)
        left = [n for n in victims if self._running(n)]
        for n in left:
            if n.proc is not None:
                n.proc.kill()
                continue
            try:
                os.kill(n.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap(left, time.monotonic() + 5.0)
        still = [n.index for n in left if self._running(n)]
        for n in self.nodes.values():
            if n.proc is not None:
                n.proc.poll()  # reap the ones that had exited by themselves
            n.proc = None
        self.started = False
        try:
            os.unlink(os.path.join(self.workdir, 'pids'))
        except FileNotFoundError:
            pass
        if still:
            raise LabError('sims of nodes %s did not exit' % ' '.join(map(str, still)))

    def _running(self, n):
        if n.proc is not None:
            return n.proc.poll() is None
        return pid_alive(n.pid)

    def _reap(self, nodes, deadline):
        wait_gone(nodes, self._running, deadline)

    def __enter__(self):
        if not self.started:
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---- what the BMCs saw -------------------------------------------

    def power(self, i):
        """'on' or 'off': the state file of node @i."""
        with open(os.path.join(self.node(i).dir, 'power')) as f:
            return f.read().strip()

    def set_power(self, i, state):
        """Set the power state behind the BMC's back (test set-up)."""
        if state not in ('on', 'off'):
            raise LabError("power state '%s' is not on or off" % state)
        write_atomic(os.path.join(self.node(i).dir, 'power'), state + '\n')

    def chassis_log(self, i, raw=False):
        """What node @i's BMC was asked, oldest first: a list of
        (epoch_seconds, event, args) with event one of status, on, off,
        reset, soft, boot, get-boot, identify, failed. A power cycle shows
        as off then on. With @raw, the lines as written."""
        with open(os.path.join(self.node(i).dir, 'chassis.log')) as f:
            lines = f.read().splitlines()
        if raw:
            return lines
        out = []
        for line in lines:
            parts = line.split()
            if len(parts) >= 2:
                out.append((float(parts[0]), parts[1], parts[2:]))
        return out

    def chassis_events(self, i, skip=('status', 'get-boot')):
        """Only the events of chassis_log() that change something."""
        return [e for _, e, _ in self.chassis_log(i) if e not in skip]

    def clear_chassis_log(self, i):
        write_atomic(os.path.join(self.node(i).dir, 'chassis.log'), '')

    def fail_chassis(self, i, fail=True):
        """Make node @i's chassis program fail (the BMC answers a completion
        code) or work again."""
        path = os.path.join(self.node(i).dir, 'fail-chassis')
        if fail:
            open(path, 'w').close()
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    BOOT_DEVICES = {0x0: 'none', 0x1: 'pxe', 0x2: 'disk', 0x3: 'disk-safe', 0x4: 'diag',
                    0x5: 'cd', 0x6: 'bios', 0x7: 'floppy', 0x8: 'remote-cd',
                    0x9: 'remote-media', 0xb: 'remote-disk', 0xf: 'removable'}

    def boot_flags(self, i):
        """What node @i's BMC holds in its boot flags (lab module only):
        {'valid', 'persistent', 'uefi': bool, 'device': name, 'raw': bytes}."""
        try:
            with open(os.path.join(self.node(i).dir, 'bootflags')) as f:
                raw = bytes(int(x, 16) for x in f.read().split())
        except FileNotFoundError:
            raw = bytes(5)
        if len(raw) != 5:
            raise LabError('node %d: bootflags holds %d bytes' % (i, len(raw)))
        return {'valid': bool(raw[0] & 0x80), 'persistent': bool(raw[0] & 0x40),
                'uefi': bool(raw[0] & 0x20),
                'device': self.BOOT_DEVICES.get((raw[1] >> 2) & 0xf, 'other'), 'raw': raw}

    def set_boot_flags(self, i, raw):
        """Put five bytes of boot flags into node @i's BMC behind its back."""
        if len(raw) != 5:
            raise LabError('boot flags are 5 bytes')
        write_atomic(os.path.join(self.node(i).dir, 'bootflags'),
               ' '.join('%02x' % b for b in raw) + '\n')

    def _signal(self, i, sig):
        n = self.node(i)
        if n.proc is not None:
            if n.proc.poll() is None:
                n.proc.send_signal(sig)
        elif n.pid and self._is_our_sim(n.pid, n):
            os.kill(n.pid, sig)
        else:
            raise LabError('node %d has no running sim' % i)

    def pause(self, i):
        """Freeze node @i's sim (SIGSTOP): its BMC stops answering."""
        self._signal(i, signal.SIGSTOP)

    def resume(self, i):
        self._signal(i, signal.SIGCONT)

    def console(self, i, command, timeout=5.0):
        """Run one ipmi_sim_cmd(5) command on node @i's console and return
        its output (without the echo and prompt)."""
        n = self.node(i)
        deadline = time.monotonic() + timeout
        with socket.create_connection((n.addr, self.console_port), timeout=timeout) as s:
            _read_prompt(s, deadline)
            s.sendall(command.encode() + b'\n')
            text = _read_prompt(s, deadline)
        lines = text.replace('\r', '').split('\n')
        if lines and lines[0].strip() == command.strip():
            lines = lines[1:]
        return '\n'.join(lines).strip()


def _strip_telnet(data):
    out = bytearray()
    i = 0
    while i < len(data):
        if data[i] == 0xff and i + 1 < len(data):
            i += 3 if data[i + 1] in (0xfb, 0xfc, 0xfd, 0xfe) else 2
            continue
        out.append(data[i])
        i += 1
    return bytes(out)


def _read_prompt(s, deadline):
    buf = b''
    while True:
        text = _strip_telnet(buf)
        if text.endswith(b'> '):
            return text[:-2].decode(errors='replace')
        left = deadline - time.monotonic()
        if left <= 0:
            raise LabError('console gave no prompt in time (got %r)' % text[-200:])
        s.settimeout(left)
        chunk = s.recv(4096)
        if not chunk:
            raise LabError('console closed the connection (got %r)' % text[-200:])
        buf += chunk


# ---- command line ------------------------------------------------------

def _read_secret(path):
    with open(path) as f:
        return f.readline().rstrip('\n')


def _index_value(text, what):
    index, sep, value = text.partition('=')
    if not sep or not index.isdigit():
        raise LabError("%s '%s' is not INDEX=VALUE" % (what, text))
    return int(index), value


def _cmd_start(args):
    overrides = {}
    for item in args.node_power:
        i, v = _index_value(item, '--node-power')
        overrides.setdefault(i, {})['power'] = v
    for item in args.node_password_file:
        i, v = _index_value(item, '--node-password-file')
        overrides.setdefault(i, {})['password'] = _read_secret(v)
    password = _read_secret(args.password_file) if args.password_file else None
    lab = IpmiLab(args.dir, prefix=args.prefix, count=args.count, first=args.first,
                  user=args.user, password=password, port=args.port,
                  console_port=args.console_port, power=args.power, overrides=overrides,
                  start_timeout=args.timeout)
    if args.sensors:
        import ipmisensors  # sensors, SDRs and event logs (tests/lab/ipmisensors.py)
        lab.emu_extra = ipmisensors.emu_extra()
    t0 = time.monotonic()
    lab.start()
    if args.sensors:
        ipmisensors.prepare_events(lab)
    print('ipmilab: %d sims up in %.1f s: %s (user %s, password in %s)'
          % (lab.count, time.monotonic() - t0, lab.hostrange(), lab.user,
             os.path.join(lab.workdir, 'password')), file=sys.stderr)
    return 0


def _recorded(workdir):
    path = os.path.join(os.path.abspath(workdir), 'pids')
    recs = []
    try:
        with open(path) as f:
            for line in f:
                pid, index, addr, port, ndir = line.split(None, 4)
                recs.append((int(pid), int(index), addr, int(port), ndir.rstrip('\n')))
    except FileNotFoundError:
        pass
    return recs


def _cmd_stop(args):
    workdir = os.path.abspath(args.dir)
    if not os.path.exists(os.path.join(workdir, 'lab.json')):
        if _recorded(workdir):
            raise LabError("'%s' has pids but no lab.json" % workdir)
        return 0
    lab = IpmiLab.attach(workdir)
    for pid, index, _, _, _ in _recorded(workdir):
        if index in lab.nodes:
            lab.nodes[index].pid = pid
    lab.stop()
    return 0


def _cmd_status(args):
    recs = _recorded(args.dir)
    alive = sum(1 for r in recs if pid_alive(r[0]))
    print('%d of %d sims running' % (alive, len(recs)))
    return 0 if recs and alive == len(recs) else 1


def main(argv=None):
    p = argparse.ArgumentParser(prog='ipmilab.py', description='ipmi_sim fleet for tests')
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('start', help='start the sims and wait until all answer')
    s.add_argument('--dir', required=True)
    s.add_argument('--prefix', default='127.31.0')
    s.add_argument('--count', type=int, default=20)
    s.add_argument('--first', type=int, default=1)
    s.add_argument('--user', default='admin')
    s.add_argument('--password-file', help='first line is the password (default: random, '
                   'written to DIR/password)')
    s.add_argument('--port', type=int, default=IPMI_PORT)
    s.add_argument('--console-port', type=int, default=CONSOLE_PORT)
    s.add_argument('--power', default='off', choices=('on', 'off'))
    s.add_argument('--node-power', action='append', default=[], metavar='I=on|off')
    s.add_argument('--node-password-file', action='append', default=[], metavar='I=FILE')
    s.add_argument('--timeout', type=float, help='seconds to wait for the sims')
    s.add_argument('--sensors', action='store_true',
                   help='sensors, SDRs and event log entries from ipmisensors.py')
    s.set_defaults(func=_cmd_start)
    s = sub.add_parser('stop', help='stop the sims recorded in DIR/pids')
    s.add_argument('--dir', required=True)
    s.set_defaults(func=_cmd_stop)
    s = sub.add_parser('status', help='count the recorded sims still running')
    s.add_argument('--dir', required=True)
    s.set_defaults(func=_cmd_status)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except (LabError, OSError) as e:
        print('ipmilab: %s' % e, file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
