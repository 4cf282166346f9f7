#!/usr/bin/python3
"""Build the emulator's fixtures from tall-form Redfish mockups.

    trim.py MOCKUPS_DIR [OUT_DIR]

For each vendor folder of MOCKUPS_DIR (DMTF Redfish-Mockup-Creator output:
the resource at /redfish/v1/X is X/index.json), keep only what the Redfish
backend and its tests need (see KEEP below), merge captured pages
('Coll?$skip=75') into their collection, and write OUT_DIR/<vendor>/tree.json:
one JSON object {"vendor", "source", "resources": {uri: resource}} with one
resource per line. Resources are kept as captured (parsed and re-serialized)
except: collections whose members were dropped or merged have Members and
Members@odata.count rewritten, and the Sessions collection is emptied.
"""

import json
import os
import re
import sys

VENDORS = ['supermicro-sys-821ge-tnhr', 'nvidia-dgx-h100', 'lenovo-sr670-v2', 'dell-r750',
           'hpe-dl385-gen10plus-v2']

ID = r'[^/]+'
# Paths relative to /redfish/v1, as regular expressions that must match the
# whole path. '' is the service root.
KEEP = [
    r'',
    r'Systems', r'Systems/{id}',
    r'Systems/{id}/Processors', r'Systems/{id}/Processors/{id}',
    r'(Systems|Managers)/{id}/LogServices', r'(Systems|Managers)/{id}/LogServices/{id}',
    r'(Systems|Managers)/{id}/LogServices/{id}/Entries',
    r'(Systems|Managers)/{id}/LogServices/{id}/Entries/{id}',
    r'(Systems|Managers|Chassis)/{id}/{id}ActionInfo',
    r'Managers', r'Managers/{id}',
    r'Chassis', r'Chassis/{id}',
    r'Chassis/{id}/(Thermal|Power|ThermalSubsystem|PowerSubsystem|Sensors)',
    r'Chassis/{id}/ThermalSubsystem/(Fans|ThermalMetrics)',
    r'Chassis/{id}/ThermalSubsystem/Fans/{id}',
    r'Chassis/{id}/PowerSubsystem/PowerSupplies',
    r'Chassis/{id}/PowerSubsystem/PowerSupplies/{id}',
    r'Chassis/{id}/Sensors/{id}',
    r'Chassis/{id}/PCIeDevices', r'Chassis/{id}/PCIeDevices/{id}',
    r'UpdateService', r'UpdateService/{id}ActionInfo',
    r'UpdateService/FirmwareInventory', r'UpdateService/FirmwareInventory/{id}',
    r'SessionService', r'SessionService/Sessions',
    r'TaskService', r'TaskService/Tasks', r'TaskService/Tasks/{id}',
    r'AccountService', r'AccountService/Accounts', r'AccountService/Accounts/{id}',
    r'AccountService/Roles', r'AccountService/Roles/{id}',
    r'Systems/{id}/Bios', r'Systems/{id}/Bios/(Settings|Pending|SD|settings)',
]
KEEP_RE = re.compile('^(?:%s)$' % '|'.join('(?:%s)' % k.format(id=ID) for k in KEEP))

# Per vendor, extra cuts to stay small: the DGX exposes 40-odd HGX chassis
# (GPUs, NVSwitches, retimers, ERoTs), each with dozens of sensors; keep
# the chassis resources themselves but the sensor collections of only a few.
DROP = {
    'nvidia-dgx-h100': [
        r'Chassis/(?!DGX|CPUBaseboard|HGX_GPU_SXM_1/|HGX_Chassis_0)[^/]+/'
        r'(Sensors|ThermalSubsystem|PowerSubsystem|PCIeDevices)(/.*)?',
        r'Chassis/DGX/PCIeDevices/.*',
    ],
}

PAGE_RE = re.compile(r'^(.*)\?\$skip=\d+$')


def load_tree(root):
    """{uri: resource} of a tall-form mockup; captured pages are merged into
    their collection (members de-duplicated, order kept)."""
    base = os.path.join(root, 'redfish', 'v1')
    res = {}
    pages = {}
    for dirpath, _, files in os.walk(base):
        if 'index.json' not in files:
            continue
        rel = os.path.relpath(dirpath, base)
        rel = '' if rel == '.' else rel
        with open(os.path.join(dirpath, 'index.json'), encoding='utf-8') as f:
            doc = json.load(f)
        m = PAGE_RE.match(rel)
        if m:
            pages.setdefault(m.group(1), []).append(doc)
            continue
        res[rel] = doc
    for rel, docs in pages.items():
        coll = res.get(rel)
        if coll is None or not isinstance(coll.get('Members'), list):
            continue
        for doc in docs:
            coll['Members'].extend(doc.get('Members', []))
    for doc in res.values():
        if isinstance(doc, dict) and isinstance(doc.get('Members'), list):
            seen = set()
            members = []
            for m in doc['Members']:
                key = m.get('@odata.id') if isinstance(m, dict) else None
                if key in seen:
                    continue
                seen.add(key)
                members.append(m)
            doc['Members'] = members
            doc.pop('Members@odata.nextLink', None)
    return res


def trim(vendor, res):
    drops = [re.compile('^(?:%s)$' % d) for d in DROP.get(vendor, [])]
    kept = {}
    for rel, doc in res.items():
        if not KEEP_RE.match(rel) or any(d.match(rel) for d in drops):
            continue
        if re.search(r'(^|/)Oem(/|$)', rel):
            continue
        kept[rel] = doc
    for rel, doc in kept.items():
        if not isinstance(doc.get('Members'), list):
            continue
        if rel == 'SessionService/Sessions':
            doc['Members'] = []
        elif rel.endswith('/Sensors') or rel.endswith('/PCIeDevices') \
                or rel.startswith('AccountService/'):
            # members that were not kept are dropped from the collection
            doc['Members'] = [m for m in doc['Members']
                              if _rel(m.get('@odata.id', '')) in kept]
        if 'Members@odata.count' in doc:
            doc['Members@odata.count'] = len(doc['Members'])
    return kept


# Synthesized, not captured: the Lenovo capture has a SEL LogService without
# its Entries (the capture tool did not follow it). The XCC serves SEL
# entries there; these four follow the LogEntry schema and the shape of the
# other SEL captures (DGX, Dell).
LENOVO_SEL = 'Systems/1/LogServices/SEL'
LENOVO_SEL_ENTRIES = [
    ('1', '2024-07-18T21:58:02+00:00', 'OK', 'Event Logging Disabled', 'Assert',
     'Log area reset/cleared', 'SEL log cleared'),
    ('2', '2024-07-18T22:00:55+00:00', 'OK', 'System Event', 'Assert',
     'Timestamp clock synch', 'System boot'),
    ('3', '2024-07-19T03:12:40+00:00', 'Warning', 'Temperature', 'Assert',
     'Upper Non-critical going high', 'Ambient Temp upper non-critical threshold exceeded'),
    ('4', '2024-07-19T03:14:02+00:00', 'Critical', 'Power Supply', 'Assert',
     'Power Supply AC lost', 'PSU2 input lost'),
]


def synthesize(vendor, kept):
    if vendor != 'lenovo-sr670-v2' or LENOVO_SEL not in kept:
        return
    base = '/redfish/v1/' + LENOVO_SEL + '/Entries'
    kept[LENOVO_SEL]['Entries'] = {'@odata.id': base}
    members = []
    for eid, created, sev, stype, code, event, msg in LENOVO_SEL_ENTRIES:
        uri = '%s/%s' % (base, eid)
        kept[LENOVO_SEL + '/Entries/' + eid] = {
            '@odata.id': uri, '@odata.type': '#LogEntry.v1_11_0.LogEntry',
            'Id': eid, 'Name': 'SEL Entry %s' % eid, 'EntryType': 'SEL',
            'Created': created, 'Severity': sev, 'SensorType': stype,
            'EntryCode': code, 'Message': '%s: %s' % (event, msg),
            'MessageId': 'Lenovo.0.1.0.SEL%04d' % int(eid),
        }
        members.append({'@odata.id': uri})
    kept[LENOVO_SEL + '/Entries'] = {
        '@odata.id': base, '@odata.type': '#LogEntryCollection.LogEntryCollection',
        'Name': 'SEL Entries', 'Members': members, 'Members@odata.count': len(members),
    }


def _rel(uri):
    uri = uri.split('#')[0].rstrip('/')
    prefix = '/redfish/v1'
    if uri == prefix:
        return ''
    return uri[len(prefix) + 1:] if uri.startswith(prefix + '/') else None


def write(vendor, source, kept, out_dir):
    os.makedirs(os.path.join(out_dir, vendor), exist_ok=True)
    path = os.path.join(out_dir, vendor, 'tree.json')
    lines = []
    for rel in sorted(kept):
        uri = '/redfish/v1' + ('/' + rel if rel else '')
        lines.append('%s: %s' % (json.dumps(uri), json.dumps(kept[rel], ensure_ascii=False,
                                                              separators=(',', ':'))))
    head = '{"vendor": %s, "source": %s, "resources": {\n' % (json.dumps(vendor),
                                                               json.dumps(source))
    with open(path + '.tmp', 'w', encoding='utf-8') as f:
        f.write(head + ',\n'.join(lines) + '\n}}\n')
    os.rename(path + '.tmp', path)
    return path


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = argv[1]
    out = argv[2] if len(argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    for vendor in VENDORS:
        res = load_tree(os.path.join(src, vendor))
        kept = trim(vendor, res)
        synthesize(vendor, kept)
        path = write(vendor, 'redfish-mockups/' + vendor, kept, out)
        print('%s: %d of %d resources, %d bytes' % (vendor, len(kept), len(res),
                                                    os.path.getsize(path)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
