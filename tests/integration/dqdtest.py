"""Shared helpers of the dqd integration tests (stdlib only).

Each test script starts its own dqd on ephemeral loopback ports with a temporary store,
talks to it over the ingest port (both protocol dialects) and the HTTP API, and stops it
with SIGTERM at the end, also when a check fails. A stopped dqd must exit with status 0
and print no sanitizer report on stderr: in the ASan build that is how leaks and undefined
behaviour are caught (LeakSanitizer runs at exit and makes the exit status non-zero).

Checks do not stop a script: each one prints FAIL with a message and is counted; the
script ends with "N passed, N failed" and a non-zero exit status when anything failed.
"""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class Checks:
    """Counts passed and failed checks of one script."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s" % what, flush=True)
        return bool(cond)

    def eq(self, got, want, what):
        return self.check(got == want, "%s: got %r, want %r" % (what, got, want))

    def near(self, got, want, tol, what):
        ok = isinstance(got, (int, float)) and math.isfinite(got) and abs(got - want) <= tol
        return self.check(ok, "%s: got %r, want %r ± %g" % (what, got, want, tol))

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        return 1 if self.failed else 0


def run_script(name, body):
    """Runs body(checks) and exits with the script's status; an exception is a failure."""
    c = Checks(name)
    try:
        body(c)
    except Exception:  # a crash of the test itself counts as a failure, with its trace
        traceback.print_exc()
        c.check(False, "%s raised an exception" % name)
    finally:
        Dqd.stop_all(c)
    sys.exit(c.done())


def _die_with_parent():
    """In the child before exec: SIGTERM when the test dies (e.g. killed by a CTest timeout),
    so that no dqd outlives its test."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def now_ns():
    return time.time_ns()


def sanitized(binary):
    """Whether the executable was built with AddressSanitizer (the sanitizer build of `make
    test`): there dqd is several times slower and its RSS holds the sanitizer's shadow
    memory and quarantine, so tests bound neither, and lighten their floods."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def held_seconds():
    """How long the held tests (tests/adaptive/test_held.py, the matrix's `held` timing)
    hold their fault, in simulated seconds: 10 minutes (issue 24), or DQ_HELD_S, which the
    sanitizer build's CTest sets to 180: there the code is checked for memory and undefined
    behaviour, which the first minutes' paths show, at five times the CPU a minute."""
    return int(os.environ.get("DQ_HELD_S", "600"))


def cpu_priority(increment=-10):
    """Raises this test's CPU priority (and that of the dqd and other processes it starts
    afterwards) for a test whose checks are on how quickly something answers while the
    machine is busy with other work (the other tests, the sanitizer build, a second test
    run): the others then take the CPU it leaves. Without the privilege (not root) it says
    so and runs as it is."""
    try:
        os.nice(increment)
        return True
    except OSError as e:
        print("note: running at the usual CPU priority (%s)" % e, flush=True)
        return False


class Dqd:
    """One dqd process on ephemeral ports. stop() checks its exit status and stderr."""

    running = []

    def __init__(self, binary, workdir, window_ms=100, lag_ms=100, db=None, diagram=None,
                 config=None, extra=(), wrap=()):
        """wrap: a command that execs dqd (e.g. setpriv … --), so the pid stays dqd's."""
        self.binary = binary
        self.workdir = workdir
        self.db = db or os.path.join(workdir, "dqd.db")
        self.window_ms = window_ms
        self.lag_ms = lag_ms
        self.stderr_path = os.path.join(workdir, "dqd-%d.stderr" % len(os.listdir(workdir)))
        args = [binary, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--db", self.db,
                "--window", str(window_ms), "--lag", str(lag_ms)]
        if diagram:
            args += ["--diagram", diagram]
        if config:
            args += ["--config", config]
        args += list(extra)
        args = list(wrap) + args
        self.args = args
        self.stderr_file = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     preexec_fn=_die_with_parent)
        self.stopped = False
        Dqd.running.append(self)
        line = self._read_ready_line(10.0)
        m = re.match(r"dqd ready ingest=(\d+) http=(\d+)(?: otlp=(\d+))?$", line.strip())
        if not m:
            self.stop(None)
            raise RuntimeError("dqd did not start: stdout %r, stderr %r" % (line, self.stderr()))
        self.ingest_port = int(m.group(1))
        self.http_port = int(m.group(2))
        self.otlp_port = int(m.group(3)) if m.group(3) else 0
        self.url = "http://127.0.0.1:%d" % self.http_port

    def _read_ready_line(self, timeout):
        out = []
        t = threading.Thread(target=lambda: out.append(self.proc.stdout.readline()))
        t.daemon = True
        t.start()
        t.join(timeout)
        return out[0].decode("utf-8", "replace") if out else ""

    def stderr(self):
        if not self.stderr_file.closed:
            self.stderr_file.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, checks, what="dqd"):
        """SIGTERM, wait, and (when checks is given) check a clean, report-free exit."""
        if self.stopped:
            return None
        self.stopped = True
        if self in Dqd.running:
            Dqd.running.remove(self)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            if checks:
                checks.check(False, "%s did not stop within 20 s of SIGTERM" % what)
        self.proc.stdout.close()
        self.stderr_file.close()
        err = self.stderr()
        if checks:
            checks.eq(rc, 0, "%s exit status after SIGTERM" % what)
            found = [m for m in SANITIZER_MARKERS if m in err]
            checks.check(not found, "%s stderr has a sanitizer report:\n%s" % (what, err[-4000:]))
            checks.check("dqd stopped cleanly" in err, "%s did not log a clean stop" % what)
        return rc

    @classmethod
    def stop_all(cls, checks):
        for d in list(cls.running):
            d.stop(checks)

    # ---- HTTP ----------------------------------------------------------------------

    def request(self, method, path, body=None, timeout=10):
        """(status, body bytes) of one HTTP request; never raises on HTTP errors."""
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            # dqd takes a change's body only as JSON (a .dq diagram is text): urllib's
            # default form type is what a cross-site page would send, and is refused
            req.add_header("Content-Type", "text/plain" if path.startswith("/api/v1/diagram")
                           else "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def api(self, method, path, body=None):
        """(status, parsed JSON envelope) of an API request."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        st, raw = self.request(method, path, body)
        return st, json.loads(raw.decode())

    def get(self, path):
        """The data of a successful GET; raises on anything else."""
        st, env = self.api("GET", path)
        if st != 200 or env.get("status") != "success":
            raise RuntimeError("GET %s: %d %r" % (path, st, env))
        return env["data"]

    def status(self):
        return self.get("/api/v1/status")

    def metrics_text(self):
        st, raw = self.request("GET", "/metrics")
        if st != 200:
            raise RuntimeError("GET /metrics: %d" % st)
        return raw.decode()

    def metrics(self):
        return parse_prometheus(self.metrics_text())

    def dq(self, probe, kind="observed", window=None):
        """The dq data of a probe, or None on 404."""
        q = "/api/v1/probes/%s/dq?kind=%s" % (probe, kind)
        if window is not None:
            q += "&window=%s" % window
        st, env = self.api("GET", q)
        if st == 404:
            return None
        if st != 200:
            raise RuntimeError("GET %s: %d %r" % (q, st, env))
        return env["data"]

    # ---- windows -------------------------------------------------------------------

    def window_of(self, ns):
        return ns // (self.window_ms * 1000000)

    def window_start_s(self, wid):
        return wid * self.window_ms / 1000.0

    def wait_window(self, probe, wid, kind="observed", timeout=8.0):
        """The dq of probe for window wid once that window has closed (None on timeout).
        It is looked for over the whole ring (60 windows by default), newest first: a
        test stalled on a busy machine may look only after 8 more windows of 100 ms
        closed (integration_dqctl, a fresh-clone make test)."""
        start = self.window_start_s(wid)
        deadline = time.time() + timeout
        while time.time() < deadline:
            for back in range(0, 60):
                d = self.dq(probe, kind, back)
                if d is None:
                    break
                if abs(d["window"]["start"] - start) < 1e-6:
                    return d
                if d["window"]["start"] < start - 1e-6:
                    break
            time.sleep(0.05)
        return None

    def wait_until(self, pred, timeout=5.0, step=0.02):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(step)
        return pred()


def make_workdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    return d


def remove_workdir(d):
    shutil.rmtree(d, ignore_errors=True)


# ---- protocol helpers ------------------------------------------------------------------


def legacy_line(name, start_ns, end_ns, status="ok"):
    return "n:%s;b:%d;e:%d;s:%s\n" % (name, start_ns, end_ns, status)


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class LineReader:
    """Reads '\\n'-terminated lines from a socket with a deadline."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def read_line(self, timeout=3.0):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(4096)
            except socket.timeout:
                return None
            except OSError:
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def read_lines(self, n, timeout=3.0):
        out = []
        deadline = time.time() + timeout
        while len(out) < n:
            line = self.read_line(max(0.0, deadline - time.time()))
            if line is None:
                break
            out.append(line)
        return out

    def read_until(self, want, timeout=3.0):
        """Lines read until one equals want (included); stops at the deadline."""
        out = []
        deadline = time.time() + timeout
        while True:
            line = self.read_line(max(0.0, deadline - time.time()))
            if line is None:
                return out
            out.append(line)
            if line == want:
                return out

    def quiet(self, timeout=0.3):
        """Lines that arrive within timeout (expected: none)."""
        out = []
        while True:
            line = self.read_line(timeout)
            if line is None:
                return out
            out.append(line)


# ---- Prometheus text format ----------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


class Metrics:
    """Parsed exposition: samples [(name, labels dict, value)] and TYPE per family."""

    def __init__(self):
        self.samples = []
        self.types = {}
        self.errors = []

    def value(self, name, **labels):
        """The value of the one sample name{labels} (labels may be a subset), else None."""
        found = [v for n, l, v in self.samples
                 if n == name and all(l.get(k) == str(x) for k, x in labels.items())]
        return found[0] if len(found) == 1 else None

    def select(self, name, **labels):
        return [(l, v) for n, l, v in self.samples
                if n == name and all(l.get(k) == str(x) for k, x in labels.items())]


def _family(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def parse_prometheus(text):
    """Parses text format 0.0.4 strictly enough to catch broken output."""
    m = Metrics()
    if not text.endswith("\n"):
        m.errors.append("exposition does not end with a newline")
    for i, line in enumerate(text.split("\n")[:-1], 1):
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] == "TYPE":
                if parts[2] in m.types:
                    m.errors.append("line %d: second TYPE for %s" % (i, parts[2]))
                if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram",
                                                       "summary", "untyped"):
                    m.errors.append("line %d: bad TYPE line %r" % (i, line))
                else:
                    m.types[parts[2]] = parts[3]
            elif len(parts) >= 3 and parts[1] == "HELP":
                pass
            else:
                m.errors.append("line %d: bad comment %r" % (i, line))
            continue
        s = _SAMPLE.match(line)
        if not s:
            m.errors.append("line %d: not a sample: %r" % (i, line))
            continue
        name, labeltext, valtext = s.group(1), s.group(3) or "", s.group(4)
        labels = {}
        pos = 0
        while pos < len(labeltext):
            lm = _LABEL.match(labeltext, pos)
            if not lm:
                m.errors.append("line %d: bad labels %r" % (i, labeltext))
                break
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        try:
            value = float(valtext)
        except ValueError:
            m.errors.append("line %d: bad value %r" % (i, valtext))
            continue
        fam = _family(name, m.types)
        if fam not in m.types:
            m.errors.append("line %d: sample %s before its TYPE line" % (i, name))
        m.samples.append((name, labels, value))
    return m


def check_histograms(c, m, family):
    """Checks every histogram of a family: le ascending, cumulative, +Inf == _count."""
    probes = sorted({l.get("probe") for n, l, v in m.samples if n == family + "_bucket"})
    for p in probes:
        buckets = [(l["le"], v) for l, v in m.select(family + "_bucket", probe=p)]
        c.check(buckets and buckets[-1][0] == "+Inf", "%s{probe=%s}: last bucket is +Inf" %
                (family, p))
        les = [float(le) for le, _ in buckets]
        c.check(all(a < b for a, b in zip(les, les[1:])),
                "%s{probe=%s}: le strictly ascending: %r" % (family, p, les))
        vals = [v for _, v in buckets]
        c.check(all(a <= b for a, b in zip(vals, vals[1:])),
                "%s{probe=%s}: buckets cumulative: %r" % (family, p, vals))
        count = m.value(family + "_count", probe=p)
        c.check(count is not None and vals and vals[-1] == count,
                "%s{probe=%s}: +Inf bucket %r == _count %r" % (family, p, vals[-1:], count))
        c.check(m.value(family + "_sum", probe=p) is not None, "%s_sum{probe=%s}" % (family, p))
    return probes


def promtool_check(c, text, what):
    """Pipes an exposition through Prometheus's `promtool check metrics` (parse and lint):
    a failed check when it rejects the text, or when promtool is missing (`make deps`
    installs it with the Debian package prometheus)."""
    tool = shutil.which("promtool")
    if not tool:
        return c.check(False, "%s: promtool not found: run `make deps` (it installs the Debian "
                       "package prometheus, which has promtool)" % what)
    p = subprocess.run([tool, "check", "metrics"], input=text.encode(), capture_output=True,
                       timeout=30)
    return c.check(p.returncode == 0, "%s: promtool check metrics exited %d:\n%s%s" %
                   (what, p.returncode, p.stdout.decode("utf-8", "replace"),
                    p.stderr.decode("utf-8", "replace")))


def bucket_at(m, family, probe, le):
    """Cumulative count of the bucket with upper edge le (seconds) of one probe."""
    for l, v in m.select(family + "_bucket", probe=probe):
        if l["le"] != "+Inf" and abs(float(l["le"]) - le) < 1e-9:
            return v
    return None


# ---- dqctl ---------------------------------------------------------------------------------


def dqctl(binary, *args, env=None, timeout=20):
    """(exit status, stdout, stderr) of one dqctl run."""
    e = dict(os.environ)
    e.pop("DQD_URL", None)
    if env:
        e.update(env)
    p = subprocess.run([binary] + list(args), capture_output=True, timeout=timeout, env=e)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def dqctl_checked(checks, binary, d, *args, want_rc=0):
    """stdout of `dqctl ARGS --server` d's URL, its exit status checked against want_rc."""
    rc, out, err = dqctl(binary, *args, "--server", d.url)
    checks.eq(rc, want_rc, "dqctl %s exit status (out %r, err %r)" % (" ".join(args), out, err))
    return out


def free_port():
    """A loopback port nobody listens on (bound and released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class HeldSim:
    """dqsim --clock sim --hold connected to a dqd started with --clock sim: simulated
    time moves only when told (`run S`); a thread can keep it moving while a command
    waits on dqd. Lines dqsim prints besides `held at` (station, status, error …) are
    kept in `lines`."""

    def __init__(self, dqsim, diagram, ingest_port, rate=300, extra=(), seed=7):
        self.proc = subprocess.Popen(
            [dqsim, "--diagram", diagram, "--dqd", "127.0.0.1:%d" % ingest_port, "--clock",
             "sim", "--hold", "--rate", str(rate), "--seed", str(seed), "--batch-ms", "20",
             *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self.now = 0.0
        self.lines = []
        self.lock = threading.Lock()
        self.driving = False
        self.thread = None

    def _wait_held(self, target):
        for line in self.proc.stdout:
            if line.startswith("held at "):
                self.now = float(line.split()[2])
                if self.now >= target - 1e-6:
                    return
            else:
                self.lines.append(line.rstrip("\n"))
        raise RuntimeError("dqsim ended")

    def run(self, seconds):
        with self.lock:
            target = self.now + seconds
            self.proc.stdin.write("run %g\n" % seconds)
            self.proc.stdin.flush()
            self._wait_held(target)

    def say(self, line):
        with self.lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()

    def stations(self):
        """`stations`, answered once dqsim has moved on: {name: {servers, util, busy_s,
        served, rejected}} (util over the interval since the previous call)."""
        n = len(self.lines)
        self.say("stations")
        self.run(0.001)
        out = {}
        for line in self.lines[n:]:
            w = line.split()
            if len(w) >= 2 and w[0] == "station":
                kv = dict(x.split("=", 1) for x in w[2:] if "=" in x)
                out[w[1]] = {k: float(v) for k, v in kv.items()
                             if k in ("servers", "util", "busy_s", "served", "rejected")}
        return out

    def drive(self, step=1.0):
        """Moves simulated time on, a step at a time, until stop_driving()."""
        self.driving = True

        def loop():
            while self.driving and self.proc.poll() is None:
                self.run(step)
                time.sleep(0.01)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def stop_driving(self):
        self.driving = False
        if self.thread:
            self.thread.join(30)

    def stop(self):
        self.driving = False
        if self.proc.poll() is None:
            try:
                self.say("quit")
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def pipeliner(port, path="/metrics", n=400):
    """A client that pipelines n GET path on a 4 KiB receive window and never reads (the
    socket, for the caller to close); OSError when it cannot connect."""
    req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode() * n
    p = socket.socket()
    p.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        p.connect(("127.0.0.1", port))
        p.setblocking(False)
        p.send(req)
    except BlockingIOError:
        pass
    except OSError:
        p.close()
        raise
    return p
