"""A BMC's SSH serial console, for tests: a real OpenSSH sshd on a lab BMC's
address and port (OpenBMC serves its host console on 2200), whose
ForceCommand plays the host's serial port. It prints boot lines, then what a
test appends to `feed` (as a UART would print it), and records what the
client typed (`received`) and what it saw of its session (`session`: one
line per event, `tty 1` or `tty 0` for whether the client asked for a
terminal, `size COLSxROWS` at the start and at each window change, `end`
when the client went away, `dropped` when the test made the BMC end it:
`drop()`).

The login is a BMC's: user and password (sshd checks passwords against the
system's accounts, so the lab runs as root and gives BMC_USER, a system user
it makes when missing, the password for as long as it runs; stop() locks it
again). Only the Python standard library, ssh-keygen and sshd; processes are
stopped by the PIDs the lab started.

    con = SshConsole(workdir, "127.43.101.1", 2200, password).start()
    con.feed(b"line\\r\\n"); con.received(); con.session(); con.known_hosts_line(); con.drop()
    con.stop()
"""
import fcntl
import os
import pwd
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labutil import LabError, stop_popen  # noqa: E402

SSHD = '/usr/sbin/sshd'
BMC_USER = 'gpufleet-bmc'
BOOT = b'U-Boot 2019.04 (ssh serial console)\r\nStarting kernel ...\r\n'

SERIAL = r'''#!/usr/bin/python3
# The host's serial port behind the BMC's SSH console (tests/lab/sshconsole.py).
import os, select, signal, struct, sys, fcntl, termios, tty
D = %(dir)r
def note(text):
    with open(os.path.join(D, 'session'), 'a') as f:
        f.write(text + '\n')
def size(*_):
    if os.isatty(0):
        rows, cols = struct.unpack('HHHH', fcntl.ioctl(0, termios.TIOCGWINSZ, b'\0' * 8))[:2]
        note('size %%dx%%d' %% (cols, rows))
def hangup(*_):
    note('end')
    os._exit(0)
signal.signal(signal.SIGHUP, hangup)
note('tty %%d' %% os.isatty(0))
if os.isatty(0):
    tty.setraw(0)
    size()
    signal.signal(signal.SIGWINCH, size)
# Where the feed is now, before the boot lines: what a test feeds once it saw them is printed.
feed = os.path.join(D, 'feed')
pos = os.path.getsize(feed)
os.write(1, %(boot)r)
while True:
    try:
        r = select.select([0], [], [], 0.05)[0]
    except InterruptedError:
        continue
    if r:
        data = os.read(0, 4096)
        if not data:
            break
        with open(os.path.join(D, 'received'), 'ab') as f:
            f.write(data)
    try:  # the BMC ends the session (once a drop() asks)
        os.unlink(os.path.join(D, 'drop'))
        note('dropped')
        os._exit(0)
    except FileNotFoundError:
        pass
    with open(feed, 'rb') as f:
        f.seek(pos)
        data = f.read()
    pos += len(data)
    while data:
        try:
            data = data[os.write(1, data):]
        except BlockingIOError:
            select.select([], [1], [], 1)
note('end')
'''


def ensure_bmc_user(password):
    """BMC_USER, made when missing, with @password (given on stdin, never argv)."""
    with open('/run/gpufleet-lab-user.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            pwd.getpwnam(BMC_USER)
        except KeyError:
            # home '/': sshd prints nothing about a missing home into the console
            subprocess.run(['useradd', '--system', '--no-create-home', '--home-dir', '/',
                            '--shell', '/bin/sh', '--password', '*', BMC_USER], check=True)
        subprocess.run(['chpasswd'], input='%s:%s\n' % (BMC_USER, password), text=True,
                       check=True)


def lock_bmc_user():
    subprocess.run(['usermod', '--password', '*', BMC_USER], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class SshConsole:
    def __init__(self, workdir, addr, port, password):
        if os.geteuid() != 0:
            raise LabError('the SSH console lab checks passwords: it runs as root')
        self.dir = workdir
        self.addr = addr
        self.port = int(port)
        self.password = password
        self.data = os.path.join(workdir, 'serial')
        self.proc = None

    def start(self):
        os.makedirs(self.data, exist_ok=True)
        os.chmod(self.dir, 0o755)
        os.chmod(self.data, 0o777)  # the login user writes what it records
        for name in ('feed', 'received', 'session'):
            open(os.path.join(self.data, name), 'wb').close()
            os.chmod(os.path.join(self.data, name), 0o666)
        key = os.path.join(self.dir, 'ssh_host_ed25519_key')
        if not os.path.exists(key):
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', key], check=True)
        script = os.path.join(self.dir, 'serial.py')
        with open(script, 'w') as f:
            f.write(SERIAL % {'dir': self.data, 'boot': BOOT})
        os.chmod(script, 0o755)
        os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
        ensure_bmc_user(self.password)
        conf = os.path.join(self.dir, 'sshd_config')
        with open(conf, 'w') as f:
            f.write('\n'.join([
                'Port %d' % self.port, 'ListenAddress %s' % self.addr,
                'HostKey %s' % key, 'PidFile %s/sshd.pid' % self.dir,
                'UsePAM no', 'PasswordAuthentication yes', 'KbdInteractiveAuthentication no',
                'PubkeyAuthentication no', 'AllowUsers %s' % BMC_USER, 'StrictModes no',
                'UseDNS no', 'PrintMotd no', 'PrintLastLog no', 'X11Forwarding no',
                'AllowTcpForwarding no', 'AllowAgentForwarding no', 'PermitTTY yes',
                'MaxStartups 1000:30:2000', 'LogLevel VERBOSE',
                'ForceCommand %s' % script, '']))
        os.chmod(conf, 0o600)
        self.proc = subprocess.Popen([SSHD, '-D', '-f', conf, '-E', os.path.join(self.dir, 'log')],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        until = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                raise LabError('sshd exited (%d); see %s/log' % (self.proc.returncode, self.dir))
            try:
                with socket.create_connection((self.addr, self.port), timeout=1) as s:
                    if s.recv(64).startswith(b'SSH-2.0-'):
                        break
            except OSError:
                pass
            if time.monotonic() > until:
                raise LabError('sshd does not answer on %s port %d' % (self.addr, self.port))
            time.sleep(0.05)  # polling a port that is coming up
        return self

    def stop(self):
        if self.proc:
            stop_popen(self.proc)
            self.proc = None
        lock_bmc_user()

    def feed(self, data):
        """What the host prints next on its serial port."""
        with open(os.path.join(self.data, 'feed'), 'ab') as f:
            f.write(data)

    def drop(self):
        """The BMC ends the console session that is open (the next one stays)."""
        path = os.path.join(self.data, 'drop')
        open(path, 'wb').close()
        os.chmod(path, 0o666)

    def fed(self):
        return os.path.getsize(os.path.join(self.data, 'feed'))

    def received(self):
        with open(os.path.join(self.data, 'received'), 'rb') as f:
            return f.read()

    def session(self):
        with open(os.path.join(self.data, 'session')) as f:
            return f.read().splitlines()

    def known_hosts_line(self):
        with open(os.path.join(self.dir, 'ssh_host_ed25519_key.pub')) as f:
            key = ' '.join(f.read().split()[:2])
        return '[%s]:%d %s\n' % (self.addr, self.port, key)
