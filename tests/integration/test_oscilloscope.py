"""Issue 25, items 1 and 2: the oscilloscope's unmodified wrapper (fnieri/dqsd_otel) works.

The wrapper is spoken exactly as it behaves (oscilloscope.py): a command listener dqd dials
(`wrappers`) and a data connection to the ingest port that it never reads and on which it
says nothing until a probe is enabled.

1. A quiet legacy connection is kept: the data connection stays silent past the junk timer
   dqd used to have (10 s, with a margin of twenty times what closing a junk connection
   took in this run), then the wrapper is enabled and sends 10,000 spans: all counted, on
   the same connection. A connection whose first 16 lines are junk is closed at once; one
   with 15 bad lines and then a good one is kept. At the connection cap the connection
   silent longest is evicted (logged, counted), never one that sent within the last second.
2. One wrapper, two connections: the data connection and the command link from the same
   host are one wrapper in the status (`dqctl status` prints them as one), in the command
   reports and `why`; `dqctl enable` and `set-timeout` exit 0 and say "sent to the
   wrapper's command listener"; `disable` (which a legacy wrapper cannot do) is not applied
   on one wrapper link, not two. Two legacy wrappers on one host with two listeners cannot
   be paired: dqd says so (ambiguous, exit 1) and what was sent where, and guesses nothing.
Usage: test_oscilloscope.py DQD DQCTL"""

import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402
from oscilloscope import OscilloscopeWrapper  # noqa: E402

MS = 1000000
OLD_JUNK_TIMEOUT_S = 10.0  # the removed ingest_junk_timeout's default
JUNK_LINES = 16  # INGEST_JUNK_LINES (controller/ingest/ingest.h)
EVICT_MIN_SILENT_S = 1.0  # INGEST_EVICT_MIN_SILENT_MS (controller/ingest/ingest.h)
SPANS = 10000


def closed_by_peer(sock, timeout):
    """True when the peer closed sock (EOF or reset) within timeout."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def links(d, kind=None):
    return [w for w in d.status()["wrappers"] if kind is None or w["kind"] == kind]


def junk_phase(c, d):
    """A connection whose first 16 lines are bad is closed at once; returns how long that
    took (the margin of the quiet phase is measured from it)."""
    m0 = d.metrics()
    j0 = m0.value("dqd_ingest_connections_closed_total", reason="junk")
    n0 = d.status()["instances_total"]
    almost = t.connect(d.ingest_port)
    now = t.now_ns()
    almost.sendall(b"garbage\n" * (JUNK_LINES - 1) + t.legacy_line("good", now - MS, now).encode())
    c.check(d.wait_until(lambda: d.status()["instances_total"] == n0 + 1),
            "15 bad lines and then a good one: the good one counts")
    junk = t.connect(d.ingest_port)
    t0 = time.monotonic()
    junk.sendall(b"garbage\n" * JUNK_LINES)
    c.check(closed_by_peer(junk, 10.0), "a connection whose first 16 lines are junk is closed")
    took = time.monotonic() - t0
    c.check(d.wait_until(lambda: d.metrics().value("dqd_ingest_connections_closed_total",
                                                   reason="junk") == j0 + 1),
            "the junk connection is counted")
    c.check(not closed_by_peer(almost, 0.2), "the one that sent a good line is kept")
    c.check("closed as junk" in d.stderr(), "the junk close is logged")
    junk.close()
    almost.close()
    return took


def one_wrapper_phase(c, dqd_bin, dqctl_bin, wd):
    w = OscilloscopeWrapper()
    port = w.start_server()
    cfg = os.path.join(wd, "dqd.json")
    with open(cfg, "w") as f:
        json.dump({"wrappers": ["127.0.0.1:%d" % port],
                   "probes": {"checkout": {"dmax_ms": 500}}}, f)
    # a long lag: the 10,000 spans are never late on a slow machine
    d = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=3000, config=cfg)
    c.check(w.wait(lambda x: x.running), "dqd dialled the listener and said start_stub")
    c.eq(w.timeouts, {}, "nothing is enabled yet, so the wrapper has nothing to send")
    data = w.try_connect("127.0.0.1", d.ingest_port)
    connected_at = time.monotonic()
    took = junk_phase(c, d)

    # the data link and the command link: one wrapper in the status
    c.check(d.wait_until(lambda: any(x["pairing"] == "paired" for x in links(d, "legacy"))),
            "the data connection is paired with the command link: %r" % links(d))
    st = d.status()
    legacy = [x for x in st["wrappers"] if x["kind"] == "legacy"]
    outb = [x for x in st["wrappers"] if x["kind"] == "outbound"]
    c.check(len(legacy) == 1 and len(outb) == 1 and legacy[0]["paired_with"] == outb[0]["id"] and
            outb[0]["paired_with"] == legacy[0]["id"], "each names the other: %r" % st["wrappers"])
    c.eq((st["wrappers_connected"], st["wrappers_distinct"]), (2, 1),
         "two links connected, one wrapper")
    out = t.dqctl_checked(c, dqctl_bin, d, "status")
    rows = [r for r in out.splitlines() if r.strip().startswith(("%d " % legacy[0]["id"],
                                                                 "+ %d " % outb[0]["id"]))]
    c.check(len(rows) == 2 and "legacy" in rows[0] and "commands" in rows[1] and
            "127.0.0.1:%d" % port in rows[1],
            "dqctl status prints the command link under its data link: %r" % out)

    # silent past the old junk timer, with a margin measured from this run
    margin = max(1.0, 20 * took)
    left = connected_at + OLD_JUNK_TIMEOUT_S + margin - time.monotonic()
    if left > 0:
        time.sleep(left)
    silent_for = time.monotonic() - connected_at
    conns = d.status()["sources"][0]["connections_total"]
    c.check(not closed_by_peer(data, 0.1), "the silent data connection is still open after "
            "%.1f s (the old timer closed it after %.0f s)" % (silent_for, OLD_JUNK_TIMEOUT_S))
    c.check("closed" not in " ".join(l for l in d.stderr().splitlines()
                                     if "link %d " % legacy[0]["id"] in l),
            "nothing logged closing the data connection")

    # enabled through the command link: exit 0, "sent to the wrapper's command listener"
    out = t.dqctl_checked(c, dqctl_bin, d, "enable", "checkout")
    c.check("sent to the wrapper's command listener" in out and "NOT" not in out,
            "enable says where it went: %r" % out)
    c.check(w.wait(lambda x: x.timeouts.get("checkout") == 500), "the listener got set_timeout")
    out = t.dqctl_checked(c, dqctl_bin, d, "set-timeout", "checkout", "200")
    c.check("sent to the wrapper's command listener" in out and "NOT" not in out,
            "set-timeout exits 0 and says where it went: %r" % out)
    c.check(w.wait(lambda x: x.timeouts.get("checkout") == 200), "set_timeout;checkout;200")

    # 10,000 spans on the connection that was silent
    for i in range(SPANS):
        w.span("checkout", (1 + i % 5) * MS, "fa" if i % 50 == 0 else "ok")
    c.eq((w.sent, w.dropped, [x for x in w.log if "TCP" in x]), (SPANS, 0, []),
         "the wrapper sent every span on its first connection")

    def counted():
        m = d.metrics()
        return sum(m.value("dqd_instances_total", probe="checkout", status=s) or 0
                   for s in ("ok", "fa", "to"))
    c.check(d.wait_until(lambda: counted() == SPANS, timeout=30),
            "all %d spans counted: %r" % (SPANS, counted()))
    m = d.metrics()
    c.eq(m.value("dqd_ingest_rejected_total", reason="late"), 0.0, "none was late")
    c.eq(d.status()["sources"][0]["connections_total"], conns, "no new connection: the same one")

    # why: the command went to the wrapper's command listener
    out = t.dqctl_checked(c, dqctl_bin, d, "why", "checkout")
    c.check("it went to the wrapper's command listener" in out and "NOT" not in out,
            "why says where the last change went: %r" % out)
    # disable: the legacy wrapper cannot; one wrapper link, not two
    out = t.dqctl_checked(c, dqctl_bin, d, "disable", "checkout", want_rc=1)
    c.check("NOT applied on 1 wrapper link (%d " % outb[0]["id"] in out and
            "%d 127.0.0.1:" % legacy[0]["id"] not in out,
            "disable: not applied on the one wrapper (its command link): %r" % out)
    w.close()
    d.stop(c)


def evict_phase(c, dqd_bin, wd):
    d = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=3000,
              db=os.path.join(wd, "evict.db"), extra=["--max-ingest-connections", "3"])
    a = t.connect(d.ingest_port)
    b = t.connect(d.ingest_port)
    since = time.monotonic()
    talker = t.connect(d.ingest_port)
    # only a connection silent for a second or more may be evicted: let a and b qualify
    time.sleep(max(0.0, since + EVICT_MIN_SILENT_S + 0.1 - time.monotonic()))
    now = t.now_ns()
    talker.sendall(t.legacy_line("talk", now - MS, now).encode())
    c.check(d.wait_until(lambda: d.status()["instances_total"] == 1), "the talker was heard")
    new1 = t.connect(d.ingest_port)
    c.check(closed_by_peer(a, 5.0), "at the cap the connection silent longest is evicted")
    c.check(not closed_by_peer(b, 0.2), "and only that one")
    new2 = t.connect(d.ingest_port)
    c.check(closed_by_peer(b, 5.0), "then the next silent longest")
    c.check(not closed_by_peer(talker, 0.2), "never the one that sent within the last second")
    m = d.metrics()
    c.eq(m.value("dqd_ingest_connections_closed_total", reason="evicted"), 2.0, "evictions counted")
    c.check("silent for" in d.stderr() and "the longest, to take a new one" in d.stderr(),
            "evictions are logged")
    for s in (a, b, talker, new1, new2):
        s.close()
    d.stop(c)


def ambiguous_phase(c, dqd_bin, dqctl_bin, wd):
    w1, w2 = OscilloscopeWrapper(), OscilloscopeWrapper()
    p1, p2 = w1.start_server(), w2.start_server()
    cfg = os.path.join(wd, "amb.json")
    with open(cfg, "w") as f:
        json.dump({"wrappers": ["127.0.0.1:%d" % p1, "127.0.0.1:%d" % p2],
                   "probes": {"pay": {"dmax_ms": 80}}}, f)
    d = t.Dqd(dqd_bin, wd, db=os.path.join(wd, "amb.db"), config=cfg)
    c.check(w1.wait(lambda x: x.running) and w2.wait(lambda x: x.running), "both dialled")
    w1.try_connect("127.0.0.1", d.ingest_port)
    w2.try_connect("127.0.0.1", d.ingest_port)
    c.check(d.wait_until(lambda: len([x for x in links(d) if x["pairing"] == "ambiguous"]) == 4),
            "two data connections and two listeners on one host: ambiguous, %r" % links(d))
    c.eq(d.status()["wrappers_distinct"], 4, "not paired: each link counts as a wrapper")
    out = t.dqctl_checked(c, dqctl_bin, d, "status")
    c.check("which is whose cannot be told" in out, "dqctl status says it: %r" % out)
    out = t.dqctl_checked(c, dqctl_bin, d, "enable", "pay", want_rc=1)
    c.check("set_timeout sent to a command listener on 127.0.0.1" in out and
            "2 links (" in out and "NOT known to have reached 2 wrapper links" in out and
            "cannot be told" in out and "NOT applied" not in out,
            "enable says what was sent where and what is not known: %r" % out)
    c.check(w1.wait(lambda x: "pay" in x.timeouts) and w2.wait(lambda x: "pay" in x.timeouts),
            "both listeners got it")
    w1.close()
    w2.close()
    d.stop(c)


def body(c):
    dqd_bin, dqctl_bin = sys.argv[1], sys.argv[2]
    wd = t.make_workdir("dqd-it-osc-")
    one_wrapper_phase(c, dqd_bin, dqctl_bin, wd)
    evict_phase(c, dqd_bin, wd)
    ambiguous_phase(c, dqd_bin, dqctl_bin, wd)
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    t.run_script("test_oscilloscope", body)
