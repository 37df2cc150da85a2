"""Integration test (issue 13, "things that don't say what they do" and the metrics a
Prometheus user alerts on), against a real dqd and dqctl:

1. unknown names are refused unless --create (enable, why, the API's PUT), probes can be
   deleted (refused for a diagram node and for the node an investigation searches at), and
   an investigation whose child never reported says so ("is it instrumented?");
2. a disable that a legacy link cannot apply is said link by link (dqctl's output and exit
   status, the PUT's answer, why's sentences);
3. status: a v2 wrapper's acknowledged start_stub makes it RUNNING yes; with every wrapper
   gone, "no wrapper connected since …";
4. units: a bare duration is milliseconds for dqctl (set-timeout 50, qta P@30), units
   everywhere (30ms, 0.03s; JSON strings "30ms", "2s"; model's wait(10ms)), max_lost's
   default 1 − P, a QTA beyond dMax accepted with a warning;
5. HTTP: HEAD on every GET route, 405 method_not_allowed with Allow, --json errors as JSON,
   --version, dqctl diagram (show, load, a model error as FILE:LINE:COL, a warning as
   FILE:LINE:COL: warning:), the peer label
   without the ephemeral port;
6. /metrics: build info, trigger state, open investigations, verdicts, QTA margin,
   quantiles, wrappers connected; promtool check metrics on it and promtool check rules on
   docs/prometheus/*.yml.

usage: test_ux.py DQD_BINARY DQCTL_BINARY SOURCE_DIR
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000
WINDOW_MS = 100


def feeder(port, stop):
    """A legacy link: flow (a then b, but b is never reported) and pipe = c -> e, about
    1000 instances per second; a is about 10 ms, flow 12 ms, c 4 ms, e 6 ms."""
    rnd = random.Random(13)
    s = t.connect(port)
    try:
        while not stop.is_set():
            lines = []
            for _ in range(20):
                t0 = t.now_ns() - 60 * MS
                a_end = t0 + int(rnd.uniform(8, 12) * MS)
                lines.append(t.legacy_line("a", t0, a_end))
                lines.append(t.legacy_line("flow", t0, a_end + 2 * MS))
                c_end = t0 + int(rnd.uniform(3, 5) * MS)
                e_end = c_end + int(rnd.uniform(5, 7) * MS)
                lines.append(t.legacy_line("c", t0, c_end))
                lines.append(t.legacy_line("e", c_end, e_end))
                lines.append(t.legacy_line("pipe", t0, e_end))
            s.sendall("".join(lines).encode())
            time.sleep(0.02)
    except OSError:
        pass
    finally:
        s.close()


def head(url):
    """(status, headers, body) of a HEAD request."""
    req = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def body(c):
    dqd_bin, dqctl_bin, src = sys.argv[1], sys.argv[2], sys.argv[3]
    wd = t.make_workdir("dqd-it-ux-")
    diagram = os.path.join(wd, "d.dq")
    with open(diagram, "w") as f:
        f.write("flow = a -> b;\npipe = c -> e;\n")
    # legacy_commands on: its legacy connection takes commands (it reads), so a disable
    # shows what a legacy link cannot do (clear_timeout)
    d = t.Dqd(dqd_bin, wd, window_ms=WINDOW_MS, lag_ms=WINDOW_MS, diagram=diagram,
              extra=["--investigation-windows", "6", "--legacy-commands", "on"])

    def ctl(*args, env=None):
        return t.dqctl(dqctl_bin, *args, "--server", d.url, env=env)

    # ---- 5: versions ----
    rc, out, err = t.dqctl(dqctl_bin, "--version")
    c.check(rc == 0 and out.startswith("dqctl ") and out.split()[1] == d.status()["version"],
            "dqctl --version names the version dqd reports: %r" % out)
    p = subprocess.run([dqd_bin, "--version"], capture_output=True, text=True, timeout=10)
    c.eq(p.stdout.strip(), "dqd " + d.status()["version"], "dqd --version")

    # ---- 1: unknown names ----
    rc, out, err = ctl("enable", "nosuch")
    c.eq(rc, 3, "enable of an unknown name exits 3 (dqd refused)")
    c.check("nosuch" in err and "--create" in err, "the refusal says how to create: %r" % err)
    c.check("?create=1" not in err and "GET /api" not in err and "HTTP" not in err,
            "the refusal is in the CLI's words, not the API's: %r" % err)
    c.eq(d.api("GET", "/api/v1/probes/nosuch")[0], 404, "a refused enable creates nothing")
    rc, out, err = ctl("disable", "nosuch")
    c.check(rc == 3 and "dqd knows no probe named \"nosuch\"" in err and "--create" not in err,
            "disable of an unknown name does not suggest creating it: %r" % err)
    # a typo within two edits: "did you mean"
    rc, out, err = ctl("disable", "fl0w")
    c.check(rc == 3 and "Did you mean flow?" in err, "did you mean, for fl0w: %r" % err)
    rc, out, err = ctl("set-timeout", "ppie", "50")
    c.check(rc == 3 and "Did you mean pipe?" in err and "add --create" in err,
            "did you mean, for a swap (ppie), and how to create: %r" % err)
    rc, out, err = ctl("why", "nosuch")
    c.eq(rc, 3, "why of an unknown name exits 3")
    c.check("no probe named" in err, "why says it does not know the name: %r" % err)
    rc, out, err = ctl("--json", "enable", "nosuch")
    try:
        j = json.loads(err)
    except ValueError:
        j = {}
    c.eq((rc, j.get("status"), j.get("errorType"), j.get("http_status")),
         (3, "error", "not_found", 404), "--json: the error is one JSON object (%r)" % err)
    c.eq(out, "", "--json: nothing on stdout on an error")
    rc, out, err = ctl("--json", "enable")
    c.eq(json.loads(err or "{}").get("errorType"), "usage", "--json: a usage error too")
    rc, out, err = ctl("enable", "extra", "--create")
    c.check(rc == 0 and "extra: enabled in dqd" in out and "no wrapper is connected" in out,
            "enable --create registers and enables: %r %r" % (out, err))
    rc, out, err = ctl("enable", "extra")
    c.check(rc == 0 and "enabled already: nothing sent" in out, "enable again: %r" % out)
    st, env = d.api("PUT", "/api/v1/probes/other", {"enabled": True})
    c.eq((st, env.get("errorType")), (404, "not_found"), "the API refuses an unknown name")
    st, env = d.api("PUT", "/api/v1/probes/other?create=1", {"enabled": False})
    c.eq(st, 200, "the API creates with ?create=1")
    rc, out, err = ctl("delete", "extra")
    c.check(rc == 0 and "extra deleted" in out and "it was enabled" in out,
            "delete an enabled probe: %r %r" % (out, err))
    c.eq(d.api("GET", "/api/v1/probes/extra")[0], 404, "a deleted probe is gone")
    c.check(all(p["name"] != "extra" for p in d.get("/api/v1/probes")), "and not listed")
    st, env = d.api("DELETE", "/api/v1/probes/other")
    c.eq((st, env["data"]["deleted"], env["data"]["was_enabled"]), (200, True, False),
         "DELETE through the API")
    st, env = d.api("DELETE", "/api/v1/probes/other")
    c.eq(st, 404, "DELETE of a deleted probe: 404")
    rc, out, err = ctl("delete", "a")
    c.check(rc == 3 and "diagram" in err, "a diagram node cannot be deleted: %r" % err)

    # ---- 6: metrics before any wrapper ----
    m = d.metrics()
    c.eq(m.value("dqd_build_info", version=d.status()["version"], clock="wall"), 1.0,
         "dqd_build_info")
    c.eq(m.value("dqd_wrappers_connected"), 0.0, "no wrapper connected yet")
    c.eq(m.value("dqd_wrapper_last_disconnect_timestamp_seconds"), 0.0, "none went down yet")
    c.eq(m.value("dqd_investigations_open"), 0.0, "no investigation open")
    rc, out, err = ctl("status")
    c.check("no wrapper connected (none has connected since dqd started)" in out,
            "status before any wrapper: %r" % out)

    # ---- 3: a v2 wrapper that acknowledges start_stub is running ----
    v2 = t.connect(d.ingest_port)
    v2.sendall(b"h:2;node:ux@host;app:ux\n")
    rd = t.LineReader(v2)
    first = rd.read_lines(1)
    c.check(first and first[-1] in ("start_stub", "stop_stub"), "v2 gets its state: %r" % first)
    v2.sendall(b"state;running:0;probes:\n")

    def v2_running():
        ws = [w for w in d.status()["wrappers"] if w["kind"] == "v2"]
        return ws[0]["running"] if ws else "missing"
    c.check(d.wait_until(lambda: v2_running() is False), "a state line says not running")
    rc, out, err = ctl("start")
    c.eq(rc, 0, "start reaches the v2 wrapper")
    c.eq(rd.read_line(), "start_stub", "v2 gets start_stub")
    v2.sendall(b"ack;start_stub\n")
    c.check(d.wait_until(lambda: v2_running() is True), "an acknowledged start_stub: running")
    rc, out, err = ctl("status")
    line = [x for x in out.splitlines() if " v2 " in x]
    c.check(line and line[0].rstrip().endswith("yes"), "status shows RUNNING yes: %r" % out)

    # ---- the legacy feeder ----
    stop = threading.Event()
    th = threading.Thread(target=feeder, args=(d.ingest_port, stop), daemon=True)
    th.start()
    try:
        run_fed(c, d, ctl, rd, v2, wd, src)
    finally:
        stop.set()
        th.join(5)

    # ---- 3: every wrapper gone ----
    v2.close()
    c.check(d.wait_until(lambda: d.status()["wrappers_connected"] == 0, timeout=5),
            "every wrapper gone")
    s = d.status()
    c.check(s["last_wrapper_down"] and s["last_wrapper_down"]["since_ns"] > 0 and
            "127.0.0.1" in s["last_wrapper_down"]["link"],
            "status.last_wrapper_down: %r" % s["last_wrapper_down"])
    rc, out, err = ctl("status")
    c.check("no wrapper connected since " in out and "the last to go: link" in out,
            "status says since when no wrapper is connected: %r" % out)
    m = d.metrics()
    c.eq(m.value("dqd_wrappers_connected"), 0.0, "dqd_wrappers_connected 0")
    c.eq(m.value("dqd_peer_connected", peer="127.0.0.1"), 0.0, "the peer stays, at 0")
    c.check((m.value("dqd_wrapper_last_disconnect_timestamp_seconds") or 0) > 1e9,
            "dqd_wrapper_last_disconnect_timestamp_seconds")

    # ---- 5: dqctl diagram, last (it replaces the diagram) ----
    rc, out, err = ctl("diagram")
    c.check(rc == 0 and "flow = a -> b;" in out and "roots flow, pipe" in out,
            "dqctl diagram shows the loaded one: %r" % out)
    bad = os.path.join(wd, "bad.dq")
    with open(bad, "w") as f:
        f.write("x = y -> ;\n")
    rc, out, err = ctl("diagram", bad)
    c.check(rc == 2 and err.startswith("dqctl: %s:1:" % bad), "a model error names FILE:LINE:COL: %r"
            % err)
    good = os.path.join(wd, "good.dq")
    with open(good, "w") as f:
        f.write("flow = a -> b -> z;\n")
    rc, out, err = ctl("diagram", good)
    c.check(rc == 0 and "loaded" in out and err == "",
            "dqctl diagram FILE loads it, with no warning: %r %r" % (out, err))
    c.eq(d.get("/api/v1/diagram")["warnings"], [], "no warnings in GET /api/v1/diagram")
    # accepted with a warning: loaded, and the warning shown as dqctl model shows it
    warned = os.path.join(wd, "warned.dq")
    with open(warned, "w") as f:
        f.write("x1 = y;\nz1 = s:y;\n")
    rc, out, err = ctl("diagram", warned)
    c.check(rc == 0 and "loaded" in out and
            err.startswith("%s:2:6: warning: s:y names the outcome `y`" % warned),
            "dqctl diagram FILE prints the model's warnings as FILE:LINE:COL: warning: %r %r"
            % (out, err))
    g = d.get("/api/v1/diagram")
    c.check(len(g["warnings"]) == 1 and g["warnings"][0]["line"] == 2 and
            g["warnings"][0]["column"] == 6 and g["warnings_total"] == 1,
            "GET /api/v1/diagram lists the warning: %r" % g.get("warnings"))
    rc, out, err = ctl("diagram")
    c.check(rc == 0 and "\n2:6: warning: s:y names the outcome `y`" in out,
            "dqctl diagram shows the loaded diagram's warning: %r" % out)
    rc, out, err = ctl("diagram", warned, "--json")
    c.check(rc == 0 and err == "" and json.loads(out)["warnings"][0]["line"] == 2,
            "with --json the warnings are in the JSON only (stderr empty): %r %r" % (out, err))
    rc, out, err = ctl("diagram", good)
    c.eq(d.get("/api/v1/diagram")["text"], "flow = a -> b -> z;\n", "the diagram was replaced")
    rc, out, err = ctl("diagram", "--json")
    c.eq(json.loads(out)["roots"], ["flow"], "dqctl diagram --json")
    d.stop(c)
    t.remove_workdir(wd)


def run_fed(c, d, ctl, rd, v2, wd, src):
    c.check(d.wait_window("a", d.window_of(t.now_ns()) + 1) is not None, "a reported")

    # ---- 2: enable, then a disable that the legacy link cannot apply ----
    rc, out, err = ctl("enable", "a")
    c.check(rc == 0 and "set_timeout sent to 2 wrapper links" in out,
            "enable reaches the v2 and the legacy link: %r %r" % (out, err))
    line = rd.read_line()
    c.eq(line, "set_timeout;a;1024", "v2 gets set_timeout")
    v2.sendall(("ack;%s\n" % line).encode())
    rc, out, err = ctl("disable", "a")
    c.eq(rc, 1, "a disable not applied on a legacy link exits 1")
    c.check("disabled in dqd" in out and "clear_timeout sent to 1 wrapper link" in out and
            "clear_timeout NOT applied on 1 wrapper link" in out and
            "keeps reporting the probe" in out, "disable says what each link did: %r" % out)
    rc, out, err = ctl("why", "a")
    c.check(rc == 0 and "Its last change was a disable (clear_timeout)" in out and
            "NOT APPLIED on 1 link" in out and "In dqd, a is disabled now." in out and
            "on " in out and "is still reported" in out,
            "why says what the disable did on each link: %r" % out)
    j = d.get("/api/v1/why/a")
    c.eq(sorted(x["status"] for x in j["last_change"]), ["not_applied", "sent"],
         "why.last_change lists every link")

    # ---- 1 and 6: an investigation at flow, whose child b never reports ----
    # flow's QTA (12 ms against 1 ms) is broken, so the diagnosis searches flow's children
    # whether or not flow has a baseline by now: a stress run under ASan took 8 s for a's
    # first window, flow had 56 windows of baseline when asked, and its answer was healthy
    ctl("qta", "flow", "0.5@1")
    time.sleep(3 * WINDOW_MS / 1000.0)
    st, env = d.api("POST", "/api/v1/diagnose", {"node": "flow", "requested_by": "test_ux"})
    c.eq(st, 200, "diagnose flow")
    inv = env["data"]["investigation"]
    c.eq(d.metrics().value("dqd_investigations_open"), 1.0, "dqd_investigations_open 1")
    st, env = d.api("DELETE", "/api/v1/probes/flow")
    c.check(st == 409 and "investigation %d" % inv in env.get("error", ""),
            "a probe an investigation searches at cannot be deleted: %r" % (env,))
    done = d.wait_until(lambda: not d.get("/api/v1/investigations/%d" % inv)["open"],
                        timeout=30, step=0.2)
    c.check(done, "the investigation ended")
    v = d.get("/api/v1/investigations/%d" % inv)
    reason = json.dumps(v.get("summary"))
    c.check(v["verdict"] == "inconclusive" and "b never reported any instance" in reason and
            "instrumented" in reason, "the verdict says b never reported: %s %s" %
            (v["verdict"], reason[:600]))
    m = d.metrics()
    c.eq(m.value("dqd_verdicts_total", verdict="inconclusive"), 1.0, "dqd_verdicts_total")
    c.eq(m.value("dqd_investigations_open"), 0.0, "none open any more")

    # ---- 4: units ----
    def qta_of(probe):
        return d.get("/api/v1/probes/%s" % probe)["qta"]
    for arg in ("0.5@30", "0.5@30ms", "0.5@0.03s", "0.5@30000us"):
        rc, out, err = ctl("qta", "pipe", arg)
        q = qta_of("pipe")
        c.check(rc == 0 and abs(q["points"][0][1] - 0.030) < 1e-12,
                "qta pipe %s is 30 ms: %r %r" % (arg, q, err))
        c.check(abs(q["max_lost"] - 0.5) < 1e-12, "max_lost defaults to 1 - P: %r" % q)
    rc, out, err = ctl("set-timeout", "pipe", "50")
    c.eq(d.get("/api/v1/probes/pipe")["dmax_ms"], 50.0, "set-timeout 50 is 50 ms")
    rc, out, err = ctl("set-timeout", "pipe", "0.2s")
    c.eq(d.get("/api/v1/probes/pipe")["dmax_ms"], 200.0, "set-timeout 0.2s")
    rc, out, err = ctl("qta", "pipe", "0.9@250", "--json")
    ans = json.loads(out) if rc == 0 else {}
    c.check(rc == 0 and any("beyond pipe's dMax" in w for w in ans.get("warnings", [])),
            "a QTA past dMax is accepted with a warning in the answer: %r %r" % (ans, err))
    rc, out, err = ctl("qta", "pipe", "0.9@250")
    c.check(rc == 0 and "warning" in err and "dMax" in err, "dqctl prints it: %r" % err)
    st, env = d.api("PUT", "/api/v1/probes/pipe", {"qta": {"points": [[0.5, "30ms"]]},
                                                   "dmax_ms": "2s"})
    c.check(st == 200 and env["data"]["qta"]["points"] == [[0.5, 0.03]] and
            env["data"]["dmax_ms"] == 2000.0 and env["data"]["warnings"] == [],
            "JSON takes strings with units: %r" % (env,))
    st, env = d.api("PUT", "/api/v1/probes/pipe", {"qta": {"points": [[0.5, "30 parsecs"]]}})
    c.eq((st, env.get("errorType")), (422, "unprocessable"), "a bad unit in JSON: 422")
    model = os.path.join(wd, "m.dq")
    with open(model, "w") as f:
        f.write("m = x -> y;\n")
    r1 = t.dqctl(sys.argv[2], "model", model, "--set", "x=wait(10ms)",
                 "--set", "y=uniform(5ms,0.02)", "--json")
    r2 = t.dqctl(sys.argv[2], "model", model, "--set", "x=wait(0.01)", "--set",
                 "y=uniform(0.005,0.02)", "--json")
    c.check(r1[0] == 0 and r1[1] == r2[1], "model: wait(10ms) is wait(0.01): %r" % (r1[2],))

    # ---- 6: QTA margin, quantiles, triggers ----
    ctl("qta", "flow", "0.5@1")  # flow takes about 12 ms: violated
    ctl("qta", "pipe", "0.5@100")  # pipe about 10 ms: met
    time.sleep(3 * WINDOW_MS / 1000.0)
    m = d.metrics()
    c.check((m.value("dqd_qta_margin", probe="flow") or 0) < 0, "flow's QTA margin < 0")
    c.check((m.value("dqd_qta_margin", probe="pipe") or -1) > 0, "pipe's QTA margin > 0")
    for kind in ("observed", "calculated"):
        v = m.value("dqd_delay_quantile_seconds", probe="pipe", kind=kind, q="0.5")
        c.check(v is not None and 0.005 < v < 0.02, "pipe's %s median: %r" % (kind, v))
    c.check(m.value("dqd_delay_quantile_seconds", probe="b", kind="observed", q="0.5") is None,
            "no quantile for a probe without a window")
    rc, out, err = ctl("trigger", "pipe", "load", "--threshold", "1", "--fire-after", "1")
    c.eq(rc, 0, "trigger set")
    c.check(d.wait_until(lambda: d.metrics().value("dqd_trigger_fired", probe="pipe",
                                                   kind="load") == 1.0, timeout=5),
            "dqd_trigger_fired{pipe,load} 1")

    # ---- 5: the peer label has no port, and survives a reconnect ----
    for _ in range(2):
        s = t.connect(d.ingest_port)
        s.sendall(b"n:x;b:zz;e:1;s:ok\n")
        time.sleep(0.2)
        s.close()
    time.sleep(0.3)
    m = d.metrics()
    peers = m.select("dqd_peer_protocol_errors_total")
    c.eq([(l["peer"], v) for l, v in peers], [("127.0.0.1", 2.0)],
         "one series for 127.0.0.1 whatever the connections")
    c.check(all(":" not in l.get("peer", "") for n, l, v in m.samples),
            "no peer label carries a port")
    c.eq(m.value("dqd_wrappers_connected"), 2.0, "two wrappers connected (v2, feeder)")

    # ---- 5: HEAD on every GET route, 405 with Allow ----
    routes = ["/-/healthy", "/metrics", "/api/v1/status", "/api/v1/probes",
              "/api/v1/probes/pipe", "/api/v1/probes/pipe/dq", "/api/v1/diagram",
              "/api/v1/investigations", "/api/v1/investigations/%d" % inv, "/api/v1/why/a",
              "/api/v1/snapshots", "/api/v1/triggers", "/api/v1/probes/pipe/triggers",
              "/api/v1/probes/nosuch"]
    for r in routes:
        gst, graw = d.request("GET", r)
        hst, hdrs, hbody = head(d.url + r)
        c.check(hst == gst and hbody == b"", "HEAD %s: %d (GET %d), body %r" %
                (r, hst, gst, hbody[:40]))
    for method, r, allow in [("POST", "/api/v1/status", "GET, HEAD"),
                             ("PUT", "/metrics", "GET, HEAD"),
                             ("GET", "/api/v1/diagnose", "POST"),
                             ("POST", "/api/v1/probes/pipe", "GET, HEAD, PUT, DELETE")]:
        req = urllib.request.Request(d.url + r, data=b"" if method != "GET" else None,
                                     method=method, headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
            c.check(False, "%s %s answered 2xx" % (method, r))
        except urllib.error.HTTPError as e:
            env = json.loads(e.read().decode())
            c.eq((e.code, env.get("errorType"), e.headers.get("Allow")),
                 (405, "method_not_allowed", allow), "%s %s" % (method, r))

    # ---- 6: promtool on the live exposition and on the shipped rules ----
    text = d.metrics_text()
    t.promtool_check(c, text, "/metrics with triggers, quantiles and peers")
    rules = [os.path.join(src, "docs", "prometheus", f) for f in ("dqd-rules.yml",
                                                                   "dqd-alerts.yml")]
    tool = shutil.which("promtool")
    if c.check(tool, "promtool installed (make deps)"):
        p = subprocess.run([tool, "check", "rules"] + rules, capture_output=True, text=True,
                           timeout=30)
        c.check(p.returncode == 0, "promtool check rules: %s%s" % (p.stdout, p.stderr))
        # every metric the rules use is one dqd exports (or Prometheus's own `up`)
        names = {n for n, _, _ in t.parse_prometheus(text).samples}
        for f in rules:
            with open(f) as fh:
                used = set(re.findall(r"\b(dqd_[a-z_]+)", fh.read()))
            missing = {u for u in used if u not in names and u + "_bucket" not in names
                       and not u.endswith("_bucket")}
            c.eq(missing, set(), "%s uses only metrics dqd exports" % os.path.basename(f))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: test_ux.py DQD_BINARY DQCTL_BINARY SOURCE_DIR")
    t.run_script("test_ux", body)
