"""Webhooks (issue 6): dqd POSTs trigger and verdict events to a local HTTP receiver.

The receiver is down when the trigger fires (dqd keeps the event and retries), comes up
later and gets it; a second receiver answers 500 once and then 200 (retried, delivered
once); the trigger clears and that event arrives too. Usage: test_webhook.py DQD
"""

import http.server
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dqdtest import Dqd, connect, legacy_line, make_workdir, now_ns, remove_workdir, run_script


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Receiver:
    """A tiny HTTP server that records POST bodies; fail_first answers 500 that many times."""

    def __init__(self, port, fail_first=0):
        self.events = []
        self.attempts = 0
        self.fail_left = fail_first
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                rec.attempts += 1
                if rec.fail_left > 0:
                    rec.fail_left -= 1
                    self.send_response(500)
                    self.end_headers()
                    return
                rec.events.append((self.headers.get("Content-Type"), json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def names(self):
        return [e[1]["event"] for e in self.events]


def body(c):
    dqd_bin = sys.argv[1]
    work = make_workdir("dqd-webhook-")
    down_port, flaky_port = free_port(), free_port()
    cfg = os.path.join(work, "dqd.json")
    with open(cfg, "w") as f:
        json.dump({
            "webhook_retries": 8,
            "webhooks": [
                {"url": "http://127.0.0.1:%d/hook" % down_port},
                {"url": "http://127.0.0.1:%d/hook" % flaky_port, "events": ["trigger_fired"]},
            ],
            "triggers": [{"probe": "front", "kind": "load", "threshold": 20,
                          "fire_after": 1, "clear_after": 2}],
        }, f)
    flaky = Receiver(flaky_port, fail_first=1)
    d = Dqd(dqd_bin, work, window_ms=100, lag_ms=100, config=cfg)
    s = connect(d.ingest_port)
    # 60 instances in one window: load 60 > 20, the trigger fires at that window's close
    t = now_ns()
    s.sendall("".join(legacy_line("front", t - 5_000_000, t) for _ in range(60)).encode())
    c.check(d.wait_until(lambda: flaky.names() == ["trigger_fired"], timeout=8),
            "the flaky receiver got trigger_fired after one 500 (got %r)" % flaky.names())
    c.check(flaky.attempts == 2, "one retry after the 500 (attempts %d)" % flaky.attempts)
    ctype, ev = flaky.events[0] if flaky.events else (None, {})
    c.eq(ctype, "application/json", "Content-Type of the POST")
    c.eq(ev.get("data", {}).get("probe"), "front", "event data names the probe")
    c.eq(ev.get("data", {}).get("kind"), "load", "event data names the kind")
    c.check(isinstance(ev.get("time"), float) and abs(ev["time"] - time.time()) < 60,
            "event time is now")
    # the first receiver was down all along; it comes up now and must still get the event
    time.sleep(0.5)
    down = Receiver(down_port)
    c.check(d.wait_until(lambda: "trigger_fired" in down.names(), timeout=15),
            "the receiver that was down got trigger_fired once it came up (got %r)" %
            down.names())
    # quiet windows: a few instances per window, under the threshold; clears after 2
    for _ in range(8):
        t = now_ns()
        s.sendall("".join(legacy_line("front", t - 1_000_000, t) for _ in range(3)).encode())
        time.sleep(0.1)
    c.check(d.wait_until(lambda: "trigger_cleared" in down.names(), timeout=15),
            "trigger_cleared delivered (got %r)" % down.names())
    c.eq(flaky.names(), ["trigger_fired"], "the flaky receiver subscribed to trigger_fired only")
    c.eq(down.names().count("trigger_fired"), 1, "no duplicate delivery")
    st = d.get("/api/v1/triggers")
    c.check(len(st) == 1 and st[0]["kind"] == "load" and st[0]["fired"] is False,
            "the trigger is stored and clear: %r" % st)
    m = d.metrics()
    c.check(m.value("dqd_webhook_events_total", outcome="delivered") >= 3 and
            m.value("dqd_webhook_retries_total") >= 1,
            "deliveries and retries in /metrics")
    s.close()
    d.stop(c)
    flaky.stop()
    down.stop()
    # issue 14: a receiver that never answers, no retries, a queue of one: what is given up
    # and what is dropped is counted in /metrics and logged
    mute = socket.socket()  # listens, never answers: each POST waits for its timeout
    mute.bind(("127.0.0.1", 0))
    mute.listen(64)
    with open(cfg, "w") as f:
        json.dump({"webhook_retries": 0, "webhook_queue": 1, "webhook_timeout": 1000,
                   "webhooks": [{"url": "http://127.0.0.1:%d/hook" % mute.getsockname()[1]}],
                   "triggers": [{"probe": "front", "kind": "load", "threshold": 20,
                                 "fire_after": 1, "clear_after": 1}]}, f)
    d = Dqd(dqd_bin, work, window_ms=100, lag_ms=100, config=cfg)
    s = connect(d.ingest_port)
    for k in range(12):  # fired and cleared by turns: an event per window or so
        t = now_ns()
        n = 60 if k % 2 == 0 else 2
        s.sendall("".join(legacy_line("front", t - 1_000_000, t) for _ in range(n)).encode())
        time.sleep(0.12)
    c.check(d.wait_until(lambda: (d.metrics().value("dqd_webhook_events_total",
                                                    outcome="failed") or 0) >= 1, timeout=10),
            "a webhook event given up is counted")
    m = d.metrics()
    c.check(m.value("dqd_webhook_events_total", outcome="dropped") >= 1,
            "events pushed out of the full queue are counted: %r"
            % m.value("dqd_webhook_events_total", outcome="dropped"))
    s.close()
    d.stop(c)
    log = d.stderr()
    c.check("webhook 1: an event given up" in log, "the log says an event was given up")
    c.check("queue full" in log, "the log says events were dropped")
    mute.close()
    remove_workdir(work)


run_script("webhook", body)
