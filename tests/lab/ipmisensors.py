#!/usr/bin/python3
"""Sensors, SDRs and event log entries for the ipmi_sim lab (ipmilab.py).

Every node gets a GPU server's sensors: inlet, CPU and GPU temperatures,
fans, 12 V and 3.3 V rails, a PSU current, the total power and two PSU status
(discrete) sensors. Their SDRs are written from a template and compiled with
`sdrcomp -8` (without -8 names like "FAN1" or "12V" are packed as 6-bit ASCII
and come out garbled), then loaded with main_sdr_add; the emulator gets the
matching sensor_add, thresholds, event support and values. Readings differ
per node, and a node profile makes a node unhealthy on purpose:

    {'hot_gpu': 87}       GPU3 Temp at 87 C, above upper non-critical (85): warning
    {'failed_psu': True}  PSU2 Status asserts "Power Supply Failure detected": critical
    {'gpus': 8}           eight GPU temperature sensors instead of four
    {'sel': N}            N extra informational event log entries

With no profile, default_profile(i) decides (every 7th node from 3 has a hot
GPU, every 9th from 5 a failed PSU, every 5th has 8 GPUs).

Event log: the entries in emu.cmds are added before anyone set the BMC's
clock, so ipmi_sim stamps them with seconds since it started (IPMI
"pre-init" timestamps). set_sel_time() sets the clock (FreeIPMI's
bmc-device, password in a config file) and add_timed_events() then adds
entries through the console, stamped with real dates.

    from ipmisensors import emu_extra, prepare_events
    lab = IpmiLab(dir, ..., emu_extra=emu_extra(profiles))
    lab.start()
    prepare_events(lab, profiles)   # clock set, dated entries added

Runtime changes go through lab.console(i, ...): see set_value(), set_bit(),
add_event() and the SENSOR numbers below.
"""

import functools
import os
import subprocess
import tempfile

BMC = 0x20

# Threshold sensors: number, name, sdrcomp sensor type, entity, base unit,
# m, r_exp (value = raw * m * 10^r_exp), thresholds in real units, access.
TEMP_T = {'unc': 85, 'uc': 92, 'unr': 100}
FAN_T = {'lnr': 300, 'lc': 500, 'lnc': 1000}
THRESHOLD_SENSORS = [
    # (num, name, type, entity, unit, m, r_exp, thresholds, access)
    (1, 'Inlet Temp', 'Temperature', 'system_board', 'degrees_C', 1, 0,
     {'unc': 40, 'uc': 45, 'unr': 50}, 'readable'),
    (2, 'CPU0 Temp', 'Temperature', 'processor', 'degrees_C', 1, 0,
     {'unc': 85, 'uc': 95, 'unr': 100}, 'settable'),
    (3, 'CPU1 Temp', 'Temperature', 'processor', 'degrees_C', 1, 0,
     {'unc': 85, 'uc': 95, 'unr': 100}, 'settable'),
    (8, 'FAN1', 'Fan', 'fan_cooling_device', 'RPM', 100, 0, FAN_T, 'readable'),
    (9, 'FAN2', 'Fan', 'fan_cooling_device', 'RPM', 100, 0, FAN_T, 'readable'),
    (10, '12V', 'Voltage', 'system_board', 'Volts', 6, -2,
     {'lc': 10.8, 'lnc': 11.4, 'unc': 12.6, 'uc': 13.2}, 'readable'),
    (11, '3.3V', 'Voltage', 'system_board', 'Volts', 2, -2,
     {'lc': 3.0, 'lnc': 3.14, 'unc': 3.46, 'uc': 3.6}, 'readable'),
    (12, 'PSU1 Current', 'Current', 'power_supply', 'Amps', 1, -1,
     {'unc': 15, 'uc': 18}, 'readable'),
    (13, 'Total Power', 'Other_Units_Based_Sensor', 'power_supply', 'Watts', 20, 0,
     {'unc': 2800, 'uc': 3000}, 'readable'),
]
GPU_SENSOR_BASE = 32        # GPU<g> Temp is sensor 32 + g
PSU_STATUS = {1: 20, 2: 21}  # PSU<n> Status sensor numbers
SENSOR = {name: num for num, name, *_ in THRESHOLD_SENSORS}
SENSOR.update({'GPU%d Temp' % g: GPU_SENSOR_BASE + g for g in range(16)})
SENSOR.update({'PSU%d Status' % p: n for p, n in PSU_STATUS.items()})

# Threshold bits: ipmi_sim's order (0 lnc, 1 lc, 2 lnr, 3 unc, 4 uc, 5 unr).
THRESHOLD_ORDER = ['lnc', 'lc', 'lnr', 'unc', 'uc', 'unr']
# Event offsets of threshold sensors that may be asserted: lower going low,
# upper going high (IPMI table 42-2 offsets 0, 2, 4, 7, 9, 11).
EVENT_BIT = {'lnc': 0, 'lc': 2, 'lnr': 4, 'unc': 7, 'uc': 9, 'unr': 11}
# Power supply offsets (IPMI table 42-3, sensor type 08h).
PSU_PRESENT, PSU_FAILED, PSU_AC_LOST = 0, 1, 3


def default_profile(i):
    p = {}
    if i % 7 == 3:
        p['hot_gpu'] = 87
    if i % 9 == 5:
        p['failed_psu'] = True
    if i % 5 == 0:
        p['gpus'] = 8
    return p


def _raw(value, m, r_exp):
    raw = round(value / (m * 10 ** r_exp))
    if not 0 <= raw <= 255:
        raise ValueError('value %s does not fit a byte with m=%d r_exp=%d' % (value, m, r_exp))
    return raw


def gpu_sensors(gpus):
    return [(GPU_SENSOR_BASE + g, 'GPU%d Temp' % g, 'Temperature', 'add-in_card',
             'degrees_C', 1, 0, TEMP_T, 'settable') for g in range(gpus)]


def threshold_sensors(profile):
    return THRESHOLD_SENSORS[:3] + gpu_sensors(profile.get('gpus', 4)) + THRESHOLD_SENSORS[3:]


def readings(i, profile):
    """The value of every threshold sensor of node @i, in real units."""
    v = {
        'Inlet Temp': 20 + i % 8,
        'CPU0 Temp': 45 + (i * 7) % 20,
        'CPU1 Temp': 47 + (i * 5) % 20,
        'FAN1': 7000 + (i * 300) % 3000,
        'FAN2': 7200 + (i * 200) % 3000,
        '12V': (199 + i % 4) * 0.06,
        '3.3V': (164 + i % 3) * 0.02,
        'PSU1 Current': (80 + i % 16) / 10,
        'Total Power': 1500 + (i * 60) % 700,
    }
    for g in range(profile.get('gpus', 4)):
        v['GPU%d Temp' % g] = 55 + (i * 3 + g * 5) % 20
    if 'hot_gpu' in profile:
        v['GPU3 Temp'] = profile['hot_gpu']
    return v


def _threshold_sdr(spec):
    num, name, stype, entity, unit, m, r_exp, thr, access = spec
    lines = [
        'sdr type 1',
        'sensor_owner_id 0x20', 'sensor_owner_lun 0', 'channel_number 0',
        'sensor_number %d' % num, 'entity_id %s' % entity, 'entity_instance 1',
        'init_scanning true', 'init_events true', 'init_thresholds true',
        'init_sensor_type true', 'default_event_gen_on true',
        'default_sensor_scan_on true', 'sensor_auto_rearm true',
        'sensor_threshold_access %s' % access, 'sensor_event_msg_ctrl per_state',
        'sensor_type %s' % stype, 'event_reading_type_code 1',
        'analog_data_format unsigned', 'rate_unit none', 'modifier_unit none',
        'percentage false', 'base_unit %s' % unit, 'modifier_unit_code unspecified',
        'linearization linear', 'm %d' % m, 'tolerance 0', 'b 0', 'accuracy 1',
        'accuracy_exp 0', 'sensor_direction input', 'r_exp %d' % r_exp, 'b_exp 0',
        'sensor_maximum 255', 'sensor_minimum 0',
    ]
    for t, val in sorted(thr.items()):
        lines.append('%s_thrsh_readable true' % t)
        if access == 'settable':
            lines.append('%s_thrsh_settable true' % t)
        lines.append('%s_thresh %d' % (t, _raw(val, m, r_exp)))
        field = {'lnc': 'lncgl', 'lc': 'lcgl', 'lnr': 'lnrgl',
                 'unc': 'uncgh', 'uc': 'ucgh', 'unr': 'unrgh'}[t]
        lines.append('assert_%s true' % field)
        lines.append('deassert_%s true' % field)
    lines.append('id_string "%s"' % name)
    return '\n\t'.join(lines) + '\nendsdr'


def _psu_sdr(p, num):
    return '\n\t'.join([
        'sdr type 2',
        'sensor_owner_id 0x20', 'sensor_owner_lun 0', 'channel_number 0',
        'sensor_number %d' % num, 'entity_id power_supply', 'entity_instance %d' % p,
        'init_scanning true', 'init_events true', 'init_sensor_type true',
        'default_event_gen_on true', 'default_sensor_scan_on true',
        'sensor_type Power_Supply', 'event_reading_type_code 0x6f',
        'assert_event0 true', 'assert_event1 true', 'assert_event3 true',
        'deassert_event0 true', 'deassert_event1 true', 'deassert_event3 true',
        'event0_state_ret true', 'event1_state_ret true', 'event3_state_ret true',
        'id_string "PSU%d Status"' % p,
    ]) + '\nendsdr'


def sdr_text(profile):
    """The node's SDRs in sdrcomp's language."""
    out = [_threshold_sdr(spec) for spec in threshold_sensors(profile)]
    out += [_psu_sdr(p, num) for p, num in sorted(PSU_STATUS.items())]
    return '\n\n'.join(out) + '\n'


@functools.lru_cache(maxsize=64)
def compile_sdrs(text):
    """sdrcomp -8 -r: the raw SDR records, as a list of bytes."""
    with tempfile.NamedTemporaryFile('w', suffix='.sdrs', delete=False) as f:
        f.write(text)
        path = f.name
    try:
        raw = subprocess.run(['sdrcomp', '-8', '-r', path], capture_output=True,
                             check=True).stdout
    except subprocess.CalledProcessError as e:
        raise RuntimeError('sdrcomp failed: %s' % e.stderr.decode(errors='replace')) from None
    finally:
        os.unlink(path)
    recs = []
    at = 0
    while at < len(raw):
        n = raw[at + 4] + 5
        recs.append(raw[at:at + n])
        at += n
    return tuple(recs)


def _bits(mask):
    return format(mask, '015b')


def _sdr_add(text):
    return ['main_sdr_add 0x20 ' + ' '.join('0x%02x' % b for b in rec)
            for rec in compile_sdrs(text)]


def _threshold_commands(spec, value):
    num, name, stype, _, _, m, r_exp, thr, access = spec
    enabled = ''.join('1' if t in thr else '0' for t in reversed(THRESHOLD_ORDER))
    raws = ['0x%02x' % _raw(thr.get(t, 0), m, r_exp) for t in reversed(THRESHOLD_ORDER)]
    mask = _bits(sum(1 << EVENT_BIT[t] for t in thr))
    code = {'Temperature': 0x01, 'Voltage': 0x02, 'Current': 0x03, 'Fan': 0x04,
            'Other_Units_Based_Sensor': 0x0b}[stype]
    return [
        '# %s' % name,
        'sensor_add 0x20 0 %d 0x%02x 0x01' % (num, code),
        'sensor_set_threshold 0x20 0 %d %s %s %s' % (num, access, enabled, ' '.join(raws)),
        'sensor_set_event_support 0x20 0 %d enable scanning per-state %s %s %s %s'
        % (num, mask, mask, mask, mask),
        'sensor_set_value 0x20 0 %d 0x%02x 0' % (num, _raw(value, m, r_exp)),
    ]


def sensor_commands(i, profile):
    """ipmi_sim_cmd(5) lines for node @i: SDRs, sensors, thresholds, values."""
    cmds = ['# SDRs compiled by sdrcomp -8 from ipmisensors.sdr_text()']
    cmds += _sdr_add(sdr_text(profile))
    values = readings(i, profile)
    for spec in threshold_sensors(profile):
        cmds += _threshold_commands(spec, values[spec[1]])
    psu_mask = _bits((1 << PSU_PRESENT) | (1 << PSU_FAILED) | (1 << PSU_AC_LOST))
    for p, num in sorted(PSU_STATUS.items()):
        cmds += [
            '# PSU%d Status' % p,
            'sensor_add 0x20 0 %d 0x08 0x6f' % num,
            'sensor_set_event_support 0x20 0 %d enable scanning per-state %s %s %s %s'
            % (num, psu_mask, psu_mask, psu_mask, psu_mask),
            'sensor_set_bit 0x20 0 %d %d 1 0' % (num, PSU_PRESENT),
        ]
        if p == 2 and profile.get('failed_psu'):
            cmds.append('sensor_set_bit 0x20 0 %d %d 1 0' % (num, PSU_FAILED))
    return cmds


def add_gpu_sensor(lab, i, g, value):
    """Hot-plug "GPU<g> Temp" into node @i's running BMC: a new SDR (which
    moves the repository's most recent addition timestamp) and its sensor."""
    spec = gpu_sensors(g + 1)[g]
    for cmd in _sdr_add(_threshold_sdr(spec) + '\n') + _threshold_commands(spec, value)[1:]:
        out = lab.console(i, cmd)
        if 'rror' in out or 'nvalid' in out:
            raise RuntimeError('%s: %s' % (cmd, out))


def _sensor_type_code(name):
    for num, n, stype, *_ in THRESHOLD_SENSORS + gpu_sensors(16):
        if n == name:
            return {'Temperature': 0x01, 'Voltage': 0x02, 'Current': 0x03, 'Fan': 0x04,
                    'Other_Units_Based_Sensor': 0x0b}[stype]
    raise KeyError(name)


def event_bytes(sensor, offset, deassert=False, data2=0xff, data3=0xff, threshold=None):
    """The 13 bytes after the record type of a system event record (the BMC
    replaces the timestamp): generator 0x20 (the BMC), EvM rev 4."""
    num = SENSOR[sensor]
    if sensor.startswith('PSU') and 'Status' in sensor:
        stype, etype = 0x08, 0x6f
    else:
        stype, etype = _sensor_type_code(sensor), 0x01
    d1 = offset & 0x0f
    if threshold is not None:
        d1 |= 0x50  # trigger reading in data 2, threshold in data 3
    return [0, 0, 0, 0, 0x20, 0x00, 0x04, stype, num,
            (0x80 if deassert else 0) | etype, d1, data2, data3]


def add_event(lab, i, sensor, offset, deassert=False, data2=0xff, data3=0xff,
              threshold=None):
    """Add one system event record to node @i's event log through its console."""
    b = event_bytes(sensor, offset, deassert, data2, data3, threshold)
    return lab.console(i, 'sel_add 0x20 0x02 ' + ' '.join('0x%02x' % x for x in b))


def pre_init_events(i, profile):
    """Entries in emu.cmds: added before the clock is set (pre-init times)."""
    b = [event_bytes('PSU1 Status', PSU_PRESENT), event_bytes('PSU2 Status', PSU_PRESENT)]
    return ['sel_add 0x20 0x02 ' + ' '.join('0x%02x' % x for x in e) for e in b]


def emu_extra(profiles=None):
    """An emu_extra callable for IpmiLab: the node's sensors and first entries."""
    profiles = profiles or {}

    def extra(node):
        p = profiles.get(node.index, default_profile(node.index))
        return '\n'.join(sensor_commands(node.index, p) + pre_init_events(node.index, p)) + '\n'
    return extra


def freeipmi_config(lab, path):
    """A FreeIPMI config file (mode 0600) for @lab: the password stays off argv."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write('driver-type LAN_2_0\nusername %s\npassword %s\n'
                'workaround-flags opensesspriv\ncipher-suite-id 3\n'
                % (lab.user, lab.password))
    return path


def set_sel_time(lab, indices=None, when='now'):
    """Set the event log clock of the nodes (all by default) with bmc-device."""
    indices = list(indices or lab.indices())
    with tempfile.TemporaryDirectory() as d:
        conf = freeipmi_config(lab, os.path.join(d, 'freeipmi.conf'))
        hosts = ','.join(lab.addr(i) for i in indices)
        r = subprocess.run(['bmc-device', '-h', hosts, '--config-file', conf, '-F', '64',
                            '--set-sel-time=%s' % when],
                           capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError('bmc-device --set-sel-time failed: %s %s' % (r.stdout, r.stderr))


def add_timed_events(lab, profiles=None, indices=None):
    """Dated entries (after set_sel_time): what the profile's trouble left in
    the log, and a few informational ones."""
    profiles = profiles or {}
    for i in indices or lab.indices():
        p = profiles.get(i, default_profile(i))
        if 'hot_gpu' in p:
            add_event(lab, i, 'GPU3 Temp', EVENT_BIT['unc'], data2=p['hot_gpu'],
                      data3=TEMP_T['unc'], threshold=True)
        if p.get('failed_psu'):
            add_event(lab, i, 'PSU2 Status', PSU_FAILED)
        for k in range(p.get('sel', i % 3)):
            # A fan that dipped below its lower non-critical threshold and came back.
            add_event(lab, i, 'FAN%d' % (k % 2 + 1), EVENT_BIT['lnc'], deassert=True,
                      data2=12, data3=10, threshold=True)


def prepare_events(lab, profiles=None):
    set_sel_time(lab)
    add_timed_events(lab, profiles)


def set_value(lab, i, sensor, value, event=True):
    """Change a threshold sensor's reading on node @i (real units); with
    @event the BMC logs the threshold crossings it causes."""
    for num, name, _, _, _, m, r_exp, *_ in THRESHOLD_SENSORS + gpu_sensors(16):
        if name == sensor:
            return lab.console(i, 'sensor_set_value 0x20 0 %d 0x%02x %d'
                               % (num, _raw(value, m, r_exp), 1 if event else 0))
    raise KeyError(sensor)


def set_bit(lab, i, sensor, offset, value, event=True):
    """Assert (1) or deassert (0) state @offset of a discrete sensor on node @i."""
    return lab.console(i, 'sensor_set_bit 0x20 0 %d %d %d %d'
                       % (SENSOR[sensor], offset, value, 1 if event else 0))
