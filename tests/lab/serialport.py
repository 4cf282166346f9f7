"""The host side of a lab BMC's serial port.

ipmi_sim serves Serial-over-LAN when its lan.conf has a line
`sol "tcp:ADDRESS:PORT" 115200` (ipmi_lan(5)): it connects out to that TCP
port as if it were the UART of the host. A SerialPort listens there and plays
the host: what a test sends goes to the BMC (and on to an SOL client), what
the BMC writes (keys typed in an SOL session, breaks) is recorded.

    sp = SerialPort("127.52.1.1", 7001).start()
    sp.wait_connected(10)
    sp.send(b"boot line\\r\\n")
    sp.wait_received(b"typed", 10)
    sp.flood(b"noise ")      # print as fast as the BMC takes it, until stop_flood()
    sp.stop()

ipmi_sim connects again when the connection drops (and when it restarts):
the port keeps listening and serves each connection in turn.
"""
import socket
import threading
import time


class SerialPort:
    def __init__(self, addr, port):
        self.addr = addr
        self.port = int(port)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._received = bytearray()
        self._conn = None
        self._connections = 0
        self._sent = 0
        self._stop = threading.Event()
        self._flood = None
        self._threads = []
        self._srv = None

    def start(self):
        self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind((self.addr, self.port))
        self._srv.listen(4)
        self._srv.settimeout(0.2)
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._srv.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(0.2)
            with self._cond:
                old, self._conn = self._conn, conn
                self._connections += 1
                self._cond.notify_all()
            if old is not None:
                old.close()
            t = threading.Thread(target=self._read_loop, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _read_loop(self, conn):
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            with self._cond:
                self._received += data
                self._cond.notify_all()
        with self._cond:
            if self._conn is conn:
                self._conn = None
            self._cond.notify_all()

    def _wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("serial port %s:%d: %s" % (self.addr, self.port, what))
                self._cond.wait(min(left, 0.2))

    @property
    def connections(self):
        with self._lock:
            return self._connections

    def wait_connected(self, timeout=10.0, count=1):
        """Until the BMC has connected @count times in all and is connected now."""
        self._wait(lambda: self._connections >= count and self._conn is not None, timeout,
                   "the BMC did not connect")

    def received(self):
        with self._lock:
            return bytes(self._received)

    def wait_received(self, data, timeout=10.0):
        """Until @data is among what the BMC wrote to the port."""
        self._wait(lambda: data in self._received, timeout,
                   "%r never came (got %r)" % (data, bytes(self._received[-200:])))

    def send(self, data):
        """Write @data to the BMC (what the host prints on its console)."""
        with self._lock:
            conn = self._conn
        if conn is None:
            raise ConnectionError("serial port %s:%d: no BMC connected" % (self.addr, self.port))
        conn.sendall(data)
        with self._lock:
            self._sent += len(data)

    @property
    def sent(self):
        with self._lock:
            return self._sent

    def flood(self, line=b"flood ", every=0.0):
        """Print numbered lines of @line as fast as the BMC takes them (or one
        per @every seconds) on a thread of its own, until stop_flood()."""
        stop = threading.Event()

        def run():
            k = 0
            while not stop.is_set() and not self._stop.is_set():
                try:
                    self.send(b"%s%08d\r\n" % (line, k))
                except (OSError, ConnectionError):
                    if stop.wait(0.05):
                        break
                    continue
                k += 1
                if every:
                    stop.wait(every)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._flood = (stop, t)

    def stop_flood(self):
        if self._flood:
            stop, t = self._flood
            stop.set()
            t.join(5)
            self._flood = None

    def stop(self):
        self.stop_flood()
        self._stop.set()
        if self._srv is not None:
            self._srv.close()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        for t in self._threads:
            t.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
