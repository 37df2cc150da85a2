"""Integration test (issue 4, HTTP API): the routes of a live dqd, their envelope and
their errors (400 bad_data, 404 not_found, 405, 422 unprocessable with a message); PUT of
a probe's settings (and that a refused PUT changes nothing), and PUT of the diagram (a
model error names LINE:COL; a new diagram's calculated ΔQ follows at the next window).

usage: test_api.py DQD_BINARY
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000


def body(c):
    dqd_bin = sys.argv[1]
    wd = t.make_workdir("dqd-it-api-")
    diagram = os.path.join(wd, "d.dq")
    with open(diagram, "w") as f:
        f.write("flow = a -> b;\n")
    d = t.Dqd(dqd_bin, wd, window_ms=100, lag_ms=400, diagram=diagram)

    def expect_error(method, path, body, status, etype, what, contains=None):
        st, raw = d.request(method, path, body)
        try:
            env = json.loads(raw.decode())
        except ValueError:
            c.check(False, "%s: error body is JSON: %r" % (what, raw[:200]))
            return None
        c.eq((st, env.get("status"), env.get("errorType")), (status, "error", etype), what)
        c.check(isinstance(env.get("error"), str) and env["error"],
                "%s: has a message" % what)
        if contains:
            c.check(contains in env.get("error", ""), "%s: message %r has %r" %
                    (what, env.get("error"), contains))
        return env

    # ---- read-only routes ----
    st, raw = d.request("GET", "/-/healthy")
    c.eq((st, raw), (200, b"dqd is healthy.\n"), "/-/healthy")
    s = d.status()
    for key, typ in [("version", str), ("uptime_seconds", float), ("ingest", str),
                     ("http", str), ("window_ms", int), ("lag_ms", int), ("db", str),
                     ("diagram", str), ("running", bool), ("probes", int), ("enabled", int),
                     ("connections", int), ("instances_total", int),
                     ("protocol_errors_total", int), ("windows_closed", int),
                     ("wrappers", list)]:
        c.check(isinstance(s.get(key), typ), "status.%s is a %s: %r" %
                (key, typ.__name__, s.get(key)))
    c.eq(s["ingest"], "127.0.0.1:%d" % d.ingest_port, "status.ingest")
    c.eq(s["http"], "127.0.0.1:%d" % d.http_port, "status.http")
    c.eq(s["db"], d.db, "status.db")
    g = d.get("/api/v1/diagram")
    c.eq((g["path"], g["text"], g["roots"], sorted(g["probes"])),
         (diagram, "flow = a -> b;\n", ["flow"], ["a", "b", "flow"]), "GET diagram")
    probes = {p["name"]: p for p in d.get("/api/v1/probes")}
    c.eq(sorted(probes), ["a", "b", "flow"], "the diagram's probes are registered")
    p = probes.get("a", {})
    c.eq((p.get("enabled"), p.get("dmax_ms"), p.get("bins"), p.get("in_diagram"),
          p.get("last_window"), p.get("qta")), (False, 1024.0, 1024, True, None, None),
         "a fresh probe's summary")
    c.eq(p.get("instances"), {"ok": 0, "fa": 0, "to": 0}, "a fresh probe's counts")

    # ---- errors ----
    expect_error("GET", "/api/v1/probes/zz", None, 404, "not_found", "unknown probe", "zz")
    expect_error("GET", "/api/v1/probes/zz/dq", None, 404, "not_found", "dq of unknown probe")
    expect_error("GET", "/api/v1/probes/a/dq", None, 404, "not_found",
                 "dq before any window closed")
    expect_error("GET", "/api/v1/probes/a/dq?kind=foo", None, 400, "bad_data", "bad kind",
                 "foo")
    expect_error("GET", "/api/v1/probes/a/dq?window=60", None, 400, "bad_data",
                 "window past the ring (60 of 0 … 59)")
    expect_error("GET", "/api/v1/probes/a/dq?window=-1", None, 400, "bad_data",
                 "negative window")
    expect_error("GET", "/api/v1/probes/a/dq?window=x", None, 400, "bad_data", "window x")
    expect_error("GET", "/api/v1/probes/a/dqx", None, 404, "not_found", "unknown sub-route")
    expect_error("GET", "/api/v1/nothing", None, 404, "not_found", "unknown route")
    expect_error("GET", "/nothing", None, 404, "not_found", "route outside the API")
    expect_error("DELETE", "/api/v1/status", None, 405, "method_not_allowed", "DELETE status")
    expect_error("GET", "/api/v1/wrapper/start", None, 405, "method_not_allowed",
                 "GET wrapper/start")
    expect_error("POST", "/api/v1/probes/a/dq", "", 405, "method_not_allowed", "POST dq")
    expect_error("PUT", "/api/v1/probes/a", "{bad", 400, "bad_data", "PUT bad JSON")
    expect_error("PUT", "/api/v1/probes/a", "[1]", 400, "bad_data", "PUT non-object")
    expect_error("PUT", "/api/v1/probes/a", '{"foo": 1}', 400, "bad_data",
                 "PUT unknown field", "foo")
    expect_error("PUT", "/api/v1/probes/a", '{"dmax_ms": "x"}', 422, "unprocessable",
                 "PUT dmax_ms string that is no duration", "not a duration")
    expect_error("PUT", "/api/v1/probes/a", '{"dmax_ms": [1]}', 400, "bad_data",
                 "PUT dmax_ms array")
    expect_error("PUT", "/api/v1/probes/a", '{"bins": 1.5}', 400, "bad_data",
                 "PUT bins not integer")
    expect_error("PUT", "/api/v1/probes/a", '{"enabled": 1}', 400, "bad_data",
                 "PUT enabled not boolean")
    expect_error("PUT", "/api/v1/probes/a", '{"dmax_ms": -5, "enabled": true}', 422,
                 "unprocessable", "PUT negative dMax")
    # issue 14: numbers checked whole, before narrowing (each was stored as 1 bin, or a
    # dMax no grid holds was accepted, shown enabled and never reached the wrapper)
    before = d.get("/api/v1/probes/a")
    for bad in ('{"bins": 4294967297}', '{"bins": -4294967295}', '{"bins": 9223372036854775807}',
                '{"bins": 0}', '{"bins": 4097}'):
        expect_error("PUT", "/api/v1/probes/a", bad, 422, "unprocessable", "PUT " + bad, "bins")
    for bad in ('{"dmax_ms": 1e-300, "enabled": true}', '{"dmax_ms": 1e300}',
                '{"dmax_ms": 0.0005}', '{"dmax_ms": "1e-300s"}'):
        expect_error("PUT", "/api/v1/probes/a", bad, 422, "unprocessable", "PUT " + bad,
                     "dmax_ms")
    after = d.get("/api/v1/probes/a")
    c.eq((after["enabled"], after["dmax_ms"], after["bins"]),
         (before["enabled"], before["dmax_ms"], before["bins"]), "refused PUTs changed nothing")
    expect_error("PUT", "/api/v1/probes/a", '{"bins": 99999}', 422, "unprocessable",
                 "PUT too many bins")
    expect_error("PUT", "/api/v1/probes/a",
                 '{"enabled": true, "qta": {"points": [[2, 0.1]]}}', 422, "unprocessable",
                 "PUT QTA probability 2")
    expect_error("PUT", "/api/v1/probes/a",
                 '{"qta": {"points": [[0.9, 0.1], [0.5, 0.2]]}}', 422, "unprocessable",
                 "PUT QTA decreasing")
    expect_error("PUT", "/api/v1/probes/9bad", '{"enabled": true}', 404, "not_found",
                 "PUT unknown probe without ?create=1", "create=1")
    expect_error("PUT", "/api/v1/probes/9bad?create=1", '{"enabled": true}', 422,
                 "unprocessable", "PUT invalid probe name")
    p = d.get("/api/v1/probes/a")
    c.eq((p["enabled"], p["dmax_ms"], p["bins"], p["qta"]), (False, 1024.0, 1024, None),
         "refused PUTs changed nothing")
    env = expect_error("PUT", "/api/v1/diagram", "flow = a -> ;\n", 422, "unprocessable",
                       "PUT bad diagram")
    c.check(env and env["error"].startswith("1:"), "diagram error starts with LINE:COL: %r" %
            (env and env["error"]))
    c.eq(d.get("/api/v1/diagram")["text"], "flow = a -> b;\n", "bad diagram kept the old one")

    # ---- PUT a probe ----
    st, env = d.api("PUT", "/api/v1/probes/a",
                    {"dmax_ms": 200, "bins": 100, "enabled": True,
                     "qta": {"points": [[0.5, 0.01], [0.9, 0.05]], "max_lost": 0.05}})
    c.eq((st, env["status"]), (200, "success"), "PUT probe")
    p = env["data"]
    c.eq((p["enabled"], p["dmax_ms"], p["bins"], p["parent"]), (True, 200.0, 100, "flow"),
         "PUT probe answer")
    c.near(p["bin_width_s"], 0.002, 1e-12, "200 ms over 100 bins -> 2 ms bins")
    c.eq(p["qta"], {"points": [[0.5, 0.01], [0.9, 0.05]], "max_lost": 0.05}, "PUT QTA")
    st, env = d.api("PUT", "/api/v1/probes/a", {"qta": None})
    c.eq((st, env["data"]["qta"], env["data"]["dmax_ms"]), (200, None, 200.0),
         "PUT qta null clears only the QTA")
    st, env = d.api("PUT", "/api/v1/probes/newp?create=1", {"dmax_ms": 10})
    c.eq((st, env["data"]["name"], env["data"]["enabled"]), (200, "newp", False),
         "PUT registers a new probe")
    c.eq(d.status()["enabled"], 1, "status counts enabled probes")
    m = d.metrics()
    c.eq(m.value("dqd_probe_enabled", probe="a"), 1.0, "dqd_probe_enabled")
    les = [float(l["le"]) for l, _ in m.select("dqd_duration_seconds_bucket", probe="a")
           if l["le"] != "+Inf"]
    want = [2.0 ** (j - 6) / 1000.0 for j in range(19)]
    c.check(len(les) == len(want) and all(abs(a - b) < 1e-15 for a, b in zip(les, want)),
            "buckets on the fixed power-of-two edges 15.625 us ... 4.096 s: %r" % les)

    # ---- PUT the diagram, then its calculated ΔQ at the next window ----
    st, env = d.api("PUT", "/api/v1/diagram", "flow = a -> c;\n")
    c.eq(st, 200, "PUT diagram")
    c.eq((env["data"]["path"], sorted(env["data"]["probes"])), (None, ["a", "c", "flow"]),
         "PUT diagram answer")
    c.eq(d.get("/api/v1/probes/b")["in_diagram"], False, "b left the diagram")
    c.eq(d.status()["diagram"], "(api)", "status diagram after a PUT")
    s = t.connect(d.ingest_port)
    wt = d.window_of(t.now_ns())
    e = wt * 100 * MS + 50 * MS
    s.sendall((t.legacy_line("a", e - 10 * MS, e) * 5 +
               t.legacy_line("c", e - 8 * MS, e) * 5).encode())
    q = d.wait_window("flow", wt, kind="calculated")
    if c.check(q is not None, "flow calculated after the PUT"):
        # a's 10 ms is its 2 ms bin (8, 10]; c's 8 ms is (7, 8] on 1 ms, (6, 8] on the common
        # (coarser) 2 ms grid: the sum is shared between (14, 16] and (16, 18], then spread
        # on flow's 1 ms grid. The estimate's median is 16 ms; its bound (cdf[i − lag] at
        # (i + 1)·w, what QTAs are checked on) never below the true 18 ms.
        c.near(q["quantiles"]["0.5"], 0.016, 1e-9, "flow median estimate")
        c.eq(q["lag"], 3, "flow lag: 1 for the sum, 2 more for 2 ms bins spread on 1 ms")
        w, lag, cdf = q["bin_width"], q["lag"], q["cdf"]
        bound = next(((i + 1) * w for i in range(lag, len(cdf)) if cdf[i - lag] >= 0.5), None)
        c.near(bound, 0.019, 1e-9, "flow median's bound: 19 ms, over the true 10 ms + 8 ms")
    q = d.wait_window("a", wt)
    if c.check(q is not None, "a's window"):
        c.eq((q["bins"], q["n"]), (100, 5), "a observed on its own grid")
        c.near(q["bin_width"], 0.002, 1e-12, "a observed bin width")
    p = d.get("/api/v1/probes/a")
    lw = p["last_window"]
    c.check(lw and lw["n"] == 5 and abs(lw["p50"] - 0.010) < 1e-9 and lw["lost"] == 0,
            "summary last_window: %r" % lw)
    # s is a legacy connection: dqd writes nothing to it (legacy_commands is off); a v2 one
    # that said hello takes the commands
    st, env = d.api("POST", "/api/v1/wrapper/stop", "")
    c.eq((st, env["data"]), (200, {"running": False, "sent_to": 0, "not_applied": 1}),
         "POST wrapper/stop with only a legacy connection")
    v2 = t.connect(d.ingest_port)
    v2.sendall(b"h:2;node:n;app:a\n")
    r = t.LineReader(v2)
    c.eq(r.read_until("stop_stub")[-1:], ["stop_stub"], "v2 hello: dqd is stopped")
    st, env = d.api("POST", "/api/v1/wrapper/start", "")
    c.eq((st, env["data"]), (200, {"running": True, "sent_to": 1, "not_applied": 1}),
         "POST wrapper/start")
    c.eq(r.read_lines(1), ["start_stub"], "the v2 connection gets start_stub")
    v2.close()
    s.close()
    d.stop(c)
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_api.py DQD_BINARY")
    t.run_script("test_api", body)
