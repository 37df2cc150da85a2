#!/usr/bin/env python3
"""test_dqsim.py: the dqsim binary against a fake dqd on a loopback port, then against a
real dqd.

Checks the CLI (--list, --dry-run reproducibility, --fault, `to` reporting, --station
specs), then a live run against the fake: hello and state on connect, instances only for
probes with a dMax, acks for every command dqd sends (state after sync, nothing for a
bad line), stop_stub/start_stub, a fault switched on stdin that shifts the right probe,
reconnection with hello and state after dqd goes away, and clean exits on `quit`,
SIGTERM and --duration.

Against a real dqd (scenarios/matrix/mm1k.dq, two M/M/1/K stations): in simulated time,
the `stations` utilisation of a run at a known rate against rate × E[S], a rate change
that takes effect at once, overload (queue at K, rejections, dqd's lost mass), and the
clock standing still while the data link is down without --clock-link; on the wall
clock, `disconnect`/`reconnect` (the link leaves dqd's status and comes back, the drops
announced with drop;N) and `mute`/`unmute` (connected, nothing sent, drops announced
after); in simulated time with --clock-link, dqd's windows keep closing while the data
link is down. Every check compares counts or simulated times, never wall-clock timing.

usage: test_dqsim.py DQSIM TREE27.dq [DQD MM1K.dq]
"""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from dqdtest import Dqd, make_workdir, remove_workdir  # noqa: E402

DQSIM, DIAGRAM = sys.argv[1], sys.argv[2]
DQD, MM1K = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr)


def run(*args, stdin=subprocess.DEVNULL, timeout=60):
    return subprocess.run([DQSIM, "--diagram", DIAGRAM, *args], stdin=stdin,
                          capture_output=True, text=True, timeout=timeout)


def parse_instance(line):
    f = dict(kv.split(":", 1) for kv in line.split(";"))
    return f["n"], int(f["b"]), int(f["e"]), f["s"]


# ---- CLI -------------------------------------------------------------------------------

r = run("--list")
check(r.returncode == 0, "--list exits 0")
check("probes=41 leaves=27 root=root" in r.stdout, "--list counts tree27")
check(r.stdout.count(" outcome mean_ms=") == 27, "--list shows 27 leaves")

a = run("--dry-run", "300", "--enable", "*", "--seed", "5")
b = run("--dry-run", "300", "--enable", "*", "--seed", "5")
c = run("--dry-run", "300", "--enable", "*", "--seed", "6")
check(a.returncode == 0 and a.stdout == b.stdout, "dry run reproducible for a seed")
check(a.stdout != c.stdout, "another seed, other output")
lines = a.stdout.splitlines()
check(len(lines) == 300 * 41, "41 instances per request, all enabled")
check(all(parse_instance(l)[3] == "ok" for l in lines), "nominal run: all ok")

r = run("--dry-run", "200", "--enable", "root=1000,store_a1,store_a2", "--fault",
        "store_a1:fail:1")
lines = r.stdout.splitlines()
check(r.returncode == 0, "dry run with a fault exits 0")
check(sum(1 for l in lines if l.startswith("n:root;") and l.endswith("s:fa")) == 200,
      "a leaf that always fails fails every root")
check(not any(l.startswith("n:store_a2;") for l in lines), "the rest of the sequence never runs")

r = run("--dry-run", "200", "--enable", "root=40")
tos = [parse_instance(l) for l in r.stdout.splitlines() if l.endswith("s:to")]
check(len(tos) > 0 and all(e - b == 40_000_000 for _, b, e, _ in tos),
      "timeouts: END = START + dMax")
check(r.stdout.count("\n") == 200, "only probes with a dMax are reported")

# stations: --list shows them; bad specs, unknown leaves, inner nodes are refused
r = run("--list", "--station", "front_a1:2:exp:4:K=50", "--station",
        "store_a1,store_b1=disk:1:shexp:0.5:2")
check(r.returncode == 0, "--list with stations exits 0: %s" % r.stderr)
check("front_a1 outcome station=front_a1 servers=2 service=exp:4 K=50" in r.stdout,
      "--list shows a leaf's station")
check("store_b1 outcome station=disk servers=1 service=shexp:0.5:2 K=0" in r.stdout,
      "--list shows a shared station")
check("probes=41 leaves=27 root=root stations=2" in r.stdout, "--list counts the stations")
for bad, msg in ((["--station", "ghost:1:exp:4"], "no leaf `ghost`"),
                 (["--station", "front:1:exp:4"], "not an outcome"),
                 (["--station", "front_a1:1:exp:0"], "mean must be > 0"),
                 (["--station", "front_a1:1:weibull:2"], "use exp:MEAN"),
                 (["--station", "front_a1:0:exp:4"], "servers"),
                 (["--station", "front_a1:1:exp:4:K=99999"], "K="),
                 (["--station", "front_a1:1:exp:4", "--station", "front_a1=f2:1:exp:2"],
                  "already served"),
                 (["--station", "front_a1:1:const:4", "--fault", "front_a1:erratic:3"],
                  "no exponential part"),
                 (["--clock-link", "--dqd", "127.0.0.1:1"], "--clock-link needs --clock sim")):
    r = run("--dry-run", "1", *bad)
    check(r.returncode == 2 and msg in r.stderr.split("\n")[0],
          "refused with a message: %s -> %d %r" % (bad, r.returncode, r.stderr[:200]))
a = run("--dry-run", "500", "--enable", "*", "--station", "front_a1:1:exp:4:K=5", "--rate",
        "400")
b = run("--dry-run", "500", "--enable", "*", "--station", "front_a1:1:exp:4:K=5", "--rate",
        "400")
check(a.returncode == 0 and a.stdout == b.stdout, "dry run with a station reproducible")
check(any(l.startswith("n:front_a1;") and l.endswith("s:fa") for l in a.stdout.splitlines()),
      "a full station fails requests")

for bad in (["--dqd", "nohost"], ["--fault", "root:erratic:3", "--dry-run", "1"],
            ["--fault", "ghost:slow:1", "--dry-run", "1"], ["--enable", "ghost", "--dry-run", "1"],
            ["--rate", "-1", "--dry-run", "1"], ["--bogus"]):
    r = run(*bad)
    check(r.returncode == 2 and r.stderr.startswith("dqsim"), "refused: %s" % bad)

# ---- live, against a fake dqd ------------------------------------------------------------


class Peer:
    """One accepted connection, read line by line with a deadline."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def line(self, timeout=5.0):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        l, self.buf = self.buf.split(b"\n", 1)
        return l.decode()

    def until(self, pred, timeout=5.0):
        """Lines read until one satisfies pred (that one last), or None on timeout."""
        seen = []
        end = time.time() + timeout
        while time.time() < end:
            l = self.line(end - time.time())
            if l is None:
                return None
            seen.append(l)
            if pred(l):
                return seen
        return None

    def send(self, text):
        self.sock.sendall(text.encode())


class Events:
    """dqsim's stdout, one event per line."""

    def __init__(self, proc):
        self.proc = proc
        self.buf = b""
        self.all = []

    def wait(self, prefix, timeout=5.0):
        end = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                l, self.buf = self.buf.split(b"\n", 1)
                l = l.decode()
                self.all.append(l)
                if l.startswith(prefix):
                    return l
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(4)
srv.settimeout(10)
port = srv.getsockname()[1]

proc = subprocess.Popen([DQSIM, "--diagram", DIAGRAM, "--dqd", "127.0.0.1:%d" % port,
                         "--enable", "root=1000", "--seed", "3", "--rate", "300",
                         "--node", "sim1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
ev = Events(proc)
try:
    check(ev.wait("dqsim ready") is not None, "ready line")
    conn, _ = srv.accept()
    p = Peer(conn)
    check(p.line() == "h:2;node:sim1;app:dqsim", "hello first")
    check(p.line() == "state;running:1;probes:root=1000", "state second")
    check(ev.wait("connected 127.0.0.1:%d" % port) is not None, "connected event")

    first = p.line()
    now = time.time_ns()
    n, b0, e0, s0 = parse_instance(first)
    check(n == "root" and s0 == "ok" and b0 <= e0, "root instances with --enable")
    check(abs(e0 - now) < 2e9, "wall-clock timestamps")

    p.send("set_timeout;front;500\nclear_timeout;root\nsync\nbogus\n")
    seen = p.until(lambda l: l.startswith("state;"))
    check(seen is not None, "state after sync")
    if seen:
        acks = [l for l in seen if l.startswith("ack;")]
        check(acks == ["ack;set_timeout;front;500", "ack;clear_timeout;root", "ack;sync"],
              "every command acknowledged in order: %s" % acks)
        check(seen[-1] == "state;running:1;probes:front=500", "state shows the enabled set")
    check(ev.wait("bad-command bogus") is not None, "a bad line is reported, not acked")
    batch = []
    end = time.time() + 1.0
    while time.time() < end:
        l = p.line(end - time.time())
        if l is None:
            break
        batch.append(l)
    names = {parse_instance(l)[0] for l in batch if l.startswith("n:")}
    check(names == {"front"}, "after clear_timeout only front is reported: %s" % names)
    check(not any(l.startswith("ack;bogus") for l in batch), "no ack for a bad line")

    def front_mean(seconds):
        ds = []
        end = time.time() + seconds
        while time.time() < end:
            l = p.line(end - time.time())
            if l and l.startswith("n:front;"):
                _, b, e, _ = parse_instance(l)
                ds.append((e - b) / 1e6)
        return sum(ds) / max(len(ds), 1), len(ds)

    base, nb = front_mean(1.0)
    proc.stdin.write(b"fault front_b2 slow 30\n")
    proc.stdin.flush()
    check(ev.wait("fault front_b2 slow 30 on") is not None, "fault event")
    p.until(lambda l: False, timeout=0.2)  # instances in flight at the switch
    slow, ns = front_mean(1.0)
    check(nb > 100 and ns > 100, "enough samples (%d, %d)" % (nb, ns))
    check(25 < slow - base < 35, "slow 30 ms shifts front by 30 ms: %.2f -> %.2f" % (base, slow))
    proc.stdin.write(b"fault front_b2 boil 1\nclear all\n")
    proc.stdin.flush()
    check(ev.wait("error") is not None, "bad stdin command reported")
    check(ev.wait("fault all off") is not None, "clear all event")

    p.send("stop_stub\n")
    seen = p.until(lambda l: l == "ack;stop_stub")
    check(seen is not None, "stop_stub acknowledged")
    quiet = []
    end = time.time() + 0.5
    while time.time() < end:
        l = p.line(end - time.time())
        if l is not None:
            quiet.append(l)
    check(not any(l.startswith("n:") for l in quiet), "nothing sent while stopped")
    p.send("start_stub\n")
    check(p.until(lambda l: l.startswith("n:front;")) is not None, "start_stub resumes")

    # dqd goes away: dqsim reconnects, says hello again, re-sends its state
    conn.close()
    check(ev.wait("disconnected") is not None, "disconnected event")
    t0 = time.time()
    conn, _ = srv.accept()
    check(time.time() - t0 < 3, "reconnected within the backoff")
    p = Peer(conn)
    check(p.line() == "h:2;node:sim1;app:dqsim", "hello after reconnect")
    check(p.line() == "state;running:1;probes:front=500", "state after reconnect")
    check(ev.wait("connected") is not None, "connected again")
    proc.stdin.write(b"status\n")
    proc.stdin.flush()
    st = ev.wait("status ")
    check(st is not None and "connected=1" in st and "enabled=1" in st, "status line: %s" % st)
    # the evidence of a fault (tests/matrix's erratic cells): the root's largest before the
    # first fault (this run had some), and the successful requests beyond it and beyond
    # twice it since; with a leaf a second slower, every request simulated from then on is
    # beyond both
    def counts():
        proc.stdin.write(b"status\n")
        proc.stdin.flush()
        line = ev.wait("status ") or ""
        return line, dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)

    proc.stdin.write(b"fault front_b2 slow 1000\n")
    proc.stdin.flush()
    check(ev.wait("fault front_b2 slow") is not None, "fault on")
    st, before = counts()
    check(float(before.get("root_max_ms", 0)) > 0 and "beyond_twice" in before,
          "status has the evidence counts: %s" % st)
    time.sleep(0.3)
    st, after = counts()
    grew = [int(after.get(k, 0)) - int(before.get(k, 0))
            for k in ("beyond_max", "beyond_twice", "requests", "failed")]
    check(grew[0] > 0 and grew[0] == grew[1] == grew[2] - grew[3],
          "after a fault of 1 s, every request beyond the largest and twice it: %s" % grew)

    proc.stdin.write(b"quit\n")
    proc.stdin.flush()
    check(proc.wait(timeout=10) == 0, "quit exits 0")
    check(ev.wait("exit quit") is not None, "exit line")
    conn.close()
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()

# SIGTERM while stdin is closed and --duration holds it open
proc = subprocess.Popen([DQSIM, "--diagram", DIAGRAM, "--dqd", "127.0.0.1:%d" % port,
                         "--duration", "60"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
ev = Events(proc)
try:
    check(ev.wait("stdin closed; running until --duration") is not None,
          "stdin EOF does not quit with --duration")
    conn, _ = srv.accept()
    check(ev.wait("connected") is not None, "connected (SIGTERM run)")
    proc.send_signal(signal.SIGTERM)
    check(proc.wait(timeout=10) == 0, "SIGTERM exits 0")
    check(ev.wait("exit SIGTERM") is not None, "exit line on SIGTERM")
    conn.close()
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()

# --duration ends the run by itself, with dqd absent (connect failures retried)
srv.close()
t0 = time.time()
r = subprocess.run([DQSIM, "--diagram", DIAGRAM, "--dqd", "127.0.0.1:%d" % port, "--duration",
                    "1"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
check(r.returncode == 0 and "exit duration reached" in r.stdout, "--duration exits 0")
check(0.9 < time.time() - t0 < 5, "--duration 1 takes about a second")
check(r.stdout.count("connect-failed") >= 3, "retries while dqd is down")
# stdin EOF without --duration quits
r = subprocess.run([DQSIM, "--diagram", DIAGRAM, "--dqd", "127.0.0.1:%d" % port],
                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
check(r.returncode == 0 and "exit stdin closed" in r.stdout, "stdin EOF quits")

# ---- against a real dqd ------------------------------------------------------------------

STATIONS = ["--station", "worker_1:1:exp:4:K=50", "--station", "worker_2:1:exp:4:K=50"]


def kv(line):
    """key=value fields of an event line."""
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line or ""))


class Checks:
    """What Dqd.stop() needs to check dqd's exit: this script's check()."""

    def check(self, cond, what):
        check(cond, what)
        return bool(cond)

    def eq(self, got, want, what):
        return self.check(got == want, "%s: got %r, want %r" % (what, got, want))


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class Sim:
    """dqsim against a real dqd: stdin commands, stdout events, stderr to a file."""

    def __init__(self, port, work, *args):
        self.err_path = os.path.join(work, "dqsim.stderr")
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen([DQSIM, "--diagram", MM1K, "--dqd", "127.0.0.1:%d" % port,
                                      *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err)
        self.ev = Events(self.proc)
        self.at = 0.0  # --hold: where the last `run` ends, in simulated seconds

    def say(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, line, prefix, timeout=10.0):
        self.say(line)
        return self.ev.wait(prefix, timeout)

    def status(self):
        return kv(self.ask("status", "status "))

    def stations(self):
        """`stations`: the fields of each mm1k station's line, by station."""
        self.say("stations")
        out = {}
        for name in ("worker_1", "worker_2"):
            line = self.ev.wait("station %s " % name)
            if line:
                out[name] = kv(line)
        return out

    def run_to(self, seconds):
        """--hold: runs until the simulated second `seconds`; the `held at` event."""
        delta, self.at = seconds - self.at, seconds
        return self.ask("run %g" % delta, "held at %.3f" % seconds, timeout=60)

    def stop(self):
        """quit; checks a clean exit without a sanitizer report."""
        rc = self.proc.poll()
        if rc is None:
            try:
                self.say("quit")
                rc = self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                rc = self.proc.wait()
        self.err.close()
        with open(self.err_path, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        check(rc == 0 and not any(m in err for m in SANITIZER_MARKERS),
              "dqsim exits 0 without a sanitizer report: %d %s" % (rc, err[-3000:]))


def write_config(work):
    path = os.path.join(work, "mm1k.json")
    with open(path, "w") as f:
        f.write('{"probes": {"pipeline": {"enabled": true, "dmax_ms": 4000},'
                ' "worker_1": {"enabled": true, "dmax_ms": 4000},'
                ' "worker_2": {"enabled": true, "dmax_ms": 4000}}}')
    return path


def wrapper(d, node):
    """dqd's view of the connection with this hello node, or None."""
    return next((w for w in d.status()["wrappers"] if w["node"] == node), None)


def real_sim_clock():
    """Simulated time: utilisation, a ramp, overload, and time standing still while the
    data link is down (no --clock-link)."""
    work = make_workdir("dqsim-stations-")
    d = Dqd(DQD, work, window_ms=200, lag_ms=200, diagram=MM1K, config=write_config(work),
            extra=["--clock", "sim"])
    sim = Sim(d.ingest_port, work, "--clock", "sim", "--hold", "--batch-ms", "20", "--rate",
              "150", "--seed", "5", "--node", "simA", *STATIONS)
    try:
        check(sim.ev.wait("connected 127.0.0.1") is not None, "sim: connected")
        check(sim.ev.wait("held at 0.000") is not None, "sim: held at the start")
        # 60 simulated seconds at 150/s: rho = 150 × 4 ms = 0.6 at each station
        check(sim.run_to(60) is not None, "sim: ran 60 simulated seconds")
        st = sim.stations()
        for w in ("worker_1", "worker_2"):
            s1 = st.get(w, {})
            util = float(s1.get("util", "nan"))
            check(abs(util - 0.6) <= 0.05, "%s utilisation %.4f, want 0.6 ± 0.05" % (w, util))
            check(s1.get("since") == "0.000" and s1.get("servers") == "1"
                  and s1.get("rejected") == "0" and int(s1.get("served", 0)) > 8000,
                  "%s stations line: %r" % (w, s1))
            busy = float(s1.get("busy_s", "nan"))
            check(abs(busy - util * 60) < 0.004, "%s busy_s %.6f = util × 60 s" % (w, busy))
        print("stations at rate 150 (rho 0.6), 60 simulated s: worker_1 util %s, "
              "worker_2 util %s" % (st.get("worker_1", {}).get("util"),
                                    st.get("worker_2", {}).get("util")))
        sent = int(sim.status().get("sent", -1))
        check(d.wait_until(lambda: d.status()["instances_total"] == sent, timeout=10),
              "dqd got every instance dqsim sent (%d, %d)" % (d.status()["instances_total"],
                                                              sent))
        # a ramp: almost nothing, then 500/s; the new rate holds from the command on
        sim.ask("rate 0.1", "rate 0.1")
        sim.run_to(90)
        r1 = int(sim.status()["requests"])
        sim.ask("rate 500", "rate 500")
        sim.run_to(92)
        r2 = int(sim.status()["requests"])
        check(abs((r2 - r1) - 1000) < 4 * 1000 ** 0.5,
              "after rate 0.1 -> 500, 2 simulated s hold %d requests (want 1000 ± 126)" %
              (r2 - r1))
        # overload: rho = 2 at worker_1; its line fills (K = 50) and turns requests away
        sim.stations()  # the next interval starts here
        sim.run_to(102)
        st = sim.stations()
        s1 = st.get("worker_1", {})
        check(float(s1.get("util", 0)) > 0.97 and s1.get("since") == "92.000",
              "overloaded worker_1 is busy all the time: %r" % s1)
        check(int(s1.get("queue", 0)) >= 40 and int(s1.get("rejected", 0)) > 1500,
              "overloaded worker_1: queue near K = 50, rejections: %r" % s1)
        dq = d.dq("worker_1")
        check(dq is not None and 0.35 < dq["lost"] < 0.65,
              "dqd sees worker_1's rejections as lost mass (~0.5): %r" %
              (dq and dq["lost"]))
        # without --clock-link, a disconnected dqsim stops simulated time
        sim.ask("rate 150", "rate 150")
        check(sim.ask("disconnect", "disconnected 127.0.0.1") is not None, "sim: disconnected")
        sim.say("run 1")
        sim.at += 1
        st1 = sim.status()
        check(st1.get("sim_seconds") == "102.000" and st1.get("connected") == "0"
              and st1.get("disconnected") == "1",
              "time stands while the only link is down: %r" % st1)
        check(d.wait_until(lambda: wrapper(d, "simA") is None, timeout=10),
              "dqd dropped the link")
        sim.say("reconnect")
        check(sim.ev.wait("held at 103.000", timeout=30) is not None,
              "after reconnect the run goes on to 103 s")
    finally:
        sim.stop()
        d.stop(Checks())
        remove_workdir(work)


def real_wall_clock():
    """Wall clock: disconnect/reconnect and mute/unmute, checked by counts."""
    work = make_workdir("dqsim-links-")
    d = Dqd(DQD, work, window_ms=100, lag_ms=100, diagram=MM1K, config=write_config(work))
    sim = Sim(d.ingest_port, work, "--rate", "200", "--seed", "6", "--node", "simB", *STATIONS)
    try:
        check(d.wait_until(lambda: (wrapper(d, "simB") or {}).get("instances", 0) > 100,
                           timeout=15), "wall: dqd gets instances from simB")
        check(sim.ask("disconnect", "disconnected 127.0.0.1") is not None,
              "wall: disconnected event")
        check(d.wait_until(lambda: wrapper(d, "simB") is None, timeout=10),
              "wall: the link is gone from dqd's status")
        check(d.wait_until(lambda: int(sim.status()["dropped"]) > 50, timeout=10, step=0.1),
              "wall: instances dropped while disconnected")
        st = sim.status()
        check(st.get("connected") == "0" and st.get("disconnected") == "1",
              "wall: status while disconnected: %r" % st)
        check(sim.ask("disconnect", "error already disconnected") is not None,
              "wall: disconnect twice is an error")
        sim.say("reconnect")
        check(sim.ev.wait("connected 127.0.0.1") is not None, "wall: connected again")
        check(d.wait_until(lambda: (wrapper(d, "simB") or {}).get("connected"), timeout=10),
              "wall: the link is back in dqd's status")
        dropped = int(sim.status()["dropped"])
        check(d.wait_until(lambda: wrapper(d, "simB")["dropped_by_wrapper"] == dropped,
                           timeout=10),
              "wall: drop;N announced every dropped instance: dqd %r, dqsim %d" %
              ((wrapper(d, "simB") or {}).get("dropped_by_wrapper"), dropped))
        check(sim.ask("reconnect", "error reconnect") is not None,
              "wall: reconnect while connected is an error")
        # mute: connected, nothing sent, the drops told only after unmute
        check(sim.ask("mute", "muted") is not None, "wall: muted event")
        s0 = sim.status()
        check(d.wait_until(lambda: int(sim.status()["dropped"]) > dropped + 50, timeout=10,
                           step=0.1), "wall: instances withheld while muted")
        s1 = sim.status()
        check(s1["sent"] == s0["sent"] and s1["connected"] == "1" and s1["muted"] == "1",
              "wall: muted: connected, nothing sent (%s, %s)" % (s0["sent"], s1["sent"]))
        w = wrapper(d, "simB") or {}
        check(w.get("connected") and w.get("dropped_by_wrapper") == dropped,
              "wall: dqd still sees simB, and no drop line while muted: %r" % w)
        check(sim.ask("unmute", "unmuted") is not None, "wall: unmuted event")
        check(d.wait_until(lambda: wrapper(d, "simB")["instances"] > w.get("instances", 0),
                           timeout=10), "wall: instances again after unmute")
        sim.ask("rate 0", "rate 0")
        final = None
        for _ in range(100):  # quiet: nothing left in flight once two statuses agree
            time.sleep(0.05)
            a, b = sim.status(), sim.status()
            if a["sent"] == b["sent"] and a["dropped"] == b["dropped"]:
                final = b
                break
        check(final is not None, "wall: dqsim went quiet at rate 0")
        if final:
            check(d.wait_until(lambda: wrapper(d, "simB")["dropped_by_wrapper"]
                               == int(final["dropped"]), timeout=10),
                  "wall: every instance withheld while muted announced after unmute")
            check(d.wait_until(lambda: d.status()["instances_total"] == int(final["sent"]),
                               timeout=10),
                  "wall: dqd got exactly what dqsim sent (%d, %s)" %
                  (d.status()["instances_total"], final["sent"]))
    finally:
        sim.stop()
        d.stop(Checks())
        remove_workdir(work)


def real_clock_link():
    """--clock-link: dqd's simulated time goes on while the data link is down."""
    work = make_workdir("dqsim-clocklink-")
    d = Dqd(DQD, work, window_ms=100, lag_ms=100, diagram=MM1K, config=write_config(work),
            extra=["--clock", "sim"])
    sim = Sim(d.ingest_port, work, "--clock", "sim", "--hold", "--clock-link", "--batch-ms",
              "20", "--rate", "150", "--seed", "7", "--node", "simD", *STATIONS)
    try:
        check(sim.ev.wait("connected 127.0.0.1") is not None, "clock-link: data connected")
        check(sim.ev.wait("clock-link connected 127.0.0.1") is not None,
              "clock-link: clock link connected")
        check(sim.run_to(5) is not None, "clock-link: ran to 5 s")
        w1 = d.status()["windows_closed"]
        check(wrapper(d, "simD") is not None and wrapper(d, "simD-clock") is not None,
              "clock-link: dqd sees both connections: %r" %
              [w["node"] for w in d.status()["wrappers"]])
        check(sim.ask("disconnect", "disconnected 127.0.0.1") is not None,
              "clock-link: data link down")
        check(sim.run_to(10) is not None, "clock-link: simulated time goes on to 10 s")
        st = d.status()
        check(st["windows_closed"] >= w1 + 45,
              "clock-link: dqd closed 5 s of 100 ms windows meanwhile: %d -> %d" %
              (w1, st["windows_closed"]))
        check([w["node"] for w in st["wrappers"]] == ["simD-clock"],
              "clock-link: only the clock link is connected: %r" %
              [w["node"] for w in st["wrappers"]])
        s = sim.status()
        check(s.get("sim_seconds") == "10.000" and s.get("clock_link") == "1"
              and s.get("connected") == "0" and int(s.get("dropped", 0)) > 1000,
              "clock-link: dqsim status while down: %r" % s)
        dropped = int(s.get("dropped", 0))
        sim.say("reconnect")
        check(sim.ev.wait("connected 127.0.0.1") is not None, "clock-link: data link back")
        check(sim.run_to(11) is not None, "clock-link: ran to 11 s")
        check(d.wait_until(lambda: (wrapper(d, "simD") or {}).get("dropped_by_wrapper")
                           == dropped, timeout=10),
              "clock-link: drop;N after reconnect: %r vs %d" % (wrapper(d, "simD"), dropped))
        check(d.status()["windows_closed"] >= st["windows_closed"] + 9,
              "clock-link: windows close on after the reconnection")
        st = sim.stations()
        util = float(st.get("worker_1", {}).get("util", "nan"))
        check(abs(util - 0.6) <= 0.05,
              "clock-link: the stations ran on while disconnected: util %.4f" % util)
    finally:
        sim.stop()
        d.stop(Checks())
        remove_workdir(work)


if DQD:
    real_sim_clock()
    real_wall_clock()
    real_clock_link()

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
