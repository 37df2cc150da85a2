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
    names = ("checkout", "payment", "stock")

    def probes():
        return {p["name"]: p for p in d.get("/api/v1/probes")}
    def windows_with_spans(probe):
        return sum(1 for back in range(8) if ((d.dq(probe, window=back) or {}).get("n") or 0))
    # the first batches are exported 0.5 s or so after the feeder starts (512 spans), and
    # windows close 2 s after their end: the diagnose comes once checkout has 3 windows of
    # statistics (min_windows is 2), or its investigation would first observe it
    d.wait_until(lambda: all(probes().get(n, {}).get("enabled") for n in names) and
                 windows_with_spans("checkout") >= 3, timeout=60, step=0.2)
    for name in names:
        c.eq(probes().get(name, {}).get("enabled"), True, "%s enabled by its first span" % name)
    st, env_ = d.api("POST", "/api/v1/diagnose", {"node": "checkout", "requested_by": "test"})
    c.eq(st, 200, "diagnose opens")
    inv = env_["data"]["investigation"]
    detail = d.wait_until(lambda: (lambda x: x if not x["open"] else None)(
        d.get("/api/v1/investigations/%d" % inv)), timeout=60, step=0.5) or \
        d.get("/api/v1/investigations/%d" % inv)
    c.eq(detail["verdict"], "localized", "a verdict while the spans flow")
    c.eq(detail["verdict_node"], "payment", "localized at payment")
    actions = [h["action"] for h in detail["hypotheses"]]
    for a in ("enable", "expand", "pause"):
        c.check(a not in actions, "no %s hypothesis: %r" % (a, actions))
    c.eq(detail["commands"], [], "no command for probes OTLP feeds")
    out, err = feeder.communicate(timeout=120)
    c.eq(feeder.returncode, 0, "the feeder exits 0: %s" % err.decode()[-300:])
    # silent once otlp_silence (4 s) passed without a span (judged as windows close, 2 s
    # after their end), not before: the first window without data starts 4 s after the
    # start of the last window with spans; the silence is dated from the last span's end
    def silent():
        return {s["probe"]: s for s in d.status().get("silent", [])}
    d.wait_until(lambda: "payment" in silent() and "checkout" in silent(), timeout=60, step=0.2)
    st = d.status()  # the silence and the newest closed window, as of one moment
    now = {s["probe"]: s for s in st.get("silent", [])}
    c.check("payment" in now and "checkout" in now,
            "silent after otlp_silence without spans: %r" % sorted(now))
    last = None
    for back in range(40):
        dq = d.dq("payment", window=back)
        if dq is None:
            break
        if dq["n"]:
            last = dq["window"]["start"]
            break
    pay = now.get("payment") or {}
    since = pay.get("since_ns", 0) / 1e9
    c.check(last is not None and last <= since <= last + 1.0,
            "payment silent since its last span's end, in its last window with spans (%r): %r"
            % (last, since))
    # every window of 1 s from last + 4 s to the newest closed one is silent, none before
    newest = (st.get("last_window") or {}).get("start", 0)
    want = round(newest - (last + 4.0)) + 1 if last is not None else -1
    c.eq(pay.get("windows"), want,
         "payment's silent windows: from 4 s after the start of its last window with spans "
         "(%r) to the newest closed one (%r)" % (last, newest))
    d.stop(c)


run_script("otlp_adapt", body)
