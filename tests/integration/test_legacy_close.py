"""Integration test (issue 13, acceptance 1): a legacy connection that sends valid lines and
closes at once, without ever reading, loses none of them.

A legacy wrapper (the oscilloscope's dqsd_otel) never reads the connection it sends on. When
dqd writes commands on it, the wrapper's close finds them unread and the kernel answers with
a TCP reset, which discards what dqd had not read yet. So dqd writes nothing on an inbound
legacy connection unless the setting legacy_commands is on (or the peer says a v2 hello),
records the commands it could not deliver as not_applied with the reason, and counts resets.

Checked here, on real TCP over loopback with a real dqd:
  1. N valid lines then close, N = 3,000 and 300,000, three times each: N counted each time
     (with an enabled probe and a command sent mid-stream, so that there is something dqd
     would have written before the fix);
  2. the commands a legacy connection could not take are recorded not_applied, with why,
     and a start reaches no legacy connection;
  3. a connection closed by a reset is counted in status and /metrics (promtool passes);
  4. with legacy_commands on, a legacy connection gets the enabled set and commands again
     (the old behaviour, for legacy wrappers that do read).

usage: test_legacy_close.py DQD_BINARY
"""

import json
import os
import socket
import sqlite3
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000  # ns


def lines_block(n, name="flow"):
    """n valid legacy lines ending now (5 ms each)."""
    now = t.now_ns()
    out = []
    for i in range(n):
        e = now + i  # distinct ends, all well inside the open windows
        out.append("n:%s;b:%d;e:%d;s:ok\n" % (name, e - 5 * MS, e))
    return "".join(out).encode()


def send_and_close(port, data):
    """Connects, sends the first line, and once dqd has had the time to take it for a legacy
    connection (and, before the fix, to write its commands), sends the rest and closes at
    once, without reading or shutting down: a wrapper that streams, then stops."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    first = data.index(b"\n") + 1
    s.sendall(data[:first])
    time.sleep(0.3)  # longer than the 200 ms hello wait
    s.sendall(data[first:])
    s.close()


def wait_counted(d, want, timeout):
    """Instances total once it reached want and no connection is left (or the timeout)."""
    deadline = time.time() + timeout
    st = d.status()
    while time.time() < deadline:
        st = d.status()
        if st["instances_total"] >= want and st["connections"] == 0:
            break
        time.sleep(0.05)
    time.sleep(0.2)  # anything late would show now
    return d.status()["instances_total"]


def config_file(wd, name, extra):
    path = os.path.join(wd, name)
    cfg = {"probes": {"flow": {"enabled": True, "dmax_ms": 200}}}
    cfg.update(extra)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def commands(db, since_id=0):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, wrapper, command, probe, status, detail FROM commands "
                           "WHERE id > ? ORDER BY id", (since_id,)).fetchall()
    finally:
        con.close()


def body(c):
    dqd_bin = sys.argv[1]
    wd = t.make_workdir("dqd-it-legacy-close-")

    # ---- 1. the acceptance runs (legacy_commands off: the default) ----
    d = t.Dqd(dqd_bin, wd, window_ms=1000, lag_ms=10000, config=config_file(wd, "off.json", {}))
    counted = []
    total = 0
    for n in (3000, 300000):
        data = lines_block(n)
        for run in range(3):
            send_and_close(d.ingest_port, data)
            total += n
            got = wait_counted(d, total, timeout=60)
            counted.append((n, run + 1, got - (total - n)))
            c.eq(got, total, "N = %d, run %d: every line counted" % (n, run + 1))
            total = got
    print("lines counted per run (N, run, counted): %r" % counted, flush=True)
    st = d.status()
    c.eq(st["connections_reset"], 0, "no connection was reset (dqd wrote nothing to them)")

    # ---- 2. what a legacy connection could not take is recorded, with why ----
    legacy = t.connect(d.ingest_port)
    legacy.sendall(lines_block(10))
    d.wait_until(lambda: any(w["kind"] == "legacy" for w in d.status()["wrappers"]))
    last = max([r[0] for r in commands(d.db)] or [0])
    st, env = d.api("PUT", "/api/v1/probes/late_one?create=1", {"enabled": True})
    c.eq(st, 200, "enable late_one")
    st, env = d.api("POST", "/api/v1/wrapper/start")
    c.eq((st, env["data"] if st == 200 else None),
         (200, {"running": True, "sent_to": 0, "not_applied": 1}),
         "start reaches no legacy connection, and says so")
    rows = commands(d.db, last)
    c.eq([(r[2], r[3], r[4]) for r in rows],
         [("set_timeout", "late_one", "not_applied"), ("start_stub", None, "not_applied")],
         "commands to the legacy connection are recorded not_applied")
    c.check(all(r[5] and "legacy_commands" in r[5] for r in rows),
            "not_applied rows say why: %r" % [r[5] for r in rows])
    legacy.settimeout(0.5)
    try:
        got = legacy.recv(4096)
    except socket.timeout:
        got = None
    c.eq(got, None, "nothing was written to the legacy connection")
    legacy.close()

    # a v2 hello shows the peer reads: it gets the enabled set and commands
    v2 = t.connect(d.ingest_port)
    v2.sendall(b"h:2;node:n1;app:a\n")
    r = t.LineReader(v2)
    got = r.read_until("start_stub")
    c.check("set_timeout;flow;200" in got and got[-1:] == ["start_stub"],
            "a v2 connection gets the enabled set: %r" % got)

    # ---- 3. a reset is counted (a v2 peer that closes with unread data: an RST) ----
    d.api("PUT", "/api/v1/probes/flow", {"dmax_ms": 100})  # unread by v2
    time.sleep(0.2)
    v2.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    v2.close()
    ok = d.wait_until(lambda: d.status()["connections_reset"] == 1, timeout=5)
    c.check(ok, "a reset connection is counted in status: %r" % d.status()["connections_reset"])
    text = d.metrics_text()
    m = t.parse_prometheus(text)
    c.eq(m.value("dqd_ingest_connections_reset_total"), 1.0,
         "dqd_ingest_connections_reset_total")
    c.eq(m.types.get("dqd_ingest_connections_reset_total"), "counter", "reset counter TYPE")
    c.check((m.value("dqd_ingest_reset_written_bytes_total") or 0) > 0,
            "the bytes dqd had written to the reset connection are counted: %r" %
            m.value("dqd_ingest_reset_written_bytes_total"))
    t.promtool_check(c, text, "/metrics with the reset counters")
    c.check("reset" in d.stderr() and "lost" in d.stderr(), "the log says a reset loses lines")
    d.stop(c)

    # ---- 4. legacy_commands on: the legacy connection takes commands again ----
    wd2 = os.path.join(wd, "on")
    os.mkdir(wd2)
    d = t.Dqd(dqd_bin, wd2, window_ms=1000, lag_ms=10000,
              config=config_file(wd2, "on.json", {"legacy_commands": "on"}))
    legacy = t.connect(d.ingest_port)
    legacy.sendall(lines_block(5))
    r = t.LineReader(legacy)
    got = r.read_until("start_stub")
    c.eq(got, ["set_timeout;flow;200", "start_stub"], "legacy_commands on: the enabled set")
    last = max([r[0] for r in commands(d.db)] or [0])
    d.api("POST", "/api/v1/wrapper/stop")
    c.eq(r.read_lines(1), ["stop_stub"], "legacy_commands on: stop_stub reaches it")
    rows = commands(d.db, last)
    c.eq([(x[2], x[4]) for x in rows], [("stop_stub", "sent")], "stop_stub recorded sent")
    d.api("PUT", "/api/v1/probes/flow", {"enabled": False})
    rows = commands(d.db, last)
    c.eq([(x[2], x[4]) for x in rows[1:]], [("clear_timeout", "not_applied")],
         "a disable is still not applicable to a legacy wrapper")
    c.check(rows[1:] and "clear_timeout" in (rows[-1][5] or ""),
            "its reason is the missing clear_timeout: %r" % (rows[-1:],))
    legacy.close()
    d.stop(c)
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_legacy_close.py DQD_BINARY")
    t.run_script("test_legacy_close", body)
