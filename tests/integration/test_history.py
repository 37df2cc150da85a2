"""Integration test (issue 27): what the store keeps beyond the ring, through the API of a
live dqd in simulated time fed by dqsim --trace-ids (v2 lines with i:, t: and a:).

  - GET …/windows with from, to, step: the stored windows over a range, across a restart of
    dqd; each bin's counts against the windows it gathered; downsampled to at most 1,000
    bins (a step too small is raised); bad ranges are 400s;
  - GET …/heatmap: one column per bin with the windows' instances, on one grid;
  - GET …/exemplars: the newest window's, one window's, a range's; the slowest first, each
    with the trace id dqsim sent and the link trace_url makes of it; failed ones from a
    failing leaf; none from a legacy line without ids; 400s and a 404;
  - GET /api/v1/marks: a mark per kind of event (dqd started and stopped, a probe enabled,
    disabled, its dMax changed, a trigger fired and cleared, an investigation opened, its
    steps, its verdict), each with its sentence;
  - /metrics as OpenMetrics when asked (parsed by prometheus_client's strict parser, the
    exemplars on the duration buckets), and the text format still passes promtool.

usage: test_history.py DQD DQSIM DIAGRAM
"""

import json
import os
import re
import socket
import sqlite3
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

TRACE_URL = "http://jaeger.example:16686/trace/{trace_id}"
HEX16 = re.compile(r"^[0-9a-f]{16}$")


def openmetrics_parser(c):
    """prometheus_client's OpenMetrics parser (Debian's python3-prometheus-client, which
    `make deps` installs; a Python other than Debian's finds it in dist-packages)."""
    try:
        from prometheus_client.openmetrics import parser
        return parser
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
    try:
        from prometheus_client.openmetrics import parser
        return parser
    except ImportError:
        c.check(False, "prometheus_client is missing: run `make deps` (Debian's "
                "python3-prometheus-client)")
        return None


def start(dqd_bin, wd, diagram, db=None):
    cfg = {"probes": {"root": {"enabled": True, "dmax_ms": 200,
                               "qta": {"points": [[0.5, 0.055], [0.95, 0.07]],
                                       "max_lost": 0.01}}},
           "triggers": [{"probe": "root", "kind": "qta", "fire_after": 2, "clear_after": 2}],
           "deescalate_windows": 2}
    path = os.path.join(wd, "dqd.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return t.Dqd(dqd_bin, wd, window_ms=1000, lag_ms=100, diagram=diagram, config=path,
                 db=db, extra=["--clock", "sim", "--trace-url", TRACE_URL])


def check_windows(c, d):
    win = d.get("/api/v1/probes/root/windows")["windows"]
    first, last = win[0]["start"], win[-1]["end"]
    r = d.get("/api/v1/probes/root/windows?from=%r&to=%r" % (first, last))
    c.eq((r["step"], r["downsampled"]), (1.0, False), "a short range: one bin a window")
    c.eq([w["n"] for w in r["windows"]], [w["n"] for w in win],
         "the stored windows are the ring's: %d of them" % len(win))
    c.check(all(w["windows"] == 1 for w in r["windows"]), "each bin one window")
    # 5 s bins: counts summed, p95 the largest of the bin
    r5 = d.get("/api/v1/probes/root/windows?from=%r&to=%r&step=5" % (first, last))
    c.eq(r5["step"], 5.0, "step 5 s")
    c.eq(sum(w["n"] for w in r5["windows"]), sum(w["n"] for w in win), "5 s bins hold every "
         "instance")
    # bins start at window boundaries from `from` on (the first window may be a partial
    # one, whose start is dqd's)
    def bin_of(t):
        return int((t - r5["from"]) // 5)
    for b in r5["windows"]:
        inside = [w for w in win if bin_of(w["start"]) == bin_of(b["start"])]
        c.eq((b["windows"], b["n"]), (len(inside), sum(w["n"] for w in inside)),
             "bin at %r gathers its windows" % b["start"])
        p95s = [w["p95"] for w in inside if w["p95"] is not None]
        if p95s:
            c.near(b["p95"], max(p95s), 1e-9, "bin p95 is the largest")
        else:
            c.eq(b["p95"], None, "no p95 in the bin's windows: none")
    # a week: at most 1,000 bins, a step that is a whole number of windows
    wk = d.get("/api/v1/probes/root/windows?from=%r&to=%r&step=1" % (last - 7 * 86400, last))
    c.check(wk["downsampled"] and wk["step"] >= 7 * 86400 / 1000 and
            wk["step"] == int(wk["step"]) and len(wk["windows"]) <= 1000,
            "a week's range is downsampled to at most 1,000 bins (step %r, %d bins)" %
            (wk["step"], len(wk["windows"])))
    c.eq(sum(w["n"] for w in wk["windows"]), sum(w["n"] for w in d.get(
        "/api/v1/probes/root/windows?from=0&to=%r" % last)["windows"]), "nothing lost by it")
    for q, what in (("from=5&to=1", "from after to"), ("from=abc", "from not a number"),
                    ("from=1&to=1", "an empty range"), ("from=1&step=0", "step 0"),
                    ("from=1&step=-5", "a negative step"), ("from=-3&to=5", "a negative time"),
                    ("to=inf", "an infinite time")):
        st, raw = d.request("GET", "/api/v1/probes/root/windows?" + q)
        c.eq(st, 400, "windows?%s: 400 (%s): %r" % (q, what, raw[:120]))
    st, _ = d.request("GET", "/api/v1/probes/nope/windows?from=1")
    c.eq(st, 404, "an unknown probe's range: 404")
    return win


def check_heatmap(c, d, ring):
    first, last = ring[0]["start"], ring[-1]["end"]
    # the summaries as stored with the ΔQs (the ring's may have been re-expressed since)
    win = d.get("/api/v1/probes/root/windows?from=%r&to=%r" % (first, last))["windows"]
    h = d.get("/api/v1/probes/root/heatmap?from=%r&to=%r" % (first, last))
    c.eq(len(h["columns"]), len(win), "one heatmap column per window (%d)" % len(win))
    for col, w in zip(h["columns"], win):
        tangible = sum(col["counts"].values())
        c.eq(col["n"], w["n"], "column at %r holds the window's instances" % col["start"])
        c.check(abs(tangible - w["n"] * (1 - w["lost"])) <= 1 + 1e-6 * w["n"],
                "column at %r: %d tangible, the window's n × (1 − lost)" % (col["start"],
                                                                           tangible))
        c.check(all(0 <= int(k) < h["bins"] for k in col["counts"]), "bins in range")
    c.check(0 < h["bins"] <= 256 and h["bin_width"] > 0, "one grid: %d bins of %r s" %
            (h["bins"], h["bin_width"]))
    # the mass lies where the p95 says: bin of the window's p95 ≤ the last occupied bin
    col, w = h["columns"][-1], win[-1]
    top = max(int(k) for k in col["counts"])
    c.check((top + 1) * h["bin_width"] >= w["p95"] - h["bin_width"],
            "the heatmap reaches the window's p95 (%r)" % w["p95"])
    h5 = d.get("/api/v1/probes/root/heatmap?from=%r&to=%r&step=5" % (first, last))
    c.eq(sum(x["n"] for x in h5["columns"]), sum(w["n"] for w in win),
         "5 s columns hold every instance")
    st, _ = d.request("GET", "/api/v1/probes/root/heatmap?from=9&to=3")
    c.eq(st, 400, "heatmap of an empty range: 400")


def check_exemplars(c, d):
    e = d.get("/api/v1/probes/root/exemplars")
    ex = e["exemplars"]
    c.check(ex and len(ex) <= 5 + 2, "the newest window's exemplars: %d" % len(ex))
    oks = [x for x in ex if x["status"] == "ok"]
    c.eq([x["duration"] for x in oks], sorted((x["duration"] for x in oks), reverse=True),
         "slowest first")
    c.check(all(HEX16.match(x["trace_id"] or "") and HEX16.match(x["instance_id"] or "")
                for x in ex), "each has the trace and instance ids dqsim sent: %r" %
            [(x["trace_id"], x["instance_id"]) for x in ex][:3])
    c.check(all(x["url"] == TRACE_URL.replace("{trace_id}", x["trace_id"]) for x in ex),
            "each links to its trace through trace_url")
    c.check(all(re.match(r"^\d+$", x["attrs"].get("request", "")) for x in ex),
            "each has its attributes (request=N)")
    c.eq(e["trace_url"], TRACE_URL, "the answer says the trace_url")
    # the slowest exemplar is the slowest instance: no successful instance of the window
    # lasted longer (the window's p99 is at most its duration, give or take a bin)
    win = d.get("/api/v1/probes/root/windows")["windows"]
    w = [x for x in win if abs(x["start"] - e["from"]) < 1e-6]
    c.check(w and oks and oks[0]["duration"] >= w[0]["p99"] - 0.002,
            "the first exemplar (%r) is as slow as the window's p99 (%r)" %
            (oks[0]["duration"] if oks else None, w[0]["p99"] if w else None))
    wid = win[-3]["wid"]
    one = d.get("/api/v1/probes/root/exemplars?window=%d" % wid)["exemplars"]
    c.check(one and all(abs(x["window"] - win[-3]["start"]) < 1e-6 for x in one),
            "?window=%d lists that window's" % wid)
    rng = d.get("/api/v1/probes/root/exemplars?from=%r&to=%r&limit=4" % (
        win[0]["start"], win[-1]["end"]))["exemplars"]
    c.eq(len([x for x in rng if x["status"] == "ok"]), 4, "a range's 4 slowest (limit 4)")
    c.check(rng[0]["duration"] >= max(x["duration"] for x in one if x["status"] == "ok"),
            "a range's slowest is at least one window's")
    for q in ("window=abc", "window=-1", "limit=0", "limit=5000", "window=3&from=1",
              "from=2&to=1"):
        st, _ = d.request("GET", "/api/v1/probes/root/exemplars?" + q)
        c.eq(st, 400, "exemplars?%s: 400" % q)
    st, _ = d.request("GET", "/api/v1/probes/nope/exemplars")
    c.eq(st, 404, "an unknown probe's exemplars: 404")


def check_openmetrics(c, d):
    parser = openmetrics_parser(c)
    req = urllib.request.Request(d.url + "/metrics", headers={
        "Accept": "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"})
    with urllib.request.urlopen(req, timeout=10) as r:
        ctype, text = r.headers["Content-Type"], r.read().decode()
    c.check(ctype.startswith("application/openmetrics-text; version=1.0.0"),
            "OpenMetrics when the scraper asks for it: %r" % ctype)
    c.check(text.endswith("# EOF\n"), "the exposition ends with # EOF")
    if parser:
        try:
            fams = {f.name: f for f in parser.text_string_to_metric_families(text)}
        except ValueError as e:
            fams = {}
            c.check(False, "prometheus_client's OpenMetrics parser refused it: %s" % e)
        dur = fams.get("dqd_duration_seconds")
        ex = [s for s in dur.samples if s.exemplar and s.labels.get("probe") == "root"] \
            if dur else []
        c.check(ex, "root's duration buckets carry exemplars")
        for s in ex:
            le = float(s.labels["le"])
            c.check(HEX16.match(s.exemplar.labels.get("trace_id", "")) and
                    s.exemplar.value <= le, "exemplar %r in its bucket (le %r)" %
                    (s.exemplar, le))
        c.check("dqd_instances" in fams, "a counter's family is named without _total")
    plain = d.metrics_text()
    c.check("# {" not in plain and "# EOF" not in plain, "the text format has no exemplar")
    t.promtool_check(c, plain, "text format /metrics")


def legacy_has_no_exemplar(c, d):
    """A legacy line (no ids) is binned but never an exemplar."""
    d.api("PUT", "/api/v1/probes/plain?create=1", {"enabled": True})
    s = socket.create_connection(("127.0.0.1", d.ingest_port))
    now = d.status()["now"]
    end = int(now * 1e9)
    s.sendall(t.legacy_line("plain", end - 5 * 1000000, end).encode())
    return s


def spoil_an_exemplar(c, db):
    """Puts a byte that is not UTF-8 (0xC3 alone) in place of the first character of the
    first stored exemplar's trace id of root, as a build before 3737433 could leave in a node
    name (cut inside a character); returns that trace id as it was."""
    con = sqlite3.connect(db)
    try:
        start_ns, items = con.execute("SELECT start_ns, items FROM exemplars WHERE probe = "
                                      "'root' ORDER BY start_ns LIMIT 1").fetchone()
        first = json.loads(items)[0]["trace_id"]
        raw = items.encode().replace(('"trace_id":"%s"' % first).encode(),
                                     b'"trace_id":"\xc3' + first[1:].encode() + b'"', 1)
        con.execute("UPDATE exemplars SET items = CAST(? AS TEXT) WHERE probe = 'root' AND "
                    "start_ns = ?", (raw, start_ns))
        con.commit()
        c.check(con.total_changes == 1, "one exemplar row spoiled")
    finally:
        con.close()
    return first


def marks_of(d, **kw):
    q = "&".join("%s=%r" % kv for kv in kw.items())
    return d.get("/api/v1/marks?" + q)["marks"]


def body(c):
    dqd_bin, dqsim_bin, diagram = sys.argv[1:4]
    wd = t.make_workdir("dqd-it-history-")
    db = os.path.join(wd, "keep.db")
    d = start(dqd_bin, wd, diagram, db)
    sim = t.HeldSim(dqsim_bin, diagram, d.ingest_port, rate=200, extra=["--trace-ids"])
    t0 = d.status()["now"]
    try:
        sim.run(12)
        front = d.api("PUT", "/api/v1/probes/front", {"enabled": True})
        c.eq(front[0], 200, "front enabled")
        sim.run(3)
        d.api("PUT", "/api/v1/probes/front", {"dmax_ms": 150})
        sim.run(2)
        d.api("PUT", "/api/v1/probes/front", {"enabled": False})
        conn = legacy_has_no_exemplar(c, d)
        sim.run(3)
        conn.close()
        plain = d.get("/api/v1/probes/plain/windows")["windows"]
        c.check(plain and plain[-1]["n"] >= 1, "the legacy line was binned")
        c.eq(d.get("/api/v1/probes/plain/exemplars")["exemplars"], [],
             "… and is no exemplar (it has no ids)")

        # a failing leaf gives failed exemplars; a slow one fires root's QTA trigger, which
        # opens a search
        sim.say("fault store_c3 fail 0.5")
        sim.run(3)
        failed = d.get("/api/v1/probes/root/exemplars")["exemplars"]
        c.check([x for x in failed if x["status"] == "fa"],
                "failed instances are exemplars too: %r" % [x["status"] for x in failed])
        sim.say("clear store_c3")
        sim.say("fault front_b2 slow 25")
        sim.drive()
        c.check(d.wait_until(lambda: any(i["verdict"] for i in d.get(
            "/api/v1/investigations")), timeout=90), "the search reached a verdict")
        sim.stop_driving()
        sim.say("clear front_b2")
        sim.drive()
        c.check(d.wait_until(lambda: any(m["kind"] == "trigger_cleared"
                                         for m in marks_of(d, **{"from": t0})), timeout=60),
                "the trigger cleared once the fault went")
        sim.stop_driving()

        win = check_windows(c, d)
        check_heatmap(c, d, win)
        check_exemplars(c, d)
        check_openmetrics(c, d)

        # dqd stops and starts again on the same store (simulated time going on 30 s after
        # where it stopped): the range spans both runs
        before_stop = d.get("/api/v1/probes/root/windows")["windows"]
        stopped_at = d.status()["now"]
        sim.stop()
        d.stop(c)
        bad_trace = spoil_an_exemplar(c, db)
        d = start(dqd_bin, wd, diagram, db)
        sim = t.HeldSim(dqsim_bin, diagram, d.ingest_port, rate=200,
                        extra=["--trace-ids", "--start-at", "%.3f" % (stopped_at + 30)])
        sim.run(5)
        now = d.status()["now"]
        after = d.get("/api/v1/probes/root/windows")["windows"]
        both = d.get("/api/v1/probes/root/windows?from=%r&to=%r" % (t0, now))["windows"]
        # a window is known by its number (the window a run started in is stored partial,
        # from the run's start)
        def wid(w):
            return int(w["start"] // 1)
        starts = {wid(w) for w in both}
        c.check(after and after[0]["start"] > stopped_at + 29,
                "the second run's windows come after the gap (%r)" % after[0]["start"])
        c.check({wid(w) for w in before_stop} <= starts and {wid(w) for w in after} <= starts,
                "after a restart the range holds both runs' windows (%d + %d of %d; "
                "missing %r)" % (len(before_stop), len(after), len(both), sorted(
                    {wid(w) for w in before_stop + after} - starts)))
        marks = marks_of(d, **{"from": t0, "to": now + 1})
        kinds = {m["kind"] for m in marks}
        starts = [m for m in marks if m["kind"] == "dqd_started"]
        for k in ("dqd_started", "dqd_stopped", "probe_enabled", "probe_disabled", "probe_dmax",
                  "trigger_fired", "trigger_cleared", "investigation_opened", "step",
                  "verdict"):
            c.check(k in kinds, "a %s mark: %r" % (k, sorted(kinds)))
        c.eq([m["time"] for m in marks], sorted(m["time"] for m in marks), "oldest first")
        c.eq(len(starts), 2, "two runs, two starts")
        stop = [m for m in marks if m["kind"] == "dqd_stopped"]
        c.check(stop and len(starts) == 2 and
                starts[0]["time"] < stop[0]["time"] <= starts[1]["time"],
                "the stop lies between the starts: %r" % [(m["kind"], m["time"]) for m in
                                                           starts + stop])
        c.check(len(starts) == 2 and "not running for " in starts[1]["text"] and
                "no stop recorded" not in starts[1]["text"] and
                29 < starts[1]["time"] - stop[0]["time"] < 32,
                "the second start says the gap after a clean stop: %r" %
                [m["text"] for m in starts])
        by_kind = {m["kind"]: m for m in marks}
        c.check("front" in by_kind["probe_dmax"]["text"] and "150 ms" in
                by_kind["probe_dmax"]["text"], "a dMax mark says it: %r" %
                by_kind["probe_dmax"]["text"])
        c.check(by_kind["trigger_fired"]["probe"] == "root" and
                "trigger qta on root fired" == by_kind["trigger_fired"]["text"],
                "a trigger mark says it: %r" % by_kind["trigger_fired"]["text"])
        v = by_kind["verdict"]
        c.check(v["investigation"] and ("investigation %d" % v["investigation"]) in v["text"],
                "a verdict mark names its investigation: %r" % v["text"])
        spoiled = [x for x in d.get("/api/v1/probes/root/exemplars?from=%r&to=%r&limit=1000"
                                    % (t0, now))["exemplars"]
                   if (x["trace_id"] or "").endswith(bad_trace[1:]) and
                   x["trace_id"] != bad_trace]
        c.check(spoiled and spoiled[0]["trace_id"] == "\\xc3" + bad_trace[1:],
                "a stored exemplar whose trace id is not UTF-8 is listed, escaped: %r" %
                [x["trace_id"] for x in spoiled])
        lim = marks_of(d, **{"from": t0, "to": now + 1, "limit": 3})
        c.eq([m["time"] for m in lim], [m["time"] for m in marks[-3:]], "limit keeps the newest")
        for q in ("from=3&to=2", "limit=0", "from=x"):
            st, _ = d.request("GET", "/api/v1/marks?" + q)
            c.eq(st, 400, "marks?%s: 400" % q)
    finally:
        sim.stop()
        d.stop(c)
        t.remove_workdir(wd)


if __name__ == "__main__":
    t.run_script("history", body)
