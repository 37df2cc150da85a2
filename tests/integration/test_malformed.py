"""Integration test (issue 4, acceptance 3): malformed input never stops dqd.

Truncated lines, missing fields, non-numeric and negative times, END < START, huge lines,
binary garbage, a client that connects and never sends, 1,000 connections opened and
dropped. Each kind of bad line must be counted under its own kind in
dqd_protocol_errors_total (and per connection), none may be recorded as an instance, and
afterwards a good line is still counted and /-/healthy answers.

usage: test_malformed.py DQD_BINARY
"""

import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

EVICT_MIN_SILENT_S = 1.0  # INGEST_EVICT_MIN_SILENT_MS (controller/ingest/ingest.h)
MS = 1000000


def errors_by_kind(d):
    return {l["kind"]: v for l, v in d.metrics().select("dqd_protocol_errors_total")}


def delta(before, after):
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def send_and_close(d, data):
    """One connection that sends data and closes after dqd has read it."""
    s = t.connect(d.ingest_port)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(3.0)
    try:  # dqd closes its side once it has read our EOF
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()


def body(c):
    dqd_bin = sys.argv[1]
    wd = t.make_workdir("dqd-it-malformed-")
    # a long lag: good lines are never late, however slow this machine is
    d = t.Dqd(dqd_bin, wd, window_ms=100, lag_ms=1000)
    now = t.now_ns()

    def good():  # a fresh good line (END now)
        n = t.now_ns()
        return t.legacy_line("good", n - 5 * MS, n, "ok").encode()

    # A client that connects and never sends, held open until the cap evicts it (below).
    silent = t.connect(d.ingest_port)
    silent_since = time.time()

    cases = [
        # (what, bytes, {kind: count})
        ("truncated line", b"n:p;b:%d\n" % now, {"field": 1}),
        ("truncated after s", b"n:p;b:%d;e:%d;s\n" % (now - 5, now), {"field": 1}),
        ("empty status", b"n:p;b:%d;e:%d;s:\n" % (now - 5, now), {"status": 1}),
        ("missing b", b"n:p;e:%d;s:ok\n" % now, {"field": 1}),
        ("missing name", b"b:%d;e:%d;s:ok\n" % (now - 5, now), {"unknown": 1}),
        ("fields out of order", b"n:p;e:%d;b:%d;s:ok\n" % (now, now - 5), {"field": 1}),
        ("non-numeric START", b"n:p;b:abc;e:%d;s:ok\n" % now, {"time": 1}),
        ("non-numeric END", b"n:p;b:%d;e:12x4;s:ok\n" % now, {"time": 1}),
        ("negative START", b"n:p;b:-5;e:%d;s:ok\n" % now, {"time": 1}),
        ("negative END", b"n:p;b:%d;e:-%d;s:ok\n" % (now, now), {"time": 1}),
        ("START = 0", b"n:p;b:0;e:%d;s:ok\n" % now, {"time": 1}),
        ("overflowing time", b"n:p;b:99999999999999999999;e:%d;s:ok\n" % now, {"time": 1}),
        ("END < START", b"n:p;b:%d;e:%d;s:ok\n" % (now, now - 1000), {"order": 1}),
        ("unknown status", b"n:p;b:%d;e:%d;s:xx\n" % (now - 5, now), {"status": 1}),
        ("bad name", b"n:9p;b:%d;e:%d;s:ok\n" % (now - 5, now), {"name": 1}),
        ("clock a day away", b"n:p;b:5;e:10;s:ok\n", {"clock": 1}),
        ("huge line (2000 bytes)",
         b"n:p;b:%d;e:%d;s:ok;a:k=%s\n" % (now - 5, now, b"v" * 2000), {"too_long": 1}),
        ("huge line (1 MB, no newline for a while)", b"x" * 1000000 + b"\n", {"too_long": 1}),
        ("binary garbage", bytes(range(256)).replace(b"\n", b"") + b"\n", {"unknown": 1}),
        ("name over 255 bytes", b"n:%s;b:%d;e:%d;s:ok\n" % (b"a" * 256, now - 5, now),
         {"name": 1}),
        ("v2 id not hex", b"n:p;b:%d;e:%d;s:ok;i:xyz\n" % (now - 5, now), {"id": 1}),
        ("v2 id over 64 digits", b"n:p;b:%d;e:%d;s:ok;t:%s\n" % (now - 5, now, b"a" * 65),
         {"id": 1}),
        ("v2 attribute without value", b"n:p;b:%d;e:%d;s:ok;a:k\n" % (now - 5, now),
         {"attr": 1}),
        ("v2 hello version 1", b"h:1;node:a;app:b\n", {"syntax": 1}),
        ("v2 hello without app", b"h:2;node:a\n", {"field": 1}),
        ("v2 drop count not a number", b"drop;abc\n", {"syntax": 1}),
        ("v2 ack of no command", b"ack;frob\n", {"syntax": 1}),
    ]
    for what, data, want in cases:
        before = errors_by_kind(d)
        inst0 = d.status()["instances_total"]
        send_and_close(d, data + good())  # a good line right after the bad one still counts
        got = d.wait_until(lambda: d.status()["instances_total"] >= inst0 + 1, timeout=3)
        c.check(got, "%s: the good line after it was counted" % what)
        c.eq(d.status()["instances_total"], inst0 + 1, "%s: no instance recorded from it" % what)
        c.eq(delta(before, errors_by_kind(d)), {k: float(v) for k, v in want.items()},
             "%s: counted by kind" % what)

    # All of the kinds on one connection: counted per connection, dqd reads on. It starts
    # with a good line: a connection whose first 16 lines are all bad is junk and is closed
    # (test_quiet.py), one that has sent a valid line never is.
    lines = b"".join(data for _, data, _ in cases)
    before = errors_by_kind(d)
    s = t.connect(d.ingest_port)
    s.sendall(good() + lines + good())
    want_total = sum(sum(w.values()) for _, _, w in cases)
    got = d.wait_until(lambda: any(w["protocol_errors"] == want_total
                                   for w in d.status()["wrappers"]), timeout=5)
    c.check(got, "one connection's %d errors counted on its link" % want_total)
    c.eq(sum(delta(before, errors_by_kind(d)).values()), float(want_total),
         "one connection's errors in /metrics")
    s.close()

    # Binary garbage without newlines at all, in large chunks (discarded as too long).
    before = errors_by_kind(d)
    blob = bytes((i * 7919 + 13) % 256 for i in range(300000)).replace(b"\n", b"\x00")
    send_and_close(d, blob + b"\n" + good())
    c.eq(delta(before, errors_by_kind(d)).get("too_long"), 1.0,
         "300 kB of garbage is one over-long line")

    # A last line cut off by the close (no newline) is not an instance but a syntax error.
    before = errors_by_kind(d)
    inst0 = d.status()["instances_total"]
    send_and_close(d, good() + good()[:-10])
    c.check(d.wait_until(lambda: errors_by_kind(d)["syntax"] > before["syntax"], timeout=3),
            "a partial last line is counted")
    c.eq(delta(before, errors_by_kind(d)), {"syntax": 1.0}, "a partial last line is syntax")
    c.eq(d.status()["instances_total"], inst0 + 1, "partial last line not recorded")

    # 1,000 connections opened, then dropped: half closed normally, half reset. They are
    # all opened first: a connection reset while it still waits in the kernel's accept
    # queue is discarded by the kernel (no dqd sees it), which would make the count depend
    # on how fast this dqd accepts. Past max_ingest_connections open at once, dqd closes the
    # connection silent longest to take a new one (counted as evicted): the silent client,
    # opened first and silent since, goes first.
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    m0 = d.metrics().value("dqd_connections_total")
    r0 = d.metrics().value("dqd_ingest_connections_closed_total", reason="rejected")
    t0 = time.time()

    def seen():
        m = d.metrics()
        return (m.value("dqd_connections_total") - m0 +
                m.value("dqd_ingest_connections_closed_total", reason="rejected") - r0)
    # only a connection silent for a second or more may be evicted (INGEST_EVICT_MIN_SILENT_MS
    # in controller/ingest/ingest.h): the silent client qualifies first, the burst's never
    time.sleep(max(0.0, silent_since + EVICT_MIN_SILENT_S + 0.1 - time.time()))
    socks = []
    for i in range(1000):
        s = socket.socket()
        s.connect(("127.0.0.1", d.ingest_port))
        socks.append(s)
    got = d.wait_until(lambda: seen() >= 1000, timeout=20)
    c.check(got, "1,000 connections accepted or refused at the cap (%r)" % seen())
    cap = d.metrics().value("dqd_ingest_connections_closed_total", reason="evicted")
    c.check(cap >= 1, "past the cap the longest-silent connections were evicted: %r" % cap)
    silent.settimeout(10)
    try:
        closed = silent.recv(1) == b""
    except socket.timeout:
        closed = False
    except OSError:  # a reset is a close too
        closed = True
    c.check(closed, "the silent client, silent longest, was the first evicted")
    silent.close()
    for i, s in enumerate(socks):
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    got = d.wait_until(lambda: d.status()["connections"] <= 1, timeout=10)
    c.check(got, "dropped connections freed (status connections %r)" %
            d.status()["connections"])
    print("1,000 connections in %.2f s" % (time.time() - t0))

    # dqd still serves: healthy, and a good line counts.
    st, raw = d.request("GET", "/-/healthy")
    c.eq((st, raw), (200, b"dqd is healthy.\n"), "/-/healthy after the abuse")
    inst0 = d.status()["instances_total"]
    s = t.connect(d.ingest_port)
    s.sendall(good())
    c.check(d.wait_until(lambda: d.status()["instances_total"] == inst0 + 1),
            "a good line after all that is counted")
    s.close()
    m = d.metrics()
    c.check(not m.errors, "metrics parse: %r" % m.errors[:3])
    c.eq(m.value("dqd_instances_total", probe="good", status="ok"),
         float(d.status()["instances_total"]),
         "only the good lines were recorded")
    c.eq(m.value("dqd_ingest_rejected_total", reason="late"), 0.0, "no good line was late")
    c.eq(sorted(p["name"] for p in d.get("/api/v1/probes")), ["good"],
         "no probe registered from bad lines")
    d.stop(c)
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_malformed.py DQD_BINARY")
    t.run_script("test_malformed", body)
