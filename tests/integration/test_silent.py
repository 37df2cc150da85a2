"""Integration test: silent sources and per-node splits, on a live dqd.

A v2 wrapper sends instances of an enabled probe, then its connection closes: the probe's
empty windows are no data, so /api/v1/status lists it as silent (since its last instance,
how many windows, and the connection it last came from: label, node, app, disconnected), /api/v1/probes has the same,
/metrics says dqd_probe_silent 1 (and the exposition passes `promtool check metrics`),
dqctl status / probes / why say it. A new connection that reports the probe again clears
it; once that one stops sending while staying connected, the probe is silent again, now
from a connected origin. Two v2 wrappers with different hello nodes (and a legacy link,
whose node is its host) reporting one probe: /api/v1/probes lists the nodes.

Times are never asserted against the wall clock: the checks wait (with a timeout) for what
dqd reports, and compare dqd's numbers with each other and with the instances' own times.

usage: test_silent.py DQD_BINARY DQCTL_BINARY
"""

import os
import re
import select
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000
WINDOW_MS = 100


class Sender:
    """Sends one instance of each probe every 10 ms on a socket until stopped."""

    def __init__(self, sock, probes):
        self.sock = sock
        self.probes = probes
        self.stop_flag = threading.Event()
        self.last_end = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.is_set():
            end = t.now_ns()
            try:
                self.sock.sendall("".join(t.legacy_line(p, end - 3 * MS, end)
                                          for p in self.probes).encode())
            except OSError:
                return
            self.last_end = end
            time.sleep(0.01)

    def stop(self):
        self.stop_flag.set()
        self.thread.join(5)


def v2_client(d, node, app):
    """A v2 connection that said hello and read dqd's answer (the enabled set, start_stub)."""
    s = t.connect(d.ingest_port)
    s.sendall(("h:2;node:%s;app:%s\n" % (node, app)).encode())
    r = t.LineReader(s)
    r.read_until("start_stub")
    return s


def silent_entry(d, probe):
    for e in d.status().get("silent", []):
        if e.get("probe") == probe:
            return e
    return None


def body(c):
    dqd_bin, dqctl_bin = sys.argv[1], sys.argv[2]
    wd = t.make_workdir("dqd-it-silent-")
    d = t.Dqd(dqd_bin, wd, window_ms=WINDOW_MS, lag_ms=100)

    def ctl(*args):
        return t.dqctl(dqctl_bin, "--server", d.url, *args)

    for probe in ("db", "shared"):
        st, env = d.api("PUT", "/api/v1/probes/%s?create=1" % probe, {"enabled": True})
        c.eq(st, 200, "enable %s" % probe)

    # ---- a wrapper reports db, then its connection closes ----
    a = v2_client(d, "app@host", "shop")
    a_port = a.getsockname()[1]
    sender = Sender(a, ["db"])
    got = d.wait_until(lambda: (d.get("/api/v1/probes/db")["instances"]["ok"] >= 20), 5.0)
    c.check(got, "db's instances arrive")
    sender.stop()
    last_end = sender.last_end
    a.close()
    e = d.wait_until(lambda: (lambda x: x if x and not x["connected"] else None)(
        silent_entry(d, "db")), 5.0)
    c.check(e is not None, "status lists db as silent from a disconnected origin: %r" %
            d.status().get("silent"))
    e = e or {}
    label = e.get("origin") or ""
    c.check(re.match(r"^\d+ 127\.0\.0\.1:%d$" % a_port, label),
            "the origin's label names the connection (peer port %d): %r" % (a_port, label))
    c.eq((e.get("node"), e.get("app"), e.get("connected")), ("app@host", "shop", False),
         "the origin's node, app, and that it is disconnected")
    c.check(isinstance(e.get("windows"), int) and e["windows"] >= 1,
            "windows >= 1: %r" % e.get("windows"))
    since = e.get("since_ns")
    window_ns = WINDOW_MS * MS
    c.eq(since, last_end, "since_ns is the END of db's last instance (issue 25)")
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((since or 0) // 10**9))
    c.eq(e.get("since"), "%s.%03dZ" % (iso, (since or 0) // MS % 1000), "since in ISO 8601")

    p = d.get("/api/v1/probes/db")
    c.eq(p.get("silent_since_ns"), since, "probes: silent_since_ns as the status")
    c.check(isinstance(p.get("silent_windows"), int) and p["silent_windows"] >= e["windows"],
            "probes: silent_windows %r" % p.get("silent_windows"))
    so = p.get("silent_origin") or {}
    c.eq((so.get("label"), so.get("node"), so.get("app"), so.get("connected")),
         (label, "app@host", "shop", False), "probes: silent_origin")
    c.eq(p.get("nodes"), [], "one node: db is not split")
    listed = {x["name"]: x for x in d.get("/api/v1/probes")}
    c.eq(listed.get("db", {}).get("silent_since_ns"), since, "the list has it too")
    # shared was never heard from, and no connected wrapper sends: no data too, without origin
    sh = silent_entry(d, "shared") or {}
    c.eq((sh.get("origin"), sh.get("node"), sh.get("connected")), (None, None, False),
         "a probe never heard from, with no live connection, is silent without an origin")
    c.eq(listed.get("shared", {}).get("silent_origin", "absent"), None,
         "probes: its silent_origin is null")
    log = d.stderr()
    c.check("probe shared is silent: no data, and no connection has sent it any yet" in log,
            "the log says shared never had a source (not 'its source (none ever) went away')")
    c.check(re.search(r"probe db is silent: no data since its source %s app@host went away"
                      % re.escape(label), log),
            "the log names db's source and says it went away")

    text = d.metrics_text()
    m = t.parse_prometheus(text)
    c.eq(m.errors, [], "exposition parses")
    t.promtool_check(c, text, "/metrics with a silent probe")
    c.eq(m.value("dqd_probe_silent", probe="db"), 1.0, "dqd_probe_silent{db}")
    c.check((m.value("dqd_probes_silent") or 0) >= 1, "dqd_probes_silent >= 1")
    c.eq(m.types.get("dqd_probe_silent"), "gauge", "dqd_probe_silent is a gauge")
    c.check((m.value("dqd_probe_silent_seconds", probe="db") or 0) > 0,
            "dqd_probe_silent_seconds{db} > 0")

    rc, out, err = ctl("status")
    c.eq(rc, 0, "dqctl status: %s" % err)
    line = [x for x in out.split("\n") if x.startswith("silent: db since ")]
    c.check(line and ("no data from %s node app@host app shop, disconnected)" % label) in line[0],
            "dqctl status: a line for db: %r" % out)
    rc, out, err = ctl("probes")
    c.check(re.search(r"^db\s+silent\s", out, re.M), "dqctl probes marks db silent: %r" % out)
    rc, out, err = ctl("why", "db")
    c.check("db has had no data since" in out and label in out and "is disconnected" in out,
            "dqctl why db says since when and from which connection: %r" % out)
    why = d.get("/api/v1/why/db")
    c.eq((why.get("silent") or {}).get("origin"), label, "why: the silence")

    # ---- a new connection reports db again: the silence clears ----
    # dqctl watch follows it (its hello line first, then the two silences' ends)
    watch = subprocess.Popen([dqctl_bin, "--server", d.url, "watch", "--types",
                              "probe_data_returned", "--count", "2", "--for", "20s"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([watch.stdout], [], [], 10.0)
    hello = watch.stdout.readline() if ready else ""
    c.check(" hello " in hello, "dqctl watch is watching before db comes back: %r" % hello)
    b = v2_client(d, "app@host", "shop")
    b_port = b.getsockname()[1]
    sender = Sender(b, ["db"])
    cleared = d.wait_until(lambda: silent_entry(d, "db") is None and
                           d.get("/api/v1/probes/db")["silent_since_ns"] is None, 5.0)
    c.check(cleared, "data again clears db's silence: %r" % silent_entry(d, "db"))
    # shared's silence ends too (a live connection), though nothing sent it an instance:
    # the log says which is which
    said = d.wait_until(lambda: "probe shared is no longer silent: a connection is live, "
                        "though none has sent it an instance yet" in d.stderr(), 5.0)
    c.check(said, "the log says shared's silence ended with a live connection, not data")
    log = d.stderr()
    c.check("probe db has data again" in log, "the log says db has data again: %r" %
            [x for x in log.split("\n") if "probe db " in x])
    c.check("probe shared has data again" not in log, "and not that shared has data again")

    def returned():
        ms = [m for m in d.get("/api/v1/marks")["marks"] if m["kind"] == "probe_data_returned"]
        by = {m["probe"]: m for m in ms}
        return by if "db" in by and "shared" in by else None
    by = d.wait_until(returned, 5.0) or {}
    c.eq([(by.get(n) or {}).get("detail", {}).get("instances") for n in ("db", "shared")],
         [True, False], "the probe_data_returned events say which came back with instances")
    c.eq([(by.get(n) or {}).get("text") for n in ("db", "shared")],
         ["db has data again",
          "shared is no longer silent: a connection is live (no instance of it yet)"],
         "and the marks' sentences say so")
    try:
        wout, werr = watch.communicate(timeout=25)
    except subprocess.TimeoutExpired:
        watch.kill()
        wout, werr = watch.communicate()
    c.check("silence  db has data again" in wout and
            "silence  shared is no longer silent: a connection is live (no instance of it yet)"
            in wout, "dqctl watch says which came back with instances: %r %r" % (wout, werr))
    m = t.parse_prometheus(d.metrics_text())
    c.eq(m.value("dqd_probe_silent", probe="db"), 0.0, "dqd_probe_silent{db} back to 0")
    c.eq(m.value("dqd_probe_silent_seconds", probe="db"), 0.0, "and its seconds")
    rc, out, err = ctl("why", "db")
    c.check("no data" not in out, "dqctl why db: no silence any more: %r" % out)

    # ---- it stops sending but stays connected: silent again, from a connected origin ----
    sender.stop()
    e = d.wait_until(lambda: silent_entry(d, "db"), 5.0)
    c.check(e is not None, "a connected link that sends nothing: db silent again")
    e = e or {}
    c.check(re.match(r"^\d+ 127\.0\.0\.1:%d$" % b_port, e.get("origin") or ""),
            "the origin is the new connection: %r" % e.get("origin"))
    c.eq(e.get("connected"), True, "and it is connected")
    c.eq(e.get("since_ns"), sender.last_end,
         "the new silence is dated from the new connection's last instance")
    rc, out, err = ctl("status")
    c.check("connected but silent)" in out, "dqctl status says so: %r" % out)
    b.close()

    # ---- two nodes (and a legacy link) report one probe ----
    n1 = v2_client(d, "n1@host", "shop")
    n2 = v2_client(d, "n2@host", "shop")
    s1 = Sender(n1, ["shared"])
    time.sleep(0.05)
    s2 = Sender(n2, ["shared"])
    nodes = d.wait_until(lambda: (lambda n: n if len(n) >= 2 else None)(
        d.get("/api/v1/probes/shared")["nodes"]), 5.0)
    c.eq(sorted(nodes or []), ["n1@host", "n2@host"], "shared is split by its two nodes")
    listed = {x["name"]: x for x in d.get("/api/v1/probes")}
    c.eq(sorted(listed.get("shared", {}).get("nodes", [])), ["n1@host", "n2@host"],
         "the list has the nodes too")
    legacy = t.connect(d.ingest_port)
    end = t.now_ns()
    legacy.sendall(t.legacy_line("shared", end - 2 * MS, end).encode())
    nodes = d.wait_until(lambda: (lambda n: n if len(n) >= 3 else None)(
        d.get("/api/v1/probes/shared")["nodes"]), 5.0)
    c.eq(sorted(nodes or []), ["127.0.0.1", "n1@host", "n2@host"],
         "a legacy link's node is its peer's host")
    s1.stop()
    s2.stop()
    text = d.metrics_text()
    t.promtool_check(c, text, "/metrics at the end")
    for s in (n1, n2, legacy):
        s.close()
    d.stop(c)
    t.remove_workdir(wd)


if __name__ == "__main__":
    t.run_script("test_silent", body)
