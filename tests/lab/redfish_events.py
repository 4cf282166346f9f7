"""The EventService of the emulated BMCs: Server-Sent Events with bmcweb's
limits, events injected by the tests, each mirrored into the event log
(LogService), and CPER log entries built from the UEFI layouts.

bmcweb's behaviour that the client must live with (REDFISH-EMU.md,
"EventService"): at most 10 streams (the 11th is answered with an error),
the last 200 events replayed after Last-Event-ID, no keep-alives, and a
client that stops reading dropped after 30 s (configurable). The
ServerSentEventUri is the one each capture has (DGX /EventService/SSE,
Lenovo /EventService/ServerSentEvent, Dell /SSE); the Supermicro and HPE
captures have none, so those nodes are polled.

Control (POST on the node's control port, JSON bodies):
  /events/inject  {"events": [{"message", "severity", "message_id", "origin",
                   "cper": {"xid": 79, "xid_message": "...", "recovery_action": 2}
                   or true}], "count": N, "push": true}   -> {"ids": [...]}
                   push false: stored (replay buffer and log) but not sent to
                   the streams open now, as if they had been disconnected
  /events/flood   {"count": N, "rate": R}  N distinct events written to the open
                   streams, at once or R a second (not logged, not replayed)
                   -> {"ids": [first, last]}
  /events/drop    {}       every stream closed by the BMC
  /events/hostile {"kind": "endless"|"huge"|"badjson"|"backwards"|"escape"|"flood"|null}
  /events/config  {"max_streams": 10, "drop_after": 30, "replay": 200, "sse": true,
                   "reset": true (counters, hostile and limits back to their defaults)}
GET /events/state -> {"streams", "served", "refused", "dropped", "last_event_ids", "next_id",
                      "attachment_gets"}
An injected event with "cper": {"uri": true, "pad": N} gets a log entry whose
record is not inline: AdditionalDataURI <entry>/attachment serves it
(application/octet-stream, N zero bytes after it), each GET noted.
"""

import base64
import collections
import json
import select
import socket
import ssl
import struct
import threading
import time

ROOT = '/redfish/v1'
ES = ROOT + '/EventService'

# The ServerSentEventUri of each capture (/work/shared/redfish-mockups), None: no SSE.
SSE_URI = {
    'nvidia-dgx-h100': ROOT + '/EventService/SSE',
    'lenovo-sr670-v2': ROOT + '/EventService/ServerSentEvent',
    'dell-r750': ROOT + '/SSE',
    'supermicro-sys-821ge-tnhr': None,
    'hpe-dl385-gen10plus-v2': None,
}

_emu = None


def bind(emu):
    global _emu
    _emu = emu


class Events:
    """One node's event service state (guarded by node.lock)."""

    def __init__(self, node):
        self.uri = SSE_URI.get(node.vendor)
        self.enabled = self.uri is not None
        self.max_streams = 10
        self.drop_after = 30.0
        self.buffer = collections.deque(maxlen=200)
        self.streams = []
        self.served = 0
        self.refused = 0
        self.dropped = 0
        self.last_event_ids = []
        self.hostile = None
        self.next_id = 1
        self.entries_uri = None
        self.attachments = {}  # uri -> bytes: CPER records served by AdditionalDataURI
        self.attachment_gets = []  # the uris fetched, in order


def _iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(t))


def _event_service(node):
    es = {
        '@odata.id': ES, '@odata.type': '#EventService.v1_7_0.EventService',
        'Id': 'EventService', 'Name': 'Event Service', 'ServiceEnabled': True,
        'DeliveryRetryAttempts': 3, 'EventFormatTypes': ['Event', 'MetricReport'],
        'Subscriptions': {'@odata.id': ES + '/Subscriptions'},
    }
    if node.ev.enabled:
        es['ServerSentEventUri'] = node.ev.uri
    return es


def setup(node):
    node.ev = Events(node)
    node.put(ES, _event_service(node))
    ls = node.get(node.d['sel']) or {}
    entries = (ls.get('Entries') or {}).get('@odata.id')
    if entries and node.get(entries) is not None:
        node.ev.entries_uri = entries
        # Ids go on from the log's own, so an event's id is its log entry's Id.
        for m in node.get(entries).get('Members', []):
            mid = m.get('Id') or (m.get('@odata.id') or '').rsplit('/', 1)[-1]
            if str(mid).isdigit():
                node.ev.next_id = max(node.ev.next_id, int(mid) + 1)


# ---- CPER records (UEFI appendix N; NVIDIA's event section as libcper documents it) ----

def _guid(text):
    """A GUID in its UEFI byte order: the first three fields little-endian."""
    h = text.replace('-', '')
    a, b, c = int(h[0:8], 16), int(h[8:12], 16), int(h[12:16], 16)
    return struct.pack('<IHH', a, b, c) + bytes.fromhex(h[16:32])


NVIDIA_EVENT = '9068e568-6ca0-11f0-aeaf-159343591eac'
MEMORY = 'a5bc1114-6f64-4ede-b863-3e83ed7c83b1'


def _nvidia_gpu_event(xid, message, recovery_action):
    """Header(32) + info(3+16) + Xid context(16+240) + actions context(16+16)."""
    hdr = struct.pack('<BBBBHHQ', 1, 2, 1, 0, 1, 0, 0) + b'GPU-EVENT'.ljust(16, b'\0')
    info = struct.pack('<HB', 0x0100, 3 + 16) + bytes(16)
    msg = message.encode()[:235].ljust(236, b'\0')
    xid_data = struct.pack('<I', xid) + msg
    ctx1 = struct.pack('<IHHHHI', 16 + len(xid_data), 0, 0, 0x8001, 1, len(xid_data)) + xid_data
    act = struct.pack('<B3sHHQ', 0x01, b'\0\0\0', recovery_action, 0, 0)
    ctx2 = struct.pack('<IHHHHI', 16 + len(act), 0, 0, 0x8002, 1, len(act)) + act
    return hdr + info + ctx1 + ctx2


def _memory_section(address):
    valid = (1 << 1) | (1 << 14)  # physical address, memory error type
    body = struct.pack('<QQQQ', valid, 0, address, 0) + bytes(16) + bytes(24)
    body += struct.pack('<BBHHH', 3, 0, 0, 0, 0)  # multi-bit ECC
    return body


def cper_record(xid=79, xid_message='GPU has fallen off the bus', recovery_action=2,
                address=0x1234000):
    """A fatal record: one NVIDIA GPU event section (Xid, recommended
    action) and one platform memory section."""
    sections = [(_guid(NVIDIA_EVENT), _nvidia_gpu_event(xid, xid_message, recovery_action), 1),
                (_guid(MEMORY), _memory_section(address), 2)]
    off = 128 + 72 * len(sections)
    descs, bodies = b'', b''
    for guid, body, sev in sections:
        descs += struct.pack('<IIHBBI', off, len(body), 0x0100, 0, 0, 0) + guid + bytes(16) \
            + struct.pack('<I', sev) + bytes(20)
        bodies += body
        off += len(body)
    total = 128 + len(descs) + len(bodies)
    ts = bytes([0x00, 0x30, 0x03, 0x00, 0x02, 0x12, 0x26, 0x20])  # 2026-12-02 03:30:00, BCD
    header = b'CPER' + struct.pack('<HIHII', 0x0101, 0xFFFFFFFF, len(sections), 1, 0x2) \
        + struct.pack('<I', total) + ts + bytes(16) + bytes(16) + bytes(16) + bytes(16) \
        + struct.pack('<QIQ', 0x42, 0, 0) + bytes(12)
    assert len(header) == 128
    return header + descs + bodies


# ---- events ----

def _record(node, eid, spec, now):
    rec = {
        'EventId': str(eid), 'EventTimestamp': _iso(now), 'EventType': 'Alert',
        'MessageSeverity': spec.get('severity', 'OK'), 'Severity': spec.get('severity', 'OK'),
        'Message': spec.get('message', 'Event %d' % eid),
        'MessageId': spec.get('message_id', 'ResourceEvent.1.0.ResourceErrorsDetected'),
        'MessageArgs': [],
        'OriginOfCondition': {'@odata.id': spec.get('origin', node.main_system)},
    }
    return rec


def _log_entry(node, eid, spec, now):
    uri = '%s/%d' % (node.ev.entries_uri, eid)
    e = {
        '@odata.id': uri, '@odata.type': '#LogEntry.v1_9_0.LogEntry', 'Id': str(eid),
        'Name': 'Log Entry %d' % eid, 'EntryType': 'Event', 'Created': _iso(now),
        'Severity': spec.get('severity', 'OK'), 'Message': spec.get('message', 'Event %d' % eid),
        'MessageId': spec.get('message_id', 'ResourceEvent.1.0.ResourceErrorsDetected'),
        'Links': {'OriginOfCondition': {'@odata.id': spec.get('origin', node.main_system)}},
    }
    cper = spec.get('cper')
    if cper:
        args = cper if isinstance(cper, dict) else {}
        rec = cper_record(args.get('xid', 79), args.get('xid_message', 'GPU has fallen off the bus'),
                          args.get('recovery_action', 2))
        e['DiagnosticDataType'] = 'CPER'
        if args.get('uri'):
            # Not inline: the record is fetched from AdditionalDataURI (octet-stream);
            # "pad": that many more bytes after it (a BMC that sends too much).
            e['AdditionalDataURI'] = uri + '/attachment'
            node.ev.attachments[e['AdditionalDataURI']] = rec + b'\0' * int(args.get('pad', 0))
        else:
            e['DiagnosticData'] = base64.b64encode(rec).decode()
        e['AdditionalDataSizeBytes'] = len(rec)
    return uri, e


def _mirror(node, uri, entry):
    coll = node.own(node.ev.entries_uri)
    members = coll.setdefault('Members', [])
    inline = bool(members) and len(members[0]) > 1
    node.put(uri, entry)
    members.append(dict(entry) if inline else {'@odata.id': uri})
    coll['Members@odata.count'] = len(members)
    node.touch(node.ev.entries_uri)


def _frame(eid, payload):
    return ('id: %d\ndata: %s\n\n' % (eid, json.dumps(payload, separators=(',', ':')))).encode()


def inject(node, body):
    specs = list(body.get('events') or [])
    specs += [{} for _ in range(int(body.get('count', 0)))]
    push = body.get('push', True)
    ids = []
    with node.lock:
        for spec in specs:
            now = time.time()
            eid = node.ev.next_id
            node.ev.next_id += 1
            payload = {'@odata.type': '#Event.v1_7_0.Event', 'Id': str(eid), 'Name': 'Event Log',
                       'Events': [_record(node, eid, spec, now)]}
            frame = _frame(eid, payload)
            node.ev.buffer.append((eid, frame))
            if node.ev.entries_uri:
                _mirror(node, *_log_entry(node, eid, spec, now))
            if push:
                for st in node.ev.streams:
                    st['queue'].append(frame)
            ids.append(eid)
        cond = [st['cond'] for st in node.ev.streams]
    for c in cond:
        with c:
            c.notify_all()
    return ids


def flood(node, count, rate=0):
    """@count distinct events sent to the streams open now: at once as one
    write, or @rate a second (a write each tenth of a second, from a thread
    of its own); neither mirrored into the log nor replayable (for
    benchmarks: the client's ingest is measured, not the emulator's)."""
    now = time.time()
    with node.lock:
        first = node.ev.next_id
        node.ev.next_id += count
        recs = []
        for eid in range(first, first + count):
            payload = {'@odata.type': '#Event.v1_7_0.Event', 'Id': str(eid), 'Name': 'Event Log',
                       'Events': [_record(node, eid, {'message': 'Flood %d' % eid}, now)]}
            recs.append(_frame(eid, payload))
        streams = list(node.ev.streams)
    step = max(1, int(rate / 10)) if rate else count

    def send():
        t0 = time.monotonic()
        for k in range(0, count, step):
            if rate:
                time.sleep(max(0.0, t0 + k / rate - time.monotonic()))
            blob = b''.join(recs[k:k + step])
            with node.lock:
                for st in streams:
                    st['queue'].append(blob)
            for st in streams:
                with st['cond']:
                    st['cond'].notify_all()

    if rate:
        threading.Thread(target=send, daemon=True).start()
    else:
        send()
    return [first, first + count - 1]


def state(node):
    with node.lock:
        return {'streams': len(node.ev.streams), 'served': node.ev.served,
                'refused': node.ev.refused, 'dropped': node.ev.dropped,
                'last_event_ids': list(node.ev.last_event_ids), 'next_id': node.ev.next_id,
                'attachment_gets': list(node.ev.attachment_gets),
                'uri': node.ev.uri if node.ev.enabled else None}


def control(node, method, path, handler):
    """Answer a control request of this module: (status, obj), or None."""
    if method == 'GET' and path == '/events/state':
        return 200, state(node)
    if method != 'POST' or not path.startswith('/events/'):
        return None
    body = handler._json()
    if path == '/events/inject':
        return 200, {'ok': True, 'ids': inject(node, body)}
    if path == '/events/flood':
        return 200, {'ok': True, 'ids': flood(node, int(body.get('count', 10000)),
                                              float(body.get('rate', 0)))}
    if path == '/events/drop':
        with node.lock:
            conds = []
            for st in node.ev.streams:
                st['drop'] = True
                conds.append(st['cond'])
        for c in conds:
            with c:
                c.notify_all()
        return 200, {'ok': True, 'streams': len(conds)}
    if path == '/events/hostile':
        with node.lock:
            node.ev.hostile = body.get('kind')
        return 200, {'ok': True}
    if path == '/events/config':
        with node.lock:
            if 'max_streams' in body:
                node.ev.max_streams = int(body['max_streams'])
            if 'drop_after' in body:
                node.ev.drop_after = float(body['drop_after'])
            if 'replay' in body:
                node.ev.buffer = collections.deque(node.ev.buffer, maxlen=int(body['replay']))
            if body.get('reset'):
                node.ev.served = node.ev.refused = node.ev.dropped = 0
                node.ev.last_event_ids = []
                node.ev.hostile = None
                node.ev.max_streams = 10
                node.ev.drop_after = 30.0
                node.ev.buffer = collections.deque(node.ev.buffer, maxlen=200)
            if 'sse' in body:
                node.ev.enabled = bool(body['sse']) and node.ev.uri is not None
                node.put(ES, _event_service(node))
        return 200, {'ok': True}
    return 404, {'error': 'no control %s' % path}


# ---- CPER records by AdditionalDataURI ----

def attachment(handler, node):
    """The GET of a log entry's AdditionalDataURI: True when answered here."""
    path = handler.path.split('?', 1)[0]
    with node.lock:
        body = node.ev.attachments.get(path)
    if body is None:
        return False
    with node.lock:
        kind, user, err = node._authenticate(handler.headers)
    if err is not None:
        handler._send(node, 'GET', err, kind, user)
        return True
    with node.lock:
        node.ev.attachment_gets.append(path)
    handler._send(node, 'GET', _emu.Reply(200, body, content_type='application/octet-stream'),
                  kind, user)
    return True


# ---- the stream ----

def is_stream(node, raw_path):
    path = raw_path.split('?', 1)[0].rstrip('/')
    return node.ev.enabled and node.ev.uri is not None and path == node.ev.uri


def _closed(conn):
    """Has the client closed (it sends nothing after its request)?"""
    try:
        r, _, _ = select.select([conn], [], [], 0)
        if not r:
            return False
        old = conn.gettimeout()
        conn.settimeout(0.01)
        try:
            return conn.recv(1) == b''
        finally:
            conn.settimeout(old)
    except (ssl.SSLWantReadError, socket.timeout):
        return False
    except (OSError, ValueError):
        return True


def _hostile(kind, write, st, node):
    ev = {'Events': [{'EventId': '1', 'Message': 'x', 'MessageSeverity': 'OK'}]}
    if kind == 'endless':
        write(b'data: ')
        chunk = b'A' * 65536
        for _ in range(256):  # 16 MiB at most, or until the client gives up
            write(chunk)
    elif kind == 'huge':
        write(b'id: 1\n')
        line = b'data: ' + b'B' * 65000 + b'\n'
        for _ in range(100 * 1024 * 1024 // len(line)):  # an event of 100 MiB
            write(line)
        write(b'\n')
    elif kind == 'badjson':
        write(b'id: 1\ndata: {"Events": [ {"EventId": "1", \n\n')
    elif kind == 'backwards':
        write(b'id: 5\ndata: ' + json.dumps(ev).encode() + b'\n\n')
        write(b'id: 3\ndata: ' + json.dumps(ev).encode() + b'\n\n')
    elif kind == 'escape':
        write(b'id: 1\ndata: {"Events": [{"EventId": "1", "Message": "\x1b[2J\x1b]0;pwned\x07"}]}\n\n')
    elif kind == 'flood':
        for k in range(1, 10001):
            write(b'id: %d\ndata: %s\n\n' % (k, json.dumps(ev).encode()))
    # then hold the connection, as a broken BMC would, until the client leaves
    while not st['drop'] and not node.stopping and not _closed(st['conn']):
        time.sleep(0.05)


def serve(handler, node):
    """The GET of the SSE URI: the stream until the client leaves, the BMC
    drops it, or the client stops reading for drop_after seconds."""
    with node.lock:
        kind, user, err = node._authenticate(handler.headers)
    if err is not None:
        handler._send(node, 'GET', err, kind, user)
        return
    last = handler.headers.get('Last-Event-ID')
    with node.lock:
        if len(node.ev.streams) >= node.ev.max_streams:
            node.ev.refused += 1
            refuse = True
        else:
            refuse = False
            st = {'queue': collections.deque(), 'cond': threading.Condition(), 'drop': False,
                  'conn': handler.connection}
            node.ev.streams.append(st)
            node.ev.served += 1
            node.ev.last_event_ids.append(last)
            hostile = node.ev.hostile
            if last is not None and last.strip().isdigit():
                after = int(last.strip())
                for eid, frame in node.ev.buffer:
                    if eid > after:
                        st['queue'].append(frame)
    if refuse:
        handler.close_connection = True
        handler._send(node, 'GET', _emu.rf_error(
            503, 'ServiceTemporarilyUnavailable',
            'The maximum number of event streams (%d) is reached.' % node.ev.max_streams),
            kind, user)
        return
    node.access({'t': round(time.time(), 6), 'conn': handler.conn, 'method': 'GET',
                 'path': handler.path, 'auth': kind, 'user': user, 'status': 200, 'bytes': 0,
                 'sse': True, 'last_event_id': last})
    handler.close_connection = True
    try:
        handler.send_response(200)
        handler.send_header('Content-Type', 'text/event-stream')
        handler.send_header('Cache-Control', 'no-cache')
        handler.send_header('Connection', 'close')
        handler.end_headers()
        handler.wfile.flush()
        # A client that stops reading: writes block, and after drop_after it is dropped.
        handler.connection.settimeout(node.ev.drop_after)

        def write(b):
            handler.wfile.write(b)
            handler.wfile.flush()

        if hostile:
            _hostile(hostile, write, st, node)
            return
        while True:
            with st['cond']:
                if not st['queue'] and not st['drop']:
                    st['cond'].wait(0.1)
            if st['drop'] or node.stopping:
                break
            with node.lock:
                frames = list(st['queue'])
                st['queue'].clear()
            for f in frames:
                write(f)
            if not frames and _closed(handler.connection):
                break
    except (OSError, ValueError, socket.timeout):
        pass
    finally:
        with node.lock:
            if st in node.ev.streams:
                node.ev.streams.remove(st)
            if st['drop']:
                node.ev.dropped += 1
        try:
            handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
