"""Issue 14: no web page can drive dqd. Over raw TCP (what curl sends) and from a real
headless Chromium: a page of another site (CSRF: a text/plain fetch, a form POST), a page
whose name was rebound to 127.0.0.1 (DNS rebinding: its same-origin requests reach dqd with
the attacker's Host), and, as the control, a page reached through an `ssh -L`-like
forward (Host localhost:PORT) whose JSON changes go through.
Usage: test_web_attacks.py DQD [CHROMIUM]"""

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dqdtest import Dqd, make_workdir, remove_workdir, run_script


def raw(port, head, body=b""):
    """(status, body) of one request written as given (HTTP/1.1 lines without the end)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if body:
        head += "\r\nContent-Length: %d" % len(body)
    s.sendall(head.encode() + b"\r\nConnection: close\r\n\r\n" + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data.split(b"\r\n\r\n", 1)[-1]


def refused(d):
    m = d.metrics()
    return {r: m.value("dqd_http_refused_total", reason=r)
            for r in ("host", "origin", "content_type", "token")}


class Wrapper:
    """A v2 wrapper: what dqd sends it is collected."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.s.sendall(b"h:2;node:web@test;app:web\n")
        self.got = b""
        self.s.settimeout(0.1)

    def drain(self, secs=0.5):
        end = time.time() + secs
        while time.time() < end:
            try:
                chunk = self.s.recv(65536)
                if not chunk:
                    break
                self.got += chunk
            except socket.timeout:
                pass
        return self.got.decode()


class Forward:
    """A TCP forward to dqd like `ssh -L` (or a rebinding name's server): GET /page is
    answered here with a page, every other request goes to dqd unchanged (its Host too)."""

    def __init__(self, dqd_port, page):
        self.dqd_port = dqd_port
        self.page = page.encode()
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = c.recv(65536)
            if not chunk:
                c.close()
                return
            head += chunk
        if head.startswith(b"GET /page "):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % len(self.page) + self.page)
            c.close()
            return
        u = socket.create_connection(("127.0.0.1", self.dqd_port))
        u.sendall(head)
        socks = [c, u]
        try:
            while True:
                r, _, _ = select.select(socks, [], [], 10)
                if not r:
                    break
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        raise EOFError
                    (u if s is c else c).sendall(data)
        except (EOFError, OSError):
            pass
        c.close()
        u.close()

    def close(self):
        self.stop = True
        self.ls.close()


def chromium_dom(chromium, url, work, extra=()):
    """The DOM of url once its scripts have run (headless Chromium, its own profile)."""
    prof = os.path.join(work, "chromium-profile-%d" % time.time_ns())
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--user-data-dir=" + prof, "--virtual-time-budget=8000",
                        "--dump-dom"] + list(extra) + [url],
                       capture_output=True, text=True, timeout=90)
    shutil.rmtree(prof, ignore_errors=True)
    return r.stdout


def curl_rules(c, d, w):
    """Every rule, from the requests the issue's attack run sent (raw TCP, like curl)."""
    p = d.http_port
    before = refused(d)
    # CSRF as curl sends it: text/plain and another site's Origin
    st, body = raw(p, "POST /api/v1/wrapper/stop HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      "Content-Type: text/plain\r\nOrigin: http://evil.example" % p)
    c.eq(st, 403, "text/plain POST with another site's Origin to wrapper/stop: %r" % body)
    c.check("stop_stub" not in w.drain(0.3), "the wrapper was not told to stop")
    # a text/plain POST opening an investigation (no Origin: curl)
    st, body = raw(p, "POST /api/v1/diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: text/plain", b'{"node":"flow"}')
    c.eq(st, 415, "text/plain POST to /api/v1/diagnose: %r" % body)
    c.eq(d.get("/api/v1/investigations"), [], "no investigation was opened")
    # a form POST (what an HTML form sends), empty body
    st, _ = raw(p, "POST /api/v1/wrapper/stop HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Type: application/x-www-form-urlencoded")
    c.eq(st, 415, "a form POST")
    # rebinding: the attacker's Host
    text_before = d.get("/api/v1/diagram")["text"]
    st, body = raw(p, "PUT /api/v1/diagram HTTP/1.1\r\nHost: attacker.example:%d" % p,
                   b"evil = x -> y;")
    c.eq(st, 403, "PUT diagram with Host attacker.example: %r" % body)
    c.eq(d.get("/api/v1/diagram")["text"], text_before, "the diagram is unchanged")
    st, _ = raw(p, "GET /api/v1/status HTTP/1.1\r\nHost: attacker.example")
    c.eq(st, 403, "a read with the attacker's Host")
    st, _ = raw(p, "GET /api/v1/status HTTP/1.1\r\nHost: localhost.attacker.example")
    c.eq(st, 403, "a name that starts with localhost is not loopback")
    st, _ = raw(p, "GET /api/v1/status HTTP/1.1")
    c.eq(st, 400, "HTTP/1.1 without a Host")
    st, _ = raw(p, "GET /-/healthy HTTP/1.0")
    c.eq(st, 200, "HTTP/1.0 without a Host (not a browser) is answered")
    # an absolute-form target (docs/api.md: 400), whatever its Host
    st, _ = raw(p, "GET http://evil.example/api/v1/status HTTP/1.1\r\nHost: 127.0.0.1")
    c.eq(st, 400, "an absolute request target")
    # what must keep working: loopback names and addresses, ssh -L (localhost:OTHER), the
    # machine's own name, https through a proxy, JSON changes with their own Origin
    for host in ("127.0.0.1:%d" % p, "localhost:9000", "LOCALHOST", "[::1]:%d" % p,
                 "10.1.2.3:%d" % p, "dqd.localhost", socket.gethostname()):
        st, _ = raw(p, "GET /metrics HTTP/1.1\r\nHost: %s" % host)
        c.eq(st, 200, "GET /metrics with Host %s" % host)
    st, body = raw(p, "PUT /api/v1/probes/web?create=1 HTTP/1.1\r\nHost: localhost:9000\r\n"
                      "Origin: http://localhost:9000\r\nContent-Type: application/json",
                   b'{"enabled":true}')
    c.eq(st, 200, "a JSON PUT from its own origin through ssh -L: %r" % body)
    st, _ = raw(p, "POST /api/v1/wrapper/start HTTP/1.1\r\nHost: dqd.localhost\r\n"
                   "Origin: https://dqd.localhost")
    c.eq(st, 200, "https Origin of the same Host (a TLS proxy)")
    st, _ = raw(p, "POST /api/v1/wrapper/stop HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: null")
    c.eq(st, 403, "Origin null (a sandboxed or privacy-stripped page)")
    st, _ = raw(p, "POST /api/v1/wrapper/stop HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Origin: http://127.0.0.1:1" % p)
    c.eq(st, 403, "another port of the same address is another origin")
    st, _ = raw(p, "PUT /api/v1/probes/web HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Type: application/json; charset=utf-8", b'{"dmax_ms":50}')
    c.eq(st, 200, "application/json with a charset")
    after = refused(d)
    c.check(after["host"] - before["host"] >= 4 and after["origin"] - before["origin"] >= 3 and
            after["content_type"] - before["content_type"] >= 2,
            "dqd_http_refused_total counts each reason: %r -> %r" % (before, after))


def allowed_hosts(c, dqd_bin, work):
    d = Dqd(dqd_bin, work, extra=["--allowed-hosts",
                                  "dqd.internal, .svc.cluster.local,proxy.example:8443"])
    p = d.http_port
    for host, want in (("dqd.internal", 200), ("DQD.internal:7401", 200),
                       ("otel.svc.cluster.local:4318", 200), ("svc.cluster.local", 403),
                       ("proxy.example:8443", 200), ("proxy.example:9", 403),
                       ("prometheus-target", 403)):
        st, _ = raw(p, "GET /metrics HTTP/1.1\r\nHost: %s" % host)
        c.eq(st, want, "allowed_hosts: Host %s" % host)
    d.stop(c)
    d = Dqd(dqd_bin, work, extra=["--allowed-hosts", "*"])
    c.eq(raw(d.http_port, "GET /metrics HTTP/1.1\r\nHost: anything")[0], 200,
         "allowed_hosts *: any Host")
    d.stop(c)


CSRF_PAGE = """<html><body><div id=out>pending</div>
<iframe name=sink></iframe>
<form id=f method=POST action="http://127.0.0.1:%(p)d/api/v1/wrapper/stop" target=sink
      enctype="text/plain"><input name='{"a":"' value='"}'></form>
<script>
(async () => {
  const out = [];
  for (const [path, body] of [["/api/v1/wrapper/stop", ""],
                              ["/api/v1/diagnose", '{"node":"flow"}']]) {
    try {
      await fetch("http://127.0.0.1:%(p)d" + path, {method: "POST", mode: "no-cors",
          headers: {"Content-Type": "text/plain"}, body: body});
      out.push("sent");
    } catch (e) { out.push("error " + e); }
  }
  document.getElementById("f").submit();
  await new Promise(r => setTimeout(r, 500));
  document.getElementById("out").textContent = "done " + out.join(",");
})();
</script></body></html>"""

SAME_ORIGIN_PAGE = """<html><body><div id=out>pending</div><script>
(async () => {
  const out = [];
  const go = async (method, path, body, type) => {
    const h = {};
    if (type) h["Content-Type"] = type;
    try {
      const r = await fetch(path, {method: method, headers: h, body: body});
      out.push(method + " " + path + " " + r.status);
    } catch (e) { out.push(method + " " + path + " error"); }
  };
  await go("GET", "/api/v1/status");
  await go("PUT", "/api/v1/diagram", "evil = x -> y;", "text/plain");
  await go("POST", "/api/v1/wrapper/stop");
  await go("PUT", "/api/v1/probes/fromweb?create=1", '{"enabled":true}', "application/json");
  document.getElementById("out").textContent = "done " + out.join(";");
})();
</script></body></html>"""


def browser(c, d, w, chromium, work):
    p = d.http_port
    before = refused(d)
    inv_before = len(d.get("/api/v1/investigations"))
    # CSRF: a page of another site (another port is another origin)
    site = Forward(p, CSRF_PAGE % {"p": p})
    dom = chromium_dom(chromium, "http://127.0.0.1:%d/page" % site.port, work)
    site.close()
    c.check("done sent,sent" in dom, "the CSRF page ran its requests: %r" % dom[-300:])
    after = refused(d)
    c.check(after["origin"] - before["origin"] >= 3,
            "Chromium's cross-site POSTs (2 fetches, 1 form) refused for their Origin: %r -> %r"
            % (before, after))
    c.check("stop_stub" not in w.drain(0.3), "the CSRF page did not stop the wrapper")
    c.eq(len(d.get("/api/v1/investigations")), inv_before, "the CSRF page opened no investigation")
    # DNS rebinding: attacker.example resolves to 127.0.0.1, so the page's same-origin
    # requests reach dqd (through the forward) with Host attacker.example:PORT
    text_before = d.get("/api/v1/diagram")["text"]
    reb = Forward(p, SAME_ORIGIN_PAGE)
    dom = chromium_dom(chromium, "http://attacker.example:%d/page" % reb.port, work,
                       ["--host-resolver-rules=MAP attacker.example 127.0.0.1"])
    reb.close()
    want = ("done GET /api/v1/status 403;PUT /api/v1/diagram 403;POST /api/v1/wrapper/stop 403;"
            "PUT /api/v1/probes/fromweb?create=1 403")
    c.check(want in dom, "rebinding: every request refused for its Host: %r" % dom[-400:])
    c.eq(d.get("/api/v1/diagram")["text"], text_before, "rebinding: the diagram is unchanged")
    c.check("stop_stub" not in w.drain(0.3), "rebinding: the wrapper was not stopped")
    # the control: the same page through an ssh -L forward (http://localhost:PORT) is dqd's
    # own origin: reads and JSON changes work, a text/plain body to a JSON route would not
    fwd = Forward(p, SAME_ORIGIN_PAGE.replace('await go("PUT", "/api/v1/diagram", '
                                              '"evil = x -> y;", "text/plain");', ""))
    dom = chromium_dom(chromium, "http://localhost:%d/page" % fwd.port, work)
    fwd.close()
    c.check("done GET /api/v1/status 200;POST /api/v1/wrapper/stop 200;"
            "PUT /api/v1/probes/fromweb?create=1 200" in dom,
            "through ssh -L the page's own requests are answered: %r" % dom[-400:])
    c.check("stop_stub" in w.drain(0.5), "the page's own stop reached the wrapper")


def body(c):
    dqd_bin = sys.argv[1]
    chromium = sys.argv[2] if len(sys.argv) > 2 else shutil.which("chromium")
    work = make_workdir("dqd-web-attacks-")
    diagram = os.path.join(work, "d.dq")
    with open(diagram, "w") as f:
        f.write("flow = a -> b;\n")
    d = Dqd(dqd_bin, work, diagram=diagram)
    w = Wrapper(d.ingest_port)
    w.drain(0.5)
    curl_rules(c, d, w)
    if c.check(chromium and os.path.exists(chromium),
               "Chromium is installed (make deps: Debian's chromium)"):
        browser(c, d, w, chromium, work)
    d.stop(c)
    allowed_hosts(c, dqd_bin, work)
    remove_workdir(work)


run_script("web_attacks", body)
