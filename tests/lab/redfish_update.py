"""UpdateService of the Redfish emulator: multipart and raw pushes, SimpleUpdate
pulls, Task resources and task monitors with a timed state machine, activation
by Manager.Reset (BMC downtime) or ComputerSystem.Reset, the faults of real
BMCs, and what each BMC saw for the tests. The contract is the UpdateService
section of REDFISH-EMU.md.

redfish_emu.py imports this module and calls setup() with itself; each Node
gets a NodeUpdates (node.update) and calls its hooks: route() before its own
routing, manager_reset() / system_reset() from the Reset actions, drop() for
every request (a rebooted BMC's old connections), control() on the control
channel, tick() from the worker loop (closes and reopens the listening socket
during a BMC's downtime). Python 3 standard library only.
"""

import hashlib
import http.server
import ipaddress
import json
import os
import re
import secrets
import selectors
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request

emu = None   # the redfish_emu module (setup)

ROOT = '/redfish/v1'
UPDATE_SERVICE = ROOT + '/UpdateService'
FW_INV = UPDATE_SERVICE + '/FirmwareInventory'
TASKS = ROOT + '/TaskService/Tasks'
STARTING_S = 0.2
MAX_IMAGE = 64 << 20
DOWNLOAD_TIMEOUT = 30

ACTIVATIONS = ('none', 'bmc-reset', 'host-reset', 'host-power-cycle')
RESULTS = ('ok', 'noop', 'exception', 'killed', 'cancelled')
PURGES = ('none', 'monitor', 'task')
APPLY_TIMES = ('Immediate', 'OnReset', 'OnStartUpdateRequest')
DEFAULT_ACTIVATION = {'bmc': 'bmc-reset', 'bios': 'host-reset', 'gpu': 'host-reset',
                      'other': 'none'}
DEFAULT_MESSAGE = 'Firmware apply failed (emulated).'
FINAL_STATE = {'ok': 'Completed', 'noop': 'Completed', 'exception': 'Exception',
               'killed': 'Killed', 'cancelled': 'Cancelled'}
FINAL_STATUS = {'Completed': 'OK', 'Exception': 'Critical', 'Killed': 'Warning',
                'Cancelled': 'Warning'}

# Task Ids and task monitors per dialect (what each BMC family sends back in
# Location): 'mon' a separate monitor URI, 'task' the Task itself.
STYLE = {
    'supermicro-sys-821ge-tnhr': {'ids': 'seq', 'monitor': ROOT + '/TaskMonitor/{token}'},
    'nvidia-dgx-h100': {'ids': 'seq', 'monitor': '{task}/Monitor'},
    'lenovo-sr670-v2': {'ids': 'seq', 'monitor': '{task}'},
    'dell-r750': {'ids': 'jid', 'monitor': '{task}'},
    'hpe-dl385-gen10plus-v2': {'ids': 'seq', 'monitor': ROOT + '/TaskService/TaskMonitors/{id}'},
}

OVERRIDE_KEYS = {'update_new', 'update_flash', 'update_result', 'update_message',
                 'update_purge', 'update_conflict', 'update_busy', 'update_activation',
                 'bmc_reset_refused', 'bmc_reset_busy', 'update_tasks_lost', 'update_multipart'}

# Where a dialect shows the image staged for a member (Id), as captured: a
# FirmwareInventory member of its own; True: it keeps the last image once
# activated (Supermicro's staging slot), False: it empties (Lenovo's pending).
STAGING = {
    'supermicro-sys-821ge-tnhr': ('Staging_{id}', True),
    'lenovo-sr670-v2': ('{id}-Pending', False),
}
# Status.State of a staged image (Resource.State: enabled, awaits an action to activate).
STAGED_STATE = 'StandbyOffline'

IMAGE_RE = re.compile(r'GF-IMAGE((?:[ \t]+[A-Za-z_]+=\S*)*)[ \t]*\r?')


def setup(module):
    """Called once by redfish_emu with itself: override setters on Node,
    lab-side helpers on RedfishLab."""
    global emu
    emu = module
    for key in OVERRIDE_KEYS:
        setattr(module.Node, '_ov_' + key, _setter(key))
    module.RedfishLab.updates = lambda lab, i: lab.ctl(i, 'GET', '/updates')
    module.RedfishLab.clear_updates = lambda lab, i: lab.ctl(i, 'POST', '/updates/clear', {})


def _setter(key):
    def set_key(node, value):
        node.update.set(key, value)
    return set_key


def parse_image(data):
    """(version, [target words]) from the GF-IMAGE line of @data, or None."""
    first = data[:4096].split(b'\n', 1)[0]
    try:
        text = first.decode('ascii')
    except UnicodeDecodeError:
        return None
    m = IMAGE_RE.fullmatch(text)
    if not m:
        return None
    fields = dict(kv.split('=', 1) for kv in m.group(1).split())
    if not fields.get('version'):
        return None
    return fields['version'], [t for t in fields.get('targets', '').split(',') if t]


def parse_multipart(ctype, body):
    """{name: (headers dict, filename, data)} of a multipart/form-data body,
    or None when it is not one."""
    m = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', ctype or '', re.I)
    if not m or not (ctype or '').lower().startswith('multipart/'):
        return None
    delim = b'\r\n--' + (m.group(1) or m.group(2)).encode()
    chunks = (b'\r\n' + body).split(delim)
    parts = {}
    for chunk in chunks[1:]:
        if chunk.startswith(b'--'):
            break
        head, sep, data = chunk.partition(b'\r\n\r\n')
        if not sep:
            return None
        headers = {}
        for line in head.decode('utf-8', 'replace').split('\r\n'):
            k, _, v = line.partition(':')
            if k.strip():
                headers[k.strip().lower()] = v.strip()
        disp = headers.get('content-disposition', '')
        nm = re.search(r'\bname="([^"]*)"', disp) or re.search(r'\bname=([^;\s]+)', disp)
        fn = re.search(r'\bfilename="([^"]*)"', disp) or re.search(r'\bfilename=([^;\s]+)', disp)
        if nm:
            parts.setdefault(nm.group(1), (headers, fn.group(1) if fn else None, data))
    return parts


class Task:
    def __init__(self, tid, uri, monitor, push_uri, cfg):
        self.id, self.uri, self.monitor, self.push_uri = tid, uri, monitor, push_uri
        self.new_s, self.flash_s, self.result, self.message = cfg
        self.created = time.monotonic()
        self.started = None      # monotonic time the timeline starts (None: waits)
        self.ready = False       # the image is there (a pull's download ended)
        self.fail = None         # (MessageId, message): ends in Exception
        self.members = []
        self.version = None
        self.apply_time = 'Immediate'
        self.waits_start = False
        self.finished = None     # monotonic end time once finalized
        self.final = None        # final TaskState
        self.record = None       # the push record

    def end_time(self):
        if self.started is None:
            return None
        t = self.started + self.new_s + STARTING_S
        return t if self.fail else t + self.flash_s

    def state(self, now):
        """(TaskState, PercentComplete)."""
        if self.final:
            return self.final, 100 if self.final == 'Completed' else self._pct(self.finished)
        if self.started is None or now < self.started + self.new_s:
            return 'New', 0
        if now < self.started + self.new_s + STARTING_S:
            return 'Starting', 0
        return 'Running', self._pct(now)

    def _pct(self, now):
        if self.started is None or self.flash_s <= 0:
            return 0
        t = now - self.started - self.new_s - STARTING_S
        return max(0, min(99, int(100 * t / self.flash_s)))


class NodeUpdates:
    """The UpdateService state of one emulated BMC (node.update). Every
    method runs under node.lock (the hooks are called with it held)."""

    def __init__(self, node):
        self.node = node
        self.style = STYLE[node.vendor]
        self.new_s = 0.2
        self.flash_s = 1.0
        self.result = 'ok'
        self.message = DEFAULT_MESSAGE
        self.purge = 'none'
        self.conflict = 409
        self.busy_until = 0.0
        self.activation = {}
        self.refused_s = 0.0
        self.busy_s = float(getattr(emu, 'BMC_RESET_SECONDS', 5))
        self.tasks_lost = False
        self.down_until = 0.0
        self.reset_conn = 0
        self.tasks = {}          # task uri -> Task
        self.monitors = {}       # monitor uri -> Task (where distinct)
        self.mono0, self.wall0 = time.monotonic(), time.time()
        us = node.base.get(UPDATE_SERVICE) or {}
        self.multipart_uri = _norm(us.get('MultipartHttpPushUri'))
        self.push_uri = _norm(us.get('HttpPushUri'))
        acts = us.get('Actions') or {}
        self.simple = acts.get('#UpdateService.SimpleUpdate')
        self.start = acts.get('#UpdateService.StartUpdate')
        captured = node.base.get(TASKS) or {}
        ids = [m.get('@odata.id', '').rsplit('/', 1)[-1] for m in captured.get('Members', [])]
        self.seq = max([int(i) for i in ids if i.isdigit()] + [0])
        self.quirks = Quirks(self)
        self.clear()

    # -- configuration --

    def set(self, key, value):
        if key == 'update_new':
            self.new_s = _seconds(key, value)
        elif key == 'update_flash':
            self.flash_s = _seconds(key, value)
        elif key == 'update_result':
            self.result = _choice(key, value, RESULTS)
        elif key == 'update_message':
            self.message = str(value)
        elif key == 'update_purge':
            self.purge = _choice(key, value or 'none', PURGES)
        elif key == 'update_conflict':
            if int(value) not in (409, 503):
                raise emu.LabError('update_conflict must be 409 or 503')
            self.conflict = int(value)
        elif key == 'update_busy':
            if value is True:
                self.busy_until = float('inf')
            else:
                s = _seconds(key, value or 0)
                self.busy_until = time.monotonic() + s if s > 0 else 0.0
        elif key == 'update_activation':
            if isinstance(value, str):
                self.activation = {'*': _choice(key, value, ACTIVATIONS)}
            elif isinstance(value, dict):
                for k, v in value.items():
                    self.activation[str(k)] = _choice(key, v, ACTIVATIONS)
            else:
                raise emu.LabError('update_activation must be an activation or a map')
        elif key == 'bmc_reset_refused':
            self.refused_s = _seconds(key, value)
        elif key == 'bmc_reset_busy':
            self.busy_s = _seconds(key, value)
        elif key == 'update_tasks_lost':
            self.tasks_lost = bool(value)
        elif key == 'update_multipart':
            self._set_multipart(bool(value))
        elif key in QUIRK_KEYS:
            self.quirks.set(key, value)

    def _set_multipart(self, on):
        """Hide MultipartHttpPushUri (firmware that predates it: raw pushes only), or show
        it again as captured."""
        captured = _norm((self.node.base.get(UPDATE_SERVICE) or {}).get('MultipartHttpPushUri'))
        if not captured or on == (self.multipart_uri is not None):
            return
        us = self.node.own(UPDATE_SERVICE)
        if on:
            us['MultipartHttpPushUri'] = self.node.base[UPDATE_SERVICE]['MultipartHttpPushUri']
            self.multipart_uri = captured
        else:
            us.pop('MultipartHttpPushUri', None)
            self.multipart_uri = None
        self.node.touch(UPDATE_SERVICE)

    def clear(self):
        self.pushes, self.refused, self.staged, self.applied, self.resets = [], [], [], [], []
        self.push_targets = []

    # -- time --

    def _wall(self, mono):
        return self.wall0 + (mono - self.mono0)

    def _advance(self):
        now = time.monotonic()
        for task in list(self.tasks.values()):
            end = task.end_time()
            if task.final is None and end is not None and now >= end:
                self._finish(task, end)

    def _schedule(self, task):
        end = task.end_time()
        if end is None:
            return
        timer = threading.Timer(max(0.0, end - time.monotonic()) + 0.001, self._fire)
        timer.daemon = True
        timer.start()

    def _fire(self):
        with self.node.lock:
            self._advance()

    def _finish(self, task, end):
        task.finished = end
        if task.fail:
            task.final = 'Exception'
        else:
            task.final = FINAL_STATE[task.result]
        if task.final == 'Completed' and task.result == 'ok':
            for member in task.members:
                act = self._activation_for(member, task.apply_time)
                if act == 'none':
                    self._apply(member, task.version, task, 'task')
                else:
                    self.staged.append({'member': member, 'version': task.version,
                                        'activation': act, 'task': task.uri})
                    self._show_staged(member, task.version)
        self.node.event('update-end', task=task.uri, state=task.final)

    # -- the staged image as the BMC shows it (STAGING) --

    def _staging_member(self, member):
        """The FirmwareInventory member that shows what is staged for @member
        (Supermicro Staging_<Id>, Lenovo <Id>-Pending), or None."""
        shape = STAGING.get(self.node.vendor)
        res = self.node.get(member) or {}
        if not shape or 'Id' not in res:
            return None
        uri = FW_INV + '/' + shape[0].format(id=res['Id'])
        return uri if self.node.get(uri) is not None else None

    def _show_staged(self, member, version):
        uri = self._staging_member(member)
        if uri is None:
            return
        res = self.node.own(uri)
        res['Version'] = version
        res['Status'] = dict(res.get('Status') or {}, State=STAGED_STATE)
        self.node.touch(uri)

    def _unshow_staged(self, member):
        """Activated: a slot that empties (Lenovo) shows its captured value again;
        one that keeps the last image (Supermicro) keeps it, Enabled."""
        uri = self._staging_member(member)
        if uri is None:
            return
        res = self.node.own(uri)
        if STAGING[self.node.vendor][1]:
            res['Status'] = dict(res.get('Status') or {}, State='Enabled')
        else:
            base = self.node.base.get(uri) or {}
            res['Version'] = base.get('Version')
            res['Status'] = dict(base.get('Status') or {})
        self.node.touch(uri)

    # -- kinds, activation, applying --

    def _fw_members(self):
        return self.node._fw_members()

    def _kind(self, member):
        res = self.node.get(member) or {}
        mid = str(res.get('Id', member.rsplit('/', 1)[-1]))
        d = self.node.d
        if any(re.fullmatch(p, mid) for p in d['bmc']):
            return 'bmc', None
        if any(re.fullmatch(p, mid) for p in d['bios']):
            return 'bios', None
        for p in d['gpu']:
            m = re.fullmatch(p.replace('{n}', r'(\d+)'), mid)
            if m:
                return 'gpu', int(m.group(1))
        return 'other', None

    def _members_of(self, word):
        """The member URIs an image's target word names, or None."""
        members = self._fw_members()
        m = re.fullmatch(r'gpu(\d+)', word)
        if word in ('bmc', 'bios', 'gpu') or m:
            kind = 'gpu' if m else word
            out = [u for u in members if self._kind(u)[0] == kind
                   and (not m or self._kind(u)[1] == int(m.group(1)))]
            return out or None
        uri = FW_INV + '/' + word
        return [uri] if uri in members else None

    def _resolve_target(self, target):
        if not isinstance(target, str):
            return None
        u = _norm(target)
        members = self._fw_members()
        if u in members:
            return [u]
        if u in self.node.managers:
            return [m for m in members if self._kind(m)[0] == 'bmc'] or None
        if u in self.node.systems:
            return [m for m in members if self._kind(m)[0] == 'bios'] or None
        return None

    def _activation_for(self, member, apply_time):
        res = self.node.get(member) or {}
        mid = str(res.get('Id', ''))
        kind = self._kind(member)[0]
        act = (self.activation.get(mid) or self.activation.get(kind)
               or self.activation.get('*') or DEFAULT_ACTIVATION[kind])
        if act == 'none' and apply_time == 'OnReset':
            act = 'host-reset'
        return act

    def _apply(self, member, version, task, by):
        node = self.node
        rec = {'t': time.time(), 'member': member, 'version': version, 'task': task,
               'by': by}
        if node.get(member) is None:
            rec['missing'] = True
            self.applied.append(rec)
            return
        kind, n = self._kind(member)
        version = version + self.quirks.version_suffix
        node._set_member_version(member, version)
        if kind == 'bmc':
            mgr = node._main_manager()
            node.own(mgr)['FirmwareVersion'] = version
            node.touch(mgr)
        elif kind == 'bios':
            node.own(node.main_system)['BiosVersion'] = version
            node.touch(node.main_system)
        elif kind == 'gpu' and node.d['gpu_proc']:
            uri = node.d['gpu_proc'].format(n=n)
            if node.get(uri) is not None:
                node.own(uri)['FirmwareVersion'] = version
                node.touch(uri)
        self.applied.append(rec)

    def _apply_staged(self, activations, by):
        keep = []
        for s in self.staged:
            if s['activation'] in activations:
                self._apply(s['member'], s['version'], s['task'], by)
                self._unshow_staged(s['member'])
            else:
                keep.append(s)
        self.staged = keep

    # -- hooks from the node --

    def manager_reset(self, mgr_uri, reset_type):
        if self.quirks.delay_reset(mgr_uri, reset_type):
            return
        self.quirks.restarted()
        node = self.node
        now = time.monotonic()
        self.resets.append({'t': time.time(), 'kind': 'manager', 'uri': mgr_uri,
                            'type': reset_type})
        self.down_until = now + self.refused_s
        self.reset_conn = node.conn_seq
        node.resetting_until = self.down_until + self.busy_s if self.busy_s > 0 else 0.0
        node.sessions.clear()
        if self.quirks.applies_on_reset(mgr_uri):
            self._apply_staged(('bmc-reset',), 'manager-reset')
        if self.tasks_lost:   # kept in memory only: a running flash dies with them
            self.tasks.clear()
            self.monitors.clear()

    def system_reset(self, sys_uri, reset_type, before, after):
        self.resets.append({'t': time.time(), 'kind': 'system', 'uri': sys_uri,
                            'type': reset_type})
        if sys_uri != self.node.main_system or after != 'On':
            return
        power_on = before == 'Off'
        acts = []
        if power_on or reset_type in ('ForceRestart', 'GracefulRestart', 'PowerCycle'):
            acts.append('host-reset')
        if power_on or reset_type == 'PowerCycle':
            acts.append('host-power-cycle')
        if acts:
            self._apply_staged(acts, 'system-reset')

    def drop(self, conn):
        """True when a request on connection @conn gets no answer: the BMC is
        down, or the connection is older than its last reset."""
        with self.node.lock:
            return time.monotonic() < self.down_until or conn <= self.reset_conn

    def control(self, method, path):
        """(status, answer) for the control requests of this module, or None."""
        if method == 'GET' and path == '/updates':
            with self.node.lock:
                return 200, self.observe()
        if method == 'POST' and path == '/updates/clear':
            with self.node.lock:
                self.clear()
            return 200, {'ok': True}
        return None

    def observe(self):
        self._advance()
        now = time.monotonic()
        tasks = []
        for t in self.tasks.values():
            st, pct = t.state(now)
            tasks.append({'id': t.id, 'uri': t.uri, 'monitor': t.monitor, 'state': st,
                          'percent': pct, 'created': self._wall(t.created),
                          'finished': self._wall(t.finished) if t.finished else None})
        active = self._active()
        return {'pushes': [dict(p) for p in self.pushes], 'refused': list(self.refused),
                'tasks': tasks, 'staged': [dict(s) for s in self.staged],
                'applied': list(self.applied), 'resets': list(self.resets),
                'push_targets': [dict(x) for x in self.push_targets],
                'active': active.uri if active else None}

    def _active(self):
        for t in self.tasks.values():
            if t.final is None and not t.waits_start:
                return t
        return None

    # -- the Redfish side --

    def route(self, method, path, query, headers, body):
        """A Reply for the UpdateService and task requests, or None."""
        self._advance()
        if method in ('GET', 'HEAD'):
            if path == TASKS and self.node.get(TASKS) is not None:
                return self._collection()
            other = self.quirks.route_get(path)
            if other is not None:
                return other
            task = self.monitors.get(path)
            if task is not None:
                return self._monitor_answer(task)
            task = self.tasks.get(path)
            if task is not None:
                if task.monitor == path:
                    return self._monitor_answer(task)
                if task.final and self.purge == 'task':
                    return _missing(path)
                return emu.Reply(200, self._task_json(task))
            return None
        if method == 'PATCH' and path == UPDATE_SERVICE:
            return self._patch_targets(headers, body)
        if method != 'POST':
            return None
        ctype = headers.get('Content-Type') or ''
        if self.multipart_uri and path == self.multipart_uri:
            return self._push_multipart(path, ctype, body)
        if self.push_uri and path == self.push_uri:
            return self._push_raw(path, ctype, body)
        if self.simple and path == _norm(self.simple.get('target')):
            return self._pull(path, body)
        if self.start and path == _norm(self.start.get('target')):
            return self._start_update()
        return None

    def _collection(self):
        coll = dict(self.node.get(TASKS))
        members = [m for m in coll.get('Members', [])]
        for t in self.tasks.values():
            if not (t.final and self.purge == 'task'):
                members.append({'@odata.id': t.uri})
        members += [{'@odata.id': u} for u in self.quirks.other_tasks]
        coll['Members'] = members
        coll['Members@odata.count'] = len(members)
        return emu.Reply(200, coll)

    def _monitor_answer(self, task):
        if task.final and self.purge in ('monitor', 'task'):
            return _missing(task.monitor)
        doc = self._task_json(task)
        if task.monitor == task.uri or task.final:
            return emu.Reply(200, doc)
        return emu.Reply(202, doc, [('Location', self.quirks.location(task))])

    def _task_json(self, task):
        now = time.monotonic()
        st, pct = task.state(now)
        doc = {'@odata.id': task.uri, '@odata.type': '#Task.v1_4_3.Task', 'Id': task.id,
               'Name': 'Firmware Update', 'Description': 'Task for Firmware Update',
               'TaskState': st, 'TaskStatus': FINAL_STATUS.get(st, 'OK'),
               'PercentComplete': pct, 'StartTime': emu._iso(self._wall(task.created)),
               'TaskMonitor': task.monitor, 'Messages': [],
               'Payload': {'TargetUri': task.push_uri, 'HttpOperation': 'POST'}}
        if task.final:
            doc['EndTime'] = emu._iso(self._wall(task.finished))
            if st == 'Completed':
                doc['Messages'] = [_message('TaskEvent.1.0.TaskCompletedOK',
                                            'The task with Id %s has completed.' % task.id, 'OK')]
                doc['Messages'] += self.quirks.completed_messages(task)
            elif task.fail:
                doc['Messages'] = [_message(task.fail[0], task.fail[1], 'Critical')]
            elif st == 'Exception':
                doc['Messages'] = [_message('Update.1.0.ApplyFailed', task.message, 'Critical')]
            else:
                doc['Messages'] = [_message('TaskEvent.1.0.Task' + st,
                                            'The task with Id %s was %s.' % (task.id, st.lower()),
                                            'Warning')]
        return doc

    def _refuse(self, kind, uri, reply, reason):
        msg = json.loads(reply.body)['error']['message'] if reply.body else ''
        self.refused.append({'t': time.time(), 'kind': kind, 'uri': uri,
                             'status': reply.status, 'reason': reason, 'message': msg})
        return reply

    def _gate(self, kind, uri):
        """A refusal when the BMC is busy or already updating, else None."""
        now = time.monotonic()
        retry = [('Retry-After', str(self.node.retry_after))]
        if now < self.busy_until:
            return self._refuse(kind, uri, emu.rf_error(
                503, 'ServiceTemporarilyUnavailable',
                'The update service is busy; retry later.', retry), 'busy')
        active = self._active()
        if active is not None:
            if self.conflict == 503:
                reply = emu.rf_error(503, 'ServiceTemporarilyUnavailable',
                                     'An update is in progress (%s).' % active.uri, retry)
            else:
                reply = emu.rf_error(409, 'ResourceInUse',
                                     'An update is in progress (%s); one update at a time.'
                                     % active.uri)
            return self._refuse(kind, uri, reply, 'conflict')
        return None

    def refuse_early(self, method, path):
        """From the handler, on Expect: 100-continue: the refusal of a push
        (its gate) before its body is read, or None (then it is read)."""
        with self.node.lock:
            self._advance()
            path = _norm(path.split('?', 1)[0])
            if method != 'POST' or path not in (self.multipart_uri, self.push_uri):
                return None
            gate = self._gate('multipart' if path == self.multipart_uri else 'raw', path)
            if gate is not None:
                self.refused[-1]['before_body'] = True
            return gate

    def _bad(self, kind, uri, status, msg_id, message):
        return self._refuse(kind, uri, emu.rf_error(status, msg_id, message), 'bad-request')

    def _targets(self, kind, uri, targets):
        """(member URIs, None) or (None, refusal) for a request's Targets."""
        if targets is None:
            return [], None
        if not isinstance(targets, list):
            return None, self._bad(kind, uri, 400, 'PropertyValueTypeError',
                                   'The value for the property Targets is not a list.')
        out = []
        for t in targets:
            members = self._resolve_target(t)
            if members is None:
                return None, self._bad(kind, uri, 400, 'PropertyValueNotInList',
                                       "The value '%s' for Targets is not a firmware component "
                                       "of this BMC." % (t,))
            out += [m for m in members if m not in out]
        return out, None

    def _apply_time(self, kind, uri, params):
        at = params.get('@Redfish.OperationApplyTime', 'Immediate')
        allowed = ['Immediate', 'OnReset'] + (['OnStartUpdateRequest'] if self.start else [])
        if at not in allowed:
            return None, self._bad(kind, uri, 400, 'PropertyValueNotInList',
                                   "The value '%s' for @Redfish.OperationApplyTime is not in "
                                   "the list of acceptable values (%s)."
                                   % (at, ', '.join(allowed)))
        return at, None

    def _push_multipart(self, path, ctype, body):
        gate = self._gate('multipart', path)
        if gate:
            return gate
        parts = parse_multipart(ctype, body)
        if parts is None:
            return self._bad('multipart', path, 415, 'GeneralError',
                             'The push URI takes multipart/form-data.')
        if 'UpdateParameters' not in parts or 'UpdateFile' not in parts:
            missing = 'UpdateParameters' if 'UpdateParameters' not in parts else 'UpdateFile'
            return self._bad('multipart', path, 400, 'PropertyMissing',
                             'The multipart part %s is missing.' % missing)
        try:
            params = json.loads(parts['UpdateParameters'][2] or b'{}')
        except (ValueError, UnicodeDecodeError):
            return self._bad('multipart', path, 400, 'MalformedJSON',
                             'The UpdateParameters part is not JSON.')
        if not isinstance(params, dict):
            return self._bad('multipart', path, 400, 'MalformedJSON',
                             'The UpdateParameters part is not a JSON object.')
        members, err = self._targets('multipart', path, params.get('Targets'))
        if err:
            return err
        at, err = self._apply_time('multipart', path, params)
        if err:
            return err
        _, filename, image = parts['UpdateFile']
        return self._accept('multipart', path, image, filename, params.get('Targets'),
                            members, at)[0]

    def _push_raw(self, path, ctype, body):
        gate = self._gate('raw', path)
        if gate:
            return gate
        image, filename = body, None
        parts = parse_multipart(ctype, body)
        if parts is not None:
            part = parts.get('file') or parts.get('UpdateFile')
            if part is None:
                return self._bad('raw', path, 400, 'PropertyMissing',
                                 'The form has no part named file.')
            _, filename, image = part
        targets = (self.node.get(UPDATE_SERVICE) or {}).get('HttpPushUriTargets') or None
        members = []
        if targets:
            members, err = self._targets('raw', path, targets)
            if err:
                return err
        return self._accept('raw', path, image, filename, targets, members, 'Immediate')[0]

    def _patch_targets(self, headers, body):
        """PATCH UpdateService {"HttpPushUriTargets": [...]} where the capture has
        the property (Lenovo); None (the node's own answer) elsewhere. If-Match as
        the node requires it (require_if_match); what it said is recorded."""
        us = self.node.get(UPDATE_SERVICE) or {}
        if 'HttpPushUriTargets' not in us:
            return None
        refused = self.node.precondition(UPDATE_SERVICE, headers)
        if refused:
            return refused
        if_match = headers.get('If-Match')
        try:
            doc = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            doc = None
        if not isinstance(doc, dict) or not doc:
            return emu.rf_error(400, 'MalformedJSON', 'The request body is not a JSON object.')
        for key in doc:
            if key not in ('HttpPushUriTargets', 'HttpPushUriTargetsBusy'):
                return emu.rf_error(400, 'PropertyNotWritable' if key in us else 'PropertyUnknown',
                                    'The property %s cannot be written here.' % key)
        targets = doc.get('HttpPushUriTargets', us.get('HttpPushUriTargets'))
        if not isinstance(targets, list) or any(self._resolve_target(t) is None for t in targets):
            return emu.rf_error(400, 'PropertyValueNotInList',
                                'HttpPushUriTargets must list firmware components of this BMC.')
        busy = doc.get('HttpPushUriTargetsBusy', us.get('HttpPushUriTargetsBusy', False))
        if not isinstance(busy, bool):
            return emu.rf_error(400, 'PropertyValueTypeError',
                                'HttpPushUriTargetsBusy must be a boolean.')
        res = self.node.own(UPDATE_SERVICE)
        res['HttpPushUriTargets'] = list(targets)
        res['HttpPushUriTargetsBusy'] = busy
        self.node.touch(UPDATE_SERVICE)
        self.push_targets.append({'t': time.time(), 'targets': list(targets), 'busy': busy,
                                  'if_match': if_match})
        self.node.event('patch', uri=UPDATE_SERVICE, body=doc)
        return self.node._done()

    def _new_task(self, push_uri):
        if self.style['ids'] == 'jid':
            self.seq += 1
            tid = 'JID_%012d' % (int(self.wall0) % 10 ** 8 * 1000 + self.seq)
        else:
            self.seq += 1
            tid = str(self.seq)
        uri = TASKS + '/' + tid
        monitor = self.style['monitor'].format(task=uri, id=tid, token=secrets.token_hex(8))
        task = Task(tid, uri, monitor, push_uri,
                    (self.new_s, self.flash_s, self.result, self.message))
        self.tasks[uri] = task
        if monitor != uri:
            self.monitors[monitor] = task
        return task

    def _resolve_image(self, task, image, members):
        """Version and members of @task from @image (and the request's members)."""
        parsed = parse_image(image)
        if parsed is None:
            task.fail = ('Update.1.0.VerificationFailed',
                         'The image is not a firmware image this BMC recognizes '
                         '(no GF-IMAGE line).')
            return
        task.version, words = parsed
        if not members:
            for w in words:
                got = self._members_of(w)
                if got is None:
                    task.fail = ('Update.1.0.VerificationFailed',
                                 "The image targets '%s', not a component of this BMC." % w)
                    return
                members += [m for m in got if m not in members]
        if not members:
            task.fail = ('Update.1.0.VerificationFailed',
                         'The image names no component and the request no Targets.')
        task.members = members

    def _accept(self, kind, path, image, filename, targets, members, apply_time,
                image_uri=None):
        task = self._new_task(path)
        task.apply_time = apply_time
        task.waits_start = apply_time == 'OnStartUpdateRequest'
        rec = {'t': time.time(), 'kind': kind, 'uri': path, 'size': None, 'sha256': None,
               'filename': filename, 'image_uri': image_uri, 'targets': targets,
               'members': list(members), 'apply_time': apply_time, 'version': None,
               'task': task.uri}
        task.record = rec
        self.pushes.append(rec)
        self.node.event('update-push', via=kind, uri=path, task=task.uri)
        if image is not None:
            self._image_ready(task, image, members)
        if self.quirks.no_monitor:
            return emu.Reply(204), task
        reply = emu.Reply(202, self._task_json(task), [('Location', self.quirks.location(task))])
        return reply, task

    def _image_ready(self, task, image, members):
        rec = task.record
        rec['size'] = len(image)
        rec['sha256'] = hashlib.sha256(image).hexdigest()
        self._resolve_image(task, image, list(members))
        rec['version'] = task.version
        rec['members'] = list(task.members)
        task.ready = True
        if not task.waits_start or task.fail:
            task.waits_start = False
            task.started = time.monotonic()
            self._schedule(task)

    def _start_update(self):
        waiting = [t for t in self.tasks.values() if t.waits_start and t.ready]
        if not waiting:
            return emu.rf_error(400, 'ActionNotSupported', 'No update waits for StartUpdate.')
        now = time.monotonic()
        for t in waiting:
            t.waits_start = False
            t.started = now
            self._schedule(t)
        return self.node._done()

    # -- SimpleUpdate --

    def _action_param(self, name):
        """(allowable values or None, required) of SimpleUpdate's parameter @name."""
        act = self.simple
        inline = act.get(name + '@Redfish.AllowableValues')
        required = name == 'ImageURI'
        allowed = inline if isinstance(inline, list) else None
        info = act.get('@Redfish.ActionInfo')
        if isinstance(info, str):
            for p in (self.node.get(info) or {}).get('Parameters', []):
                if isinstance(p, dict) and p.get('Name') == name:
                    required = required or bool(p.get('Required'))
                    if allowed is None and isinstance(p.get('AllowableValues'), list):
                        allowed = p['AllowableValues']
        return allowed, required

    def _pull(self, path, body):
        gate = self._gate('pull', path)
        if gate:
            return gate
        try:
            params = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            params = None
        if not isinstance(params, dict):
            return self._bad('pull', path, 400, 'MalformedJSON',
                             'The request body is not a JSON object.')
        for name in ('ImageURI', 'TransferProtocol', 'Targets'):
            allowed, required = self._action_param(name)
            if name not in params:
                if required:
                    return self._bad('pull', path, 400, 'ActionParameterMissing',
                                     'The action SimpleUpdate requires the parameter %s.'
                                     % name)
                continue
            value = params[name]
            if name == 'ImageURI' and not isinstance(value, str):
                return self._bad('pull', path, 400, 'ActionParameterValueTypeError',
                                 'The value for the parameter ImageURI is not a string.')
            if allowed is None:
                continue
            values = value if name == 'Targets' and isinstance(value, list) else [value]
            for v in values:
                if not isinstance(v, str) or not any(v == a or _regex_match(a, v)
                                                     for a in allowed):
                    return self._bad('pull', path, 400, 'ActionParameterValueNotInList',
                                     "The value '%s' for the parameter %s is not in the list "
                                     "of acceptable values." % (v, name))
        members, err = self._targets('pull', path, params.get('Targets'))
        if err:
            return err
        at, err = self._apply_time('pull', path, params)
        if err:
            return err
        url = params['ImageURI']
        reply, task = self._accept('pull', path, None, None, params.get('Targets'), members,
                                   at, image_uri=url)
        task.record['transfer_protocol'] = params.get('TransferProtocol')
        th = threading.Thread(target=self._download, args=(task, url, members), daemon=True)
        th.start()
        return reply

    def _download(self, task, url, members):
        data, fail = None, None
        try:
            data = fetch_image(url, os.path.join(self.node.workdir, 'ca.pem'))
        except (OSError, ValueError, ssl.SSLError) as e:
            fail = ('Update.1.0.TransferFailed', 'Transfer of %s failed: %s' % (url, e))
        with self.node.lock:
            if fail:
                task.fail = fail
                task.ready = True
                task.waits_start = False
                task.started = time.monotonic() - task.new_s - STARTING_S
                self._schedule(task)
                return
            self._image_ready(task, data, members)


# ---- BMCs that bend the standard (the quirk overrides) ----------------------------

QUIRK_KEYS = {'update_monitor_absolute', 'update_no_monitor', 'update_version_suffix',
              'update_reset_required', 'update_other_task', 'update_restart_late',
              'update_cert_on_reset'}
OVERRIDE_KEYS = OVERRIDE_KEYS | QUIRK_KEYS


class Quirks:
    """What one BMC does differently from the standard (node.update.quirks):
    update_monitor_absolute: an origin ('https://host:port') put before the task
      monitor in Location: an absolute URL, on this BMC or another;
    update_no_monitor: a push answered 204 with no Location and no body (the
      task still shows in the TaskService);
    update_version_suffix: appended to every version applied ('23.11.24' shows
      as '23.11.24 (build 7)');
    update_reset_required: a Manager URI: a Completed task names its
      Manager.Reset in a Base ResetRequired message, and a staged BMC image
      applies only when that Manager restarts;
    update_other_task: a Running task that is no update (a diagnostic data
      collection) listed in the TaskService, never ending;
    update_restart_late: seconds a BMC keeps answering (sessions and all) after
      it took Manager.Reset, before it really restarts;
    update_cert_on_reset: a restart makes a new certificate (same CA): every
      later connection gets it."""

    def __init__(self, upd):
        self.upd = upd
        self.origin = ''
        self.no_monitor = False
        self.version_suffix = ''
        self.reset_required = None
        self.other_tasks = {}
        self.restart_late = 0.0
        self.cert_on_reset = False
        self.in_late = False

    def set(self, key, value):
        if key == 'update_monitor_absolute':
            self.origin = str(value or '').rstrip('/')
        elif key == 'update_no_monitor':
            self.no_monitor = bool(value)
        elif key == 'update_version_suffix':
            self.version_suffix = str(value or '')
        elif key == 'update_reset_required':
            self.reset_required = _norm(value) if value else None
        elif key == 'update_restart_late':
            self.restart_late = _seconds(key, value or 0)
        elif key == 'update_cert_on_reset':
            self.cert_on_reset = bool(value)
        elif key == 'update_other_task':
            self.other_tasks = {}
            if value:
                uri = TASKS + '/Diag' + secrets.token_hex(3)
                self.other_tasks[uri] = {
                    '@odata.id': uri, '@odata.type': '#Task.v1_4_3.Task',
                    'Id': uri.rsplit('/', 1)[1], 'Name': 'Collect Diagnostic Data',
                    'TaskState': 'Running', 'TaskStatus': 'OK', 'PercentComplete': 3,
                    'StartTime': emu._iso(time.time()), 'Messages': [],
                    'Payload': {'TargetUri': self.upd.node.managers[0] +
                                '/LogServices/Dump/Actions/LogService.CollectDiagnosticData',
                                'HttpOperation': 'POST'}}

    def location(self, task):
        return self.origin + task.monitor

    def completed_messages(self, task):
        if not self.reset_required:
            return []
        target = self.reset_required + '/Actions/Manager.Reset'
        msg = _message('Base.1.13.ResetRequired',
                       "In order to complete the operation, a component reset is required "
                       "with the Reset action URI '%s' and ResetType '%s'."
                       % (target, 'GracefulRestart'), 'Warning')
        msg['MessageArgs'] = [target, 'GracefulRestart']
        return [msg]

    def delay_reset(self, mgr_uri, reset_type):
        """True when the restart Manager.Reset asked for comes only later."""
        if self.restart_late <= 0 or self.in_late:
            return False

        def later():
            with self.upd.node.lock:
                self.in_late = True
                try:
                    self.upd.manager_reset(mgr_uri, reset_type)
                finally:
                    self.in_late = False
        timer = threading.Timer(self.restart_late, later)
        timer.daemon = True
        timer.start()
        return True

    def restarted(self):
        if self.cert_on_reset:
            node = self.upd.node
            node._ov_cert_change_after(1)
            node.cert_after = node.conn_seq

    def applies_on_reset(self, mgr_uri):
        return self.reset_required is None or _norm(mgr_uri) == self.reset_required

    def route_get(self, path):
        doc = self.other_tasks.get(path)
        return emu.Reply(200, doc) if doc is not None else None


class _LoopbackRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        _check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _check_url(url):
    split = urllib.parse.urlsplit(url)
    if split.scheme not in ('http', 'https'):
        raise ValueError("scheme '%s' is not http or https" % split.scheme)
    try:
        ok = ipaddress.ip_address(split.hostname or '').is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ValueError("host '%s' is not in 127.0.0.0/8" % split.hostname)


def fetch_image(url, cafile):
    """The bytes at @url (http or https on loopback only; https verified
    against @cafile)."""
    _check_url(url)
    ctx = ssl.create_default_context(cafile=cafile)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPSHandler(context=ctx),
                                         _LoopbackRedirects())
    with opener.open(urllib.request.Request(url, headers={'User-Agent': 'redfish-emu'}),
                     timeout=DOWNLOAD_TIMEOUT) as r:
        data = r.read(MAX_IMAGE + 1)
    if len(data) > MAX_IMAGE:
        raise ValueError('the image is larger than %d bytes' % MAX_IMAGE)
    return data


def tick(sel, servers):
    """From the worker loop: close the listening socket of a node whose BMC
    is down (connections refused), reopen it once the downtime is over."""
    now = time.monotonic()
    for srv in servers:
        if not isinstance(srv, emu.RedfishServer):
            continue
        upd = srv.node.update
        closed = getattr(srv, '_upd_closed', False)
        if now < upd.down_until and not closed:
            sel.unregister(srv.socket)
            srv.socket.close()
            srv._upd_closed = True
        elif now >= upd.down_until and closed:
            try:
                srv.socket = socket.socket(srv.address_family, srv.socket_type)
                srv.server_bind()
                srv.server_activate()
            except OSError:
                srv.socket.close()
                continue
            sel.register(srv.socket, selectors.EVENT_READ, srv)
            srv._upd_closed = False


def _norm(uri):
    return emu._norm_path(uri) if isinstance(uri, str) and uri else None


def _missing(path):
    return emu.rf_error(404, 'ResourceMissingAtURI', 'The resource at %s was not found.' % path)


def _message(msg_id, text, severity):
    return {'@odata.type': '#Message.v1_1_1.Message', 'MessageId': msg_id, 'Message': text,
            'Severity': severity, 'MessageSeverity': severity}


def _regex_match(pattern, value):
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return False


def _seconds(key, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise emu.LabError('%s must be a number of seconds' % key) from None
    if v < 0:
        raise emu.LabError('%s must not be negative' % key)
    return v


def _choice(key, value, choices):
    if value not in choices:
        raise emu.LabError("%s '%s' is not one of %s" % (key, value, ', '.join(choices)))
    return value


# ---- images served for SimpleUpdate (test side) ----------------------------------

class ImageServer:
    """HTTPS on @addr:@port serving the files of @directory, with a certificate
    from @lab's CA, so that the emulated BMCs' SimpleUpdate downloads trust it.
    A context manager; .url(name), .requests."""

    def __init__(self, lab, addr, directory, port=9443):
        self.lab, self.addr, self.port = lab, addr, int(port)
        self.directory = os.path.abspath(directory)
        self.requests = []
        self.httpd = None
        self.thread = None

    def url(self, name):
        return 'https://%s:%d/%s' % (self.addr, self.port, urllib.parse.quote(name))

    def start(self):
        certdir = os.path.join(self.lab.workdir, 'images-%s-%d' % (self.addr, self.port))
        os.makedirs(certdir, exist_ok=True)
        key, cert = os.path.join(certdir, 'key.pem'), os.path.join(certdir, 'cert.pem')
        emu.make_node_cert(key, cert, self.addr, self.lab.cacert,
                           os.path.join(self.lab.workdir, 'ca.key'))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def _file(self, head):
                name = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip('/')
                path = os.path.realpath(os.path.join(server.directory, name))
                ok = path.startswith(server.directory + os.sep) and os.path.isfile(path)
                status = 200 if ok else 404
                server.requests.append({'t': time.time(), 'path': self.path, 'status': status,
                                        'peer': self.client_address[0]})
                data = open(path, 'rb').read() if ok else b'not found\n'
                self.send_response(status)
                self.send_header('Content-Type', 'application/octet-stream')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            def do_GET(self):
                self._file(False)

            def do_HEAD(self):
                self._file(True)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def get_request(self):
                sock, peer = super().get_request()
                return ctx.wrap_socket(sock, server_side=True), peer

            def handle_error(self, request, client_address):
                pass

        self.httpd = Server((self.addr, self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


# ---- self test (redfish_emu.py selftest) ---------------------------------------

def request(lab, i, method, path, body=None, headers=None, token=None, timeout=10):
    """One request on a new connection: (status, headers lower-cased, doc or bytes)."""
    import base64
    import http.client
    ctx = ssl.create_default_context(cafile=lab.cacert)
    h = dict(headers or {})
    if token:
        h['X-Auth-Token'] = token
    else:
        h['Authorization'] = 'Basic ' + base64.b64encode(
            ('%s:%s' % (lab.user, lab.password)).encode()).decode()
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h.setdefault('Content-Type', 'application/json')
    conn = http.client.HTTPSConnection(lab.addr(i), lab.port, context=ctx, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        raw = r.read()
    finally:
        conn.close()
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        doc = raw
    return r.status, {k.lower(): v for k, v in r.getheaders()}, doc


def multipart_body(params, image, filename='image.fwpkg'):
    """(Content-Type, body) of a Redfish multipart push."""
    boundary = 'gf' + secrets.token_hex(12)
    out = b''.join([
        b'--', boundary.encode(), b'\r\n',
        b'Content-Disposition: form-data; name="UpdateParameters"\r\n',
        b'Content-Type: application/json\r\n\r\n', json.dumps(params).encode(), b'\r\n',
        b'--', boundary.encode(), b'\r\n',
        b'Content-Disposition: form-data; name="UpdateFile"; filename="',
        filename.encode(), b'"\r\n',
        b'Content-Type: application/octet-stream\r\n\r\n', image, b'\r\n',
        b'--', boundary.encode(), b'--\r\n'])
    return 'multipart/form-data; boundary=' + boundary, out


def push(lab, i, image, targets=None, apply_time=None, token=None, raw=False):
    """Push @image to node @i the way its UpdateService offers (multipart when
    it has MultipartHttpPushUri and not @raw): (status, headers, doc)."""
    us = request(lab, i, 'GET', UPDATE_SERVICE, token=token)[2]
    if us.get('MultipartHttpPushUri') and not raw:
        params = {}
        if targets is not None:
            params['Targets'] = targets
        if apply_time:
            params['@Redfish.OperationApplyTime'] = apply_time
        ctype, body = multipart_body(params, image)
        return request(lab, i, 'POST', us['MultipartHttpPushUri'], body,
                    {'Content-Type': ctype}, token=token)
    return request(lab, i, 'POST', us['HttpPushUri'], image,
                {'Content-Type': 'application/octet-stream'}, token=token)


def members(lab, i, kind):
    """FirmwareInventory member URIs of node @i of @kind (bmc, bios)."""
    pats = emu.DIALECTS[lab.vendor(i)][kind]
    out, url = [], FW_INV
    while url:
        doc = request(lab, i, 'GET', url)[2]
        out += [m['@odata.id'] for m in doc['Members']]
        url = doc.get('Members@odata.nextLink')
    return [u for u in out if any(re.fullmatch(p, u.rsplit('/', 1)[1]) for p in pats)]


def wait_task(lab, i, location, token=None, limit=20.0):
    """Poll @location until the task finishes: (final doc, states seen)."""
    seen = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        st, h, doc = request(lab, i, 'GET', location, token=token)
        if st == 404:
            return None, seen
        state = doc.get('TaskState')
        if not seen or seen[-1] != state:
            seen.append(state)
        if state in ('Completed', 'Exception', 'Killed', 'Cancelled'):
            return doc, seen
        time.sleep(0.05)
    raise emu.LabError('selftest: task %s did not finish (states %s)' % (location, seen))


def wait_back(lab, i, limit=30.0):
    """Poll node @i's service root until it answers 200: the statuses seen
    ('refused' for a refused connection), in order, de-duplicated."""
    seen = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            st = request(lab, i, 'GET', ROOT, timeout=2)[0]
        except ConnectionRefusedError:
            st = 'refused'
        except (OSError, ValueError):
            st = 'dropped'
        if not seen or seen[-1] != st:
            seen.append(st)
        if st == 200:
            return seen
        time.sleep(0.05)
    raise emu.LabError('selftest: node %d did not come back (%s)' % (i, seen))


def reset_manager(lab, i, token=None):
    mgr = lab.state(i) and request(lab, i, 'GET', ROOT + '/Managers', token=token)[2]
    uri = mgr['Members'][0]['@odata.id']
    act = request(lab, i, 'GET', uri, token=token)[2]['Actions']['#Manager.Reset']
    allowed = act.get('ResetType@Redfish.AllowableValues')
    if not isinstance(allowed, list) and act.get('@Redfish.ActionInfo'):
        ai = request(lab, i, 'GET', act['@Redfish.ActionInfo'], token=token)[2]
        allowed = [p for p in ai['Parameters'] if p['Name'] == 'ResetType'][0]['AllowableValues']
    rt = next(t for t in ('GracefulRestart', 'ForceRestart') if not allowed or t in allowed)
    return request(lab, i, 'POST', act['target'], {'ResetType': rt}, token=token)[0]


def _expect(cond, what):
    if not cond:
        raise emu.LabError('selftest (update): ' + what)


def selftest(workdir, prefix):
    """The UpdateService happy path on one BMC per dialect, a pull, a host
    reset activation, a conflict. Returns the number of checks."""
    fast = {'update_new': 0.1, 'update_flash': 0.3, 'bmc_reset_refused': 0.5,
            'bmc_reset_busy': 0.5, 'retry_after': 1}
    ov = {i: dict(fast) for i in range(1, 6)}
    checks = 0
    with emu.RedfishLab(workdir, prefix=prefix, count=5, overrides=ov) as lab:
        for i in lab.indices():
            login = request(lab, i, 'POST', emu.SESSIONS, {'UserName': lab.user,
                                                        'Password': lab.password})
            token = login[1]['x-auth-token']
            bmc = members(lab, i, 'bmc')
            version = 'ST-%d.0' % i
            image = ('GF-IMAGE version=%s targets=bmc\n' % version).encode() + b'\0' * 1000
            st, h, doc = push(lab, i, image, targets=bmc, token=token)
            _expect(st == 202 and 'location' in h and doc['TaskState'] == 'New',
                    'push on node %d: %s %s' % (i, st, doc))
            st2 = push(lab, i, image, targets=bmc, token=token)[0]
            _expect(st2 == 409, 'second push on node %d gave %s' % (i, st2))
            final, seen = wait_task(lab, i, h['location'], token=token)
            _expect(final['TaskState'] == 'Completed' and final['PercentComplete'] == 100,
                    'task of node %d: %s' % (i, final))
            _expect(seen[-1] == 'Completed' and set(seen) <= {'New', 'Starting', 'Running',
                                                             'Completed'},
                    'states of node %d: %s' % (i, seen))
            cur = [request(lab, i, 'GET', u, token=token)[2]['Version'] for u in members(lab, i, 'bmc')]
            _expect(version not in cur, 'node %d shows %s before the reset' % (i, version))
            _expect(reset_manager(lab, i, token) in (200, 204), 'manager reset of node %d' % i)
            back = wait_back(lab, i)
            _expect('refused' in back and 503 in back and back.index('refused') < back.index(503),
                    'downtime of node %d: %s' % (i, back))
            _expect(request(lab, i, 'GET', ROOT + '/Systems', token=token)[0] == 401,
                    'session of node %d survived the reset' % i)
            cur = [request(lab, i, 'GET', u)[2]['Version'] for u in members(lab, i, 'bmc')]
            _expect(cur and all(v == version for v in cur),
                    'node %d shows %s after the reset, not %s' % (i, cur, version))
            upd = lab.updates(i)
            _expect(len(upd['pushes']) == 1 and upd['pushes'][0]['version'] == version
                    and len(upd['refused']) == 1 and upd['refused'][0]['status'] == 409
                    and [r['kind'] for r in upd['resets']] == ['manager'],
                    'observed on node %d: %s' % (i, upd))
            checks += 9
        # a host-side version after a restarting ComputerSystem.Reset (DGX BIOS)
        bios = members(lab, 2, 'bios')
        st, h, doc = push(lab, 2, b'GF-IMAGE version=BIOS-2\n', targets=bios)
        final, _ = wait_task(lab, 2, h['location'])
        _expect(final['TaskState'] == 'Completed', 'bios task: %s' % final)
        sysuri = lab.state(2)['main_system']
        _expect(request(lab, 2, 'GET', sysuri)[2]['BiosVersion'] != 'BIOS-2', 'bios before reset')
        target = request(lab, 2, 'GET', sysuri)[2]['Actions']['#ComputerSystem.Reset']['target']
        _expect(request(lab, 2, 'POST', target, {'ResetType': 'ForceRestart'})[0] in (200, 204),
                'host reset')
        _expect(request(lab, 2, 'GET', sysuri)[2]['BiosVersion'] == 'BIOS-2', 'bios after reset')
        checks += 3
        # a pull over HTTPS (HPE SimpleUpdate), from an ImageServer with a lab-CA cert
        imgdir = os.path.join(workdir, 'images')
        os.makedirs(imgdir, exist_ok=True)
        ilo = b'GF-IMAGE version=2.99 targets=bmc\n' + b'x' * 4096
        with open(os.path.join(imgdir, 'ilo.fwpkg'), 'wb') as f:
            f.write(ilo)
        with ImageServer(lab, lab.addr(5).rsplit('.', 1)[0] + '.250', imgdir) as srv:
            us = request(lab, 5, 'GET', UPDATE_SERVICE)[2]
            target = us['Actions']['#UpdateService.SimpleUpdate']['target']
            st, h, doc = request(lab, 5, 'POST', target, {'ImageURI': srv.url('ilo.fwpkg'),
                                                      'TransferProtocol': 'HTTPS'})
            _expect(st == 202, 'pull on node 5: %s %s' % (st, doc))
            final, _ = wait_task(lab, 5, h['location'])
            _expect(final['TaskState'] == 'Completed', 'pull task: %s' % final)
            _expect(len(srv.requests) == 1 and srv.requests[0]['status'] == 200,
                    'image server saw %s' % srv.requests)
            rec = lab.updates(5)['pushes'][-1]
            _expect(rec['kind'] == 'pull' and rec['version'] == '2.99'
                    and rec['size'] == len(ilo), 'pull record %s' % rec)
            st, h, doc = request(lab, 5, 'POST', target, {'ImageURI': srv.url('missing.fwpkg'),
                                                      'TransferProtocol': 'HTTPS'})
            final, _ = wait_task(lab, 5, h['location'])
            _expect(final['TaskState'] == 'Exception'
                    and 'TransferFailed' in final['Messages'][0]['MessageId'],
                    'a failed download: %s' % final)
        checks += 5
    return checks
