#!/usr/bin/env python3
"""test_dqsim.py: the dqsim binary against a fake dqd on a loopback port.

Checks the CLI (--list, --dry-run reproducibility, --fault, `to` reporting), then a live
run: hello and state on connect, instances only for probes with a dMax, acks for every
command dqd sends (state after sync, nothing for a bad line), stop_stub/start_stub, a
fault switched on stdin that shifts the right probe, reconnection with hello and state
after dqd goes away, and clean exits on `quit`, SIGTERM and --duration.

usage: test_dqsim.py DQSIM TREE27.dq
"""
import os
import select
import signal
import socket
import subprocess
import sys
import time

DQSIM, DIAGRAM = sys.argv[1], sys.argv[2]
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

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
