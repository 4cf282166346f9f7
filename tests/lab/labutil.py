"""What the loopback labs (ipmilab, redfish_emu, sshlab) share: addresses,
atomic state files, and the /proc checks that let a lab stop exactly the
processes it started."""

import os
import subprocess
import time


class LabError(Exception):
    pass


def node_address(prefix, index, within='127'):
    """The loopback address of node @index (1-based): .1 to .254 of
    @prefix, then .1 to .254 of the next third octet, and so on. @within is
    the leading octets every address must keep ('127', or '127.32')."""
    parts = prefix.split('.')
    if len(parts) != 3 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise LabError("prefix '%s' is not three octets like 127.31.0" % prefix)
    if not (prefix + '.').startswith(within + '.'):
        raise LabError("prefix '%s' is not in %s" % (prefix, within))
    if index < 1:
        raise LabError('node index %d is below 1' % index)
    third = int(parts[2]) + (index - 1) // 254
    if third > 255:
        raise LabError("node %d does not fit under prefix '%s'" % (index, prefix))
    return '%s.%s.%d.%d' % (parts[0], parts[1], third, (index - 1) % 254 + 1)


def write_atomic(path, text, mode=0o644):
    """Replace @path whole, so that a reader never sees it half written."""
    tmp = path + '.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    os.rename(tmp, path)


def stop_popen(p, grace=5):
    """Stop the subprocess.Popen @p (ours, by its PID): SIGTERM, then SIGKILL
    after @grace seconds; reaped either way."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def pid_cmdline(pid):
    """The argv of @pid as a list of bytes, or None when it is gone."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().split(b'\0')
    except OSError:
        return None


def pid_alive(pid):
    """True while @pid exists and is not a zombie."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(')') + 2:][:1] not in ('Z', 'X')


def wait_gone(items, running, deadline):
    """Poll until running(item) is false for every item or the monotonic
    @deadline passes; backs off from 5 ms to 100 ms. Bounded by @deadline."""
    delay = 0.005
    while [x for x in items if running(x)] and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
