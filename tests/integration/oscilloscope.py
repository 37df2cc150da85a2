"""The unmodified ΔQ Oscilloscope wrapper (fnieri/dqsd_otel), as the tests speak it.

This is not that wrapper's code: it is a client written from what its source shows it does
on the wire, so that `make test` can run without building the Erlang original and its
OpenTelemetry dependencies offline (the closing run of issue 25 used the original).

- Data: the application calls try_connect(IP, PORT) (usually right after it starts): one
  TCP connection, opened passive and never read. Nothing is sent on it until a probe has a
  timeout (set_timeout) and the stub runs (start_stub): until then it is silent, however
  long. Each outcome instance is one send of `n:NAME;b:START;e:END;s:STATUS\\n` (ns since
  the epoch; `ok`, `fa`, or `to` with END = START + the timeout). A send that fails drops
  the socket ("TCP send failed") and the wrapper never reconnects by itself; it drops the
  spans that follow.
- Commands: start_server(IP, PORT) listens (8081 by default in the oscilloscope); every
  connection to it is read line by line, the `\\n` stripped (nothing else), and each line
  is `set_timeout;NAME;MS` (MS read as the leading integer), `start_stub` or `stop_stub`;
  anything else is logged as unknown. It never answers.
- A span is reported only when, at its start, the stub runs and its name has a timeout.
"""

import re
import socket
import threading
import time

LEADING_INT = re.compile(rb"[+-]?[0-9]+")


class OscilloscopeWrapper:
    def __init__(self):
        self.timeouts = {}  # name -> ms
        self.running = False
        self.commands = []  # every line the listener read, in order
        self.log = []
        self.sock = None
        self.sent = 0
        self.dropped = 0
        self.cond = threading.Condition()
        self.listener = None
        self.port = None
        self._stop = False

    # ---- the command listener (dqsd_otel_tcp_server) ----------------------------------

    def start_server(self, host="127.0.0.1", port=0):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept_loop, daemon=True).start()
        return self.port

    def _accept_loop(self):
        while not self._stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn):
        buf = b""
        while True:
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:
                conn.close()
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self._handle(line)

    def _handle(self, line):
        parts = line.split(b";")
        with self.cond:
            self.commands.append(line.decode("latin-1"))
            if len(parts) == 3 and parts[0] == b"set_timeout":
                m = LEADING_INT.match(parts[2])
                if m:
                    self.timeouts[parts[1].decode("latin-1")] = int(m.group(0))
                else:
                    self.log.append("Invalid timeout: %r" % parts[2])
            elif parts == [b"start_stub"]:
                self.running = True
            elif parts == [b"stop_stub"]:
                self.running = False
            else:
                self.log.append("Unknown command: %r" % line)
            self.cond.notify_all()

    def wait(self, pred, timeout=10.0):
        """Waits until pred(self) holds (checked after each command); True when it did."""
        end = time.monotonic() + timeout
        with self.cond:
            while not pred(self):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    # ---- the data connection (dqsd_otel_tcp_client) -----------------------------------

    def try_connect(self, host, port):
        s = socket.create_connection((host, port))
        if self.sock:
            self.sock.close()
        self.sock = s
        return s

    def span(self, name, duration_ns, status="ok", start_ns=None):
        """One instance of `name` that took duration_ns; sent when the wrapper would send
        it. Returns True when it went on the socket."""
        with self.cond:
            t = self.timeouts.get(name) if self.running else None
        if t is None:
            return False
        start = start_ns if start_ns is not None else time.time_ns() - duration_ns
        end = start + duration_ns
        if duration_ns > t * 1000000:
            status, end = "to", start + t * 1000000
        return self._send(b"n:%s;b:%d;e:%d;s:%s\n" % (name.encode(), start, end, status.encode()))

    def _send(self, data):
        if self.sock is None:
            self.dropped += 1
            return False
        try:
            self.sock.sendall(data)
        except OSError as e:
            self.log.append("TCP send failed: %r" % e)
            self.sock = None
            self.dropped += 1
            return False
        self.sent += 1
        return True

    def close(self):
        self._stop = True
        if self.sock:
            self.sock.close()
            self.sock = None
        if self.listener:
            self.listener.close()
