"""Issue 14, floods: nothing a peer sends can fill, flood or blind dqd.

1. Probe names: 10,000 junk names on one connection are mostly refused (new names per
   source); junk from many sources fills the observed share of the table
   (max_observed_probes), then wire-only names are evicted for a real probe and a newly
   loaded diagram; nothing of it is persisted or back after a restart.
2. Logs: hello and state lines at line rate write a bounded log, with the count of what was
   held back.
3. Keepalive: dqd's end of a wrapper link has TCP keepalive armed (the kernel's timer on
   the socket, read from /proc/net/tcp), so a peer that vanishes without a FIN or RST is
   noticed.
4. The soak (about 25 s): under a descriptor limit of 256, idle and pipelining HTTP clients,
   idle ingest connections and junk names at their caps while a valid wrapper streams:
   /-/healthy answers throughout, /metrics scrapes, no valid instance is lost, a wrapper
   that connects late gets in (the idle connection silent longest is evicted for it), and
   dqd's RSS stays under RSS_BOUND_MB (docs/running.md).
Usage: test_floods.py DQD"""

import os
import resource
import socket
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dqdtest import (Dqd, cpu_priority, make_workdir, pipeliner, remove_workdir, run_script,
                     sanitized)

RSS_BOUND_MB = 160  # the bound docs/running.md states for this soak's load
FD_LIMIT = 256


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def metric(d, name, **labels):
    v = d.metrics().value(name, **labels)
    return 0 if v is None else v


def legacy_lines(names, t_ns):
    return "".join("n:%s;b:%d;e:%d;s:ok\n" % (n, t_ns - 2000000, t_ns) for n in names).encode()


def send_v2(port, node, names, t_ns):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(("h:2;node:%s;app:junk\n" % node).encode() + legacy_lines(names, t_ns))
    return s


def names_phase(c, dqd_bin, work):
    diagram = os.path.join(work, "shop.dq")
    with open(diagram, "w") as f:
        f.write("checkout = validate -> pay;\n")
    d = Dqd(dqd_bin, work, diagram=diagram, window_ms=1000, lag_ms=1000)
    now = time.time_ns()
    s = socket.create_connection(("127.0.0.1", d.ingest_port), timeout=10)
    s.sendall(legacy_lines(["junk%05d" % i for i in range(10000)], now))
    d.wait_until(lambda: metric(d, "dqd_ingest_rejected_total", reason="new_name_rate") >= 8900,
                 timeout=10)
    rate = metric(d, "dqd_ingest_rejected_total", reason="new_name_rate")
    c.check(8900 <= rate <= 9000, "10,000 junk names from one source: %d refused past the "
            "burst of 1000 (at 10/s)" % rate)
    c.check(d.status()["probes"] <= 3 + 1000 + 20, "the table holds the burst, not 10,000: %d"
            % d.status()["probes"])
    s.close()
    # junk from eleven sources (a hello each): more names than the table holds
    socks = [send_v2(d.ingest_port, "junk%d@h" % k, ["j%d_%04d" % (k, i) for i in range(1000)],
                     now) for k in range(11)]
    d.wait_until(lambda: metric(d, "dqd_probes_evicted_total") > 0, timeout=15)
    c.check(metric(d, "dqd_probes_evicted_total") > 0, "wire-only names were evicted")
    c.eq(metric(d, "dqd_ingest_rejected_total", reason="probe_table_full"), 0,
         "no instance refused for a full table while wire-only names could go")
    # a real probe from a real wrapper still gets a slot; it fires again and again, as real
    # code does, so it gets in once the daemon's rate of new names
    # (new_names_global_per_second) has refilled after the junk
    real = send_v2(d.ingest_port, "shop@host1", ["refund"] * 5 + ["checkout"] * 5, time.time_ns())

    def refund_known():
        real.sendall(legacy_lines(["refund"], time.time_ns()))
        return d.api("GET", "/api/v1/probes/refund")[0] == 200
    c.check(d.wait_until(refund_known, timeout=10, step=0.1),
            "a real new probe (refund) is registered with the table full of junk")
    # a newly loaded diagram: every probe gets a slot
    text = "big = " + " -> ".join("s%02d" % i for i in range(40)) + ";\n"
    st, env = d.api("PUT", "/api/v1/diagram", text)
    c.eq(st, 200, "a 41-probe diagram loads with the table full of junk: %r" % env.get("error"))
    listed = {p["name"] for p in d.get("/api/v1/probes")}
    c.check(all(("s%02d" % i) in listed for i in range(40)) and "big" in listed,
            "every probe of the new diagram is in the table")
    for x in socks + [real]:
        x.close()
    time.sleep(2.5)  # a window closes and is persisted
    d.stop(c)
    db = sqlite3.connect(d.db)
    junk_rows = db.execute("SELECT count(*) FROM probes WHERE name LIKE 'j%'").fetchone()[0]
    junk_windows = db.execute("SELECT count(*) FROM windows WHERE probe LIKE 'j%'").fetchone()[0]
    db.close()
    c.eq((junk_rows, junk_windows), (0, 0), "junk names are not persisted (probe rows, windows)")
    # what an older dqd stored: bare probe rows of junk names, not loaded any more
    db = sqlite3.connect(d.db)
    db.executemany("INSERT INTO probes (name, created_ns, updated_ns) VALUES (?, 1, 1)",
                   [("old_junk_%05d" % i,) for i in range(12000)])
    db.commit()
    db.close()
    d2 = Dqd(dqd_bin, work, db=d.db, window_ms=1000, lag_ms=1000)
    n = d2.status()["probes"]
    c.check(n <= 45, "after a restart the table holds the diagram's probes, not junk: %d" % n)
    d2.stop(c)


def log_phase(c, dqd_bin, work):
    d = Dqd(dqd_bin, work, extra=["--config", write_config(work, {"probes": {
        "a%d" % i: {"enabled": True} for i in range(20)}})])
    s = socket.create_connection(("127.0.0.1", d.ingest_port), timeout=10)
    hello = b"h:2;node:n@h;app:a\n"
    state = b"state;running;" + b",".join(b"x%d" % i for i in range(20)) + b"\n"
    s.sendall(hello * 20000 + state * 2000)
    s.settimeout(0.2)
    end = time.time() + 3
    while time.time() < end:  # read what dqd answers (enabled sets), as a wrapper does
        try:
            if not s.recv(1 << 20):
                break
        except socket.timeout:
            pass
    s.close()
    time.sleep(1.2)
    d.stop(c)
    log = d.stderr()
    lines = log.count("\n")
    c.check(lines < 2000, "20,000 hellos and 2,000 state lines wrote %d log lines (< 2,000)" % lines)
    c.check("more lines like" in log, "the log says how many lines it held back")


def write_config(work, obj):
    import json
    p = os.path.join(work, "cfg-%d.json" % time.time_ns())
    with open(p, "w") as f:
        json.dump(obj, f)
    return p


def limit_fds():
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Streamer(threading.Thread):
    """A valid wrapper: v2 hello, then instances of `probe` at a steady rate."""

    def __init__(self, port, probe, rate, secs):
        super().__init__(daemon=True)
        self.port, self.probe, self.rate, self.secs = port, probe, rate, secs
        self.sent = 0
        self.error = None

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(("h:2;node:%s@h;app:shop\n" % self.probe).encode())
            end = time.time() + self.secs
            while time.time() < end:
                now = time.time_ns()
                batch = max(1, self.rate // 20)
                s.sendall(legacy_lines([self.probe] * batch, now))
                self.sent += batch
                time.sleep(0.05)
            time.sleep(0.2)
            s.close()
        except OSError as e:
            self.error = e


def soak_phase(c, dqd_bin, work):
    # the test itself needs descriptors for its attackers
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    # dqd under the descriptor limit of the run (set before exec, inherited)
    import subprocess
    orig_popen = subprocess.Popen

    def popen_limited(*a, **kw):
        prev = kw.get("preexec_fn")

        def pre():
            if prev:
                prev()
            limit_fds()
        kw["preexec_fn"] = pre
        return orig_popen(*a, **kw)
    subprocess.Popen = popen_limited
    asan = sanitized(dqd_bin)
    # The lag is how late a line may be read and still count. dqd answers the flood on one
    # loop, and on a machine busy with other work (another test run) that loop fell more
    # than 1 s behind; 5 s keeps a line in time through such stalls (the instances are
    # counted when they are read, so a longer lag costs no waiting). AddressSanitizer makes
    # dqd several times slower (its loop stalled 7-12 s under the flood on a busy machine):
    # there every allowance of time is six times longer, as the RSS bound is not checked
    # (what is checked there is dqd's memory safety under the flood). Windows of a fifth of
    # the lag keep the open windows per probe, and the memory they take, as they were.
    slow = 6 if asan else 1
    lag = 5000 * slow
    patience = 5 * slow  # seconds a /-/healthy may take
    try:
        d = Dqd(dqd_bin, work, db=os.path.join(work, "soak.db"), window_ms=lag // 5, lag_ms=lag)
    finally:
        subprocess.Popen = orig_popen
    c.check("file descriptors" in d.stderr(), "dqd says how it split its descriptors")
    base_rss = rss_mb(d.proc.pid)
    health = {"ok": 0, "bad": [], "stop": False, "at": []}

    def poll_health():
        while not health["stop"]:
            try:
                st, _ = d.request("GET", "/-/healthy", timeout=patience)
                if st == 200:
                    health["ok"] += 1
                    health["at"].append(time.monotonic())
                else:
                    health["bad"].append(st)
            except Exception as e:  # a refused or reset connection is a failure too
                health["bad"].append(repr(e))
            time.sleep(0.1)
    t_start = time.monotonic()
    hp = threading.Thread(target=poll_health, daemon=True)
    hp.start()
    wrapper = Streamer(d.ingest_port, "checkout", 2000, 18)
    wrapper.start()
    time.sleep(0.5)
    held = []
    peak = [base_rss]

    def sample():
        peak[0] = max(peak[0], rss_mb(d.proc.pid))
    # idle ingest connections past the cap (they send nothing). A dqd slow to accept (under
    # ASan beside another test run) leaves its listen backlog full, and a connect waits for
    # the kernel to retry its SYN: with 2 s and the first failure ending the loop, too few
    # got in to reach the cap (a stress run: ingest evicted 0). Each has 10 s and 3 tries.
    misses = 0
    while len([h for h in held if isinstance(h, socket.socket)]) < 220 and misses < 3:
        try:
            held.append(socket.create_connection(("127.0.0.1", d.ingest_port), timeout=10))
        except OSError:
            misses += 1
    # junk names from a few sources
    for k in range(3):
        try:
            held.append(send_v2(d.ingest_port, "flood%d@h" % k,
                                ["f%d_%05d" % (k, i) for i in range(3000)], time.time_ns()))
        except OSError:
            pass
    sample()
    # idle HTTP connections past the cap
    for _ in range(150):
        try:
            held.append(socket.create_connection(("127.0.0.1", d.http_port), timeout=2))
        except OSError:
            break
    # clients that pipeline GET /metrics and never read, with a tiny receive window
    for _ in range(40):
        try:
            held.append(pipeliner(d.http_port))
        except OSError:
            break
    # a scrape waits behind the answers dqd builds for the pipelining clients: on a busy
    # machine that took more than 5 s, so each has 30 s
    scrapes, scrape_s = 0, []
    for _ in range(30):
        sample()
        t0 = time.monotonic()
        try:
            if d.request("GET", "/metrics", timeout=30)[0] == 200:
                scrapes += 1
                scrape_s.append(time.monotonic() - t0)
        except Exception:
            pass
        time.sleep(0.2)
    # a wrapper that connects late gets in: the idle connection silent longest is evicted
    late = Streamer(d.ingest_port, "late", 500, 4)
    late.start()
    wrapper.join()
    late.join()
    sample()
    t_end = time.monotonic()
    health["stop"] = True
    hp.join()

    def counted(probe):
        return metric(d, "dqd_instances_total", probe=probe, status="ok")
    # every line sent is read (and counted) once dqd has caught up with the flood
    d.wait_until(lambda: counted("checkout") >= wrapper.sent and counted("late") >= late.sent,
                 timeout=30, step=0.2)
    m = d.metrics()
    c.eq(health["bad"], [], "/-/healthy answered 200 throughout (%d polls)" % health["ok"])
    # all along: no gap between answers longer than a poll's timeout, from the start of the
    # flood to its end
    at = [t_start] + health["at"] + [t_end]
    gap = max(b - a for a, b in zip(at, at[1:]))
    c.check(health["ok"] >= 10 and gap < patience + 0.5,
            "/-/healthy was polled all along: %d polls, longest gap %.1f s" % (health["ok"], gap))
    c.check(scrapes >= 25, "/metrics scraped during the flood: %d of 30 (slowest %.1f s)"
            % (scrapes, max(scrape_s or [0])))
    c.check(wrapper.error is None and late.error is None,
            "the wrappers' connections held: %r %r" % (wrapper.error, late.error))
    got = m.value("dqd_instances_total", probe="checkout", status="ok")
    c.eq(got, wrapper.sent, "no valid instance lost: %s of %d (late: %s)"
         % (got, wrapper.sent, m.value("dqd_ingest_rejected_total", reason="late")))
    got_late = m.value("dqd_instances_total", probe="late", status="ok")
    c.eq(got_late, late.sent, "the late wrapper got in and lost nothing")
    shed = m.value("dqd_http_connections_closed_total", reason="shed") or 0
    unread = m.value("dqd_http_connections_closed_total", reason="unread") or 0
    evicted = m.value("dqd_ingest_connections_closed_total", reason="evicted") or 0
    c.check(shed > 0 and evicted > 0,
            "the caps acted: http shed %d, unread %d, ingest evicted %d" % (shed, unread, evicted))
    if asan:  # its shadow memory and quarantine are not dqd's; its leak check at exit stands
        print("soak: the RSS bound is not checked under AddressSanitizer (peak %.0f MB)"
              % peak[0], flush=True)
    else:
        c.check(peak[0] < RSS_BOUND_MB, "dqd's RSS peaked at %.0f MB (start %.0f MB), under %d MB"
                % (peak[0], base_rss, RSS_BOUND_MB))
    print("soak: RSS start %.1f MB, peak %.1f MB; healthy polls %d (longest gap %.1f s); "
          "scrapes %d (slowest %.1f s); shed %d, unread %d, ingest evicted %d; "
          "instances %d + %d" % (base_rss, peak[0], health["ok"], gap, scrapes,
                                 max(scrape_s or [0]), shed, unread, evicted,
                                 wrapper.sent, late.sent), flush=True)
    for x in held:
        try:
            x.close()
        except OSError:
            pass
    d.stop(c)


KEEPALIVE_S = 30  # INGEST_KEEPALIVE_S (controller/ingest/ingest.h)


def tcp_timers(local_port, remote_port):
    """(timer kind, seconds until it fires) of the IPv4 socket local_port -> remote_port
    from /proc/net/tcp: kind 0 none, 1 retransmit, 2 keepalive (or another), 3 TIME_WAIT,
    4 zero window probe; None when the socket is not listed."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            p = line.split()
            lp = int(p[1].split(":")[1], 16)
            rp = int(p[2].split(":")[1], 16)
            if lp == local_port and rp == remote_port:
                kind, when = p[5].split(":")
                return int(kind, 16), int(when, 16) / hz
    return None


def keepalive_phase(c, dqd_bin, work):
    d = Dqd(dqd_bin, work, window_ms=1000, lag_ms=1000)
    s = socket.create_connection(("127.0.0.1", d.ingest_port))
    s.sendall(b"hello;2;node=ka@h;app=ka\n")
    mine = s.getsockname()[1]
    # dqd's socket (local: the ingest port), once dqd has accepted it and armed the timer
    d.wait_until(lambda: (tcp_timers(d.ingest_port, mine) or (0,))[0] == 2, timeout=10)
    dqd_side = tcp_timers(d.ingest_port, mine)
    client_side = tcp_timers(mine, d.ingest_port)  # ours: no keepalive asked for
    c.check(dqd_side is not None, "dqd's end of the link is in /proc/net/tcp")
    if dqd_side:
        c.eq(dqd_side[0], 2, "dqd's end of the link has the keepalive timer armed (%r)" %
             (dqd_side,))
        c.check(0 < dqd_side[1] <= KEEPALIVE_S + 1,
                "it fires within the keepalive idle time of %d s (%.1f s)" %
                (KEEPALIVE_S, dqd_side[1]))
    c.check(client_side is not None and client_side[0] == 0,
            "the client's end, without keepalive, has no timer (the reading tells them "
            "apart: %r)" % (client_side,))
    s.close()
    d.stop(c)


def body(c):
    dqd_bin = sys.argv[1]
    # the soak checks how quickly dqd answers and reads under the flood, not how the
    # machine's other work slows it
    cpu_priority()
    work = make_workdir("dqd-floods-")
    keepalive_phase(c, dqd_bin, work)
    names_phase(c, dqd_bin, work)
    log_phase(c, dqd_bin, work)
    soak_phase(c, dqd_bin, work)
    remove_workdir(work)


run_script("floods", body)
