"""A small client of the Chrome DevTools Protocol for the dashboard's tests.

It starts Debian's headless Chromium with --remote-debugging-port=0 and a fresh profile,
reads the port Chromium chose from DevToolsActivePort, and drives the one page target
over its WebSocket (a minimal client below, stdlib only: the handshake, masked text
frames out, fragmented frames in, ping/pong): commands and their answers by id, events
handed to listeners in order. Nothing is downloaded: the browser is the system's.

    b = Browser.launch(out_dir)
    b.on("Network.requestWillBeSent", lambda p: ...)
    b.call("Network.enable")
    b.navigate("http://127.0.0.1:PORT/")
    b.wait_for("document.querySelectorAll('#tree li').length > 3", timeout=20)
    b.screenshot("dashboard.png")
    b.close()
"""

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request


class CdpError(RuntimeError):
    pass


class WebSocket:
    """A WebSocket client for one ws://127.0.0.1:PORT/PATH (RFC 6455, text frames)."""

    def __init__(self, url, timeout=30):
        u = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        self.sock.settimeout(None)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n" %
                           (u.path or "/", u.netloc, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CdpError("websocket: closed during the handshake")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise CdpError("websocket: handshake refused: %r" % head[:200])
        self.send_lock = threading.Lock()

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise CdpError("websocket: closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with self.send_lock:
            self.sock.sendall(head + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def recv(self):
        """The next text message (fragments joined); raises CdpError when closed."""
        parts = []
        while True:
            b0, b1 = self._exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else None
            data = self._exact(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x8:
                raise CdpError("websocket: closed by the browser")
            if opcode == 0x9:
                self._send_frame(0xA, data)
                continue
            if opcode == 0xA:
                continue
            parts.append(data)
            if b0 & 0x80:
                return b"".join(parts).decode("utf-8")

    def close(self):
        try:
            self._send_frame(0x8, b"")
        except OSError:
            pass
        self.sock.close()


def find_chromium():
    for name in ("chromium", "chromium-browser", "chromium-headless-shell"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, proc, profile, ws_url, log_path):
        self.proc = proc
        self.profile = profile
        self.log_path = log_path
        self.ws = WebSocket(ws_url)
        self.next_id = 1
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.answers = {}
        self.listeners = {}
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @classmethod
    def launch(cls, out_dir, width=1440, height=1000, extra=()):
        exe = find_chromium()
        if not exe:
            raise CdpError("chromium not found: `make deps` installs Debian's chromium")
        profile = tempfile.mkdtemp(prefix="dqd-chromium-")
        log_path = os.path.join(out_dir, "chromium.log")
        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                "--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--disable-default-apps",
                "--disable-features=Translate,MediaRouter,OptimizationHints",
                "--metrics-recording-only", "--password-store=basic", "--use-mock-keychain",
                "--hide-scrollbars", "--mute-audio", "--force-device-scale-factor=1",
                "--window-size=%d,%d" % (width, height), *extra, "about:blank"]
        log = open(log_path, "wb")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 30
        port = None
        while time.time() < deadline and proc.poll() is None:
            try:
                with open(port_file) as f:
                    port = int(f.readline().strip())
                break
            except (OSError, ValueError):
                time.sleep(0.05)
        if port is None:
            proc.kill()
            raise CdpError("chromium did not open its DevTools port (see %s)" % log_path)
        ws_url = None
        while time.time() < deadline and not ws_url:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port,
                                            timeout=5) as r:
                    targets = json.loads(r.read().decode())
                pages = [t for t in targets if t.get("type") == "page"]
                if pages:
                    ws_url = pages[0]["webSocketDebuggerUrl"]
            except OSError:
                time.sleep(0.1)
        if not ws_url:
            proc.kill()
            raise CdpError("no page target in chromium (see %s)" % log_path)
        return cls(proc, profile, ws_url, log_path)

    # ---- the protocol ------------------------------------------------------------------

    def _read(self):
        while True:
            try:
                raw = self.ws.recv()
            except Exception:  # closed: wake every waiter
                with self.cond:
                    self.closed = True
                    self.cond.notify_all()
                return
            if not raw:
                continue
            msg = json.loads(raw)
            if "id" in msg:
                with self.cond:
                    self.answers[msg["id"]] = msg
                    self.cond.notify_all()
            else:
                for fn in list(self.listeners.get(msg.get("method"), ())):
                    try:
                        fn(msg.get("params", {}))
                    except Exception as e:  # a listener's bug must not stop the reader
                        print("cdp listener for %s raised %r" % (msg.get("method"), e),
                              flush=True)

    def on(self, method, fn):
        self.listeners.setdefault(method, []).append(fn)

    def call(self, method, params=None, timeout=30):
        with self.cond:
            mid = self.next_id
            self.next_id += 1
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        deadline = time.time() + timeout
        with self.cond:
            while mid not in self.answers:
                left = deadline - time.time()
                if left <= 0 or self.closed:
                    raise CdpError("%s: no answer within %g s" % (method, timeout))
                self.cond.wait(left)
            msg = self.answers.pop(mid)
        if "error" in msg:
            raise CdpError("%s: %s" % (method, msg["error"].get("message")))
        return msg.get("result", {})

    # ---- conveniences ------------------------------------------------------------------

    def navigate(self, url):
        return self.call("Page.navigate", {"url": url})

    def evaluate(self, expr, timeout=30):
        """The value of a JavaScript expression (promises awaited); raises on a throw."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError("evaluate %r: %s" % (expr[:80], d.get("exception", {}).get(
                "description", d.get("text"))))
        return r.get("result", {}).get("value")

    def wait_for(self, expr, timeout=20, step=0.05):
        """Polls expr until it is truthy; its last value (falsy on timeout)."""
        deadline = time.time() + timeout
        value = None
        while True:
            try:
                value = self.evaluate(expr)
            except CdpError:
                value = None
            if value or time.time() > deadline:
                return value
            time.sleep(step)

    def watch(self):
        """A PageWatch on this browser: its requests and its problems from now on."""
        return PageWatch(self)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return path

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.ws.close()
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


class PageWatch:
    """What a page does that a test checks: every request it sends (url, method, headers,
    body) and every problem (a console.error or console.assert, an uncaught exception, an
    error logged by the browser, e.g. a refused load or a Content-Security-Policy block).
    Enables the Page, Runtime, Log and Network domains."""

    def __init__(self, browser):
        self.requests, self.problems = [], []
        browser.on("Network.requestWillBeSent", self._request)
        browser.on("Runtime.consoleAPICalled", self._console)
        browser.on("Runtime.exceptionThrown", self._exception)
        browser.on("Log.entryAdded", self._log)
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(domain + ".enable")

    def _request(self, p):
        r = p.get("request", {})
        self.requests.append({"url": r.get("url", ""), "method": r.get("method"),
                              "headers": r.get("headers", {}), "body": r.get("postData")})

    def _console(self, p):
        if p.get("type") in ("error", "assert"):
            self.problems.append("console.%s: %s" % (p.get("type"), " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))

    def _exception(self, p):
        d = p.get("exceptionDetails", {})
        self.problems.append("exception: %s" % d.get("exception", {}).get(
            "description", d.get("text")))

    def _log(self, p):
        e = p.get("entry", {})
        if e.get("level") == "error":
            self.problems.append("log (%s): %s %s" % (e.get("source"), e.get("text"),
                                                      e.get("url", "")))

    def foreign(self, base_url):
        """The URLs of the requests that went to a host other than base_url's."""
        host = urllib.parse.urlsplit(base_url).netloc
        return [q["url"] for q in self.requests if not q["url"].startswith(("data:", "blob:"))
                and urllib.parse.urlsplit(q["url"]).netloc != host]

    def check_clean(self, c, base_url):
        """The test's last checks: nothing requested from another host, no problem."""
        c.eq(self.foreign(base_url), [],
             "every request went to dqd (%d requests)" % len(self.requests))
        c.eq(self.problems, [], "no console error and no exception")
