#!/usr/bin/env python3
"""test_otlp_http.py DQD: issue 17, the OTLP/HTTP receiver over real sockets. Keep-alive
(several requests on one connection), chunked bodies, gzip; the answers as OTLP/HTTP
specifies them: 200 with partial_success, 400 for a malformed, truncated or wrongly typed
body (a google.rpc.Status in the request's encoding), 413 for a body over otlp_max_body and
for a gzip bomb, 415 for another content type or encoding, 429 with Retry-After above
otlp_max_spans_per_second, 404/405 elsewhere; every answer counted in /metrics (promtool
checks the exposition). The token rule: bound beyond loopback, no token is 403, a token
needs `Authorization: Bearer`."""
import gzip
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from dqdtest import Dqd, connect, legacy_line, run_script  # noqa: E402

DQD = sys.argv[1]


def spans_json(n, name="op", service="svc", status=0, attrs=None):
    now = time.time_ns()
    spans = [{"traceId": "%032x" % (i + 1), "spanId": "%016x" % (i + 1), "name": name,
              "startTimeUnixNano": str(now - 2000000), "endTimeUnixNano": str(now),
              "status": {"code": status},
              "attributes": [{"key": k, "value": {"stringValue": v}}
                             for k, v in (attrs or {}).items()]} for i in range(n)]
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"spans": spans}]}]}).encode()


def post(conn, body, ctype="application/json", headers=None, chunked=False):
    h = {"Content-Type": ctype}
    h.update(headers or {})
    if chunked:
        parts = [body[i:i + 100] for i in range(0, len(body), 100)]
        conn.request("POST", "/v1/traces", body=iter(parts), headers=h, encode_chunked=True)
    else:
        conn.request("POST", "/v1/traces", body=body, headers=h)
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), r.read()


def body(c):
    work = tempfile.mkdtemp(prefix="dqd-otlp-http-")
    d = Dqd(DQD, work, window_ms=1000, lag_ms=1000,
            extra=["--otlp", "127.0.0.1:0", "--otlp-max-body", "65536"])
    conn = http.client.HTTPConnection("127.0.0.1", d.otlp_port, timeout=10)
    st, h, b = post(conn, spans_json(10))
    c.eq(st, 200, "JSON: 200")
    c.eq(b, b"{}", "all accepted: an empty response")
    sock = conn.sock
    st, h, b = post(conn, spans_json(10), chunked=True)
    c.eq(st, 200, "a chunked body: 200")
    st, h, b = post(conn, gzip.compress(spans_json(10)), headers={"Content-Encoding": "gzip"})
    c.eq(st, 200, "a gzip body: 200")
    c.check(conn.sock is sock, "keep-alive: three requests on one connection")
    # partial success: an invalid span among valid ones
    doc = json.loads(spans_json(3))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = ""
    st, h, b = post(conn, json.dumps(doc).encode())
    c.eq(st, 200, "partial success: 200")
    ps = json.loads(b).get("partialSuccess", {})
    c.eq(ps.get("rejectedSpans"), "1", "rejectedSpans, a 64-bit integer as a string")
    c.check("span_id" in ps.get("errorMessage", ""), "errorMessage says why: %r" % ps)
    # 400: malformed, truncated, wrongly typed
    good = spans_json(2)
    for bad, what in ((b"{\"resourceSpans\":", "truncated JSON"),
                      (b"{\"resourceSpans\":{}}", "wrongly typed JSON"),
                      (good[:len(good) // 2], "JSON cut in half")):
        st, h, b = post(conn, bad)
        c.eq(st, 400, "%s: 400" % what)
        c.check(h.get("Content-Type", "").startswith("application/json") and
                json.loads(b).get("code") == 3, "%s: a JSON Status with code 3: %r" % (what, b))
    st, h, b = post(conn, b"\x0a\x7f\x0a\x01", ctype="application/x-protobuf")
    c.eq(st, 400, "truncated protobuf: 400")
    c.eq(h.get("Content-Type"), "application/x-protobuf", "the Status in protobuf")
    c.check(b"protobuf" in b, "the Status's message names the problem")
    st, h, b = post(conn, b"\x08\x01", ctype="application/x-protobuf")
    c.eq(st, 400, "wrongly typed protobuf (a message field as a varint): 400")
    st, h, b = post(conn, b"\x1f\x8b\x08\x00garbage", headers={"Content-Encoding": "gzip"})
    c.eq(st, 400, "a corrupt gzip body: 400")
    # 415
    st, h, b = post(conn, b"hello", ctype="text/plain")
    c.eq(st, 415, "text/plain: 415")
    st, h, b = post(conn, spans_json(1), headers={"Content-Encoding": "br"})
    c.eq(st, 415, "Content-Encoding br: 415")
    # 413: a gzip bomb (1 MiB of zeros, 1 KiB on the wire) against the 64 KiB cap
    st, h, b = post(conn, gzip.compress(b"\0" * (1 << 20)), headers={"Content-Encoding": "gzip"})
    c.eq(st, 413, "a gzip bomb: 413")
    c.check(b"inflates to more than 65536 bytes" in b, "says what the cap is: %r" % b[:200])
    # 404, 405
    conn.request("POST", "/v1/metrics", body=b"{}", headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    c.eq(r.status, 404, "another path: 404")
    conn.request("GET", "/v1/traces")
    r = conn.getresponse()
    r.read()
    c.eq(r.status, 405, "GET: 405")
    c.eq(r.getheader("Allow"), "POST", "405 says Allow: POST")
    # 413 from the HTTP layer: a raw body over the cap (the connection is closed after it)
    big = http.client.HTTPConnection("127.0.0.1", d.otlp_port, timeout=10)
    try:
        st, h, b = post(big, b"{" + b" " * 70000 + b"}")
        c.eq(st, 413, "a body over otlp_max_body: 413")
        c.eq(json.loads(b).get("code"), 11, "a Status from the HTTP layer too: %r" % b)
    except (ConnectionError, http.client.HTTPException) as e:
        c.check(False, "the oversized body was not answered: %r" % e)
    conn.close()
    time.sleep(3.5)
    m = d.metrics_text()
    metrics = d.metrics()
    c.eq(metrics.errors, [], "the exposition parses")

    c.eq(metrics.value("dqd_otlp_requests_total", code="200"), 4.0, "200s counted")
    c.eq(metrics.value("dqd_otlp_requests_total", code="400"), 6.0, "400s counted")
    c.eq(metrics.value("dqd_otlp_requests_total", code="413"), 1.0, "the bomb's 413 counted")
    c.eq(metrics.value("dqd_otlp_requests_total", code="415"), 2.0, "415s counted")
    c.eq(metrics.value("dqd_otlp_requests_total", code="429"), 0.0, "no 429 without a budget")
    c.eq(metrics.value("dqd_otlp_requests_total", code="other"), 2.0, "404 and 405 counted")
    c.eq(metrics.value("dqd_otlp_http_errors_total"), 1.0, "the HTTP layer's 413 counted")
    c.eq(metrics.value("dqd_otlp_spans_total", result="accepted"), 32.0, "spans accepted")
    c.eq(metrics.value("dqd_otlp_spans_total", result="invalid"), 1.0, "the invalid span counted")
    probes = {p["name"]: p for p in d.get("/api/v1/probes")}
    c.eq(probes.get("op", {}).get("instances", {}).get("ok"), 32, "the spans are instances of op")
    promtool = shutil.which("promtool")
    if promtool:
        p = subprocess.run([promtool, "check", "metrics"], input=m.encode(), capture_output=True)
        c.check(b"error" not in p.stdout + p.stderr and p.returncode in (0, 3),
                "promtool accepts /metrics: %s" % (p.stdout + p.stderr).decode()[-500:])
    else:
        c.check(False, "promtool is missing (make deps installs prometheus)")
    d.stop(c)
    # 429: above the span budget (100/s, a bucket one second deep): a batch of 150 gets in
    # on a full bucket, the next one right after is refused with Retry-After
    d6 = Dqd(DQD, tempfile.mkdtemp(prefix="dqd-otlp-429-"), window_ms=1000, lag_ms=1000,
             extra=["--otlp", "127.0.0.1:0", "--otlp-max-spans-per-second", "100"])
    conn = http.client.HTTPConnection("127.0.0.1", d6.otlp_port, timeout=10)
    st, h, b = post(conn, spans_json(150))
    c.eq(st, 200, "a batch larger than the bucket gets in when the bucket is full")
    st, h, b = post(conn, spans_json(150))
    c.eq(st, 429, "the next batch at once: 429")
    c.check(int(h.get("Retry-After", "0")) >= 1, "429 has Retry-After: %r" % h)
    c.check(b"otlp_max_spans_per_second" in b, "the Status names the setting: %r" % b)
    m6 = d6.metrics()
    c.eq(m6.value("dqd_otlp_requests_total", code="429"), 1.0, "429 counted")
    c.eq(m6.value("dqd_otlp_spans_total", result="throttled"), 150.0, "throttled spans counted")
    c.eq(m6.value("dqd_otlp_spans_total", result="accepted"), 150.0, "the first batch accepted")
    d6.stop(c)
    # the token rule beyond loopback
    d2 = Dqd(DQD, tempfile.mkdtemp(prefix="dqd-otlp-tok-"), window_ms=1000, lag_ms=1000,
             extra=["--otlp", "0.0.0.0:0"])
    conn = http.client.HTTPConnection("127.0.0.1", d2.otlp_port, timeout=10)
    st, h, b = post(conn, spans_json(1))
    c.eq(st, 403, "beyond loopback without an api_token: 403")
    c.check(b"api_token" in b, "says what is needed")
    d2.stop(c)
    wd3 = tempfile.mkdtemp(prefix="dqd-otlp-tok-")
    token_path = os.path.join(wd3, "token")  # the token comes from a file, never argv
    with open(token_path, "w") as f:
        f.write("s3cret\n")
    os.chmod(token_path, 0o600)
    d3 = Dqd(DQD, wd3, window_ms=1000, lag_ms=1000,
             extra=["--otlp", "0.0.0.0:0", "--api-token", token_path])
    conn = http.client.HTTPConnection("127.0.0.1", d3.otlp_port, timeout=10)
    st, h, b = post(conn, spans_json(1))
    c.eq(st, 401, "without the bearer token: 401")
    c.eq(h.get("WWW-Authenticate"), "Bearer", "401 asks for a Bearer token")
    st, h, b = post(conn, spans_json(1), headers={"Authorization": "Bearer wrong"})
    c.eq(st, 401, "a wrong token: 401")
    st, h, b = post(conn, spans_json(1), headers={"Authorization": "Bearer s3cret"})
    c.eq(st, 200, "the api_token as a bearer token: 200")
    d3.stop(c)
    # the otlp_probes table of the config file
    work4 = tempfile.mkdtemp(prefix="dqd-otlp-map-")
    cfg = os.path.join(work4, "dqd.json")
    with open(cfg, "w") as f:
        json.dump({"otlp_probes": [
            {"service": "billing", "probe": "billing_all"},
            {"span": "GET /cart*", "probe": "cart"},
            {"attributes": {"db.system": "postgres"}, "probe": "pg"}]}, f)
    d4 = Dqd(DQD, work4, window_ms=1000, lag_ms=1000, config=cfg, extra=["--otlp", "127.0.0.1:0"])
    conn = http.client.HTTPConnection("127.0.0.1", d4.otlp_port, timeout=10)
    for n, name, service, attrs in ((2, "charge", "billing", None), (3, "GET /cart/7", "shop", None),
                                    (4, "SELECT", "shop", {"db.system": "postgres"}),
                                    (5, "GET /user/:id", "shop", None)):
        st, h, b = post(conn, spans_json(n, name=name, service=service, attrs=attrs))
        c.eq(st, 200, "%s from %s: 200" % (name, service))
    probes = {p["name"]: p["instances"]["ok"] for p in d4.get("/api/v1/probes")}
    c.eq(probes, {"billing_all": 2, "cart": 3, "pg": 4, "GET__user__id": 5},
         "spans mapped by service, span name prefix, attribute, and by default")
    d4.stop(c)
    # each source its own lateness: with lag 1 s and otlp_lag 10 s, a line 3 s late is late,
    # a span 3 s late lands in its window
    d5 = Dqd(DQD, tempfile.mkdtemp(prefix="dqd-otlp-lag-"), window_ms=1000, lag_ms=1000,
             extra=["--otlp", "127.0.0.1:0"])
    now = time.time_ns()
    sock = connect(d5.ingest_port)
    sock.sendall((legacy_line("line_late", now - 3_200_000_000, now - 3_000_000_000) +
                  legacy_line("line_now", now - 200_000_000, now)).encode())
    doc = json.loads(spans_json(1, name="span_late"))
    sp = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    sp["startTimeUnixNano"], sp["endTimeUnixNano"] = str(now - 3_200_000_000), str(now - 3_000_000_000)
    conn = http.client.HTTPConnection("127.0.0.1", d5.otlp_port, timeout=10)
    st, h, b = post(conn, json.dumps(doc).encode())
    c.eq((st, b), (200, b"{}"), "a span 3 s late is accepted")
    d5.wait_until(lambda: d5.metrics().value("dqd_ingest_rejected_total", reason="late") == 1.0)
    probes = {p["name"]: p["instances"]["ok"] for p in d5.get("/api/v1/probes")}
    c.eq(probes.get("span_late"), 1, "the late span is an instance")
    c.eq(probes.get("line_now"), 1, "the timely line is an instance")
    c.eq(probes.get("line_late", 0), 0, "the line 3 s late is not")
    c.eq(d5.metrics().value("dqd_ingest_rejected_total", reason="late"), 1.0,
         "the line counted late")
    sock.close()
    d5.stop(c)


run_script("otlp_http", body)
