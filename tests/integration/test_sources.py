#!/usr/bin/env python3
"""test_sources.py DQD: issue 23, every source behind one interface (controller/ingest/
ingest.h). With --otlp, dqd holds two sources, the TCP one (wrappers on the ingest port)
and the OTLP/HTTP receiver: both are listed in /api/v1/status ("sources", each with its
address and the instances it added), both print their /metrics families, the startup line
names both; their instances add up to instances_total. Without --otlp only the TCP source
is there: no OTLP family, no OTLP entry, and the spans route answers 404.

usage: test_sources.py DQD_BINARY
"""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000  # ns
LINES = 7  # good wrapper lines
SPANS = 5  # spans in the one OTLP request


def spans_json(n, now):
    spans = [{"traceId": "%032x" % (i + 1), "spanId": "%016x" % (i + 1), "name": "checkout",
              "startTimeUnixNano": str(now - 3 * MS), "endTimeUnixNano": str(now - MS)}
             for i in range(n)]
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
        "scopeSpans": [{"spans": spans}]}]}).encode()


def by_name(sources):
    return {s.get("name"): s for s in sources}


def with_otlp(c, wd):
    d = t.Dqd(sys.argv[1], wd, window_ms=1000, lag_ms=10000, extra=["--otlp", "127.0.0.1:0"])
    c.check(d.otlp_port > 0, "the ready line gives the OTLP port")
    sock = t.connect(d.ingest_port)
    now = t.now_ns()
    lines = "".join(t.legacy_line("db", now - 5 * MS, now - MS) for _ in range(LINES))
    sock.sendall((lines + "n:db;b:x;e:1;s:ok\n").encode())
    req = urllib.request.Request("http://127.0.0.1:%d/v1/traces" % d.otlp_port,
                                 spans_json(SPANS, now), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        c.eq(r.status, 200, "the spans are taken")
    st = d.wait_until(lambda: (lambda s: s if s["instances_total"] == LINES + SPANS
                               and s["protocol_errors_total"] == 1 else None)(d.status()),
                      timeout=10)
    c.check(st, "the lines and spans arrive (status %r)" % d.status())
    st = st or d.status()

    sources = st.get("sources", [])
    c.eq([s.get("name") for s in sources], ["tcp", "otlp"], "status lists both sources, in order")
    src = by_name(sources)
    tcp, otlp = src.get("tcp", {}), src.get("otlp", {})
    c.eq(tcp.get("listen"), "127.0.0.1:%d" % d.ingest_port, "the TCP source's address")
    c.eq(st.get("ingest"), tcp.get("listen"), "status.ingest is the TCP source's address")
    c.eq(otlp.get("listen"), "127.0.0.1:%d" % d.otlp_port, "the OTLP receiver's address")
    c.eq(tcp.get("instances"), LINES, "instances the TCP source added")
    c.eq(tcp.get("connections"), 1, "one wrapper connected")
    c.eq(tcp.get("connections_total"), 1, "one wrapper connection accepted")
    c.eq(otlp.get("instances"), SPANS, "instances (spans accepted) the OTLP receiver added")
    c.eq(otlp.get("services"), 1, "one service")
    c.eq(otlp.get("requests"), 1, "one OTLP request")
    c.eq(sum(s.get("instances", 0) for s in sources), st["instances_total"],
         "the sources' instances add up to instances_total")

    text = d.metrics_text()
    m = t.parse_prometheus(text)
    c.eq(m.errors, [], "the exposition parses")
    t.promtool_check(c, text, "/metrics with two sources")
    # the TCP source's families
    c.eq(m.value("dqd_connections_total"), 1.0, "TCP: dqd_connections_total")
    c.eq(sum(v for _, v in m.select("dqd_protocol_errors_total")), 1.0,
         "TCP: the bad line in dqd_protocol_errors_total")
    c.eq(m.value("dqd_ingest_connections_closed_total", reason="rejected"), 0.0,
         "TCP: dqd_ingest_connections_closed_total")
    c.eq(m.value("dqd_ingest_connections_reset_total"), 0.0, "TCP: no reset")
    # the OTLP receiver's
    c.eq(m.value("dqd_otlp_spans_total", result="accepted"), float(SPANS), "OTLP: spans accepted")
    c.eq(m.value("dqd_otlp_requests_total", code="200"), 1.0, "OTLP: one 200")
    c.eq(m.value("dqd_otlp_services"), 1.0, "OTLP: one service")
    # and the core's, over both
    c.eq(m.value("dqd_ingest_instances_total"), float(LINES + SPANS), "instances of both sources")

    spans = d.get("/api/v1/otlp/spans")
    c.eq(len(spans), SPANS, "the spans route reaches the receiver among the sources")
    sock.close()
    d.stop(c)
    err = d.stderr()
    c.check("ingest on 127.0.0.1:%d, HTTP on 127.0.0.1:%d, OTLP on 127.0.0.1:%d, store " %
            (d.ingest_port, d.http_port, d.otlp_port) in err,
            "the startup line names both sources:\n%s" % err[:600])


def without_otlp(c, wd):
    d = t.Dqd(sys.argv[1], wd)
    st = d.status()
    c.eq([s.get("name") for s in st.get("sources", [])], ["tcp"], "only the TCP source")
    m = t.parse_prometheus(d.metrics_text())
    c.check(not [n for n, _, _ in m.samples if n.startswith("dqd_otlp_")],
            "no OTLP family without --otlp")
    c.eq(m.value("dqd_connections_total"), 0.0, "the TCP source's families are there")
    status, _ = d.request("GET", "/api/v1/otlp/spans")
    c.eq(status, 404, "the spans route without a receiver")
    d.stop(c)
    err = d.stderr()
    c.check("ingest on 127.0.0.1:%d, HTTP on 127.0.0.1:%d, store " %
            (d.ingest_port, d.http_port) in err, "the startup line without OTLP:\n%s" % err[:600])


def body(c):
    wd = t.make_workdir("dqd-it-sources-")
    try:
        for sub in ("a", "b"):
            os.makedirs(os.path.join(wd, sub))
        with_otlp(c, os.path.join(wd, "a"))
        without_otlp(c, os.path.join(wd, "b"))
    finally:
        t.remove_workdir(wd)


if __name__ == "__main__":
    t.run_script("test_sources", body)
