#!/usr/bin/python3
"""bench/console.sh's driver: N ipmi_sim BMCs (tests/lab/ipmilab.py), each
with a serial port (tests/lab/serialport.py) that floods numbered 16-byte
lines ("TAG NNNNNNNNNN\\r\\n") at a UART's pace (--rate, default 11520 B/s:
115200 baud, what the sims' sol lines say), in bursts of --burst seconds
with --pause seconds between (bench/console.sh says why); one console
logger at a time (gpufleet console log, then conmand) logs them all for
SECONDS under /usr/bin/time. Each run: start the logger, wait until every
console is connected (its log says so), flood for SECONDS, stop the flood,
wait until the logs stop growing, stop the logger. Bytes sent are counted at
the ports; bytes logged are the flood lines found in the logs (each number
once, 16 bytes each). Prints one JSON object per logger.

    console-lab.py --prefix 127.43.110 --count N --seconds S --gpufleet BIN --work DIR \
        --password-file F [--rate B/s] [--burst S --pause S] [--gpufleet-only]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'tests', 'lab'))
from ipmilab import IpmiLab  # noqa: E402
from serialport import SerialPort  # noqa: E402

PORT = 7001
LINE = 16  # b"TAG %010d\r\n", TAG 3 letters: the run's
TICK = 0.05


def numbers(path, tag):
    """The flood numbers of run @tag a log holds (every file of the node: rotation is off)."""
    pat = re.compile(tag + rb' (\d{10})')
    try:
        with open(path, 'rb') as f:
            return set(int(m.group(1)) for m in pat.finditer(f.read()))
    except FileNotFoundError:
        return set()


def says(marker):
    """A check that a log holds @marker (its logger wrote that it connected)."""
    def check(path):
        try:
            with open(path, 'rb') as f:
                return marker in f.read()
        except FileNotFoundError:
            return False
    return check


class Flood:
    """Every port prints numbered lines at @rate bytes per second (a UART's
    pace: 115200 baud 8N1 is 11520 B/s), from one thread, in ticks of 50 ms."""

    def __init__(self, ports, tag, rate, burst=0.0, pause=0.0):
        import threading
        self.ports, self.tag, self.rate = ports, tag, rate
        self.burst, self.pause = burst, pause
        self.printing = 0.0  # seconds in which the ports printed
        self.next = [0] * len(ports)
        self.sent = [0] * len(ports)
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        per_tick = max(1, round(self.rate * TICK / LINE))
        t = t0 = time.monotonic()
        while not self.stop_ev.is_set():
            if self.burst and (t - t0) % (self.burst + self.pause) >= self.burst:
                t += TICK  # a pause: the ports print nothing this tick
                self.stop_ev.wait(max(0, t - time.monotonic()))
                continue
            self.printing += TICK
            for k, sp in enumerate(self.ports):
                data = b''.join(b'%s %010d\r\n' % (self.tag, self.next[k] + j)
                                for j in range(per_tick))
                try:
                    sp.send(data)
                except (OSError, ConnectionError):
                    continue  # no BMC connected now: this tick's lines are not printed
                self.next[k] += per_tick
                self.sent[k] += len(data)
            t += TICK
            self.stop_ev.wait(max(0, t - time.monotonic()))

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_ev.set()
        self.thread.join()


def wait(pred, timeout, what):
    until = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > until:
            raise SystemExit('timed out: ' + what)
        time.sleep(0.5)


def run(name, argv, env, logs, connected, ports, seconds, work, flood):
    timef = os.path.join(work, name + '.time')
    proc = subprocess.Popen(['/usr/bin/time', '-f', '%M %U %S %e', '-o', timef] + argv, env=env,
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, name + '.err'), 'w'))
    try:
        wait(lambda: all(connected(p) for p in logs), 600, name + ': every console connected')
        tag = name[:3].encode()
        fl = Flood(ports, tag, *flood)
        t0 = time.monotonic()
        fl.start()
        time.sleep(seconds)  # the measured run: the bench's own duration, not a synchronisation
        fl.stop()
        flood_s = time.monotonic() - t0
        sent = fl.sent
        printing_s = fl.printing
        last, same = None, 0
        while same < 3:  # until the logs stop growing (3 looks 1 s apart)
            size = sum(os.path.getsize(p) for p in logs if os.path.exists(p))
            same = same + 1 if size == last else 0
            last = size
            time.sleep(1)
    finally:
        # conmand exits cleanly on SIGTERM; gpufleet too (every SOL payload deactivated).
        # /usr/bin/time passes nothing on: signal its child, then wait for time to report.
        kids = subprocess.run(['pgrep', '-P', str(proc.pid)], capture_output=True, text=True)
        for pid in kids.stdout.split():
            os.kill(int(pid), signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    got = [numbers(p, tag) for p in logs]
    logged = [len(g) * LINE for g in got]
    gaps = sum(1 for g in got if g and len(g) != max(g) + 1)
    received = None
    state = os.path.join(os.path.dirname(logs[0]), '.console-state.json')
    if os.path.exists(state):  # gpufleet's own count: what its SOL sessions delivered
        with open(state) as f:
            received = sum(n['bytes'] for n in json.load(f)['nodes'])
    with open(timef) as f:
        rss, user, system, wall = f.read().split()[-4:]
    cpu = float(user) + float(system)
    return {
        'logger': name, 'consoles': len(logs), 'flood_s': round(flood_s, 1),
        'bytes_sent': sum(sent), 'bytes_logged': sum(logged), 'bytes_received': received,
        'nodes_equal': sum(1 for s, g in zip(sent, logged) if s == g),
        'nodes_with_gaps': gaps,
        'peak_rss_mb': round(int(rss) / 1024, 1),
        'cpu_s': round(cpu, 2), 'wall_s': float(wall),
        'cpu_per_console_pct': round(100 * cpu / float(wall) / len(logs), 3),
        'printing_s': round(printing_s, 1),
        'rate_per_console_Bps': round(sum(sent) / printing_s / len(logs)),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--prefix', required=True)
    ap.add_argument('--count', type=int, required=True)
    ap.add_argument('--seconds', type=float, required=True)
    ap.add_argument('--gpufleet', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--password-file', required=True)
    ap.add_argument('--rate', type=float, default=11520, help='bytes/s per port (115200 baud)')
    ap.add_argument('--burst', type=float, default=0,
                    help='print in bursts of this many seconds (0: without a pause)')
    ap.add_argument('--pause', type=float, default=8, help='seconds between two bursts')
    ap.add_argument('--gpufleet-only', action='store_true', help='no conmand run')
    a = ap.parse_args()
    with open(a.password_file) as f:
        a.password = f.readline().strip()
    flood = (a.rate, a.burst, a.pause)
    w = a.work
    workarounds = ['opensesspriv', 'solchannelsupport', 'solpayloadsize']
    ports = [SerialPort(f'{a.prefix}.{i}', PORT).start() for i in range(1, a.count + 1)]
    lab = IpmiLab(os.path.join(w, 'lab'), prefix=a.prefix, count=a.count, user='admin',
                  password=a.password,
                  overrides={i: {'sol': f'{a.prefix}.{i}:{PORT}'} for i in range(1, a.count + 1)})
    try:
        lab.start()
        for sp in ports:
            sp.wait_connected(120)
        # gpufleet: its registry and credentials (the password in a file, never argv).
        cred = os.path.join(w, 'cred')
        fd = os.open(cred, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(f'[default]\nbmc_user = admin\nbmc_password = {a.password}\n'
                    f'ipmi_cipher_suite = 3\nipmi_workarounds = {",".join(workarounds)}\n')
        env = dict(os.environ, GPUFLEET_DB=os.path.join(w, 'db'), GPUFLEET_CREDENTIALS=cred)
        rows = ['name,bmc,protocol,groups'] + [f'c{i:03d},{lab.addr(i)},ipmi,bench'
                                               for i in range(1, a.count + 1)]
        subprocess.run([a.gpufleet, 'nodes', 'import', '-'], input='\n'.join(rows) + '\n',
                       text=True, env=env, check=True, stdout=subprocess.DEVNULL)
        gdir = os.path.join(w, 'gpufleet-logs')
        glogs = [os.path.join(gdir, f'c{i:03d}.log') for i in range(1, a.count + 1)]
        out = [run('gpufleet', [a.gpufleet, '--no-progress', 'console', 'log', '--dir', gdir,
                                '--max-size', '1G', '--total-size', '100G', '@bench'],
                   env, glogs, says(b'console connected'), ports, a.seconds, w, flood)]
        # conmand: the same consoles through its IPMI support (libipmiconsole too).
        if a.gpufleet_only:
            print(json.dumps(out[0]))
            return
        cdir = os.path.join(w, 'conman-logs')
        os.makedirs(cdir)
        conf = os.path.join(w, 'conman.conf')
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(f'SERVER logdir="{cdir}"\nSERVER pidfile="{w}/conmand.pid"\n'
                    f'SERVER port=7890\nSERVER keepalive=ON\nSERVER loopback=ON\n'
                    f'GLOBAL log="%N.log"\nGLOBAL logopts="nolock,nosanitize,notimestamp"\n'
                    f'GLOBAL ipmiopts="U:admin,P:{a.password},C:3,W:opensesspriv,'
                    f'W:solpayloadsize,W:134217728"\n')
            for i in range(1, a.count + 1):
                f.write(f'CONSOLE name="c{i:03d}" dev="ipmi:{lab.addr(i)}"\n')
        clogs = [os.path.join(cdir, f'c{i:03d}.log') for i in range(1, a.count + 1)]
        out.append(run('conman', ['/usr/sbin/conmand', '-F', '-c', conf], os.environ, clogs,
                       says(b'connected'), ports, a.seconds, w, flood))
        for o in out:
            print(json.dumps(o))
    finally:
        for sp in ports:
            sp.stop()
        lab.stop()


if __name__ == '__main__':
    main()
