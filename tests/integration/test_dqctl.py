"""Integration test (issue 4, acceptance 1): dqctl's output and exit codes against a live
dqd: status, probes, dq PROBE (table, --json, --csv, calculated), enable/disable,
set-timeout, qta (set, show, violated, clear), start/stop, --json, DQD_URL, usage errors
(exit 2) and an unreachable server (exit 2 with a clear message).

usage: test_dqctl.py DQD_BINARY DQCTL_BINARY
"""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000


def body(c):
    dqd_bin, dqctl_bin = sys.argv[1], sys.argv[2]
    wd = t.make_workdir("dqd-it-dqctl-")
    diagram = os.path.join(wd, "d.dq")
    with open(diagram, "w") as f:
        f.write("flow = checkout -> pay;\n")
    d = t.Dqd(dqd_bin, wd, window_ms=100, lag_ms=400, diagram=diagram)

    def ctl(*args, env=None):
        return t.dqctl(dqctl_bin, *args, "--server", d.url, env=env)

    def ctl_json(*args, want_rc=0):
        rc, out, err = ctl(*args, "--json")
        c.eq(rc, want_rc, "dqctl %s --json exit status (%r)" % (" ".join(args), err))
        try:
            return json.loads(out)
        except ValueError:
            c.check(False, "dqctl %s --json prints JSON: %r" % (" ".join(args), out[:200]))
            return None

    # start/stop with no wrapper connected: the answer is a problem (exit 1)
    rc, out, err = ctl("start")
    c.eq(rc, 1, "dqctl start with no wrapper exits 1 (%r %r)" % (out, err))

    # feed one window: checkout 10 ms, pay 20 ms (plus two failures)
    s = t.connect(d.ingest_port)
    now = t.now_ns()
    wt = d.window_of(now)
    base = wt * 100 * MS + 50 * MS
    lines = [t.legacy_line("checkout", base - 10 * MS + i, base + i) for i in range(30)]
    lines += [t.legacy_line("pay", base - 20 * MS + i, base + i) for i in range(18)]
    lines += [t.legacy_line("pay", base - 2 * MS, base + i, "fa") for i in range(2)]
    s.sendall("".join(lines).encode())
    c.check(d.wait_window("checkout", wt) is not None, "window closed")
    c.check(d.wait_window("flow", wt, kind="calculated") is not None, "flow calculated")

    # status
    rc, out, err = ctl("status")
    c.eq(rc, 0, "status exit status")
    c.check(out.startswith("dqd 0.1.0"), "status names the version: %r" % out[:80])
    c.check("ingest 127.0.0.1:%d" % d.ingest_port in out, "status shows the ingest port")
    c.check("http 127.0.0.1:%d" % d.http_port in out, "status shows the HTTP port")
    c.check(re.search(r"\binstances 50\b", out), "status shows 50 instances: %r" % out)
    c.check(re.search(r"\bprobes 3 \(0 enabled\)", out), "status shows 3 probes")
    c.check(re.search(r"^\s+1\s+legacy\s+127\.0\.0\.1:\d+", out, re.M),
            "status lists the legacy wrapper: %r" % out)
    j = ctl_json("status")
    if j:
        c.eq((j["instances_total"], j["probes"], j["window_ms"]), (50, 3, 100),
             "status --json fields")
    rc, out, err = t.dqctl(dqctl_bin, "status", env={"DQD_URL": d.url})
    c.eq(rc, 0, "status with DQD_URL")
    c.check(out.startswith("dqd 0.1.0"), "DQD_URL reaches the same dqd")

    # probes
    rc, out, err = ctl("probes")
    c.eq(rc, 0, "probes exit status")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    c.check(out.splitlines()[0].split()[:3] == ["NAME", "STATE", "DMAX"], "probes header")
    c.eq(sorted(rows), ["checkout", "flow", "pay"], "probes lists every probe")
    if "checkout" in rows:
        r = rows["checkout"]
        c.eq(r[1], "off", "checkout not enabled")
        c.check("30" in r and "10" in r, "checkout row has N 30 and p50 10 ms: %r" % r)
    j = ctl_json("probes")
    if j:
        c.eq(sorted(p["name"] for p in j), ["checkout", "flow", "pay"], "probes --json")

    # dq PROBE: table, json, csv, calculated
    rc, out, err = ctl("dq", "checkout", "--no-plot")
    c.eq(rc, 0, "dq exit status")
    c.check("instances  30 (ok 30, failed 0, timed out 0)" in out, "dq counts: %r" % out)
    c.check("p50 10 ms" in out, "dq median")
    c.check("QTA        none" in out, "dq without QTA")
    rc, out, err = ctl("dq", "checkout")
    c.check(rc == 0 and "P(delay <= t)" in out, "dq draws the CDF plot")
    j = ctl_json("dq", "pay")
    if j:
        c.eq((j["n"], j["ok"], j["fa"]), (20, 18, 2), "dq --json counts")
        c.near(j["quantiles"]["0.5"], 0.020, 1e-9, "dq --json median")
        c.near(j["lost"], 0.1, 1e-9, "dq --json lost")
    rc, out, err = ctl("dq", "checkout", "--csv")
    csv = out.splitlines()
    c.eq(csv[:1], ["t_s,pdf,cdf"], "dq --csv header")
    c.eq(len(csv), 1 + 1024, "dq --csv has one row per bin")
    if len(csv) > 12:
        # row i + 1 is bin i, t_s its right edge (i + 1) ms: 10 ms durations are in bin 9
        c.eq(csv[9].split(","), ["0.009", "0", "0"], "csv cdf below 10 ms")
        c.eq(csv[10].split(","), ["0.01", "1", "1"], "csv mass by 10 ms")
    rc, out, err = ctl("dq", "flow", "--kind", "calculated", "--no-plot")
    c.eq(rc, 0, "dq --kind calculated exit status")
    c.check("calculated" in out and "p50 30 ms" in out, "calculated flow median 30 ms: %r" % out)
    rc, out, err = ctl("dq", "nosuch")
    c.eq(rc, 3, "dq of an unknown probe exits 3")
    c.check("dq: dqd knows no probe named \"nosuch\"" in err and "404" not in err,
            "dq unknown probe message, in the CLI's words: %r" % err)

    # enable / disable / set-timeout
    # (the only wrapper is an inbound legacy connection, which dqd does not write to: every
    # change is enabled in dqd, not applied on that link, and exits 1)
    rc, out, err = ctl("enable", "checkout")
    c.eq(rc, 1, "enable exit status (not applied on the legacy connection)")
    c.check(out.startswith("checkout: enabled") and "legacy_commands is off" in out,
            "enable output: %r" % out)
    c.eq(d.get("/api/v1/probes/checkout")["enabled"], True, "enable reached dqd")
    rc, out, err = ctl("set-timeout", "checkout", "50")
    c.eq(rc, 1, "set-timeout exit status (not applied on the legacy connection)")
    c.eq(d.get("/api/v1/probes/checkout")["dmax_ms"], 50.0, "set-timeout 50 = 50 ms")
    j = ctl_json("set-timeout", "checkout", "1.5s", want_rc=1)
    if j:
        c.eq(j["dmax_ms"], 1500.0, "set-timeout 1.5s --json")
    rc, out, err = ctl("set-timeout", "checkout", "abc")
    c.eq(rc, 2, "set-timeout with a bad duration exits 2")
    c.check("abc" in err, "bad duration message names it: %r" % err)
    # the only wrapper is a legacy link, which cannot disable a probe: dqd disables it,
    # the link does not, and dqctl says so (exit 1)
    rc, out, err = ctl("disable", "checkout", "--json")
    c.eq(rc, 1, "disable on a legacy link only exits 1 (%r)" % err)
    j = json.loads(out) if out.strip() else None
    if c.check(j is not None, "disable --json prints the answer"):
        c.eq(j["enabled"], False, "disable --json")
        c.eq([x["status"] for x in j["commands"]], ["not_applied"], "disable --json commands")
    c.eq(d.get("/api/v1/probes/checkout")["enabled"], False, "disable reached dqd")
    # checkout's numbers are from its last window: once a window closes without an
    # instance of it, they are stale, with their age
    lw = d.get("/api/v1/probes/checkout")["last_window"]
    c.check(lw and lw["age_s"] >= 0 and lw["n"] == 30, "the last window has its age: %r" % lw)
    c.check(d.wait_until(lambda: d.get("/api/v1/probes/checkout")["last_window"]["stale"],
                         timeout=5),
            "a window closed without checkout: its numbers are stale")
    rc, out, err = ctl("probes")
    row = [l for l in out.splitlines() if l.startswith("checkout ")]
    c.check(rc == 0 and row and " STALE, " in row[0] and " ago " in row[0],
            "probes marks checkout's numbers STALE with their age: %r" % out)

    # qta: set, show, a violated agreement makes dq exit 1, clear
    rc, out, err = ctl("qta", "pay", "0.5@5ms", "0.8@50ms", "--max-lost", "0.2")
    c.eq(rc, 0, "qta set exit status")
    q = d.get("/api/v1/probes/pay")["qta"]
    c.check(q and q["points"] == [[0.5, 0.005], [0.8, 0.05]] and abs(q["max_lost"] - 0.2) < 1e-12,
            "qta reached dqd: %r" % q)
    rc, out, err = ctl("qta", "pay")
    c.check(rc == 0 and "0.5@5ms" in out, "qta show: %r" % out)
    rc, out, err = ctl("dq", "pay", "--no-plot")
    c.eq(rc, 1, "dq exits 1 when the window violates the QTA")
    c.check("VIOLATED" in out + err, "dq says VIOLATED: %r" % (out + err))
    ctl("qta", "pay", "0.5@25ms", "0.85@50ms")
    rc, out, err = ctl("dq", "pay", "--no-plot")
    c.eq(rc, 0, "dq exits 0 when the QTA holds: %r" % (out + err))
    rc, out, err = ctl("qta", "pay", "--clear")
    c.eq(rc, 0, "qta --clear exit status")
    c.eq(d.get("/api/v1/probes/pay")["qta"], None, "qta cleared")

    # start / stop: the legacy connection above is not written to (legacy_commands is off),
    # a v2 connection is
    rc, out, err = ctl("stop")
    c.eq(rc, 1, "stop with only a legacy connection exits 1 (%r %r)" % (out, err))
    c.check("the 1 connected are legacy connections, which dqd does not write to" in err,
            "stop says why no wrapper was told: %r" % err)
    v2 = t.connect(d.ingest_port)
    v2.sendall(b"h:2;node:n;app:a\n")
    c.eq(t.LineReader(v2).read_until("stop_stub")[-1:], ["stop_stub"], "v2 hello answered")
    j = ctl_json("stop")
    if j:
        c.eq(j, {"running": False, "sent_to": 1, "not_applied": 1}, "stop --json")
    rc, out, err = ctl("start")
    c.eq(rc, 0, "start exit status")
    c.check("sent to 1 wrapper" in out, "start output: %r" % out)
    c.eq(d.status()["running"], True, "running again")

    # a calculated ΔQ comes only from the children's ΔQs of the same window: a window where
    # flow and checkout report and pay does not has none, and dqd says which child is
    # missing rather than show the older one next to the newer observed ΔQ
    # (sent once they have ended, as a wrapper sends: an END ahead of dqd's clock lies
    # beyond the open windows when the window closer runs late on a loaded machine, and is
    # refused as "future")
    w2 = d.window_of(t.now_ns()) + 1
    base2 = w2 * 100 * MS + 50 * MS
    lines = [t.legacy_line("flow", base2 - 35 * MS + i, base2 + i) for i in range(30)]
    lines += [t.legacy_line("checkout", base2 - 12 * MS + i, base2 + i) for i in range(30)]
    time.sleep(max(0.0, (base2 + 1 * MS - t.now_ns()) / 1e9))
    s.sendall("".join(lines).encode())
    c.check(d.wait_window("flow", w2) is not None,
            "flow's own window closed (late lines: %r, future: %r)" % (
                d.metrics().value("dqd_ingest_rejected_total", reason="late"),
                d.metrics().value("dqd_ingest_rejected_total", reason="future")))
    st, env = d.api("GET", "/api/v1/probes/flow/dq?kind=calculated")
    c.check(st == 404 and "its child pay had no data in it" in env.get("error", ""),
            "no calculated flow for its latest window, pay named: %r %r" % (st, env))
    rc, out, err = ctl("dq", "flow", "--kind", "calculated")
    c.check(rc == 3 and "its child pay had no data" in err, "dqctl dq says so: %r %r" % (rc, err))
    dqs = d.get("/api/v1/probes/flow/dqs")
    c.check(dqs["observed"] is not None and dqs["calculated"] is None and
            dqs["calculated_missing"] == ["pay"],
            "the dashboard's ΔQs: observed, no stale calculated, pay missing: %r" %
            {k: dqs.get(k) is not None for k in ("observed", "calculated")})
    st, env = d.api("GET", "/api/v1/probes/flow/dq?kind=calculated&window=0")
    c.eq(st, 200, "the newest calculated ΔQ, older than the observed, is there when asked by "
         "its place (window=0)")

    # usage errors: exit 2 with a message
    for args, what in [(("dq",), "missing PROBE"), (("frobnicate",), "unknown command"),
                       (("status", "--bogus"), "unknown option"),
                       (("set-timeout", "checkout"), "missing MS")]:
        rc, out, err = ctl(*args)
        c.eq(rc, 2, "usage error (%s) exits 2" % what)
        c.check(err.startswith("dqctl: "), "usage error (%s) explained on stderr: %r" %
                (what, err))
    s.close()
    v2.close()
    d.stop(c)

    # an unreachable server: exit 3, a message naming the URL
    url = "http://127.0.0.1:%d" % t.free_port()
    rc, out, err = t.dqctl(dqctl_bin, "status", "--server", url)
    c.eq(rc, 3, "unreachable server exits 3")
    c.check(url in err and "cannot reach dqd" in err, "unreachable message: %r" % err)
    c.eq(out, "", "nothing on stdout when unreachable")
    rc, out, err = t.dqctl(dqctl_bin, "probes", "--json", "--server", url)
    c.eq(rc, 3, "unreachable server exits 3 with --json too")
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_dqctl.py DQD_BINARY DQCTL_BINARY")
    t.run_script("test_dqctl", body)
