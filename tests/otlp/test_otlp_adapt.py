#!/usr/bin/env python3
"""test_otlp_adapt.py DQD NODE_DIR: issue 17, OTLP probes and the adaptive loop. Spans from
the real JS SDK feed checkout = payment -> stock (one payment in twenty fails) while
`POST /api/v1/diagnose` asks about checkout, under a probe budget of one enabled probe.
OTLP carries no commands: the probes must be always observed (enabled and always on from
their first span), cost nothing against the budget (no `pause`), need no enable (no
`enable`/`expand` hypothesis, no command), and the search must decide from their windows
at once: localized at payment. When the spans stop, the probes go silent after
otlp_silence, not before."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from dqdtest import Dqd, run_script  # noqa: E402

DQD, NODE_DIR = sys.argv[1], sys.argv[2]


def body(c):
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@opentelemetry")):
        c.check(False, "the OpenTelemetry SDK is not installed: run `make deps`")
        return
    work = tempfile.mkdtemp(prefix="dqd-otlp-adapt-")
    diagram = os.path.join(work, "shop.dq")
    with open(diagram, "w") as f:
        f.write("checkout = payment -> stock;\n")
    d = Dqd(DQD, work, window_ms=1000, lag_ms=1000, diagram=diagram,
            extra=["--otlp", "127.0.0.1:0", "--otlp-lag", "2000", "--otlp-silence", "4000",
                   "--max-enabled-probes", "1"])
    url = "http://127.0.0.1:%d/v1/traces" % d.otlp_port
    env = dict(os.environ, FEED_LINGER_MS="0")
    feeder = subprocess.Popen(["node", os.path.join(NODE_DIR, "feed.js"), url, "proto",
                               "checkout", "shop", "6000"], cwd=NODE_DIR, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(6)
    probes = {p["name"]: p for p in d.get("/api/v1/probes")}
    for name in ("checkout", "payment", "stock"):
        c.eq(probes.get(name, {}).get("enabled"), True, "%s enabled by its first span" % name)
    st, env_ = d.api("POST", "/api/v1/diagnose", {"node": "checkout", "requested_by": "test"})
    c.eq(st, 200, "diagnose opens")
    inv = env_["data"]["investigation"]
    detail = None
    for _ in range(40):
        detail = d.get("/api/v1/investigations/%d" % inv)
        if not detail["open"]:
            break
        time.sleep(0.5)
    c.eq(detail["verdict"], "localized", "a verdict while the spans flow")
    c.eq(detail["verdict_node"], "payment", "localized at payment")
    actions = [h["action"] for h in detail["hypotheses"]]
    for a in ("enable", "expand", "pause"):
        c.check(a not in actions, "no %s hypothesis: %r" % (a, actions))
    c.eq(detail["commands"], [], "no command for probes OTLP feeds")
    out, err = feeder.communicate(timeout=120)
    c.eq(feeder.returncode, 0, "the feeder exits 0: %s" % err.decode()[-300:])
    # silent only once otlp_silence (4 s) passed without a span, and windows close 2 s late
    time.sleep(3.0)
    silent = [s["probe"] for s in d.status().get("silent", [])]
    c.check("payment" not in silent, "not silent 3 s after the last span: %r" % silent)
    time.sleep(6.0)
    silent = [s["probe"] for s in d.status().get("silent", [])]
    c.check("payment" in silent and "checkout" in silent,
            "silent after otlp_silence without spans: %r" % silent)
    d.stop(c)


run_script("otlp_adapt", body)
