"""BIOS settings for the Redfish emulator (tests/lab/redfish_emu.py).

The current attributes (Systems/<id>/Bios) and the settings object of each
captured dialect (Bios/SD, Bios/Pending, Bios/Settings, bios/settings), a
PATCH of the settings object with If-Match, pending values applied on a
restarting ComputerSystem.Reset, a synthesized AttributeRegistry under
/redfish/v1/Registries where the dialect publishes one, a refused-value
fault, and paths resolved without regard to case where the BMC does so
(iLO). The contract is the "BIOS settings" section of REDFISH-EMU.md.

redfish_emu.py binds itself once (bind()) and calls in where a Node is
made (setup()), for every request path (resolve()), before its own routing
(route()), after an accepted ComputerSystem.Reset (on_reset()), for the
override keys in OVERRIDE_KEYS (override()) and in /state (state()).
Nothing here runs on its own.
"""

import copy
import re

ROOT = '/redfish/v1'
REGISTRIES = ROOT + '/Registries'

OVERRIDE_KEYS = {'bios', 'bios_refuse', 'bios_registry', 'bios_deep'}

# Dialects whose BMC resolves paths without regard to case (iLO: the
# capture links /redfish/v1/systems/1/bios while its other links say Systems).
CASE_INSENSITIVE = {'hpe-dl385-gen10plus-v2'}

# Dialects that publish the AttributeRegistry their Bios names. None of the
# five captures holds one (the capture tool did not follow /Registries), so
# the registry served is synthesized from the captured attributes: see
# registry_entries(). iDRAC, iLO and XCC publish theirs; the AMI-based
# Supermicro and DGX captures are served without one.
REGISTRY_DIALECTS = {'dell-r750', 'hpe-dl385-gen10plus-v2', 'lenovo-sr670-v2'}

# Per dialect: attributes the synthesized registry marks read-only, and
# enumerations with their allowed values (the rest is guessed from the value).
READ_ONLY = {
    'dell-r750': ['SystemServiceTag', 'SystemBiosVersion', 'SystemCpldVersion',
                  'SystemMeVersion', 'SystemManufacturer', 'SystemModelName',
                  'UefiComplianceVersion', 'PasswordStatus', r'SataPort.Model'],
    'hpe-dl385-gen10plus-v2': ['SerialNumber', 'ProductId'],
    'lenovo-sr670-v2': [r'.*MACAddress', r'.*FamilyFirmwareVersion', r'.*EFIVersion',
                        r'.*PCIAddress', r'.*_DeviceName'],
}
ENUMS = {
    'dell-r750': {
        'SysProfile': ['PerfPerWattOptimizedDapc', 'PerfPerWattOptimizedOs', 'PerfOptimized',
                       'PerfWorkStationOptimized', 'Custom'],
        'WorkloadProfile': ['NotAvailable', 'DbOptimizedProfile', 'SdsOptimizedProfile',
                            'HpcProfile', 'LowLatencyOptimizedProfile'],
        'SubNumaCluster': ['Disabled', '2Way'],
    },
}
ENABLED_PAIRS = (('Enabled', 'Disabled'), ('Enable', 'Disable'))

RESTARTS = ('ForceRestart', 'GracefulRestart', 'PowerCycle')
APPLY_TIMES = ('Immediate', 'OnReset', 'AtMaintenanceWindowStart', 'InMaintenanceWindowOnReset')


def _find(node, uri):
    """The stored key of @uri, compared without regard to case or a trailing /."""
    if not uri:
        return None
    want = uri.rstrip('/').lower()
    for u in node.uris():
        if u.lower() == want:
            return u
    return None


def setup(node):
    """Find the Bios resource and settings object of the main System."""
    node.bios_uri = node.bios_settings = None
    node.bios_refuse = {}
    node.bios_deep = {}
    node.bios_registry = node.vendor in REGISTRY_DIALECTS
    sysobj = node.get(node.main_system) or {}
    bios = _find(node, (sysobj.get('Bios') or {}).get('@odata.id'))
    if bios is None:
        return
    node.bios_uri = bios
    settings = ((node.get(bios).get('@Redfish.Settings') or {}).get('SettingsObject') or {})
    node.bios_settings = _find(node, settings.get('@odata.id'))
    # Dell and Supermicro keep only the staged changes in the settings
    # object (empty as captured); DGX, Lenovo and HPE keep a full copy.
    node.bios_full = bool((node.get(node.bios_settings) or {}).get('Attributes')) \
        if node.bios_settings else False


def resolve(node, path):
    """The stored key for a request path: as given, or matched without case
    on dialects that do so."""
    if node.vendor not in CASE_INSENSITIVE or path in node.raw or node.get(path) is not None:
        return path
    if path.lower().startswith(REGISTRIES.lower()):
        return REGISTRIES + path[len(REGISTRIES):] if node.bios_registry else path
    found = _find(node, path)
    return found if found is not None else path


# -- the registry (synthesized) --

def _registry_id(node):
    return (node.get(node.bios_uri) or {}).get('AttributeRegistry') if node.bios_uri else None


def _ro(vendor, name):
    return any(re.fullmatch(p, name) for p in READ_ONLY.get(vendor, []))


def registry_entries(vendor, attrs):
    """RegistryEntries.Attributes for @attrs: Boolean, Integer (0 to 65535 or
    twice the value), Enumeration (the dialect's table, or an Enabled/Disabled
    pair), else String; read-only per READ_ONLY."""
    out = []
    enums = ENUMS.get(vendor, {})
    for name in sorted(attrs):
        v = attrs[name]
        e = {'AttributeName': name, 'DisplayName': name, 'ReadOnly': _ro(vendor, name)}
        if isinstance(v, bool):
            e['Type'] = 'Boolean'
        elif isinstance(v, int):
            e.update(Type='Integer', LowerBound=0, UpperBound=max(65535, 2 * v))
        elif v is None and name.endswith('Password'):
            e.update(Type='Password', MaxLength=64)   # write-only: it reads as null
        elif name in enums:
            e.update(Type='Enumeration', Value=[{'ValueName': x} for x in enums[name]])
        elif any(v in pair for pair in ENABLED_PAIRS):
            pair = [p for p in ENABLED_PAIRS if v in p][0]
            e.update(Type='Enumeration', Value=[{'ValueName': x} for x in pair])
        else:
            e.update(Type='String', MaxLength=255)
        out.append(e)
    return out


def _registry(node, path):
    rid = _registry_id(node)
    if not node.bios_registry or not rid:
        return None
    fid = rid.split('.')[0]
    member = REGISTRIES + '/' + fid
    file_uri = member + '/' + rid + '.json'
    if path == REGISTRIES:
        return {'@odata.id': REGISTRIES,
                '@odata.type': '#MessageRegistryFileCollection.MessageRegistryFileCollection',
                'Name': 'Registry File Collection', 'Members': [{'@odata.id': member}],
                'Members@odata.count': 1}
    if path == member:
        return {'@odata.id': member, '@odata.type': '#MessageRegistryFile.v1_1_0.MessageRegistryFile',
                'Id': fid, 'Name': 'BIOS Attribute Registry File', 'Registry': rid,
                'Languages': ['en'],
                'Location': [{'Language': 'en', 'Uri': file_uri}]}
    if path == file_uri:
        attrs = (node.get(node.bios_uri) or {}).get('Attributes') or {}
        return {'@odata.type': '#AttributeRegistry.v1_3_0.AttributeRegistry', 'Id': rid,
                'Name': 'BIOS Attribute Registry (synthesized by the emulator)',
                'Language': 'en', 'RegistryVersion': '1.0.0', 'OwningEntity': 'emulator',
                'RegistryEntries': {'Attributes': registry_entries(node.vendor, attrs)}}
    return None


def _entry(node, name):
    rid = _registry_id(node)
    if not node.bios_registry or not rid:
        return None
    doc = _registry(node, REGISTRIES + '/' + rid.split('.')[0] + '/' + rid + '.json')
    for e in doc['RegistryEntries']['Attributes']:
        if e['AttributeName'] == name:
            return e
    return None


# -- requests --

_emu = None   # the emulator module (bind())


def bind(emu):
    """Take the emulator's answers and ETag rules (called once by redfish_emu)."""
    global _emu
    _emu = emu


def _error(status, msg_id, message):
    return _emu.rf_error(status, msg_id, message)


def route(node, method, path, headers, body):
    """Answer what this module serves, or None to let the emulator route."""
    if path == REGISTRIES or path.startswith(REGISTRIES + '/'):
        doc = _registry(node, path)
        if doc is None:
            return None
        if method in ('GET', 'HEAD'):
            return _emu.Reply(200, doc)
        return _error(405, 'OperationNotAllowed', 'The %s operation is not allowed on %s.'
                      % (method, path))
    if method == 'PATCH' and node.bios_settings and path == node.bios_settings:
        return _patch(node, headers, _emu._json_body(body))
    return None


def _patch(node, headers, body):
    refused = node.precondition(node.bios_settings, headers)
    if refused:
        return refused
    im = headers.get('If-Match')
    if not isinstance(body, dict) or not isinstance(body.get('Attributes'), dict) \
            or set(body) - {'Attributes', '@Redfish.SettingsApplyTime'}:
        return _error(400, 'PropertyMissing', 'The request body must hold Attributes '
                      '(and optionally @Redfish.SettingsApplyTime) only.')
    bios = node.get(node.bios_uri)
    current = bios.get('Attributes') or {}
    apply = body.get('@Redfish.SettingsApplyTime') or {}
    when = apply.get('ApplyTime', 'OnReset') if isinstance(apply, dict) else None
    supported = (bios.get('@Redfish.Settings') or {}).get('SupportedApplyTimes')
    if when not in APPLY_TIMES or (isinstance(supported, list) and when not in supported
                                   and when != 'OnReset'):
        return _error(400, 'PropertyValueNotInList', "The value '%s' for the property "
                      "ApplyTime is not in the list of acceptable values." % (when,))
    for name, value in body['Attributes'].items():
        if name not in current:
            return _error(400, 'PropertyUnknown', 'The property %s is not in the list of '
                          'valid properties for the resource.' % name)
        e = _entry(node, name)
        if e is not None:
            err = _check(e, name, value)
            if err:
                return err
        elif value is not None and current[name] is not None \
                and type(value) is not type(current[name]):
            return _error(400, 'PropertyValueTypeError', 'The value for the property %s is '
                          'of a different type than the property can accept.' % name)
    held = {k: node.bios_refuse.get(k, v) for k, v in body['Attributes'].items()}
    node.event('patch', uri=node.bios_settings, body=body, if_match=im)
    if when == 'Immediate':
        node.own(node.bios_uri)['Attributes'].update(held)
        node.touch(node.bios_uri)
        if node.bios_full:
            node.own(node.bios_settings)['Attributes'].update(held)
            node.touch(node.bios_settings)
        return node._done()
    node.own(node.bios_settings).setdefault('Attributes', {}).update(held)
    node.touch(node.bios_settings)
    return node._done()


def _check(e, name, value):
    if e.get('ReadOnly'):
        return _error(400, 'PropertyNotWritable', 'The property %s is a read only property '
                      'and cannot be assigned a value.' % name)
    t = e.get('Type')
    ok = {'Boolean': isinstance(value, bool),
          'Integer': isinstance(value, int) and not isinstance(value, bool),
          'Enumeration': isinstance(value, str), 'String': isinstance(value, str),
          'Password': isinstance(value, str)}.get(t, True)
    if not ok:
        return _error(400, 'PropertyValueTypeError', 'The value for the property %s is of a '
                      'different type than the property can accept.' % name)
    if t == 'Enumeration' and value not in [v.get('ValueName') for v in e.get('Value', [])]:
        return _error(400, 'PropertyValueNotInList', "The value '%s' for the property %s is "
                      "not in the list of acceptable values." % (value, name))
    if t == 'Integer' and not (e.get('LowerBound', value) <= value <= e.get('UpperBound', value)):
        return _error(400, 'PropertyValueOutOfRange', 'The value %d for the property %s is '
                      'out of range.' % (value, name))
    return None


def pending(node):
    """{name: value} staged in the settings object that differs from the current."""
    if not node.bios_settings:
        return {}
    cur = (node.get(node.bios_uri) or {}).get('Attributes') or {}
    staged = (node.get(node.bios_settings) or {}).get('Attributes') or {}
    return {k: v for k, v in staged.items() if cur.get(k, object()) != v}


def on_reset(node, sys_uri, rtype, before, after):
    """An accepted ComputerSystem.Reset: a restart (or power on from off) of
    the main System applies the pending values."""
    if sys_uri != node.main_system or not node.bios_settings:
        return
    starts = rtype in RESTARTS or (after == 'On' and before != 'On')
    if not starts or after != 'On':
        return
    todo = pending(node)
    if not todo:
        return
    node.own(node.bios_uri)['Attributes'].update(todo)
    node.touch(node.bios_uri)
    if not node.bios_full:
        node.own(node.bios_settings)['Attributes'] = {}
        node.touch(node.bios_settings)
    node.event('bios-apply', uri=node.bios_uri, applied=todo)


def state(node):
    """state()['bios']: what the BMC holds now."""
    if not node.bios_uri:
        return None
    return {'uri': node.bios_uri, 'settings': node.bios_settings,
            'attributes': copy.deepcopy((node.get(node.bios_uri) or {}).get('Attributes') or {}),
            'pending': pending(node), 'registry': _registry_id(node) if node.bios_registry else None,
            'refuse': dict(node.bios_refuse)}


def override(node, key, value):
    if key == 'bios':
        if not isinstance(value, dict) or not node.bios_uri:
            raise ValueError('bios: {"Name": value, ...} on a node with a Bios resource')
        obj = node.own(node.bios_uri)
        unknown = set(value) - set(obj.get('Attributes') or {})
        if unknown:
            raise ValueError('bios: no attribute %s' % ', '.join(sorted(unknown)))
        obj['Attributes'].update(value)
        node.touch(node.bios_uri)
        if node.bios_full:
            node.own(node.bios_settings)['Attributes'].update(value)
            node.touch(node.bios_settings)
    elif key == 'bios_refuse':
        if not isinstance(value, dict):
            raise ValueError('bios_refuse: {"Name": held value, ...}')
        node.bios_refuse = dict(value)
    elif key == 'bios_registry':
        node.bios_registry = bool(value)
    elif key == 'bios_deep':
        # {"Name": depth}: the Bios resource shows that attribute as an array
        # nested depth deep (a hostile BMC), whatever was written to it.
        node.bios_deep = {str(k): int(v) for k, v in (value or {}).items()}


def deep_bytes(node, obj):
    """The Bios resource @obj as JSON text, with the bios_deep attributes nested deep
    (built as text: json.dumps would recurse)."""
    obj = dict(obj)
    attrs = dict(obj.get('Attributes') or {})
    for name in node.bios_deep:
        attrs[name] = '@@deep-bios-%s@@' % name
    obj['Attributes'] = attrs
    text = _emu._dumps(obj)
    for name, depth in node.bios_deep.items():
        text = text.replace(_emu._dumps('@@deep-bios-%s@@' % name), _emu._deep_array(depth), 1)
    return text
