#!/usr/bin/python3
"""A fleet of emulated Redfish BMCs on loopback addresses, for tests and benchmarks.

Each node i gets its own address (prefix.i for i <= 254, then the next
third octet) inside 127.0.0.0/8 (127.32.0.0/16 by default), HTTPS on port 8443 with its own
certificate from a test CA made at start, the dialect of one of five real
BMC captures (tests/data/redfish/<vendor>/tree.json), real Basic and
session auth, Reset actions that change PowerState, Boot PATCH with ETags,
ClearLog, paging, $expand where the dialect advertises it, a resetting
(503) mode, a slow mode, an access log, and a plain-HTTP control channel
on <addr>:8442. Worker processes share the nodes. See REDFISH-EMU.md next
to this file for the whole contract.

As a module:

    with RedfishLab(workdir, count=5, overrides={2: {'power': 'Off'}}) as lab:
        lab.url(1), lab.cacert, lab.password, lab.power(1), lab.access_log(1)

As a command (writes D/pids, D/lab.json, D/password, D/ca.pem; returns once
every BMC answers):

    redfish_emu.py start --dir D [--prefix 127.32.0] [--count N] [--first K]
                   [--port 8443] [--control-port 8442] [--vendors LIST]
                   [--user U] [--password-file F] [--power on|off]
                   [--workers W] [--overrides-file F] [--node I:KEY=VALUE]
                   [--delay-ms MS] [--one-at-a-time]
    redfish_emu.py stop --dir D
    redfish_emu.py status --dir D
    redfish_emu.py ctl --dir D --node I METHOD PATH [JSON]

Only the Python standard library and the openssl command.
"""

import argparse
import base64
import copy
import hashlib
import hmac
import http.client
import http.server
import json
import math
import os
import re
import secrets
import selectors
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labutil import LabError, node_address, pid_alive, pid_cmdline, wait_gone, write_atomic  # noqa: E402
import redfish_update  # noqa: E402
import redfish_bios  # noqa: E402
import redfish_events  # noqa: E402
import redfish_health  # noqa: E402


# The emulator keeps to loopback; each test module has its own prefix.
def _node_address(prefix, index):
    return node_address(prefix, index, within='127')


HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(os.path.dirname(HERE), 'data', 'redfish')

REDFISH_PORT = 8443
CONTROL_PORT = 8442
ROOT = '/redfish/v1'
FW_INV = ROOT + '/UpdateService/FirmwareInventory'
SESSIONS = ROOT + '/SessionService/Sessions'
MAX_BODY = 64 << 20   # firmware images are pushed whole
BMC_RESET_SECONDS = 5

# One entry per captured dialect. Member patterns are regular expressions
# matched against the whole FirmwareInventory member Id; {n} is the GPU
# number (1-based).
DIALECTS = {
    'supermicro-sys-821ge-tnhr': {
        'alias': 'supermicro', 'page_size': 50, 'etag_header': False,
        'reset_conflict': False, 'action_body': False,
        'bmc': [r'BMC'], 'bios': [r'BIOS'],
        'gpu': [r'GPU{n}', r'HGX_FW_GPU_SXM_{n}'], 'gpu_proc': None,
        'sel': ROOT + '/Systems/1/LogServices/Log1',
    },
    'nvidia-dgx-h100': {
        'alias': 'dgx', 'page_size': 75, 'etag_header': False,
        'reset_conflict': False, 'action_body': False,
        'bmc': [r'HostBMC_0'], 'bios': [r'HostBIOS_0'],
        'gpu': [r'HGX_FW_GPU_SXM_{n}'],
        'gpu_proc': ROOT + '/Systems/HGX_Baseboard_0/Processors/GPU_SXM_{n}',
        'sel': ROOT + '/Managers/BMC/LogServices/SEL',
    },
    'lenovo-sr670-v2': {
        'alias': 'lenovo', 'page_size': 50, 'etag_header': False,
        'reset_conflict': False, 'action_body': False,
        'bmc': [r'BMC-Primary'], 'bios': [r'UEFI'], 'gpu': [r'GPU{n}'], 'gpu_proc': None,
        'sel': ROOT + '/Systems/1/LogServices/SEL',
    },
    'dell-r750': {
        'alias': 'dell', 'page_size': 50, 'etag_header': True,
        'reset_conflict': True, 'action_body': True, 'versioned_ids': True,
        'bmc': [r'Installed-25227-.*__iDRAC\.Embedded\.1-1'],
        'bios': [r'(Installed|Current)-159-.*__BIOS\.Setup\.1-1'], 'gpu': [], 'gpu_proc': None,
        'sel': ROOT + '/Managers/iDRAC.Embedded.1/LogServices/Sel',
    },
    'hpe-dl385-gen10plus-v2': {
        'alias': 'hpe', 'page_size': 50, 'etag_header': True,
        'reset_conflict': False, 'action_body': True,
        'bmc': [r'1'], 'bios': [r'2'], 'gpu': [], 'gpu_proc': None,
        'sel': ROOT + '/Systems/1/LogServices/IML',
    },
}
VENDOR_ORDER = ['supermicro-sys-821ge-tnhr', 'nvidia-dgx-h100', 'lenovo-sr670-v2', 'dell-r750',
                'hpe-dl385-gen10plus-v2']
ALIASES = {d['alias']: v for v, d in DIALECTS.items()}

STD_RESET_TYPES = ['On', 'ForceOff', 'GracefulShutdown', 'GracefulRestart', 'ForceRestart',
                   'Nmi', 'ForceOn', 'PushPowerButton', 'PowerCycle']
STD_BOOT_TARGETS = ['None', 'Pxe', 'Floppy', 'Cd', 'Usb', 'Hdd', 'BiosSetup', 'Utilities',
                    'Diags', 'UefiShell', 'UefiTarget', 'SDCard', 'UefiHttp', 'RemoteDrive',
                    'UefiBootNext']
BOOT_KEYS = ('BootSourceOverrideTarget', 'BootSourceOverrideEnabled', 'BootSourceOverrideMode',
             'UefiTargetBootSourceOverride', 'BootNext')
READING_KEYS = ('Reading', 'ReadingCelsius', 'ReadingRPM', 'ReadingVolts', 'ReadingAmps',
                'PowerConsumedWatts', 'PowerInputWatts', 'PowerOutputWatts',
                'LastPowerOutputWatts', 'LineInputVoltage')

OVERRIDE_KEYS = {
    'vendor', 'password', 'power', 'serial', 'uuid', 'bmc_firmware', 'bios_firmware',
    'gpu_firmware', 'firmware', 'sensors', 'sel_entries', 'page_size', 'page_overlap',
    'expand', 'sessions', 'basic', 'max_sessions', 'etag_header', 'require_if_match',
    'reset_conflict', 'transition', 'slow', 'resetting', 'retry_after', 'hang',
    'faults', 'fault_message', 'deep_reset_values', 'keepalive_max', 'cert_change_after',
    'one_at_a_time', 'select', 'logout_delay',
} | {'serial_console_ssh'} | redfish_update.OVERRIDE_KEYS | redfish_bios.OVERRIDE_KEYS | redfish_health.OVERRIDE_KEYS
# What a fault planted on a URI does (the `faults` override).
FAULT_KINDS = ('hang', 'close', 'garbage', 'trickle', 'endless', 'bloat')
FAULT_HANG_MAX = 300.0   # a hung request is dropped after this long even if never cleared
# 'trickle': the real answer, one byte of its body every TRICKLE_S seconds.
# 'endless': a collection whose every page links to one more, forever.
TRICKLE_S = 0.05
# 'bloat': endless pages of BLOAT_MEMBERS expanded members, each with BLOAT_PAD bytes of
# Description: 8 MiB a page, under the client's cap on one answer, without end.
BLOAT_MEMBERS = 32
BLOAT_PAD = 256 * 1024
START_ONLY_KEYS = {'vendor', 'password'}


def vendor_name(name):
    """The full vendor name of @name (a full name or an alias)."""
    if name in DIALECTS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise LabError("unknown vendor '%s' (one of %s)"
                   % (name, ', '.join(d['alias'] for d in DIALECTS.values())))


def cert_fingerprint(pem_path):
    """SHA-256 of the DER certificate in @pem_path, lower-case hex."""
    with open(pem_path) as f:
        der = ssl.PEM_cert_to_DER_cert(f.read())
    return hashlib.sha256(der).hexdigest()


# ---- certificates ------------------------------------------------------

def _openssl(args):
    r = subprocess.run(['openssl'] + args, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise LabError('openssl %s failed: %s' % (args[0], r.stderr.strip()[-400:]))


def make_ca(key, cert, name):
    _openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
              '-nodes', '-keyout', key, '-out', cert, '-days', '30', '-subj', '/CN=' + name,
              '-addext', 'basicConstraints=critical,CA:TRUE',
              '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])


def make_node_cert(key, cert, addr, ca_cert=None, ca_key=None):
    """An EC P-256 key and a certificate for @addr (CN and IP SAN), signed
    by the CA, or self-signed without @ca_cert."""
    tmp_key, tmp_cert = key + '.new', cert + '.new'
    args = ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
            '-keyout', tmp_key, '-out', tmp_cert, '-days', '30', '-subj', '/CN=' + addr,
            '-addext', 'subjectAltName=IP:' + addr,
            '-addext', 'basicConstraints=critical,CA:FALSE',
            '-addext', 'keyUsage=critical,digitalSignature',
            '-addext', 'extendedKeyUsage=serverAuth']
    if ca_cert:
        args += ['-CA', ca_cert, '-CAkey', ca_key]
    _openssl(args)
    os.chmod(tmp_key, 0o600)
    os.rename(tmp_key, key)
    os.rename(tmp_cert, cert)


# ---- trees ---------------------------------------------------------------

_TREES = {}
_TREES_LOCK = threading.Lock()


class Tree:
    """The captured resources of one vendor, shared (read-only) by every
    node of that vendor in a process, with serialized bytes and ETags
    cached."""

    def __init__(self, vendor):
        path = os.path.join(DATA_DIR, vendor, 'tree.json')
        try:
            with open(path, encoding='utf-8') as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise LabError("cannot load '%s': %s" % (path, e)) from None
        self.vendor = vendor
        self.res = doc['resources']
        self._bytes = {}
        self._etags = {}
        self.lock = threading.Lock()

    def bytes(self, uri):
        b = self._bytes.get(uri)
        if b is None:
            b = _dumps(self.res[uri])
            with self.lock:
                self._bytes[uri] = b
        return b

    def etag(self, uri):
        e = self._etags.get(uri)
        if e is None:
            e = _etag_of(self.res[uri])
            with self.lock:
                self._etags[uri] = e
        return e


def load_tree(vendor):
    with _TREES_LOCK:
        t = _TREES.get(vendor)
        if t is None:
            t = _TREES[vendor] = Tree(vendor)
        return t


def _dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(',', ':')).encode('utf-8')


def _etag_of(obj):
    if isinstance(obj, dict) and isinstance(obj.get('@odata.etag'), str):
        return obj['@odata.etag']
    return 'W/"%08X"' % (zlib.crc32(_dumps(obj)) & 0xffffffff)


def _new_etag(obj, seq):
    """A new payload ETag for @obj in the style of its old one."""
    old = obj.get('@odata.etag', '')
    body = {k: v for k, v in obj.items() if k != '@odata.etag'}
    crc = zlib.crc32(_dumps(body)) ^ (seq * 2654435761)
    crc &= 0xffffffff
    if old.startswith('W/'):
        return 'W/"%08X"' % crc
    return '"%x"' % crc


def _etag_equal(a, b):
    strip = lambda t: t[2:] if t.startswith('W/') else t  # noqa: E731
    return strip(a.strip()) == strip(b.strip())


def _iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(t))


# ---- answers ---------------------------------------------------------------

def _path_skip(raw_path):
    """The path of @raw_path and its $skip (0 when none)."""
    split = urllib.parse.urlsplit(raw_path)
    skip = 0
    for k, v in urllib.parse.parse_qsl(split.query):
        if k == '$skip' and v.isdigit():
            skip = int(v)
    return split, skip


def _endless_page(raw_path):
    """A page of the collection at @raw_path that links to one more page, forever."""
    split, skip = _path_skip(raw_path)
    return Reply(200, {'@odata.id': split.path, 'Name': 'Endless',
                       'Members': [{'@odata.id': '%s/Endless%d' % (split.path, skip)}],
                       'Members@odata.count': skip + 2,
                       'Members@odata.nextLink': '%s?$skip=%d' % (split.path, skip + 1)})


def _bloat_page(raw_path):
    """Like _endless_page, but each page holds BLOAT_MEMBERS big expanded members."""
    split, skip = _path_skip(raw_path)
    pad = 'x' * BLOAT_PAD
    members = [{'@odata.id': '%s/Bloat%d' % (split.path, skip + k), 'Id': 'Bloat%d' % (skip + k),
                'Name': 'Bloat', 'Version': '1.0', 'Description': pad}
               for k in range(BLOAT_MEMBERS)]
    return Reply(200, {'@odata.id': split.path, 'Name': 'Bloat', 'Members': members,
                       'Members@odata.count': skip + 2 * BLOAT_MEMBERS,
                       'Members@odata.nextLink': '%s?$skip=%d' % (split.path, skip + BLOAT_MEMBERS)})


class Reply:
    def __init__(self, status, body=None, headers=None, content_type='application/json'):
        self.status = status
        self.headers = list(headers or [])
        if body is None:
            self.body = b''
        elif isinstance(body, bytes):
            self.body = body
        else:
            self.body = _dumps(body)
        self.content_type = content_type if body is not None else None


def rf_error(status, msg_id, message, headers=None):
    body = {'error': {
        'code': 'Base.1.8.' + msg_id,
        'message': message,
        '@Message.ExtendedInfo': [{
            '@odata.type': '#Message.v1_1_1.Message',
            'MessageId': 'Base.1.8.' + msg_id,
            'Message': message,
            'Severity': 'Critical' if status >= 500 else 'Warning',
            'MessageSeverity': 'Critical' if status >= 500 else 'Warning',
            'Resolution': 'None.',
        }],
    }}
    return Reply(status, body, headers)


def _success_body():
    return {'@Message.ExtendedInfo': [{
        '@odata.type': '#Message.v1_1_1.Message', 'MessageId': 'Base.1.8.Success',
        'Message': 'Successfully Completed Request', 'Severity': 'OK',
        'MessageSeverity': 'OK', 'Resolution': 'None'}]}


# ---- one emulated BMC ----------------------------------------------------

class Node:
    """The state of one emulated BMC (lives in a worker process)."""

    def __init__(self, desc, workdir, user, password):
        self.index = desc['index']
        self.addr = desc['addr']
        self.vendor = desc['vendor']
        self.dir = desc['dir']
        self.d = DIALECTS[self.vendor]
        self.tree = load_tree(self.vendor)
        self.base = self.tree.res
        self.user = user
        self.password = password
        self.workdir = workdir
        self.lock = threading.RLock()
        self.over = {}
        self.gone = set()
        self.raw = {}
        self.redirects = {}
        self.cache = {}
        self.change_seq = 0
        self.sessions = {}
        self.session_seq = 0
        self.events = []
        self.counters = {}
        self.conn_seq = 0
        self.page_size = self.d['page_size']
        self.page_overlap = 0
        self.basic = True
        self.sessions_enabled = True
        self.max_sessions = None
        self.etag_header = self.d['etag_header']
        self.require_if_match = False
        self.reset_conflict = self.d['reset_conflict']
        self.transition = 0.0
        self.slow = 0.0
        self.logout_delay = 0.0     # seconds a session's DELETE waits before it is done
        self.one_at_a_time = False  # answer one request at a time, the others wait their turn
        self.turn = threading.Lock()
        self.resetting_until = 0.0
        self.retry_after = 2
        self.hang = False
        self.held = 0               # requests held now by hang mode or a hang fault
        self.faults = {}
        self.fault_message = None  # the Message of a status fault, None: the lab's own
        self.deep_reset_values = 0
        self.keepalive_max = 0      # requests a connection serves before the BMC closes it; 0: no limit
        self.cert_after = None      # connections numbered above this get the second certificate
        self.alt_ctx = None
        self.alt_fingerprint = None
        self.stopping = False
        self.timers = {}
        self._zero_counters()
        self.log = open(os.path.join(self.dir, 'access.log'), 'a', buffering=1,
                        encoding='utf-8')
        self.ssl_ctx = self._ssl_context()
        self.systems = [m['@odata.id'] for m in self.base[ROOT + '/Systems']['Members']]
        self.managers = [m['@odata.id'] for m in self.base[ROOT + '/Managers']['Members']]
        self.main_system = self.systems[0]
        self.actions = {}
        for uri, res in self.base.items():
            acts = res.get('Actions') if isinstance(res, dict) else None
            if not isinstance(acts, dict):
                continue
            for name, act in acts.items():
                if isinstance(act, dict) and isinstance(act.get('target'), str):
                    self.actions[act['target']] = (name, uri)
        self.update = redfish_update.NodeUpdates(self)
        redfish_bios.setup(self)
        redfish_events.setup(self)

    def _zero_counters(self):
        self.counters = {'requests': 0, 'connections': 0, 'handshakes': 0,
                         'tls_failures': 0, 'by_status': {}}
        self.sessions_stats = {'created': 0, 'deleted': 0, 'refused': 0, 'expired': 0}

    def _ssl_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(os.path.join(self.dir, 'cert.pem'), os.path.join(self.dir, 'key.pem'))
        return ctx

    # -- the resource store --

    def get(self, uri):
        if uri in self.gone:
            return None
        r = self.over.get(uri)
        if r is not None:
            return r
        return self.base.get(uri)

    def own(self, uri):
        """The node's own, writable copy of @uri."""
        r = self.over.get(uri)
        if r is None:
            r = copy.deepcopy(self.base[uri])
            self.over[uri] = r
        self.cache.pop(uri, None)
        self.gone.discard(uri)
        return r

    def touch(self, uri):
        """@uri (owned) changed: a new payload ETag where it has one."""
        self.change_seq += 1
        r = self.over[uri]
        if '@odata.etag' in r:
            r['@odata.etag'] = _new_etag(r, self.change_seq)
        self.cache.pop(uri, None)

    def put(self, uri, obj):
        self.over[uri] = obj
        self.gone.discard(uri)
        self.cache.pop(uri, None)

    def remove(self, uri):
        self.over.pop(uri, None)
        self.cache.pop(uri, None)
        self.gone.add(uri)

    def uris(self):
        out = set(self.base) | set(self.over)
        return out - self.gone

    def res_bytes(self, uri):
        if uri in self.over:
            b = self.cache.get(uri)
            if b is None:
                b = self.cache[uri] = _dumps(self.over[uri])
            return b
        return self.tree.bytes(uri)

    def etag(self, uri):
        if uri in self.over:
            return _etag_of(self.over[uri])
        return self.tree.etag(uri)

    def view(self, uri):
        """What GET @uri shows (dynamic resources included), or None."""
        if uri == SESSIONS and self.sessions_enabled:
            return self._sessions_collection()
        m = re.fullmatch(re.escape(SESSIONS) + r'/([^/]+)', uri)
        if m:
            s = self._session_by_id(m.group(1))
            return self._session_resource(s) if s else None
        if uri in self.raw:
            return None
        return self.get(uri)

    # -- events, log, counters --

    def event(self, kind, **kw):
        e = {'t': time.time(), 'kind': kind}
        e.update(kw)
        self.events.append(e)

    def access(self, rec):
        line = json.dumps(rec, separators=(',', ':')) + '\n'
        with self.lock:
            self.log.write(line)

    def clear(self):
        with self.lock:
            self._zero_counters()
            self.events = []
            self.update.clear()
            self.log.close()
            self.log = open(os.path.join(self.dir, 'access.log'), 'w', buffering=1,
                            encoding='utf-8')

    # -- sessions --

    def _session_timeout(self):
        ss = self.get(ROOT + '/SessionService') or {}
        t = ss.get('SessionTimeout')
        return t if isinstance(t, int) and t > 0 else 1800

    def _purge_sessions(self):
        limit = self._session_timeout()
        now = time.monotonic()
        for tok, s in list(self.sessions.items()):
            if now - s['last'] > limit:
                del self.sessions[tok]
                self.sessions_stats['expired'] += 1

    def _session_by_id(self, sid):
        for s in self.sessions.values():
            if s['id'] == sid:
                return s
        return None

    def _session_resource(self, s):
        return {'@odata.id': '%s/%s' % (SESSIONS, s['id']),
                '@odata.type': '#Session.v1_3_0.Session', 'Id': s['id'],
                'Name': 'User Session', 'Description': 'Manager User Session',
                'UserName': s['user'], 'SessionType': 'Redfish'}

    def _sessions_collection(self):
        base = self.get(SESSIONS)
        coll = dict(base) if base else {'@odata.id': SESSIONS,
                                        '@odata.type': '#SessionCollection.SessionCollection',
                                        'Name': 'Session Collection'}
        members = sorted(self.sessions.values(), key=lambda s: int(s['id']))
        coll['Members'] = [{'@odata.id': '%s/%s' % (SESSIONS, s['id'])} for s in members]
        coll['Members@odata.count'] = len(members)
        return coll

    def expire_sessions(self):
        with self.lock:
            n = len(self.sessions)
            self.sessions.clear()
            self.sessions_stats['expired'] += n

    # -- overrides --

    def override(self, opts, start=False):
        unknown = set(opts) - OVERRIDE_KEYS
        if unknown:
            raise LabError('node %d: unknown override %s' % (self.index, ', '.join(sorted(unknown))))
        with self.lock:
            for key, value in opts.items():
                if key in START_ONLY_KEYS:
                    if not start:
                        raise LabError("override '%s' works only at start" % key)
                    continue
                if key in redfish_bios.OVERRIDE_KEYS:
                    redfish_bios.override(self, key, value)
                    continue
                if key in redfish_health.OVERRIDE_KEYS:
                    redfish_health.override(self, key, value)
                    continue
                getattr(self, '_ov_' + key)(value)

    def _main_manager(self):
        return self.managers[0]

    def _fw_members(self):
        coll = self.get(FW_INV)
        return [m['@odata.id'] for m in coll.get('Members', [])] if coll else []

    def _set_fw(self, patterns, version, what):
        if not isinstance(version, str):
            raise LabError('%s version must be a string' % what)
        done = 0
        for uri in self._fw_members():
            res = self.get(uri)
            if not isinstance(res, dict):
                continue
            if any(re.fullmatch(p, str(res.get('Id'))) for p in patterns):
                self._set_member_version(uri, version)
                done += 1
        if not done:
            raise LabError("node %d (%s): no firmware member for %s"
                           % (self.index, self.vendor, what))

    def _set_member_version(self, uri, version):
        res = self.own(uri)
        res['Version'] = version
        self.touch(uri)
        if not self.d.get('versioned_ids'):
            return
        m = re.fullmatch(r'(Installed|Current|Previous)-(\d+)-(.*?)__(.+)', str(res.get('Id')))
        if not m:
            return
        new_id = '%s-%s-%s__%s' % (m.group(1), m.group(2), version, m.group(4))
        new_uri = FW_INV + '/' + new_id
        if new_uri == uri:
            return
        res['Id'] = new_id
        res['@odata.id'] = new_uri
        self.remove(uri)
        self.put(new_uri, res)
        coll = self.own(FW_INV)
        coll['Members'] = [{'@odata.id': new_uri} if m.get('@odata.id') == uri else m
                           for m in coll['Members']]
        self.touch(FW_INV)

    def _ov_power(self, value):
        state = str(value).capitalize()
        if state not in ('On', 'Off'):
            raise LabError("power '%s' is not On or Off" % value)
        self.set_power(self.main_system, state)

    def _ov_serial_console_ssh(self, value):
        """The main Manager advertises an SSH serial console on port @value
        (OpenBMC: 2200) as Manager.SerialConsole.SSH; 0 or false: disabled."""
        port = int(value or 0)
        mgr = self._main_manager()
        self.own(mgr)['SerialConsole'] = {
            'ServiceEnabled': True, 'MaxConcurrentSessions': 1,
            'ConnectTypesSupported': ['IPMI', 'SSH'] if port else ['IPMI'],
            'IPMI': {'ServiceEnabled': True},
            'SSH': {'ServiceEnabled': bool(port), 'Port': port or 2200,
                    'SharedWithHostConsole': False, 'HotKeySequenceDisplay': 'Press ~. to exit'},
        }
        self.touch(mgr)

    def _ov_serial(self, value):
        self.own(self.main_system)['SerialNumber'] = str(value)
        self.touch(self.main_system)

    def _ov_uuid(self, value):
        self.own(self.main_system)['UUID'] = str(value)
        self.touch(self.main_system)

    def _ov_bmc_firmware(self, value):
        self._set_fw(self.d['bmc'], value, 'bmc')
        mgr = self._main_manager()
        self.own(mgr)['FirmwareVersion'] = value
        self.touch(mgr)

    def _ov_bios_firmware(self, value):
        self._set_fw(self.d['bios'], value, 'bios')
        self.own(self.main_system)['BiosVersion'] = value
        self.touch(self.main_system)

    def _ov_gpu_firmware(self, value):
        if not isinstance(value, dict):
            raise LabError('gpu_firmware must be {"N": version}')
        if not self.d['gpu']:
            raise LabError('node %d (%s) has no GPUs' % (self.index, self.vendor))
        for n, version in value.items():
            n = int(n)
            self._set_fw([p.format(n=n) for p in self.d['gpu']], version, 'gpu %d' % n)
            if self.d['gpu_proc']:
                uri = self.d['gpu_proc'].format(n=n)
                if self.get(uri) is not None:
                    self.own(uri)['FirmwareVersion'] = version
                    self.touch(uri)

    def _ov_firmware(self, value):
        if not isinstance(value, dict):
            raise LabError('firmware must be {"member Id": version}')
        for mid, version in value.items():
            self._set_fw([re.escape(mid)], version, "member '%s'" % mid)

    def _ov_sensors(self, value):
        if not isinstance(value, dict):
            raise LabError('sensors must be {"name": {"reading": x, "health": h}}')
        for name, spec in value.items():
            if not isinstance(spec, dict) or not set(spec) <= {'reading', 'health'}:
                raise LabError("sensor '%s': give reading and/or health" % name)
            hits = 0
            for uri in sorted(self.uris()):
                if not uri.startswith(ROOT + '/Chassis/'):
                    continue
                res = self.get(uri)
                if not isinstance(res, dict) or not _has_sensor(res, name):
                    continue
                res = self.own(uri)
                hits += _set_sensor(res, name, spec)
                self.touch(uri)
            if not hits:
                raise LabError("node %d (%s): no sensor named '%s'" % (self.index, self.vendor, name))

    def _ov_sel_entries(self, value):
        n = int(value)
        ls = self.get(self.d['sel']) or {}
        entries = (ls.get('Entries') or {}).get('@odata.id')
        if not entries or self.get(entries) is None:
            raise LabError('node %d: no SEL entries collection' % self.index)
        coll = self.own(entries)
        old = coll.get('Members', [])
        inline = bool(old) and len(old[0]) > 1
        template = None
        if old:
            template = old[0] if inline else self.get(old[0].get('@odata.id'))
        if not isinstance(template, dict):
            template = {'@odata.type': '#LogEntry.v1_9_0.LogEntry', 'EntryType': 'SEL',
                        'Severity': 'OK', 'Message': 'synthesized entry', 'Name': 'Log Entry'}
        for m in old:
            if isinstance(m, dict) and isinstance(m.get('@odata.id'), str):
                self.remove(m['@odata.id'])
        members = []
        t0 = 1_700_000_000
        for i in range(1, n + 1):
            e = copy.deepcopy(template)
            uri = '%s/%d' % (entries, i)
            e['@odata.id'] = uri
            e['Id'] = str(i)
            e['Name'] = 'Log Entry %d' % i
            e['Created'] = _iso(t0 + 60 * i)
            self.put(uri, e)
            members.append(copy.deepcopy(e) if inline else {'@odata.id': uri})
        coll['Members'] = members
        coll['Members@odata.count'] = n
        self.touch(entries)

    def _ov_page_size(self, value):
        if int(value) < 1:
            raise LabError('page_size must be at least 1')
        self.page_size = int(value)

    def _ov_page_overlap(self, value):
        self.page_overlap = max(0, int(value))

    def _ov_expand(self, value):
        root = self.own(ROOT)
        pfs = root.setdefault('ProtocolFeaturesSupported', {})
        if value:
            base = self.base[ROOT].get('ProtocolFeaturesSupported', {}).get('ExpandQuery')
            if base is not None:
                pfs['ExpandQuery'] = copy.deepcopy(base)
        else:
            pfs.pop('ExpandQuery', None)
        self.touch(ROOT)

    def _ov_sessions(self, value):
        self.sessions_enabled = bool(value)
        root = self.own(ROOT)
        if value:
            for key in ('SessionService',):
                if key in self.base[ROOT]:
                    root[key] = copy.deepcopy(self.base[ROOT][key])
            if 'Sessions' in self.base[ROOT].get('Links', {}):
                root.setdefault('Links', {})['Sessions'] = {'@odata.id': SESSIONS}
            for uri in (ROOT + '/SessionService', SESSIONS):
                if uri in self.base:
                    self.gone.discard(uri)
        else:
            root.pop('SessionService', None)
            root.get('Links', {}).pop('Sessions', None)
            self.gone.update({ROOT + '/SessionService', SESSIONS})
            self.sessions.clear()
        self.touch(ROOT)

    def _ov_basic(self, value):
        self.basic = bool(value)

    def _ov_max_sessions(self, value):
        self.max_sessions = None if value is None else int(value)

    def _ov_etag_header(self, value):
        self.etag_header = bool(value)

    def _ov_require_if_match(self, value):
        self.require_if_match = bool(value)

    def _ov_reset_conflict(self, value):
        self.reset_conflict = bool(value)

    def _ov_transition(self, value):
        self.transition = max(0.0, float(value))

    def _ov_slow(self, value):
        self.slow = max(0.0, float(value or 0))

    def _ov_logout_delay(self, value):
        self.logout_delay = max(0.0, float(value or 0))

    def _ov_select(self, value):
        root = self.own(ROOT)
        pfs = root.setdefault('ProtocolFeaturesSupported', {})
        pfs['SelectQuery'] = bool(value) and \
            self.base[ROOT].get('ProtocolFeaturesSupported', {}).get('SelectQuery') is True
        self.touch(ROOT)

    def _ov_one_at_a_time(self, value):
        self.one_at_a_time = str(value).lower() in ('1', 'true', 'yes', 'on')

    def _ov_keepalive_max(self, value):
        self.keepalive_max = max(0, int(value or 0))

    def _ov_cert_change_after(self, value):
        # The next N connections still get the node's certificate, every later one a
        # second certificate of the same CA: a peer whose certificate changes mid-run.
        n = int(value or 0)
        if n <= 0:
            self.cert_after = self.alt_ctx = self.alt_fingerprint = None
            return
        key, cert = os.path.join(self.dir, 'alt-key.pem'), os.path.join(self.dir, 'alt-cert.pem')
        make_node_cert(key, cert, self.addr, os.path.join(self.workdir, 'ca.pem'),
                       os.path.join(self.workdir, 'ca.key'))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        self.alt_ctx, self.alt_fingerprint = ctx, cert_fingerprint(cert)
        self.cert_after = self.conn_seq + n

    def _ov_resetting(self, value):
        value = float(value or 0)
        self.resetting_until = time.monotonic() + value if value > 0 else 0.0

    def _ov_retry_after(self, value):
        self.retry_after = max(0, int(value))

    def _ov_hang(self, value):
        self.hang = bool(value)

    def _ov_faults(self, value):
        value = value or {}
        if not isinstance(value, dict):
            raise LabError('faults must be {"uri": "hang"|"close"|"garbage"|"trickle"|"endless"|"bloat"|status}')
        faults = {}
        for uri, kind in value.items():
            ok_status = isinstance(kind, int) and not isinstance(kind, bool) and 400 <= kind <= 599
            if kind not in FAULT_KINDS and not ok_status:
                raise LabError("fault '%s' of '%s': give hang, close, garbage, trickle, endless, bloat or a status 400-599"
                               % (kind, uri))
            faults[_norm_path(uri)] = kind
        self.faults = faults

    def _ov_fault_message(self, value):
        if value is not None and not isinstance(value, str):
            raise LabError('fault_message must be a string or null')
        self.fault_message = value

    def _ov_deep_reset_values(self, value):
        n = int(value or 0)
        if n < 0 or n > 100000:
            raise LabError('deep_reset_values must be 0 to 100000')
        self.deep_reset_values = n
        self.cache.pop(self.main_system, None)

    def fault_of(self, raw_path):
        """The fault planted on the path of @raw_path (query ignored), or None."""
        with self.lock:
            return self.faults.get(_norm_path(raw_path)) if self.faults else None

    # -- power --

    def set_power(self, sys_uri, state):
        with self.lock:
            t = self.timers.pop(sys_uri, None)
            if t:
                t.cancel()
            if self.get(sys_uri) is None:
                raise LabError("no system '%s'" % sys_uri)
            self.own(sys_uri)['PowerState'] = state
            self.touch(sys_uri)

    def snapshot(self):
        with self.lock:
            self._purge_sessions()
            systems = {u: (self.get(u) or {}).get('PowerState') for u in self.systems}
            main = self.get(self.main_system) or {}
            boot = {k: v for k, v in (main.get('Boot') or {}).items() if '@' not in k}
            left = self.resetting_until - time.monotonic()
            return {
                'index': self.index, 'addr': self.addr, 'vendor': self.vendor,
                'power': systems.get(self.main_system), 'systems': systems,
                'main_system': self.main_system, 'boot': boot,
                'sessions': dict(self.sessions_stats, open=len(self.sessions),
                                 ids=sorted((s['id'] for s in self.sessions.values()), key=int)),
                'counters': copy.deepcopy(self.counters), 'held': self.held,
                'events': copy.deepcopy(self.events),
                'modes': {'resetting_left': max(0.0, left), 'slow': self.slow,
                          'hang': self.hang, 'page_size': self.page_size,
                          'page_overlap': self.page_overlap, 'basic': self.basic,
                          'sessions': self.sessions_enabled, 'faults': dict(self.faults),
                          'deep_reset_values': self.deep_reset_values,
                          'one_at_a_time': self.one_at_a_time,
                          'keepalive_max': self.keepalive_max,
                          'cert_change_after': self.cert_after},
                'fingerprint': cert_fingerprint(os.path.join(self.dir, 'cert.pem')),
                'alt_fingerprint': self.alt_fingerprint,
                'sel': self.d['sel'],
                'bios': redfish_bios.state(self),
            }

    # -- the Redfish side --

    def handle(self, method, raw_path, headers, body):
        """Answer one request: (Reply, auth kind, user)."""
        split = urllib.parse.urlsplit(raw_path)
        path = _norm_path(raw_path)
        query = {}
        for k, v in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
            query.setdefault(k, v)
        with self.lock:
            path = redfish_bios.resolve(self, path)
            self.counters['requests'] += 1
            if self.resetting_until and time.monotonic() < self.resetting_until:
                return (rf_error(503, 'ServiceTemporarilyUnavailable',
                                 'The service is temporarily unavailable (BMC resetting).',
                                 [('Retry-After', str(self.retry_after))]), 'none', None)
            redir = self.redirects.get(path)
            if redir:
                return Reply(redir[1], None, [('Location', redir[0])]), 'none', None
            kind, user, err = self._authenticate(headers)
            if not self.sessions_enabled and (path == ROOT + '/SessionService'
                                              or path.startswith(ROOT + '/SessionService/')):
                return (rf_error(404, 'ResourceMissingAtURI',
                                 'The resource at %s was not found.' % path), kind, user)
            public = path in ('/redfish', ROOT, ROOT + '/odata', ROOT + '/$metadata')
            login = method == 'POST' and path == SESSIONS and self.sessions_enabled
            if err is not None and not public and not login:
                return err, kind, user
            refused = None if public or login else redfish_health.gate(self, method, path)
            if refused:
                return rf_error(*refused), kind, user
            try:
                reply = self._route(method, path, query, headers, body, user)
            except _Bad as e:
                reply = e.reply
            return reply, kind, user

    def _authenticate(self, headers):
        token = headers.get('X-Auth-Token')
        if token is not None:
            self._purge_sessions()
            s = self.sessions.get(token)
            if s is None:
                return 'bad-session', None, self._unauthorized()
            s['last'] = time.monotonic()
            return 'session', s['user'], None
        auth = headers.get('Authorization')
        if auth is not None:
            scheme, _, cred = auth.partition(' ')
            if scheme.lower() != 'basic':
                return 'bad-basic', None, self._unauthorized()
            try:
                user, sep, pw = base64.b64decode(cred.strip(), validate=True).decode().partition(':')
            except (ValueError, UnicodeDecodeError):
                return 'bad-basic', None, self._unauthorized()
            if not self.basic or not sep or not self._check(user, pw):
                return 'bad-basic', user or None, self._unauthorized()
            return 'basic', user, None
        return 'none', None, self._unauthorized()

    def _check(self, user, pw):
        ok_user = hmac.compare_digest(user.encode(), self.user.encode())
        ok_pw = hmac.compare_digest(pw.encode(), self.password.encode())
        return ok_user and ok_pw

    def _unauthorized(self):
        hdrs = [('WWW-Authenticate', 'Basic realm="redfish-emu"')] if self.basic else []
        return rf_error(401, 'NoValidSession',
                        'There is no valid session established with the implementation.', hdrs)

    def _route(self, method, path, query, headers, body, user):
        reply = self.update.route(method, path, query, headers, body)
        if reply is None:
            reply = redfish_bios.route(self, method, path, headers, body)
        if reply is not None:
            return reply
        if method in ('GET', 'HEAD'):
            return self._get(path, query)
        if method == 'POST':
            if path == SESSIONS and self.sessions_enabled:
                return self._login(_json_body(body))
            act = self.actions.get(path)
            if act and self.get(act[1]) is not None:
                return self._action(act[0], act[1], path, _json_body(body))
        if method == 'PATCH' and path in self.systems and self.get(path) is not None:
            return self._patch_system(path, headers, _json_body(body))
        if method == 'DELETE':
            m = re.fullmatch(re.escape(SESSIONS) + r'/([^/]+)', path)
            if m and self.sessions_enabled:
                return self._logout(m.group(1))
        if self.view(path) is not None or path in self.raw:
            return rf_error(405, 'OperationNotAllowed',
                            'The %s operation is not allowed on %s.' % (method, path),
                            [('Allow', 'GET, HEAD')])
        return rf_error(404, 'ResourceMissingAtURI', 'The resource at %s was not found.' % path)

    def _get(self, path, query):
        if path == '/redfish':
            return Reply(200, {'v1': '/redfish/v1/'})
        if path in self.raw:
            data, ctype = self.raw[path]
            return Reply(200, data, content_type=ctype)
        obj = self.view(path)
        if obj is None:
            return rf_error(404, 'ResourceMissingAtURI', 'The resource at %s was not found.' % path)
        hdrs = []
        dynamic = path == SESSIONS or path.startswith(SESSIONS + '/')
        if self.etag_header and not dynamic:
            hdrs.append(('ETag', self.etag(path)))
        expand = query.get('$expand')
        select = query.get('$select') if self._selects() else None
        paged = isinstance(obj.get('Members'), list) and (
            len(obj['Members']) > self.page_size or '$skip' in query or '$top' in query)
        if expand is None and select is None and not paged:
            if dynamic:
                return Reply(200, obj, hdrs)
            if path == self.main_system and self.deep_reset_values:
                return Reply(200, self._deep_system(obj), hdrs)
            if path == self.bios_uri and self.bios_deep:
                return Reply(200, redfish_bios.deep_bytes(self, obj), hdrs)
            return Reply(200, self.res_bytes(path), hdrs)
        out = obj
        if isinstance(obj.get('Members'), list):
            out = self._page(path, obj, query)
        if select is not None:
            # the annotations and the properties named (top level), before any expansion
            names = set(n.strip() for n in select.split(','))
            out = {k: v for k, v in out.items() if k.startswith('@odata.') or k in names}
        if expand is not None:
            levels, mode = self._expand_spec(expand)
            out = self._expand(out, levels, mode, False, frozenset([path]))
            if self.deep_reset_values:  # the main System is as deep expanded as read alone
                return Reply(200, self._deep_text(_dumps(out)), hdrs)
        return Reply(200, out, hdrs)

    def _selects(self):
        root = self.get(ROOT) or {}
        return (root.get('ProtocolFeaturesSupported') or {}).get('SelectQuery') is True

    def _deep_system(self, obj):
        """The main System with ResetType@Redfish.AllowableValues nested deep (a hostile BMC)."""
        return self._deep_text(_dumps(self._deep_marked(obj)))

    def _deep_text(self, text):
        return text.replace(_dumps(DEEP_MARK), _deep_array(self.deep_reset_values))

    @staticmethod
    def _deep_marked(obj):
        """A copy of the main System whose allowable values are DEEP_MARK (made deep as text)."""
        mark = DEEP_MARK
        sys_copy = dict(obj)
        acts = dict(sys_copy.get('Actions') or {})
        act = dict(acts.get('#ComputerSystem.Reset') or {})
        act['ResetType@Redfish.AllowableValues'] = mark
        acts['#ComputerSystem.Reset'] = act
        sys_copy['Actions'] = acts
        return sys_copy

    def _page(self, path, obj, query):
        members = obj['Members']
        total = len(members)
        skip = _int_param(query, '$skip', 0)
        top = _int_param(query, '$top', None)
        limit = self.page_size if top is None else min(top, self.page_size)
        end = min(total, skip + limit)
        out = dict(obj)
        out['Members'] = members[skip:end]
        out['Members@odata.count'] = total
        out.pop('Members@odata.nextLink', None)
        want = total if top is None else min(total, skip + top)
        if end < want:
            nskip = max(skip + 1, end - self.page_overlap)
            q = [('$skip', str(nskip))]
            if top is not None:
                q.append(('$top', str(want - nskip)))
            q += [(k, v) for k, v in query.items() if k not in ('$skip', '$top')]
            out['Members@odata.nextLink'] = path + '?' + '&'.join(
                '%s=%s' % (k, urllib.parse.quote(v, safe='$()=*.~,')) for k, v in q)
        return out

    def _expand_spec(self, value):
        root = self.get(ROOT) or {}
        eq = (root.get('ProtocolFeaturesSupported') or {}).get('ExpandQuery')
        if not isinstance(eq, dict):
            raise _Bad(rf_error(501, 'QueryNotSupported', 'Querying is not supported by the '
                                'implementation ($expand).'))
        m = re.fullmatch(r'([.*~])(?:\(\$levels=(\d+)\))?', value)
        if not m:
            raise _Bad(rf_error(400, 'QueryParameterValueFormatError',
                                "The value '%s' for the parameter $expand is of a different "
                                "format than the parameter can accept." % value))
        mode = m.group(1)
        need = {'*': 'ExpandAll', '.': 'NoLinks', '~': 'Links'}[mode]
        if not eq.get(need):
            raise _Bad(rf_error(400, 'QueryNotSupportedOnResource',
                                "$expand='%s' is not supported by this service." % mode))
        levels = 1
        if m.group(2) is not None:
            if not eq.get('Levels'):
                raise _Bad(rf_error(400, 'QueryNotSupported', '$levels is not supported.'))
            levels = int(m.group(2))
            if levels < 1 or levels > int(eq.get('MaxLevels', 1)):
                raise _Bad(rf_error(400, 'QueryParameterOutOfRange',
                                    'The value %d for $levels is out of range (1 to %s).'
                                    % (levels, eq.get('MaxLevels', 1))))
        return levels, mode

    def _expand(self, val, levels, mode, in_links, stack):
        if isinstance(val, dict):
            ref = val.get('@odata.id')
            if levels > 0 and len(val) == 1 and isinstance(ref, str) and '#' not in ref:
                allowed = mode == '*' or (mode == '.') != in_links
                if allowed and ref not in stack and ref not in self.faults \
                        and ref not in self.redirects:
                    res = self.view(ref)
                    if isinstance(res, dict) and isinstance(res.get('Members'), list) \
                            and len(res['Members']) > self.page_size:
                        # an expanded collection is paged too, its next page expanded alike
                        res = self._page(ref, res, {'$expand': '%s($levels=%d)' % (mode, levels - 1)}
                                         if levels > 1 else {})
                    if isinstance(res, dict) and ref == self.main_system and self.deep_reset_values:
                        res = self._deep_marked(res)
                    if isinstance(res, dict):
                        return self._expand(res, levels - 1, mode, False, stack | {ref})
                return val
            return {k: self._expand(v, levels, mode, in_links or k == 'Links', stack)
                    for k, v in val.items()}
        if isinstance(val, list):
            return [self._expand(v, levels, mode, in_links, stack) for v in val]
        return val

    def _login(self, body):
        if not isinstance(body, dict) or not isinstance(body.get('UserName'), str) \
                or not isinstance(body.get('Password'), str):
            return rf_error(400, 'PropertyMissing',
                            'The property UserName or Password is missing or not a string.')
        if not self._check(body['UserName'], body['Password']):
            self.sessions_stats['refused'] += 1
            return self._unauthorized()
        self._purge_sessions()
        if self.max_sessions is not None and len(self.sessions) >= self.max_sessions:
            self.sessions_stats['refused'] += 1
            return rf_error(503, 'SessionLimitExceeded',
                            'The session establishment failed due to the number of '
                            'simultaneous sessions exceeding the limit of the implementation.')
        self.session_seq += 1
        token = secrets.token_hex(16)
        s = {'id': str(self.session_seq), 'user': body['UserName'], 'last': time.monotonic()}
        self.sessions[token] = s
        self.sessions_stats['created'] += 1
        self.event('session-create', id=s['id'])
        loc = '%s/%s' % (SESSIONS, s['id'])
        return Reply(201, self._session_resource(s), [('X-Auth-Token', token), ('Location', loc)])

    def _logout(self, sid):
        for tok, s in list(self.sessions.items()):
            if s['id'] == sid:
                del self.sessions[tok]
                self.sessions_stats['deleted'] += 1
                self.event('session-delete', id=sid)
                return Reply(204)
        return rf_error(404, 'ResourceMissingAtURI', 'The session %s was not found.' % sid)

    def _done(self):
        return Reply(200, _success_body()) if self.d['action_body'] else Reply(204)

    def _allowed(self, act, param='ResetType'):
        inline = act.get(param + '@Redfish.AllowableValues')
        if isinstance(inline, list):
            return inline
        info = act.get('@Redfish.ActionInfo')
        if isinstance(info, str):
            ai = self.get(info) or {}
            for p in ai.get('Parameters', []):
                if isinstance(p, dict) and p.get('Name') == param \
                        and isinstance(p.get('AllowableValues'), list):
                    return p['AllowableValues']
        return STD_RESET_TYPES

    def _action(self, name, uri, target, body):
        res = self.get(uri)
        act = (res.get('Actions') or {}).get(name)
        if not isinstance(act, dict) or act.get('target') != target:
            return rf_error(404, 'ResourceMissingAtURI', 'The action %s was not found.' % target)
        if name == '#ComputerSystem.Reset':
            return self._reset(uri, act, body)
        if name == '#Manager.Reset':
            rt = self._reset_type(act, body)
            self.event('manager-reset', manager=uri, type=rt)
            self.update.manager_reset(uri, rt)
            return self._done()
        if name == '#LogService.ClearLog':
            self._clear_log(uri)
            return self._done()
        return rf_error(400, 'ActionNotSupported',
                        'The action %s is not supported by the emulator.' % name)

    def _reset_type(self, act, body):
        if not isinstance(body, dict):
            raise _Bad(rf_error(400, 'MalformedJSON', 'The request body is not a JSON object.'))
        if 'ResetType' not in body:
            raise _Bad(rf_error(400, 'ActionParameterMissing',
                                'The action requires the parameter ResetType.'))
        rt = body['ResetType']
        if not isinstance(rt, str):
            raise _Bad(rf_error(400, 'ActionParameterValueTypeError',
                                'The value for the parameter ResetType is of a different type '
                                'than the parameter can accept.'))
        allowed = self._allowed(act)
        if rt not in allowed:
            raise _Bad(rf_error(400, 'ActionParameterValueNotInList',
                                "The value '%s' for the parameter ResetType is not in the list "
                                "of acceptable values (%s)." % (rt, ', '.join(allowed))))
        return rt

    def _reset(self, sys_uri, act, body):
        rt = self._reset_type(act, body)
        before = (self.get(sys_uri) or {}).get('PowerState')
        now = {'PoweringOn': 'On', 'PoweringOff': 'Off'}.get(before, before)
        conflict = False
        if rt in ('On', 'ForceOn'):
            after, conflict = 'On', now == 'On'
        elif rt in ('ForceOff', 'GracefulShutdown'):
            after, conflict = 'Off', now == 'Off'
        elif rt in ('ForceRestart', 'GracefulRestart', 'PowerCycle'):
            after, conflict = 'On', now == 'Off'
        elif rt == 'PushPowerButton':
            after = 'Off' if now == 'On' else 'On'
        else:  # Nmi
            after, conflict = now, now == 'Off'
        if conflict and self.reset_conflict:
            return rf_error(409, 'ResourceInUse' if rt != 'Nmi' else 'ActionNotSupported',
                            'Unable to perform %s: the server is already powered %s.'
                            % (rt, now.lower() if now else 'unknown'))
        self.event('reset', system=sys_uri, type=rt, **{'from': before, 'to': after})
        self.update.system_reset(sys_uri, rt, now, after)
        t = self.timers.pop(sys_uri, None)
        if t:
            t.cancel()
        sysobj = self.own(sys_uri)
        if self.transition > 0 and after != now:
            sysobj['PowerState'] = 'PoweringOn' if after == 'On' else 'PoweringOff'
            timer = threading.Timer(self.transition, self._finish_transition, (sys_uri, after))
            timer.daemon = True
            self.timers[sys_uri] = timer
            timer.start()
        else:
            sysobj['PowerState'] = after
        self.touch(sys_uri)
        redfish_bios.on_reset(self, sys_uri, rt, now, after)
        return self._done()

    def _finish_transition(self, sys_uri, state):
        with self.lock:
            if self.timers.get(sys_uri) is threading.current_thread():
                del self.timers[sys_uri]
                self.own(sys_uri)['PowerState'] = state
                self.touch(sys_uri)

    def _clear_log(self, ls_uri):
        ls = self.get(ls_uri) or {}
        entries = (ls.get('Entries') or {}).get('@odata.id')
        n = 0
        if entries and self.get(entries) is not None:
            coll = self.own(entries)
            for m in coll.get('Members', []):
                if isinstance(m, dict) and isinstance(m.get('@odata.id'), str):
                    self.remove(m['@odata.id'])
            n = len(coll.get('Members', []))
            coll['Members'] = []
            coll['Members@odata.count'] = 0
            self.touch(entries)
        self.event('clearlog', uri=ls_uri, removed=n)

    def precondition(self, uri, headers):
        """The error a write of @uri meets for its If-Match header (428 when the BMC
        requires one and there is none, 412 when it names another ETag), or None."""
        im = headers.get('If-Match')
        if im is None and self.require_if_match:
            return rf_error(428, 'PreconditionRequired',
                            'A precondition header (If-Match) is required for this operation.')
        if im is not None and im.strip() != '*' \
                and not any(_etag_equal(t, self.etag(uri)) for t in _split_etags(im)):
            return rf_error(412, 'PreconditionFailed',
                            'The ETag supplied did not match the ETag of the resource.')
        return None

    def _patch_system(self, uri, headers, body):
        refused = self.precondition(uri, headers)
        if refused:
            return refused
        if not isinstance(body, dict) or not body:
            return rf_error(400, 'MalformedJSON', 'The request body is not a JSON object.')
        res = self.get(uri)
        boot = res.get('Boot')
        changes = {}
        for key, value in body.items():
            if key == 'Boot':
                if not isinstance(value, dict) or not isinstance(boot, dict):
                    if not isinstance(boot, dict):
                        return rf_error(400, 'PropertyUnknown',
                                        'The property Boot is not in the list of valid '
                                        'properties for the resource.')
                    return rf_error(400, 'PropertyValueTypeError',
                                    'The value for the property Boot is of a different type.')
                for bk, bv in value.items():
                    err = _check_boot(boot, bk, bv)
                    if err:
                        return err
                    changes[bk] = bv
            elif key == 'AssetTag' and key in res:
                if not isinstance(value, str):
                    return rf_error(400, 'PropertyValueTypeError',
                                    'The value for the property AssetTag is of a different type.')
            elif key in res:
                return rf_error(400, 'PropertyNotWritable',
                                'The property %s is a read only property and cannot be '
                                'assigned a value.' % key)
            else:
                return rf_error(400, 'PropertyUnknown',
                                'The property %s is not in the list of valid properties for '
                                'the resource.' % key)
        obj = self.own(uri)
        if changes:
            obj['Boot'].update(changes)
        if 'AssetTag' in body:
            obj['AssetTag'] = body['AssetTag']
        self.touch(uri)
        self.event('patch', uri=uri, body=body)
        return self._done()


class _Bad(Exception):
    def __init__(self, reply):
        super().__init__(reply.status)
        self.reply = reply


def _norm_path(raw_path):
    """The path of a request target as resources are keyed: decoded, no query, no trailing /."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(raw_path).path)
    if len(path) > 1 and path.endswith('/'):
        path = path.rstrip('/')
    return path


DEEP_MARK = '@@deep-reset-values@@'


def _deep_array(depth, inner=b'"On"'):
    """A JSON array nested @depth deep, built as text (json.dumps would recurse)."""
    return b'[' * depth + inner + b']' * depth


def _split_etags(value):
    return [t for t in re.findall(r'(?:W/)?"[^"]*"|[^,\s]+', value)]


def _json_body(body):
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _Bad(rf_error(400, 'MalformedJSON',
                            'The request body submitted was malformed JSON and could not be '
                            'parsed by the receiving service.')) from None


def _int_param(query, name, default):
    v = query.get(name)
    if v is None:
        return default
    if not v.isdigit():
        raise _Bad(rf_error(400, 'QueryParameterValueTypeError',
                            "The value '%s' for the query parameter %s is of a different type "
                            "than the parameter can accept." % (v, name)))
    return int(v)


def _check_boot(boot, key, value):
    if key not in BOOT_KEYS:
        if key in boot:
            return rf_error(400, 'PropertyNotWritable',
                            'The property %s is a read only property.' % key)
        return rf_error(400, 'PropertyUnknown', 'The property %s is not in the list of valid '
                        'properties for the resource.' % key)
    if key not in boot:
        return rf_error(400, 'PropertyUnknown', 'The property %s is not supported by this '
                        'system.' % key)
    if key in ('UefiTargetBootSourceOverride', 'BootNext'):
        if not isinstance(value, str):
            return rf_error(400, 'PropertyValueTypeError',
                            'The value for the property %s is of a different type.' % key)
        return None
    if not isinstance(value, str):
        return rf_error(400, 'PropertyValueTypeError',
                        "The value '%s' for the property %s is of a different type than the "
                        "property can accept." % (json.dumps(value), key))
    allowed = boot.get(key + '@Redfish.AllowableValues')
    if not isinstance(allowed, list):
        allowed = {'BootSourceOverrideTarget': STD_BOOT_TARGETS,
                   'BootSourceOverrideEnabled': ['Disabled', 'Once', 'Continuous'],
                   'BootSourceOverrideMode': ['UEFI', 'Legacy']}[key]
    if value not in allowed:
        return rf_error(400, 'PropertyValueNotInList',
                        "The value '%s' for the property %s is not in the list of acceptable "
                        "values (%s)." % (value, key, ', '.join(allowed)))
    return None


def _names(obj):
    return {obj.get('Name'), obj.get('MemberId'), obj.get('Id')} - {None}


def _has_sensor(obj, name):
    if isinstance(obj, dict):
        if name in _names(obj):
            return True
        return any(_has_sensor(v, name) for v in obj.values() if isinstance(v, (dict, list)))
    if isinstance(obj, list):
        return any(_has_sensor(v, name) for v in obj)
    return False


def _set_sensor(obj, name, spec):
    """Set reading/health of every object named @name inside @obj."""
    hits = 0
    if isinstance(obj, list):
        for v in obj:
            hits += _set_sensor(v, name, spec)
        return hits
    if not isinstance(obj, dict):
        return 0
    if name in _names(obj):
        hits += 1
        if 'reading' in spec:
            target = obj
            key = next((k for k in READING_KEYS if k in obj), None)
            if key is None:
                for sub in ('SpeedPercent', 'Reading'):
                    if isinstance(obj.get(sub), dict) and 'Reading' in obj[sub]:
                        target, key = obj[sub], 'Reading'
                        break
            if key is None:
                key = 'Reading'
            target[key] = spec['reading']
        if 'health' in spec:
            st = obj.get('Status')
            if not isinstance(st, dict):
                st = obj['Status'] = {'State': 'Enabled'}
            st['Health'] = spec['health']
        return hits
    for v in obj.values():
        if isinstance(v, (dict, list)):
            hits += _set_sensor(v, name, spec)
    return hits


# ---- servers (worker side) ---------------------------------------------------

class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address, node, handler):
        self.node = node
        super().__init__(address, handler)

    def handle_error(self, request, client_address):
        # a client that went away (timeouts, hang mode) is not worth a traceback
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, socket.timeout)):
            return
        super().handle_error(request, client_address)

    def server_bind(self):
        # HTTPServer.server_bind would look up the FQDN of the address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class RedfishServer(_Server):
    def __init__(self, address, node):
        super().__init__(address, node, RedfishHandler)

    def finish_request(self, request, client_address):
        node = self.node
        with node.lock:
            node.conn_seq += 1
            conn = node.conn_seq
            node.counters['connections'] += 1
            ctx = node.alt_ctx if node.cert_after is not None and conn > node.cert_after \
                else node.ssl_ctx
        try:
            request.settimeout(15)
            # The headers and the body go out as two writes: with Nagle on, the
            # body waited for the client's delayed ACK, 40 ms on every answer.
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            with node.lock:
                node.counters['tls_failures'] += 1
            request.close()
            return
        with node.lock:
            node.counters['handshakes'] += 1
        try:
            RedfishHandler(tls, client_address, self, conn)
        finally:
            try:
                tls.close()
            except OSError:
                pass


class RedfishHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'redfish-emu'
    sys_version = ''
    timeout = 60

    def __init__(self, request, client_address, server, conn):
        self.conn = conn
        self.served = 0  # requests on this connection (keepalive_max)
        super().__init__(request, client_address, server)

    def version_string(self):
        return self.server_version

    def log_message(self, format, *args):  # noqa: A002
        pass

    def _serve(self, method):
        node = self.server.node
        self.served += 1
        if node.keepalive_max and self.served >= node.keepalive_max:
            self.close_connection = True  # the answer says Connection: close, then it closes
        try:
            body = self._read_body()
        except _Bad as e:
            self.close_connection = True
            self._send(node, method, e.reply, 'none', None)
            return
        delay = node.slow
        if method == 'DELETE' and node.logout_delay and \
                _norm_path(self.path).startswith(SESSIONS + '/'):
            delay += node.logout_delay  # the session-delete event is stamped after it
        if delay > 0:
            time.sleep(delay)
        if node.hang and not node.stopping:
            with node.lock:
                node.held += 1
            while node.hang and not node.stopping:
                time.sleep(0.05)
            with node.lock:
                node.held -= 1
        fault = 'close' if node.update.drop(self.conn) else node.fault_of(self.path)
        if fault == 'hang':
            until = time.monotonic() + FAULT_HANG_MAX
            with node.lock:
                node.held += 1
            while node.fault_of(self.path) == 'hang' and not node.stopping \
                    and time.monotonic() < until:
                time.sleep(0.05)
            with node.lock:
                node.held -= 1
            fault = node.fault_of(self.path)
        if fault in ('hang', 'close'):
            # No answer at all: the connection is dropped (logged with status 0).
            node.access({'t': round(time.time(), 6), 'conn': self.conn, 'method': method,
                         'path': self.path, 'auth': 'none', 'user': None, 'status': 0,
                         'bytes': 0})
            self.close_connection = True
            return
        if fault == 'garbage':
            self._send(node, method, Reply(200, b'{"@odata.id": "' + self.path.encode()
                                           + b'", "Name": '), 'none', None)
            return
        if fault in ('endless', 'bloat'):
            page = _endless_page if fault == 'endless' else _bloat_page
            self._send(node, method, page(self.path), 'none', None)
            return
        if fault is not None and fault != 'trickle':
            self._send(node, method, rf_error(fault, 'GeneralError', node.fault_message or
                                              'A planted fault (HTTP %d).' % fault), 'none', None)
            return
        if method == 'GET' and redfish_events.is_stream(node, self.path):
            redfish_events.serve(self, node)
            return
        if method == 'GET' and redfish_events.attachment(self, node):
            return
        try:
            reply, kind, user = node.handle(method, self.path, self.headers, body)
        except _Bad as e:
            reply, kind, user = e.reply, 'none', None
        except Exception as e:  # a bug in the emulator: answer 500, keep serving
            import traceback
            traceback.print_exc()
            reply, kind, user = rf_error(500, 'InternalError', 'emulator error: %s' % e), 'none', None
        self._send(node, method, reply, kind, user, trickle=fault == 'trickle')

    def _serve_turn(self, method):
        # one_at_a_time: a BMC that answers one request at a time, whatever the
        # connection, as many real ones do; an event stream does not hold the turn.
        node = self.server.node
        if not node.one_at_a_time or (method == 'GET' and
                                      redfish_events.is_stream(node, self.path)):
            self._serve(method)
            return
        with node.turn:
            self._serve(method)
            self.wfile.flush()

    def handle_expect_100(self):
        # A push the update service refuses anyway (busy, another update) is
        # answered before its body is read: the client need not send it.
        refused = self.server.node.update.refuse_early(self.command, self.path)
        if refused is None:
            return super().handle_expect_100()
        self.close_connection = True
        self._send(self.server.node, self.command, refused, 'none', None)
        return False

    def _read_body(self):
        if 'chunked' in (self.headers.get('Transfer-Encoding') or '').lower():
            raise _Bad(rf_error(411, 'GeneralError', 'Chunked bodies are not supported.'))
        n = self.headers.get('Content-Length')
        if n is None:
            return b''
        if not n.strip().isdigit():
            raise _Bad(rf_error(400, 'GeneralError', 'Bad Content-Length.'))
        n = int(n)
        if n > MAX_BODY:
            raise _Bad(rf_error(413, 'GeneralError', 'The request body is too large.'))
        return self.rfile.read(n)

    def _send(self, node, method, reply, kind, user, trickle=False):
        with node.lock:
            bs = node.counters['by_status']
            bs[str(reply.status)] = bs.get(str(reply.status), 0) + 1
        node.access({'t': round(time.time(), 6), 'conn': self.conn, 'method': method,
                     'path': self.path, 'auth': kind, 'user': user, 'status': reply.status,
                     'bytes': len(reply.body)})
        self.send_response(reply.status)
        if reply.content_type:
            ctype = reply.content_type
            if ctype == 'application/json':
                ctype = 'application/json; charset=utf-8'
            self.send_header('Content-Type', ctype)
        self.send_header('OData-Version', '4.0')
        self.send_header('Cache-Control', 'no-cache')
        for k, v in reply.headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(reply.body)))
        if self.close_connection:
            self.send_header('Connection', 'close')
        self.end_headers()
        if method != 'HEAD' and reply.body and trickle:
            self.wfile.flush()
            for k in range(len(reply.body)):
                if node.stopping or node.fault_of(self.path) != 'trickle':
                    self.close_connection = True
                    return
                self.wfile.write(reply.body[k:k + 1])
                self.wfile.flush()
                time.sleep(TRICKLE_S)
        elif method != 'HEAD' and reply.body:
            self.wfile.write(reply.body)

    def do_GET(self):
        self._serve_turn('GET')

    def do_HEAD(self):
        self._serve_turn('HEAD')

    def do_POST(self):
        self._serve_turn('POST')

    def do_PATCH(self):
        self._serve_turn('PATCH')

    def do_PUT(self):
        self._serve_turn('PUT')

    def do_DELETE(self):
        self._serve_turn('DELETE')

    def do_OPTIONS(self):
        self._serve_turn('OPTIONS')


class ControlServer(_Server):
    def __init__(self, address, node):
        super().__init__(address, node, ControlHandler)


class ControlHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.0'
    server_version = 'redfish-emu-control'
    timeout = 30

    def log_message(self, format, *args):  # noqa: A002
        pass

    def _answer(self, status, obj=None, raw=None, ctype='application/json'):
        data = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n else b''

    def _json(self):
        data = self._body()
        return json.loads(data) if data else {}

    def _dispatch(self, method):
        node = self.server.node
        split = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(split.query))
        path = split.path
        try:
            ev = redfish_events.control(node, method, path, self)
            if ev is not None:
                return self._answer(*ev)
            upd = node.update.control(method, path)
            if upd is not None:
                return self._answer(*upd)
            if method == 'GET' and path == '/state':
                return self._answer(200, node.snapshot())
            if method == 'GET' and path == '/resource':
                with node.lock:
                    uri = q.get('uri', '')
                    if uri in node.raw:
                        data, ctype = node.raw[uri]
                        return self._answer(200, raw=data, ctype=ctype)
                    obj = node.view(uri)
                    if obj is None:
                        return self._answer(404, {'error': 'no resource %s' % uri})
                    return self._answer(200, obj)
            if method == 'PUT' and path == '/resource':
                data = self._body()
                ctype = self.headers.get('Content-Type') or 'application/json'
                with node.lock:
                    node.raw[q['uri']] = (data, ctype)
                    node.gone.discard(q['uri'])
                return self._answer(200, {'ok': True})
            if method == 'DELETE' and path == '/resource':
                with node.lock:
                    node.raw.pop(q['uri'], None)
                    node.remove(q['uri'])
                return self._answer(200, {'ok': True})
            if method == 'POST':
                body = self._json()
                if path == '/power':
                    node.set_power(body.get('system') or node.main_system,
                                   str(body['state']))
                elif path == '/mode':
                    node.override({k: v for k, v in body.items()
                                   if k in ('resetting', 'retry_after', 'slow', 'hang')})
                elif path == '/override':
                    node.override(body)
                elif path == '/redirect':
                    with node.lock:
                        node.redirects[body['uri']] = (body['location'],
                                                       int(body.get('status', 307)))
                elif path == '/sessions/expire':
                    node.expire_sessions()
                elif path == '/cert/rotate':
                    fp = _rotate_cert(node, bool(body.get('self_signed')))
                    return self._answer(200, {'ok': True, 'fingerprint': fp})
                elif path == '/clear':
                    node.clear()
                else:
                    return self._answer(404, {'error': 'no control %s' % path})
                return self._answer(200, {'ok': True})
            return self._answer(404, {'error': 'no control %s %s' % (method, path)})
        except (LabError, KeyError, ValueError, TypeError) as e:
            return self._answer(400, {'error': str(e) or e.__class__.__name__})

    def do_GET(self):
        self._dispatch('GET')

    def do_POST(self):
        self._dispatch('POST')

    def do_PUT(self):
        self._dispatch('PUT')

    def do_DELETE(self):
        self._dispatch('DELETE')


def _rotate_cert(node, self_signed):
    key = os.path.join(node.dir, 'key.pem')
    cert = os.path.join(node.dir, 'cert.pem')
    if self_signed:
        make_node_cert(key, cert, node.addr)
    else:
        make_node_cert(key, cert, node.addr, os.path.join(node.workdir, 'ca.pem'),
                       os.path.join(node.workdir, 'ca.key'))
    node.ssl_ctx = node._ssl_context()
    return cert_fingerprint(cert)


def worker_main(workdir, index):
    workdir = os.path.abspath(workdir)
    with open(os.path.join(workdir, 'lab.json')) as f:
        desc = json.load(f)
    with open(os.path.join(workdir, 'password')) as f:
        password = f.read().rstrip('\n')
    try:
        with open(os.path.join(workdir, 'passwords.json')) as f:
            per_node = json.load(f)
    except FileNotFoundError:
        per_node = {}
    overrides = desc.get('overrides', {})
    nodes = []
    servers = []
    for nd in desc['nodes']:
        if nd['worker'] != index:
            continue
        node = Node(nd, workdir, desc['user'], per_node.get(str(nd['index']), password))
        node.override(overrides.get(str(nd['index']), {}), start=True)
        nodes.append(node)
        servers.append(RedfishServer((nd['addr'], nd['port']), node))
        servers.append(ControlServer((nd['addr'], nd['control_port']), node))
    stop_r, stop_w = os.pipe()

    def on_signal(signum, frame):
        os.write(stop_w, b'x')

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sel = selectors.DefaultSelector()
    for srv in servers:
        sel.register(srv.socket, selectors.EVENT_READ, srv)
    sel.register(stop_r, selectors.EVENT_READ, None)
    print('worker %d: %d nodes up' % (index, len(nodes)), file=sys.stderr, flush=True)
    while True:
        redfish_update.tick(sel, servers)
        for key, _ in sel.select(timeout=0.1):
            if key.data is None:
                for node in nodes:
                    node.stopping = True
                    try:
                        node.log.flush()
                    except (OSError, ValueError):
                        pass
                sys.stderr.flush()
                os._exit(0)
            key.data._handle_request_noblock()


# ---- the lab (test side) --------------------------------------------------

class NodeInfo:
    def __init__(self, lab, index, vendor):
        self.index = index
        self.addr = _node_address(lab.prefix, index)
        self.vendor = vendor
        self.port = lab.port
        self.control_port = lab.control_port
        self.dir = os.path.join(lab.workdir, 'node%d' % index)
        self.worker = None

    @property
    def url(self):
        return 'https://%s:%d' % (self.addr, self.port)


class RedfishLab:
    """A fleet of emulated Redfish BMCs served by worker processes. See the
    module documentation and REDFISH-EMU.md."""

    def __init__(self, workdir, prefix='127.32.0', count=5, first=1, vendors=None,
                 user='admin', password=None, port=REDFISH_PORT, control_port=CONTROL_PORT,
                 power='on', overrides=None, workers=None, start_timeout=None):
        self.workdir = os.path.abspath(workdir)
        self.prefix = prefix
        self.count = int(count)
        self.first = int(first)
        self.user = user
        self.password = password if password is not None else 'secret-' + secrets.token_hex(6)
        self.port = int(port)
        self.control_port = int(control_port)
        self.power_default = str(power).capitalize()
        if self.power_default not in ('On', 'Off'):
            raise LabError("initial power '%s' is not on or off" % power)
        if self.count < 1:
            raise LabError('count %d is below 1' % self.count)
        if isinstance(vendors, str):
            vendors = [v for v in vendors.split(',') if v]
        self.vendors = [vendor_name(v) for v in (vendors or VENDOR_ORDER)]
        self.overrides = {int(k): dict(v) for k, v in (overrides or {}).items()}
        self.start_timeout = start_timeout
        self.nodes = {}
        for k, i in enumerate(range(self.first, self.first + self.count)):
            ov = self.overrides.get(i, {})
            unknown = set(ov) - OVERRIDE_KEYS
            if unknown:
                raise LabError('node %d: unknown override %s' % (i, ', '.join(sorted(unknown))))
            vendor = vendor_name(ov.get('vendor', self.vendors[k % len(self.vendors)]))
            self.nodes[i] = NodeInfo(self, i, vendor)
        ncpu = os.cpu_count() or 1
        self.workers = int(workers) if workers else max(1, min(ncpu, math.ceil(self.count / 8)))
        self.workers = min(self.workers, self.count)
        for k, n in enumerate(self.nodes.values()):
            n.worker = k % self.workers
        self.worker_pids = {}
        self.procs = {}
        self.started = False

    # -- description --

    def node(self, i):
        try:
            return self.nodes[i]
        except KeyError:
            raise LabError('no node %d in this lab (%d..%d)'
                           % (i, self.first, self.first + self.count - 1)) from None

    def addr(self, i):
        return self.node(i).addr

    def url(self, i):
        return self.node(i).url

    def vendor(self, i):
        return self.node(i).vendor

    def indices(self):
        return list(self.nodes)

    @property
    def cacert(self):
        return os.path.join(self.workdir, 'ca.pem')

    @property
    def other_cacert(self):
        return os.path.join(self.workdir, 'other-ca.pem')

    def describe(self):
        ov = {}
        for i, v in self.overrides.items():
            rest = {k: vv for k, vv in v.items() if k not in ('password', 'vendor')}
            if rest:
                ov[str(i)] = rest
        return {
            'prefix': self.prefix, 'first': self.first, 'count': self.count,
            'user': self.user, 'port': self.port, 'control_port': self.control_port,
            'power': self.power_default, 'vendors': self.vendors, 'cacert': self.cacert,
            'other_cacert': self.other_cacert, 'overrides': ov,
            'password_overridden': sorted(i for i, v in self.overrides.items() if 'password' in v),
            'nodes': [{'index': n.index, 'addr': n.addr, 'port': n.port,
                       'control_port': n.control_port, 'vendor': n.vendor, 'worker': n.worker,
                       'dir': n.dir, 'url': n.url} for n in self.nodes.values()],
            'workers': [{'index': k, 'pid': self.worker_pids.get(k)}
                        for k in range(self.workers)],
        }

    @classmethod
    def attach(cls, workdir):
        """A RedfishLab for workers that `redfish_emu.py start` left running."""
        workdir = os.path.abspath(workdir)
        with open(os.path.join(workdir, 'lab.json')) as f:
            desc = json.load(f)
        with open(os.path.join(workdir, 'password')) as f:
            password = f.read().rstrip('\n')
        overrides = {int(k): dict(v) for k, v in desc['overrides'].items()}
        for nd in desc['nodes']:
            overrides.setdefault(nd['index'], {})['vendor'] = nd['vendor']
        lab = cls(workdir, prefix=desc['prefix'], count=desc['count'], first=desc['first'],
                  user=desc['user'], password=password, port=desc['port'],
                  control_port=desc['control_port'], power=desc['power'],
                  vendors=desc['vendors'], overrides=overrides, workers=len(desc['workers']))
        for nd in desc['nodes']:
            lab.nodes[nd['index']].worker = nd['worker']
        for w in desc['workers']:
            lab.worker_pids[w['index']] = w['pid']
        lab.overrides = {int(k): dict(v) for k, v in desc['overrides'].items()}
        lab.started = True
        return lab

    # -- start and stop --

    def _live_recorded_pids(self):
        live = []
        for pid, _ in _recorded(self.workdir):
            if pid_alive(pid) and self._is_our_worker(pid):
                live.append(pid)
        return live

    def _is_our_worker(self, pid):
        argv = pid_cmdline(pid)
        if not argv:
            return False
        return (any(a.endswith(b'redfish_emu.py') for a in argv) and b'worker' in argv
                and self.workdir.encode() in argv)

    def _make_certs(self):
        w = self.workdir
        make_ca(os.path.join(w, 'ca.key'), os.path.join(w, 'ca.pem'), 'gpufleet test CA')
        make_ca(os.path.join(w, 'other-ca.key'), os.path.join(w, 'other-ca.pem'),
                'gpufleet other CA')
        ca, cakey = os.path.join(w, 'ca.pem'), os.path.join(w, 'ca.key')

        def one(n):
            make_node_cert(os.path.join(n.dir, 'key.pem'), os.path.join(n.dir, 'cert.pem'),
                           n.addr, ca, cakey)
        with ThreadPoolExecutor(max_workers=min(16, 2 * (os.cpu_count() or 1))) as ex:
            list(ex.map(one, self.nodes.values()))

    def start(self):
        """Start the workers and return once every node answers HTTPS."""
        if shutil.which('openssl') is None:
            raise LabError("'openssl' not found")
        os.makedirs(self.workdir, exist_ok=True)
        if self._live_recorded_pids():
            raise LabError("a lab is already running in '%s'" % self.workdir)
        for n in self.nodes.values():
            if os.path.isdir(n.dir):
                shutil.rmtree(n.dir)
            os.makedirs(n.dir)
            open(os.path.join(n.dir, 'access.log'), 'w').close()
        for n in self.nodes.values():  # fail early on a bad vendor tree
            load_tree(n.vendor)
        self._make_certs()
        write_atomic(os.path.join(self.workdir, 'password'), self.password + '\n', 0o600)
        write_atomic(os.path.join(self.workdir, 'passwords.json'),
               json.dumps({str(i): v['password'] for i, v in self.overrides.items()
                           if 'password' in v}), 0o600)
        write_atomic(os.path.join(self.workdir, 'addrs'),
               ''.join(n.addr + '\n' for n in self.nodes.values()))
        # every node's initial power goes in as an override
        for i in self.nodes:
            self.overrides.setdefault(i, {}).setdefault('power', self.power_default)
        self._write_desc()
        self.started = True
        try:
            for k in range(self.workers):
                log = open(os.path.join(self.workdir, 'worker%d.log' % k), 'ab')
                try:
                    p = subprocess.Popen(
                        [sys.executable, os.path.abspath(__file__), 'worker',
                         '--dir', self.workdir, '--worker', str(k)],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        cwd=self.workdir, start_new_session=True)
                finally:
                    log.close()
                self.procs[k] = p
                self.worker_pids[k] = p.pid
            self._write_desc()
            write_atomic(os.path.join(self.workdir, 'pids'),
                   ''.join('%d %d\n' % (pid, k) for k, pid in self.worker_pids.items()))
            self._wait_ready()
            # the readiness probes are not part of what tests look at
            with ThreadPoolExecutor(max_workers=16) as ex:
                list(ex.map(self.clear, self.indices()))
        except BaseException:
            self.stop()
            raise
        return self

    def _write_desc(self):
        write_atomic(os.path.join(self.workdir, 'lab.json'), json.dumps(self.describe(), indent=1))

    def _worker_failed(self, k):
        p = self.procs.get(k)
        dead = p.poll() is not None if p else not pid_alive(self.worker_pids.get(k, 0))
        if not dead:
            return None
        try:
            with open(os.path.join(self.workdir, 'worker%d.log' % k), errors='replace') as f:
                out = f.read().strip()[-2000:]
        except OSError:
            out = ''
        return 'worker %d exited: %s' % (k, out or 'no output')

    def _probe(self, n, ctx):
        try:
            conn = http.client.HTTPSConnection(n.addr, n.port, context=ctx, timeout=2)
            try:
                conn.request('GET', ROOT + '/')
                r = conn.getresponse()
                r.read()
                return r.status in (200, 503)
            finally:
                conn.close()
        except (OSError, http.client.HTTPException):
            return False

    def _wait_ready(self):
        timeout = self.start_timeout or 30 + 0.2 * self.count
        deadline = time.monotonic() + timeout
        ctx = ssl.create_default_context(cafile=self.cacert)
        pending = list(self.nodes.values())
        with ThreadPoolExecutor(max_workers=16) as ex:
            while pending:
                for k in range(self.workers):
                    why = self._worker_failed(k)
                    if why:
                        raise LabError(why)
                ok = list(ex.map(lambda n: self._probe(n, ctx), pending))
                pending = [n for n, good in zip(pending, ok) if not good]
                if not pending:
                    break
                if time.monotonic() >= deadline:
                    raise LabError('%d BMCs did not answer within %.0f s (nodes %s)'
                                   % (len(pending), timeout,
                                      ' '.join(str(n.index) for n in pending[:20])))
                time.sleep(0.1)

    def stop(self, grace=5.0):
        """SIGTERM every worker of this lab (by recorded PID, after checking
        its command line), SIGKILL what is left after @grace seconds."""
        victims = []
        for k, pid in self.worker_pids.items():
            if pid and pid_alive(pid) and self._is_our_worker(pid):
                victims.append((k, pid))
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self._reap(victims, time.monotonic() + grace)
        left = [(k, pid) for k, pid in victims if self._running(k, pid)]
        for _, pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap(left, time.monotonic() + 5.0)
        still = [k for k, pid in left if self._running(k, pid)]
        self.procs = {}
        self.started = False
        try:
            os.unlink(os.path.join(self.workdir, 'pids'))
        except FileNotFoundError:
            pass
        if still:
            raise LabError('workers %s did not exit' % ' '.join(map(str, still)))

    def _running(self, k, pid):
        p = self.procs.get(k)
        if p is not None:
            return p.poll() is None
        return pid_alive(pid)

    def _reap(self, victims, deadline):
        wait_gone(victims, lambda v: self._running(*v), deadline)

    def __enter__(self):
        if not self.started:
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- control --

    def ctl(self, i, method, path, body=None, raw=False, content_type='application/json'):
        """One control request to node @i: the decoded JSON answer (or bytes
        with @raw). Raises LabError on a non-2xx answer."""
        n = self.node(i)
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
        conn = http.client.HTTPConnection(n.addr, n.control_port, timeout=30)
        try:
            conn.request(method, path, body=body,
                         headers={'Content-Type': content_type} if body is not None else {})
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            raise LabError('control of node %d: %s' % (i, e)) from None
        finally:
            conn.close()
        if r.status // 100 != 2:
            raise LabError('control %s %s of node %d: %d %s'
                           % (method, path, i, r.status, data.decode(errors='replace')))
        if raw:
            return data
        return json.loads(data) if data else None

    def state(self, i):
        return self.ctl(i, 'GET', '/state')

    def power(self, i):
        return self.state(i)['power']

    def set_power(self, i, state, system=None):
        body = {'state': str(state).capitalize()}
        if system:
            body['system'] = system
        self.ctl(i, 'POST', '/power', body)

    def boot(self, i):
        return self.state(i)['boot']

    def sessions_open(self, i):
        return self.state(i)['sessions']['open']

    def events(self, i, kind=None):
        ev = self.state(i)['events']
        return [e for e in ev if kind is None or e['kind'] == kind]

    def fingerprint(self, i):
        return cert_fingerprint(os.path.join(self.node(i).dir, 'cert.pem'))

    def access_log(self, i):
        out = []
        with open(os.path.join(self.node(i).dir, 'access.log'), encoding='utf-8') as f:
            for line in f:
                if line.endswith('\n'):
                    out.append(json.loads(line))
        return out

    def clear(self, i):
        self.ctl(i, 'POST', '/clear', {})

    def set_mode(self, i, resetting=None, retry_after=None, slow=None, hang=None):
        body = {k: v for k, v in (('resetting', resetting), ('retry_after', retry_after),
                                  ('slow', slow), ('hang', hang)) if v is not None}
        self.ctl(i, 'POST', '/mode', body)

    def override(self, i, **keys):
        self.ctl(i, 'POST', '/override', keys)

    def resource(self, i, uri):
        data = self.ctl(i, 'GET', '/resource?uri=' + urllib.parse.quote(uri, safe='/'), raw=True)
        try:
            return json.loads(data)
        except ValueError:
            return data

    def put_resource(self, i, uri, data, content_type='application/json'):
        if not isinstance(data, bytes):
            data = json.dumps(data).encode()
        self.ctl(i, 'PUT', '/resource?uri=' + urllib.parse.quote(uri, safe='/'), data,
                 content_type=content_type)

    def delete_resource(self, i, uri):
        self.ctl(i, 'DELETE', '/resource?uri=' + urllib.parse.quote(uri, safe='/'))

    def redirect(self, i, uri, location, status=307):
        self.ctl(i, 'POST', '/redirect', {'uri': uri, 'location': location, 'status': status})

    def expire_sessions(self, i):
        self.ctl(i, 'POST', '/sessions/expire', {})

    def rotate_cert(self, i, self_signed=False):
        return self.ctl(i, 'POST', '/cert/rotate', {'self_signed': self_signed})['fingerprint']


# ---- self test -----------------------------------------------------------------

class _Client:
    """A keep-alive HTTPS client for the self test."""

    def __init__(self, lab, i, cafile=None):
        self.lab, self.i = lab, i
        self.ctx = ssl.create_default_context(cafile=cafile or lab.cacert)
        self.conn = http.client.HTTPSConnection(lab.addr(i), lab.port, context=self.ctx,
                                                timeout=20)
        self.auth = 'Basic ' + base64.b64encode(
            ('%s:%s' % (lab.user, lab.password)).encode()).decode()
        self.token = None

    def req(self, method, path, body=None, headers=None, auth=True):
        h = dict(headers or {})
        if auth:
            if self.token:
                h['X-Auth-Token'] = self.token
            else:
                h['Authorization'] = self.auth
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            h['Content-Type'] = 'application/json'
        self.conn.request(method, path, body=data, headers=h)
        r = self.conn.getresponse()
        raw = r.read()
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = raw
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), doc

    def close(self):
        self.conn.close()


def _expect(cond, what):
    if not cond:
        raise LabError('selftest: ' + what)


def selftest(workdir, prefix='127.32.250'):
    """Start one BMC per dialect and check the behaviours of REDFISH-EMU.md."""
    ov = {4: {'bmc_firmware': '7.00.00.00', 'reset_conflict': True},
          1: {'gpu_firmware': {'3': '96.00.99.00.01'}, 'power': 'Off'},
          3: {'sensors': {'Ambient Temp': {'reading': 55, 'health': 'Warning'}}},
          5: {'sel_entries': 60}}
    checks = 0
    with RedfishLab(workdir, prefix=prefix, count=5, overrides=ov) as lab:
        sysuri = {i: lab.state(i)['main_system'] for i in lab.indices()}
        # curl with the CA, Basic auth, and a wrong password
        pwfile = os.path.join(workdir, 'netrc')
        write_atomic(pwfile, 'default login %s password %s\n' % (lab.user, lab.password), 0o600)
        for i in lab.indices():
            r = subprocess.run(['curl', '-sS', '--fail', '--cacert', lab.cacert, '--netrc-file',
                                pwfile, lab.url(i) + ROOT + '/Systems'], capture_output=True)
            _expect(r.returncode == 0 and b'Members' in r.stdout,
                    'curl on node %d: %r' % (i, r.stderr))
            r = subprocess.run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}',
                                '--cacert', lab.cacert, '-u', 'admin:wrong',
                                lab.url(i) + ROOT + '/Systems'], capture_output=True, text=True)
            _expect(r.stdout == '401', 'wrong password on node %d gave %s' % (i, r.stdout))
            r = subprocess.run(['curl', '-sS', '-o', '/dev/null', '--cacert', lab.other_cacert,
                                lab.url(i) + ROOT], capture_output=True)
            _expect(r.returncode == 60, 'the other CA was accepted by node %d' % i)
            checks += 3
        for i in lab.indices():
            c = _Client(lab, i)
            st, h, doc = c.req('GET', ROOT, auth=False)
            _expect(st == 200 and 'RedfishVersion' in doc, 'service root of node %d' % i)
            st, h, doc = c.req('POST', SESSIONS, {'UserName': lab.user, 'Password': 'nope'},
                               auth=False)
            _expect(st == 401, 'login with a wrong password gave %d' % st)
            st, h, doc = c.req('POST', SESSIONS, {'UserName': lab.user,
                                                  'Password': lab.password}, auth=False)
            _expect(st == 201 and 'x-auth-token' in h and 'location' in h, 'login: %d' % st)
            c.token = h['x-auth-token']
            _expect(lab.sessions_open(i) == 1, 'one open session')
            # Reset: allowed values inline or via ActionInfo
            sysres = c.req('GET', sysuri[i])[2]
            act = sysres['Actions']['#ComputerSystem.Reset']
            inline = act.get('ResetType@Redfish.AllowableValues')
            if inline is None:
                ai = c.req('GET', act['@Redfish.ActionInfo'])[2]
                allowed = [p for p in ai['Parameters'] if p['Name'] == 'ResetType'][0][
                    'AllowableValues']
            else:
                allowed = inline
            bad = next(t for t in STD_RESET_TYPES if t not in allowed) \
                if set(STD_RESET_TYPES) - set(allowed) else 'Bogus'
            st, h, doc = c.req('POST', act['target'], {'ResetType': bad})
            _expect(st == 400 and 'error' in doc, '%s accepted on node %d' % (bad, i))
            before = lab.power(i)
            st, h, doc = c.req('POST', act['target'], {'ResetType': 'ForceOff'})
            if before == 'Off' and lab.state(i)['modes'] and i == 4:
                _expect(st == 409, 'dell ForceOff when off: %d' % st)
            else:
                _expect(st in (200, 204), 'ForceOff on node %d: %d %s' % (i, st, doc))
            _expect(lab.power(i) == 'Off', 'node %d not off' % i)
            st, h, doc = c.req('POST', act['target'], {'ResetType': 'On'})
            _expect(st in (200, 204) and lab.power(i) == 'On', 'On on node %d' % i)
            if i == 4:
                st, h, doc = c.req('POST', act['target'], {'ResetType': 'On'})
                _expect(st == 409, 'dell On when on gave %d' % st)
            _expect([e['type'] for e in lab.events(i, 'reset')][-2:] == ['ForceOff', 'On'],
                    'reset events of node %d' % i)
            # Boot PATCH with ETags
            if 'Boot' in sysres and 'BootSourceOverrideTarget' in sysres['Boot']:
                st, h, res = c.req('GET', sysuri[i])
                tag = h.get('etag') or res.get('@odata.etag')
                st, h, doc = c.req('PATCH', sysuri[i], {'Boot': {
                    'BootSourceOverrideTarget': 'Pxe', 'BootSourceOverrideEnabled': 'Once'}},
                    headers={'If-Match': tag} if tag else None)
                _expect(st in (200, 204), 'boot patch on node %d: %d %s' % (i, st, doc))
                _expect(lab.boot(i)['BootSourceOverrideTarget'] == 'Pxe', 'boot not set')
                if tag:
                    st, h, doc = c.req('PATCH', sysuri[i], {'Boot': {
                        'BootSourceOverrideTarget': 'Hdd'}}, headers={'If-Match': tag})
                    _expect(st == 412, 'stale etag on node %d gave %d' % (i, st))
                st, h, doc = c.req('PATCH', sysuri[i], {'Boot': {
                    'BootSourceOverrideTarget': 'Nowhere'}})
                _expect(st == 400, 'bad boot target accepted on node %d' % i)
            # firmware inventory, paging and $expand
            seen = []
            url = FW_INV
            while url:
                st, h, doc = c.req('GET', url)
                _expect(st == 200, 'firmware page %s: %d' % (url, st))
                seen += [m['@odata.id'] for m in doc['Members']]
                url = doc.get('Members@odata.nextLink')
            _expect(len(seen) == len(set(seen)) == doc['Members@odata.count'],
                    'paging of node %d: %d members, count %s'
                    % (i, len(seen), doc['Members@odata.count']))
            st, h, doc = c.req('GET', FW_INV + '?$expand=.($levels=1)')
            _expect(st == 200 and 'Version' in doc['Members'][0], '$expand on node %d' % i)
            st, h, doc = c.req('GET', FW_INV + '?$expand=*($levels=9)')
            _expect(st == 400, '$levels=9 accepted on node %d' % i)
            # SEL clear
            sel = lab.state(i)['sel']
            ls = c.req('GET', sel)[2]
            target = ls['Actions']['#LogService.ClearLog']['target']
            st, h, doc = c.req('POST', target, {})
            _expect(st in (200, 204), 'clear log: %d' % st)
            st, h, doc = c.req('GET', ls['Entries']['@odata.id'])
            _expect(doc['Members@odata.count'] == 0, 'log not cleared on node %d' % i)
            # keep-alive: all of this on one connection
            conns = {r['conn'] for r in lab.access_log(i) if r['auth'] == 'session'}
            _expect(len(conns) == 1, 'node %d saw %d connections' % (i, len(conns)))
            st, h, doc = c.req('DELETE', '%s/%s' % (SESSIONS, lab.state(i)['sessions']['ids'][0]))
            _expect(st == 204 and lab.sessions_open(i) == 0, 'logout on node %d' % i)
            st, h, doc = c.req('GET', ROOT + '/Systems')
            _expect(st == 401, 'deleted session still works on node %d' % i)
            c.close()
            checks += 20
        # overrides
        c = _Client(lab, 4)
        inv = c.req('GET', FW_INV)[2]
        ids = [m['@odata.id'].rsplit('/', 1)[1] for m in inv['Members']]
        _expect('Installed-25227-7.00.00.00__iDRAC.Embedded.1-1' in ids, 'dell id not renamed')
        c = _Client(lab, 1)
        _expect(c.req('GET', FW_INV + '/GPU3')[2]['Version'] == '96.00.99.00.01', 'gpu fw')
        c = _Client(lab, 3)
        th = c.req('GET', '/redfish/v1/Chassis/1/Thermal')[2]
        amb = [t for t in th['Temperatures'] if t['Name'] == 'Ambient Temp']
        _expect(amb and amb[0]['ReadingCelsius'] == 55 and amb[0]['Status']['Health'] ==
                'Warning', 'sensor override')
        c = _Client(lab, 5)
        st, h, doc = c.req('GET', lab.state(5)['sel'] + '/Entries')
        _expect(doc['Members@odata.count'] == 0, 'hpe sel (cleared above)')
        lab.override(5, sel_entries=60, page_overlap=5)
        st, h, doc = c.req('GET', lab.state(5)['sel'] + '/Entries')
        _expect(len(doc['Members']) == 50 and '$skip=45' in doc['Members@odata.nextLink'],
                'overlapping pages: %s' % doc.get('Members@odata.nextLink'))
        st, h, doc = c.req('GET', FW_INV + '?$expand=*')
        _expect(st == 400, 'hpe accepted $expand=*')
        lab.override(5, expand=False)
        st, h, doc = c.req('GET', FW_INV + '?$expand=.')
        _expect(st == 501, 'expand:false gave %d' % st)
        # modes
        lab.set_mode(2, resetting=2, retry_after=1)
        c = _Client(lab, 2)
        st, h, doc = c.req('GET', ROOT)
        _expect(st == 503 and h.get('retry-after') == '1', 'resetting: %d' % st)
        time.sleep(2.1)
        _expect(c.req('GET', ROOT)[0] == 200, 'resetting did not end')
        lab.set_mode(2, slow=0.3)
        t0 = time.monotonic()
        c.req('GET', ROOT)
        _expect(time.monotonic() - t0 >= 0.3, 'slow mode')
        # one_at_a_time: two requests on two connections wait for each other
        lab.override(2, one_at_a_time=True)
        t0 = time.monotonic()
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(lambda _: _Client(lab, 2).req('GET', ROOT), range(2)))
        _expect(time.monotonic() - t0 >= 0.6, 'one_at_a_time answered at once')
        lab.override(2, one_at_a_time=False)
        lab.set_mode(2, slow=0)
        # certificate rotation, raw resources, redirects
        old = lab.fingerprint(2)
        new = lab.rotate_cert(2)
        _expect(old != new and new == lab.fingerprint(2), 'cert rotation')
        c = _Client(lab, 2)
        c.req('GET', ROOT)
        served = hashlib.sha256(c.conn.sock.getpeercert(True)).hexdigest()
        _expect(served == new, 'the rotated certificate is not served')
        lab.put_resource(2, ROOT + '/Chassis', b'{"Members": [', 'application/json')
        st, h, doc = c.req('GET', ROOT + '/Chassis')
        _expect(st == 200 and doc == b'{"Members": [', 'planted raw resource')
        lab.redirect(2, ROOT + '/Managers', 'https://127.32.9.9:8443/redfish/v1/Managers')
        st, h, doc = c.req('GET', ROOT + '/Managers')
        _expect(st == 307 and h['location'].startswith('https://127.32.9.9'), 'redirect')
        # auth variants, session limits, transitions, BMC reset
        lab.override(3, basic=False, max_sessions=1, transition=0.5)
        c = _Client(lab, 3)
        _expect(c.req('GET', ROOT + '/Systems')[0] == 401, 'basic:false still takes Basic')
        login = {'UserName': lab.user, 'Password': lab.password}
        st, h, _ = c.req('POST', SESSIONS, login, auth=False)
        _expect(st == 201, 'login on node 3')
        st2, _, _ = c.req('POST', SESSIONS, login, auth=False)
        _expect(st2 == 503, 'max_sessions=1 allowed a second session (%d)' % st2)
        c.token = h['x-auth-token']
        act = c.req('GET', sysuri[3])[2]['Actions']['#ComputerSystem.Reset']['target']
        c.req('POST', act, {'ResetType': 'ForceOff'})
        _expect(lab.power(3) == 'PoweringOff', 'transition: %s' % lab.power(3))
        time.sleep(0.7)
        _expect(lab.power(3) == 'Off', 'transition did not end')
        lab.expire_sessions(3)
        _expect(c.req('GET', ROOT + '/Systems')[0] == 401, 'expired session still works')
        lab.override(2, sessions=False)
        c = _Client(lab, 2)
        _expect(c.req('POST', SESSIONS, login, auth=False)[0] == 404, 'sessions:false')
        _expect('SessionService' not in c.req('GET', ROOT)[2], 'sessions:false root')
        mgr = c.req('GET', ROOT + '/Managers/BMC')[2]['Actions']['#Manager.Reset']['target']
        st, _, doc = c.req('POST', mgr, {'ResetType': 'ForceRestart'})
        _expect(st == 204, 'manager reset: %d %s' % (st, doc))
        c = _Client(lab, 2)   # the reset closed the old connection
        _expect(c.req('GET', ROOT)[0] == 503, 'no 503 after a BMC reset')
        st, h, _ = c.req('HEAD', ROOT)
        _expect(st == 503, 'HEAD during BMC reset')
        checks += 26
    upd_prefix = '%s.%d' % (prefix.rsplit('.', 1)[0], int(prefix.rsplit('.', 1)[1]) + 1)
    return checks + redfish_update.selftest(os.path.join(workdir, 'update'), upd_prefix)


redfish_bios.bind(sys.modules[__name__])
redfish_events.bind(sys.modules[__name__])


# ---- command line ------------------------------------------------------------

def _recorded(workdir):
    recs = []
    try:
        with open(os.path.join(os.path.abspath(workdir), 'pids')) as f:
            for line in f:
                pid, k = line.split()[:2]
                recs.append((int(pid), int(k)))
    except FileNotFoundError:
        pass
    return recs


def _read_secret(path):
    with open(path) as f:
        return f.readline().rstrip('\n')


def _parse_node_opt(text):
    m = re.fullmatch(r'(\d+):([a-z_]+)=(.*)', text, re.S)
    if not m:
        raise LabError("--node '%s' is not INDEX:KEY=VALUE" % text)
    try:
        value = json.loads(m.group(3))
    except ValueError:
        value = m.group(3)
    return int(m.group(1)), m.group(2), value


def _cmd_start(args):
    overrides = {}
    if args.overrides_file:
        with open(args.overrides_file) as f:
            overrides = {int(k): dict(v) for k, v in json.load(f).items()}
    every = list(args.every)
    if args.delay_ms is not None:
        every.append('slow=%s' % (max(0.0, args.delay_ms) / 1000.0))
    if args.one_at_a_time:
        every.append('one_at_a_time=true')
    for item in every:   # every node, under what --node and the file say
        _, k, v = _parse_node_opt('0:' + item)
        for i in range(args.first, args.first + args.count):
            overrides.setdefault(i, {}).setdefault(k, v)
    for item in args.node:
        i, k, v = _parse_node_opt(item)
        overrides.setdefault(i, {})[k] = v
    password = _read_secret(args.password_file) if args.password_file else None
    lab = RedfishLab(args.dir, prefix=args.prefix, count=args.count, first=args.first,
                     vendors=args.vendors, user=args.user, password=password, port=args.port,
                     control_port=args.control_port, power=args.power, overrides=overrides,
                     workers=args.workers, start_timeout=args.timeout)
    t0 = time.monotonic()
    lab.start()
    print('redfish_emu: %d BMCs up in %.1f s on %s..%s port %d, %d workers (user %s, '
          'password in %s, CA %s)'
          % (lab.count, time.monotonic() - t0, lab.addr(lab.first),
             lab.addr(lab.first + lab.count - 1), lab.port, lab.workers, lab.user,
             os.path.join(lab.workdir, 'password'), lab.cacert), file=sys.stderr)
    return 0


def _cmd_stop(args):
    workdir = os.path.abspath(args.dir)
    if not os.path.exists(os.path.join(workdir, 'lab.json')):
        if _recorded(workdir):
            raise LabError("'%s' has pids but no lab.json" % workdir)
        return 0
    lab = RedfishLab.attach(workdir)
    for pid, k in _recorded(workdir):
        lab.worker_pids[k] = pid
    lab.stop()
    return 0


def _cmd_status(args):
    recs = _recorded(args.dir)
    alive = sum(1 for pid, _ in recs if pid_alive(pid))
    print('%d of %d workers running' % (alive, len(recs)))
    return 0 if recs and alive == len(recs) else 1


def _cmd_ctl(args):
    lab = RedfishLab.attach(args.dir)
    body = args.body.encode() if args.body is not None else None
    out = lab.ctl(args.node, args.method.upper(), args.path, body, raw=True)
    sys.stdout.write(out.decode(errors='replace') + '\n')
    return 0


def _cmd_selftest(args):
    import tempfile
    with tempfile.TemporaryDirectory(prefix='redfish-emu-selftest.') as d:
        t0 = time.monotonic()
        n = selftest(d, args.prefix)
    print('redfish_emu selftest: %d checks passed in %.1f s' % (n, time.monotonic() - t0))
    return 0


def _cmd_worker(args):
    worker_main(args.dir, args.worker)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog='redfish_emu.py', description='emulated Redfish BMCs')
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('start', help='start the BMCs and wait until all answer')
    s.add_argument('--dir', required=True)
    s.add_argument('--prefix', default='127.32.0')
    s.add_argument('--count', type=int, default=5)
    s.add_argument('--first', type=int, default=1)
    s.add_argument('--port', type=int, default=REDFISH_PORT)
    s.add_argument('--control-port', type=int, default=CONTROL_PORT)
    s.add_argument('--vendors', help='comma list, cycled over the nodes (default all five)')
    s.add_argument('--user', default='admin')
    s.add_argument('--password-file', help='first line is the password (default: random, '
                   'written to DIR/password)')
    s.add_argument('--power', default='on', choices=('on', 'off'))
    s.add_argument('--workers', type=int)
    s.add_argument('--overrides-file')
    s.add_argument('--node', action='append', default=[], metavar='I:KEY=VALUE')
    s.add_argument('--every', action='append', default=[], metavar='KEY=VALUE')
    s.add_argument('--timeout', type=float, help='seconds to wait for the BMCs')
    s.add_argument('--delay-ms', type=float, metavar='MS',
                   help='every answer MS milliseconds late (--every slow=MS/1000)')
    s.add_argument('--one-at-a-time', action='store_true',
                   help='each BMC answers one request at a time (--every one_at_a_time=true)')
    s.set_defaults(func=_cmd_start)
    s = sub.add_parser('stop', help='stop the workers recorded in DIR/pids')
    s.add_argument('--dir', required=True)
    s.set_defaults(func=_cmd_stop)
    s = sub.add_parser('status', help='count the recorded workers still running')
    s.add_argument('--dir', required=True)
    s.set_defaults(func=_cmd_status)
    s = sub.add_parser('ctl', help='one control request to a node')
    s.add_argument('--dir', required=True)
    s.add_argument('--node', type=int, required=True)
    s.add_argument('method')
    s.add_argument('path')
    s.add_argument('body', nargs='?')
    s.set_defaults(func=_cmd_ctl)
    s = sub.add_parser('selftest', help='start one BMC per dialect and check the behaviours')
    s.add_argument('--prefix', default='127.32.250')
    s.set_defaults(func=_cmd_selftest)
    s = sub.add_parser('worker', help=argparse.SUPPRESS)
    s.add_argument('--dir', required=True)
    s.add_argument('--worker', type=int, required=True)
    s.set_defaults(func=_cmd_worker)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except (LabError, OSError) as e:
        print('redfish_emu: %s' % e, file=sys.stderr)
        return 1


redfish_update.setup(sys.modules[__name__])

if __name__ == '__main__':
    sys.exit(main())

