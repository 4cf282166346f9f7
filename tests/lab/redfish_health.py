"""Sensors, firmware names and factory state beyond the five captures, for
the Redfish emulator (tests/lab/redfish_emu.py); issue 21.

- `sensor_extras` (true): the main chassis (first member of /Chassis) gets
  Sensors members that real BMCs serve and the captures lack: three
  distinct temperature sensors that share one name (one per add-in card
  slot), two supplies' input power sensors that share a name, and units
  outside the common table (a heat flow in kW with a ReadingType the
  schema does not have, airflow in CFM with no ReadingType, a pressure in
  Pa served as an Altitude). SENSOR_EXTRAS below is what is served.
- `hmc_firmware` ({"HMC_Firmware" | "HGX_FW_HMC_0" | "HGX_FW_BMC_0":
  version}): a FirmwareInventory member of that Id and Version, the HGX
  management controller's firmware as three generations name it (the
  member of another of these names, the DGX capture's HGX_FW_BMC_0, goes).
- `leak_detectors` ({"<Id>": "OK" | "Warning" | "Critical"}): the main
  chassis's ThermalSubsystem/LeakDetection/LeakDetectors (made where
  missing) holds these LeakDetector resources (DMTF LeakDetector v1_0:
  DetectorState, LeakDetectorType, PhysicalContext), every one with
  Status.Health OK whatever its DetectorState; Ids in LEAK_AGGREGATE are
  the tray's aggregate detector (PhysicalContext Chassis), the others
  local ones (PhysicalContext GPU). LeakDetection lists them all in one
  LeakDetectorGroup.
- `leak_voltage` (number): a Sensor "Coolant Leak Sensor" (Id
  GF_LeakRope) on the main chassis, a Voltage with UpperCaution 1.0 and
  UpperCritical 2.0 and Health OK: a leak served only as a threshold.
- `gpu_health` ({"N": {...}}, DGX only): GPU_SXM_N of HGX_Baseboard_0 gets
  the metrics the full DGX H100 capture has and the trimmed tree lacks,
  with these values: `health` (Status.Health), `ecc_corrected`,
  `ecc_uncorrected` (MemorySummary/MemoryMetrics LifeTime),
  `remap_pending`, `remap_failed` (its Memory GPU_SXM_N_DRAM_0,
  Oem.Nvidia.RowRemappingPending/Failed), `remap_corrected`,
  `remap_uncorrected` (that Memory's MemoryMetrics,
  Oem.Nvidia.RowRemapping), `nvlinks_down` (of its 18 NVLink Ports, that
  many LinkDown), `nvlink_errors` ({"K": {"DataCRCCount": n, ...}}: port
  NVLink_K's PortMetrics Oem.Nvidia.NVLinkErrors, the others all 0 and
  false as the capture has them). GPU_HEALTH_DEFAULTS below are the values
  not given.
- `password_change_required` (true): a factory-state BMC. The login and the
  service root work, and so does deleting a session; every other request
  with valid credentials answers 403 with the MessageId
  Base.1.8.PasswordChangeRequired (gate()).

redfish_emu.py calls override() for the keys in OVERRIDE_KEYS and gate()
before routing an authenticated request. The contract is the "Health
extras" section of REDFISH-EMU.md.
"""

import copy

ROOT = '/redfish/v1'

OVERRIDE_KEYS = {'sensor_extras', 'hmc_firmware', 'password_change_required', 'leak_detectors',
                 'leak_voltage', 'gpu_health'}

HMC_NAMES = ('HMC_Firmware', 'HGX_FW_HMC_0', 'HGX_FW_BMC_0')

# (Id, Name, ReadingType or None, ReadingUnits or None, Reading, Health)
SENSOR_EXTRAS = [
    ('GF_SlotTemp_1', 'Slot Card Temp', 'Temperature', 'Cel', 41.0, 'OK'),
    ('GF_SlotTemp_2', 'Slot Card Temp', 'Temperature', 'Cel', 43.5, 'OK'),
    ('GF_SlotTemp_3', 'Slot Card Temp', 'Temperature', 'Cel', 47.0, 'OK'),
    ('GF_PSU1_InputPower', 'PSU Input Power', 'Power', 'W', 812.0, 'OK'),
    ('GF_PSU2_InputPower', 'PSU Input Power', 'Power', 'W', 799.0, 'OK'),
    ('GF_CoolantHeat', 'Coolant Heat Flow', 'HeatFlow', 'kW', 3.25, 'OK'),
    ('GF_InletAirflow', 'Inlet Airflow', None, 'CFM', 210.0, 'OK'),
    ('GF_RackPressure', 'Rack Pressure', 'Altitude', 'Pa', 101325.0, 'OK'),
]


def main_chassis(node):
    return node.get(ROOT + '/Chassis')['Members'][0]['@odata.id']


def _sensors_collection(node, chassis_uri):
    """The chassis's Sensors collection uri (made and linked where missing), owned."""
    ch = node.own(chassis_uri)
    coll = (ch.get('Sensors') or {}).get('@odata.id')
    if not coll:
        coll = chassis_uri + '/Sensors'
        ch['Sensors'] = {'@odata.id': coll}
        node.touch(chassis_uri)
        node.put(coll, {'@odata.id': coll, '@odata.type': '#SensorCollection.SensorCollection',
                        'Name': 'Sensors', 'Members': [], 'Members@odata.count': 0})
    return coll


def _sensor_extras(node):
    ch = main_chassis(node)
    coll_uri = _sensors_collection(node, ch)
    coll = node.own(coll_uri)
    have = {m['@odata.id'] for m in coll['Members']}
    for sid, name, rtype, units, reading, health in SENSOR_EXTRAS:
        uri = coll_uri + '/' + sid
        res = {'@odata.id': uri, '@odata.type': '#Sensor.v1_7_0.Sensor', 'Id': sid,
               'Name': name, 'Reading': reading,
               'Status': {'State': 'Enabled', 'Health': health}}
        if rtype:
            res['ReadingType'] = rtype
        if units:
            res['ReadingUnits'] = units
        node.put(uri, res)
        if uri not in have:
            coll['Members'].append({'@odata.id': uri})
    coll['Members@odata.count'] = len(coll['Members'])
    node.touch(coll_uri)


def _hmc_firmware(node, name, version):
    if name not in HMC_NAMES:
        raise ValueError('hmc_firmware: one of %s' % ', '.join(HMC_NAMES))
    inv_uri = ROOT + '/UpdateService/FirmwareInventory'
    inv = node.own(inv_uri)
    uri = inv_uri + '/' + name
    # A generation names its HMC one way: the other names leave the inventory.
    others = {inv_uri + '/' + n for n in HMC_NAMES if n != name}
    inv['Members'] = [m for m in inv['Members'] if m['@odata.id'] not in others]
    for o in others:
        if node.get(o) is not None:
            node.remove(o)
    node.put(uri, {'@odata.id': uri, '@odata.type': '#SoftwareInventory.v1_4_0.SoftwareInventory',
                   'Id': name, 'Name': 'Software Inventory', 'Version': version,
                   'Updateable': True, 'Status': {'State': 'Enabled', 'Health': 'OK'}})
    if uri not in {m['@odata.id'] for m in inv['Members']}:
        inv['Members'].append({'@odata.id': uri})
    inv['Members@odata.count'] = len(inv['Members'])
    node.touch(inv_uri)


LEAK_AGGREGATE = {'TrayLeak'}
LEAK_ROPE = 'GF_LeakRope'
LEAK_ROPE_NAME = 'Coolant Leak Sensor'
LEAK_ROPE_CAUTION = 1.0
LEAK_ROPE_CRITICAL = 2.0


def _thermal_subsystem(node, chassis_uri):
    ch = node.own(chassis_uri)
    uri = (ch.get('ThermalSubsystem') or {}).get('@odata.id')
    if not uri:
        uri = chassis_uri + '/ThermalSubsystem'
        ch['ThermalSubsystem'] = {'@odata.id': uri}
        node.touch(chassis_uri)
    if node.get(uri) is None:
        node.put(uri, {'@odata.id': uri, '@odata.type': '#ThermalSubsystem.v1_3_0.ThermalSubsystem',
                       'Id': 'ThermalSubsystem', 'Name': 'Thermal Subsystem'})
    return uri


def _leak_detectors(node, states):
    if not isinstance(states, dict) or not all(v in ('OK', 'Warning', 'Critical')
                                               for v in states.values()):
        raise ValueError('leak_detectors: {"Id": "OK" | "Warning" | "Critical", ...}')
    ch = main_chassis(node)
    ts_uri = _thermal_subsystem(node, ch)
    ts = node.own(ts_uri)
    ld_uri = ts_uri + '/LeakDetection'
    coll_uri = ld_uri + '/LeakDetectors'
    ts['LeakDetection'] = {'@odata.id': ld_uri}
    node.touch(ts_uri)
    coll = node.get(coll_uri) or {'@odata.id': coll_uri, 'Members': [],
                                  '@odata.type': '#LeakDetectorCollection.LeakDetectorCollection',
                                  'Name': 'Leak Detectors'}
    coll = copy.deepcopy(coll)
    have = {m['@odata.id'] for m in coll['Members']}
    for did, state in states.items():
        uri = coll_uri + '/' + did
        aggregate = did in LEAK_AGGREGATE
        node.put(uri, {'@odata.id': uri, '@odata.type': '#LeakDetector.v1_0_0.LeakDetector',
                       'Id': did, 'Name': did.replace('_', ' '), 'DetectorState': state,
                       'LeakDetectorType': 'Moisture',
                       'PhysicalContext': 'Chassis' if aggregate else 'GPU',
                       'Status': {'State': 'Enabled', 'Health': 'OK'}})
        if uri not in have:
            coll['Members'].append({'@odata.id': uri})
    coll['Members@odata.count'] = len(coll['Members'])
    node.put(coll_uri, coll)
    detectors = [node.get(m['@odata.id']) for m in coll['Members']]
    node.put(ld_uri, {'@odata.id': ld_uri, '@odata.type': '#LeakDetection.v1_0_0.LeakDetection',
                      'Id': 'LeakDetection', 'Name': 'Leak Detection',
                      'LeakDetectors': {'@odata.id': coll_uri},
                      'LeakDetectorGroups': [{
                          'GroupName': 'Tray', 'Detectors': [
                              {'DataSourceUri': d['@odata.id'], 'DeviceName': d['Name'],
                               'DetectorState': d['DetectorState']} for d in detectors]}],
                      'Status': {'State': 'Enabled', 'Health': 'OK'}})


def _leak_voltage(node, reading):
    ch = main_chassis(node)
    coll_uri = _sensors_collection(node, ch)
    coll = node.own(coll_uri)
    uri = coll_uri + '/' + LEAK_ROPE
    node.put(uri, {'@odata.id': uri, '@odata.type': '#Sensor.v1_7_0.Sensor', 'Id': LEAK_ROPE,
                   'Name': LEAK_ROPE_NAME, 'ReadingType': 'Voltage', 'ReadingUnits': 'V',
                   'Reading': float(reading),
                   'Thresholds': {'UpperCaution': {'Reading': LEAK_ROPE_CAUTION},
                                  'UpperCritical': {'Reading': LEAK_ROPE_CRITICAL}},
                   'Status': {'State': 'Enabled', 'Health': 'OK'}})
    if uri not in {m['@odata.id'] for m in coll['Members']}:
        coll['Members'].append({'@odata.id': uri})
    coll['Members@odata.count'] = len(coll['Members'])
    node.touch(coll_uri)


GPU_HEALTH_DEFAULTS = {'health': 'OK', 'ecc_corrected': 0, 'ecc_uncorrected': 0,
                       'remap_pending': False, 'remap_failed': False, 'remap_corrected': 0,
                       'remap_uncorrected': 0, 'nvlinks_down': 0, 'nvlink_errors': {}}
# A port's PortMetrics Oem.Nvidia.NVLinkErrors, as the full DGX H100 capture
# serves them; `nvlink_errors` ({"K": {member: value}}) changes port K's.
NVLINK_ERRORS = {'DataCRCCount': 0, 'FlitCRCCount': 0, 'RecoveryCount': 0, 'ReplayCount': 0,
                 'RuntimeError': False, 'TrainingError': False}
NVLINK_GBPS = 212.496
NVLINKS = 18
HGX_SYSTEM = ROOT + '/Systems/HGX_Baseboard_0'


def _gpu_health(node, gpus):
    if node.vendor != 'nvidia-dgx-h100' or not isinstance(gpus, dict):
        raise ValueError('gpu_health: {"N": {...}} on a DGX node')
    for n, spec in gpus.items():
        unknown = set(spec) - set(GPU_HEALTH_DEFAULTS)
        if unknown:
            raise ValueError('gpu_health: unknown %s' % ', '.join(sorted(unknown)))
        v = dict(GPU_HEALTH_DEFAULTS, **spec)
        puri = '%s/Processors/GPU_SXM_%s' % (HGX_SYSTEM, n)
        proc = node.own(puri)
        proc['Status']['Health'] = v['health']
        node.touch(puri)
        mm_uri = puri + '/MemorySummary/MemoryMetrics'
        proc.setdefault('MemorySummary', {})['Metrics'] = {'@odata.id': mm_uri}
        node.put(mm_uri, {'@odata.id': mm_uri, '@odata.type': '#MemoryMetrics.v1_4_1.MemoryMetrics',
                          'Id': 'MemoryMetrics', 'Name': 'GPU_SXM_%s Memory Summary Metrics' % n,
                          'LifeTime': {'CorrectableECCErrorCount': v['ecc_corrected'],
                                       'UncorrectableECCErrorCount': v['ecc_uncorrected']}})
        mem_uri = '%s/Memory/GPU_SXM_%s_DRAM_0' % (HGX_SYSTEM, n)
        node.put(mem_uri, {'@odata.id': mem_uri, '@odata.type': '#Memory.v1_11_0.Memory',
                           'Id': 'GPU_SXM_%s_DRAM_0' % n, 'Name': 'DIMM Slot',
                           'MemoryDeviceType': 'HBM', 'Metrics': {'@odata.id': mem_uri + '/MemoryMetrics'},
                           'Oem': {'Nvidia': {'RowRemappingFailed': v['remap_failed'],
                                              'RowRemappingPending': v['remap_pending']}},
                           'Status': {'State': 'Enabled', 'Health': 'OK'}})
        node.put(mem_uri + '/MemoryMetrics', {
            '@odata.id': mem_uri + '/MemoryMetrics', 'Id': 'MemoryMetrics',
            '@odata.type': '#MemoryMetrics.v1_4_1.MemoryMetrics',
            'Oem': {'Nvidia': {'RowRemapping': {
                'CorrectableRowRemappingCount': v['remap_corrected'],
                'UncorrectableRowRemappingCount': v['remap_uncorrected']}}}})
        ports_uri = puri + '/Ports'
        members = []
        for k in range(NVLINKS):
            uri = '%s/NVLink_%d' % (ports_uri, k)
            down = k < v['nvlinks_down']
            errors = dict(NVLINK_ERRORS, **v['nvlink_errors'].get(str(k), {}))
            if set(errors) != set(NVLINK_ERRORS):
                raise ValueError('gpu_health: nvlink_errors: members of %s' % sorted(NVLINK_ERRORS))
            node.put(uri, {'@odata.id': uri, '@odata.type': '#Port.v1_4_0.Port', 'Id': 'NVLink_%d' % k,
                           'Name': 'NVLink_%d Resource' % k, 'PortProtocol': 'NVLink',
                           'LinkStatus': 'LinkDown' if down else 'LinkUp',
                           'LinkState': 'Enabled',
                           'CurrentSpeedGbps': 0 if down else NVLINK_GBPS,
                           'MaxSpeedGbps': NVLINK_GBPS,
                           'Metrics': {'@odata.id': uri + '/Metrics'},
                           'Status': {'State': 'Enabled', 'Health': 'Critical' if down else 'OK'}})
            node.put(uri + '/Metrics', {
                '@odata.id': uri + '/Metrics', '@odata.type': '#PortMetrics.v1_3_0.PortMetrics',
                'Id': 'Metrics', 'Name': 'NVLink_%d Port Metrics' % k,
                'Oem': {'Nvidia': {'@odata.type': '#NvidiaPortMetrics.v1_0_0.NvidiaPortMetrics',
                                   'NVLinkErrors': errors}},
                'RXBytes': 2830322865 + k, 'TXBytes': 2731714707 + k})
            members.append({'@odata.id': uri})
        node.put(ports_uri, {'@odata.id': ports_uri, '@odata.type': '#PortCollection.PortCollection',
                             'Name': 'Port Collection', 'Members': members,
                             'Members@odata.count': len(members)})
        proc['Ports'] = {'@odata.id': ports_uri}
        node.touch(puri)


def override(node, key, value):
    if key == 'sensor_extras':
        if value:
            _sensor_extras(node)
    elif key == 'hmc_firmware':
        if not isinstance(value, dict):
            raise ValueError('hmc_firmware: {"HGX_FW_HMC_0": version, ...}')
        for name, version in value.items():
            _hmc_firmware(node, name, str(version))
    elif key == 'leak_detectors':
        _leak_detectors(node, value)
    elif key == 'gpu_health':
        _gpu_health(node, value)
    elif key == 'leak_voltage':
        _leak_voltage(node, value)
    elif key == 'password_change_required':
        node.password_change_required = bool(value)


def gate(node, method, path):
    """(status, MessageId, message) for a request the node refuses as a whole, or None."""
    # Logging out stays possible: the session that was allowed is deleted.
    if method == 'DELETE' and path.startswith(ROOT + '/SessionService/Sessions/'):
        return None
    if getattr(node, 'password_change_required', False):
        return (403, 'PasswordChangeRequired',
                'The password provided for this account must be changed before access is '
                'granted. PATCH the Password property for this account located at the target '
                'URI %s/AccountService/Accounts/1 to complete this process.' % ROOT)
    return None


def expected_sensor(sid):
    """The extra sensor @sid as served: a dict (for tests)."""
    for row in SENSOR_EXTRAS:
        if row[0] == sid:
            return dict(zip(('id', 'name', 'reading_type', 'units', 'reading', 'health'), row))
    raise KeyError(sid)


def extras():
    return copy.deepcopy(SENSOR_EXTRAS)
