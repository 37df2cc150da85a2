#!/usr/bin/env python3
"""test_otlp_sdk.py DQD NODE_DIR: issue 17, acceptance 1. The real OpenTelemetry JS SDK
(tests/otlp/package.json, installed by `npm ci`) feeds dqd over OTLP/HTTP with the SDK's
default batch settings: 1000 checkout traces (3000 spans) over OTLP/JSON and 1000 over
protobuf with gzip, at the same time, one payment in twenty with status ERROR. Every span
must land in a window (none late, none rejected), the failures as failures, in the real
SQLite store's window rows; the diagram `checkout = payment -> stock` must get its
calculated ΔQ, matching the observed one. The probes are stored (diagram probes) but not
as enabled: OTLP makes a probe observed, not enabled (issue 26). (The feeders keep each
trace in one window, as FEED_WINDOW_MS asks: a window's checkouts and its payments and
stocks are then the same traces, and their means differ by the gaps between the spans and
the grid, not by which traces a window boundary cut.)"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from dqdtest import Dqd, run_script  # noqa: E402

DQD = sys.argv[1]
NODE_DIR = sys.argv[2]
TRACES = 1000
WINDOW_MS = 1000


def feeder(url, protocol, service):
    env = dict(os.environ, FEED_WINDOW_MS=str(WINDOW_MS))
    return subprocess.Popen(["node", os.path.join(NODE_DIR, "feed.js"), url, protocol, "checkout",
                             service, str(TRACES)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=NODE_DIR, env=env)


def body(c):
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@opentelemetry")):
        c.check(False, "the OpenTelemetry SDK is not installed: run `make deps` (npm ci in %s)"
                % NODE_DIR)
        return
    work = tempfile.mkdtemp(prefix="dqd-otlp-sdk-")
    diagram = os.path.join(work, "shop.dq")
    with open(diagram, "w") as f:
        f.write("checkout = payment -> stock;\n")
    # the documented defaults: otlp_lag 10 s, window 1 s, lag 1 s for the line protocol
    d = Dqd(DQD, work, window_ms=WINDOW_MS, lag_ms=1000, diagram=diagram,
            extra=["--otlp", "127.0.0.1:0"])
    c.check(d.otlp_port > 0, "dqd reports its OTLP port")
    url = "http://127.0.0.1:%d/v1/traces" % d.otlp_port
    t0 = time.time()
    runs = [feeder(url, "json", "shop-json"), feeder(url, "proto", "shop-proto")]
    made = {}
    total = 0
    for p in runs:
        out, err = p.communicate(timeout=120)
        c.eq(p.returncode, 0, "the SDK feeder exits 0 (stderr: %s)" % err.decode()[-500:])
        res = json.loads(out.decode().strip().splitlines()[-1])
        c.eq(res["exportErrors"], 0, "the SDK's exports all succeeded")
        total += res["total"]
        for probe, n in res["made"].items():
            m = made.setdefault(probe, {"ok": 0, "fa": 0})
            m["ok"] += n["ok"]
            m["fa"] += n["fa"]
    c.eq(total, 6 * TRACES, "spans the SDK made")
    c.check(time.time() - t0 > 6, "the feeders ran past the SDK's 5 s export interval")
    # the last spans' windows close otlp_lag (10 s) after their end
    time.sleep(12.5)
    metrics = d.metrics()
    c.eq(metrics.errors, [], "the exposition parses")

    c.eq(metrics.value("dqd_otlp_spans_total", result="accepted"), float(total), "spans accepted")
    for r in ("late", "invalid", "future", "throttled"):
        c.eq(metrics.value("dqd_otlp_spans_total", result=r), 0.0, "spans %s" % r)
    c.eq(metrics.value("dqd_ingest_rejected_total", reason="late"), 0.0, "no instance late")
    c.check(metrics.value("dqd_otlp_requests_total", code="200") >= 12,
            "several export requests (batches of at most 512 spans)")
    c.eq(metrics.value("dqd_otlp_services"), 2.0, "two services")
    # the calculated ΔQ of checkout, window by window, against the observed one
    compared = 0
    for k in range(0, 40):
        st, obs = d.api("GET", "/api/v1/probes/checkout/dq?kind=observed&window=%d" % k)
        if st != 200 or not obs["data"]["n"]:
            continue
        st, calc = d.api("GET", "/api/v1/probes/checkout/dq?kind=calculated&window=%d" % k)
        c.eq(st, 200, "checkout has a calculated ΔQ in window %d" % k)
        if st != 200:
            continue
        o, q = obs["data"], calc["data"]
        c.eq(q["window"], o["window"], "same window")
        if o["n"] >= 50 and q["mean"] is not None:
            compared += 1
            # checkout = payment + stock + 0.5 ms of gaps between the spans; the same traces
            # on both sides, so what is left is the grid's (each mean from its bins'
            # middles): within two bins
            c.near(q["mean"], o["mean"] - 0.0005, 2 * o["bin_width"],
                   "window %d: calculated mean" % k)
            c.near(q["lost"], o["lost"], 0.04, "window %d: calculated lost mass" % k)
    c.check(compared >= 3, "calculated and observed ΔQs compared in %d windows" % compared)
    d.stop(c)
    # every span in a window row of the real store, the failures as failures
    db = sqlite3.connect(d.db)
    for probe, n in sorted(made.items()):
        row = db.execute("SELECT sum(n_ok), sum(n_fa), sum(n_to) FROM windows WHERE probe = ? "
                         "AND kind = 'observed'", (probe,)).fetchone()
        c.eq(list(row), [n["ok"], n["fa"], 0], "%s: ok, failed, timed out in windows" % probe)
        en = db.execute("SELECT enabled, always_on FROM probes WHERE name = ?", (probe,)).fetchone()
        c.eq(list(en or []), [0, 0], "%s: stored (a diagram probe), observed but not stored as "
             "enabled (issue 26: OTLP feeds it, nobody enabled it)" % probe)
    db.close()


run_script("otlp_sdk", body)
