"""Issue 25, item 3: a stop keeps what it has, and the gap is known.

An oscilloscope wrapper (oscilloscope.py: a command listener and a data connection it never
reads) reports an enabled probe; instances end in closed and in still open windows. Once
/metrics has counted them all, SIGTERM: the store's windows hold exactly what /metrics
counted, per status; the windows open at the stop are marked partial with their true span
(they end at the stop, recorded as a `dqd_stopped` event); a `dqd_started` event recorded
the start.

dqd starts again on the same store. The wrapper's data connection is gone (it never
reconnects), so the probe is silent: dated from its last instance (before the restart),
named by the connection of the previous run (legacy, disconnected, with the hint to
restart the wrapper), and the status, `dqctl status` and `dqctl why` say dqd was not
running from the stop to the start. The wrapper restarts: late instances of the window the
first run stopped in and new ones are counted, and after a second stop the store holds
both runs' instances exactly (two runs' rows of one window are both kept). A run killed
with SIGKILL records no stop: the next start says so and dates the gap from its last record.
Usage: test_stop.py DQD DQCTL"""

import json
import os
import signal
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402
from oscilloscope import OscilloscopeWrapper  # noqa: E402

MS = 1000000
WINDOW_MS = 1000
N = 3000


def counted(d, probe):
    m = d.metrics()
    return {s: int(m.value("dqd_instances_total", probe=probe, status=s) or 0)
            for s in ("ok", "fa", "to")}


def stored(db, probe):
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT coalesce(sum(n_ok), 0), coalesce(sum(n_fa), 0), "
                          "coalesce(sum(n_to), 0) FROM windows WHERE probe = ? AND "
                          "kind = 'observed'", (probe,)).fetchone()
        return {"ok": row[0], "fa": row[1], "to": row[2]}
    finally:
        con.close()


def query(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def spans(w, n, end_of, probe="checkout"):
    """n instances: instance i ends at end_of(i); every 40th failed, every 97th a timeout."""
    for i in range(n):
        end = end_of(i)
        dur = (1 + i % 7) * MS if i % 97 else 900 * MS  # 900 ms: past dMax 500 ms
        w.span(probe, dur, "fa" if i % 40 == 0 else "ok", start_ns=end - dur)


def body(c):
    dqd_bin, dqctl_bin = sys.argv[1], sys.argv[2]
    wd = t.make_workdir("dqd-it-stop-")
    db = os.path.join(wd, "dqd.db")
    w = OscilloscopeWrapper()
    port = w.start_server()
    cfg = os.path.join(wd, "dqd.json")
    with open(cfg, "w") as f:
        json.dump({"wrappers": ["127.0.0.1:%d" % port],
                   "probes": {"checkout": {"dmax_ms": 500, "enabled": True},
                              "other": {"dmax_ms": 500, "enabled": True}}}, f)
    # windows of 1 s closed 2 s after their end: at the stop two or three are still open
    d = t.Dqd(dqd_bin, wd, window_ms=WINDOW_MS, lag_ms=2 * WINDOW_MS, db=db, config=cfg)
    c.check(w.wait(lambda x: x.running and x.timeouts.get("checkout") == 500),
            "the wrapper was told to report checkout")
    w.try_connect("127.0.0.1", d.ingest_port)
    run1 = query(db, "SELECT max(time_ns) FROM events WHERE kind = 'dqd_started'")[0][0]
    win = WINDOW_MS * MS
    # a third ending just now (in the window dqd started in, or before it), a third in the
    # next window, which closes on time, then the rest, still open at the stop
    now = t.now_ns()
    spans(w, N // 3, lambda i: now - 900 * MS + i * (900 * MS // (N // 3)))
    nxt = (now // win + 1) * win
    time.sleep(max(0.0, (nxt + 50 * MS - t.now_ns()) / 1e9))
    spans(w, N // 3, lambda i: t.now_ns())
    on_time = "SELECT count(*) FROM windows WHERE probe = 'checkout' AND partial = 0"
    c.check(d.wait_until(lambda: query(db, on_time)[0][0] >= 1, timeout=10),
            "a window that began after the start closed on time, not partial")
    rest = N - 2 * (N // 3)
    spans(w, rest, lambda i: t.now_ns())
    spans(w, 200, lambda i: t.now_ns(), probe="other")
    c.check(d.wait_until(lambda: sum(counted(d, "other").values()) == 200, timeout=20),
            "and 200 of other")
    other_before = counted(d, "other")
    c.check(d.wait_until(lambda: sum(counted(d, "checkout").values()) == N, timeout=20),
            "/metrics counted the %d instances: %r" % (N, counted(d, "checkout")))
    before = counted(d, "checkout")
    c.check(before["fa"] > 0 and before["to"] > 0, "some failed, some timed out: %r" % before)
    d.stop(c, "dqd (first run)")
    after = stored(db, "checkout")
    c.eq(after, before, "the store's windows hold exactly what /metrics counted")
    stops = query(db, "SELECT time_ns, detail FROM events WHERE kind = 'dqd_stopped'")
    starts = query(db, "SELECT time_ns FROM events WHERE kind = 'dqd_started'")
    c.eq((len(stops), len(starts)), (1, 1), "one dqd_started, one dqd_stopped event")
    stop_ns = stops[0][0] if stops else 0
    first_last_end = query(db, "SELECT last_instance_ns FROM probes WHERE name = 'checkout'")[0][0]
    other_last_end = query(db, "SELECT last_instance_ns FROM probes WHERE name = 'other'")[0][0]
    c.check(first_last_end and first_last_end <= stop_ns,
            "the probe's last instance is stored: %r" % first_last_end)
    rows = query(db, "SELECT start_ns, end_ns, n, partial FROM windows WHERE probe = 'checkout' "
                     "AND kind = 'observed' ORDER BY start_ns")
    lag = 2 * win
    # windows still open at the stop (their end + the lag after it): partial, and the one
    # the stop fell in ends at the stop; those that began after the start and closed on
    # time are not partial
    at_stop = [r for r in rows if r[0] // win * win + win + lag > stop_ns]
    c.check(len(at_stop) >= 1 and all(r[3] == 1 for r in at_stop) and
            all(r[1] <= stop_ns for r in rows),
            "the windows open at the stop are partial, none past it: %r (stop %d)" %
            (rows, stop_ns))
    c.check(any(r[1] == stop_ns for r in at_stop) or stop_ns // win * win > at_stop[-1][0],
            "the window the stop fell in ends at the stop: %r" % at_stop)
    every = query(db, "SELECT start_ns, n FROM windows WHERE kind = 'observed'")
    c.eq(sum(n for s0, n in every if s0 // win * win + win + lag > stop_ns),
         json.loads(stops[0][1])["instances_in_partial"] if stops else -1,
         "the stop event says how many instances the partial windows hold")
    c.check(all(r[3] == 0 for r in rows if r[0] >= run1 and r[0] % win == 0 and
                r[0] + win + lag <= stop_ns), "the windows closed on time are not partial: %r" % rows)
    c.check(all(r[3] == 1 for r in rows if r[0] < run1),
            "a window that began before the start is partial, its span from the start: %r"
            % rows)

    # ---- the restart: the wrapper's data connection is gone ----
    d = t.Dqd(dqd_bin, wd, window_ms=WINDOW_MS, lag_ms=2 * WINDOW_MS, db=db, config=cfg)
    # at once, another wrapper's instances of other: half of them end in the window of the
    # first run's last one (still open in this run: the lag), the store keeps both rows
    late = t.connect(d.ingest_port)
    now2 = t.now_ns()
    late.sendall("".join(t.legacy_line("other", e - MS, e) for e in
                         [other_last_end] * 100 + [now2 - 100 * MS] * 100).encode())
    c.check(d.wait_until(lambda: sum(counted(d, "other").values()) == 200, timeout=20),
            "the second run counted 200 of other: %r (late %r)" % (
                counted(d, "other"), d.metrics().value("dqd_ingest_rejected_total",
                                                       reason="late")))
    other_second = counted(d, "other")
    late.close()
    st = d.status()
    gap = st.get("downtime") or {}
    started = query(db, "SELECT max(time_ns) FROM events WHERE kind = 'dqd_started'")[0][0]
    c.eq((gap.get("from_ns"), gap.get("to_ns"), gap.get("clean")), (stop_ns, started, True),
         "the status knows the gap: from the stop to this start")
    out = t.dqctl_checked(c, dqctl_bin, d, "status")
    c.check("dqd was not running from " in out and "(it stopped cleanly)" in out,
            "dqctl status says it: %r" % out)
    e = d.wait_until(lambda: next((x for x in d.status()["silent"]
                                   if x["probe"] == "checkout"), None), timeout=10)
    c.check(e is not None, "checkout is silent after the restart")
    e = e or {}
    c.eq(e.get("since_ns"), first_last_end, "the silence is dated from its last instance")
    c.check(e.get("origin", "").endswith("127.0.0.1:%d" % w.sock.getsockname()[1]) and
            e.get("previous_run") is True and e.get("kind") == "legacy" and
            e.get("connected") is False and "restart it" in (e.get("hint") or "") and
            (e.get("dqd_not_running") or {}).get("from_ns") == stop_ns,
            "it names the previous run's connection, with the hint and the gap: %r" % e)
    out = t.dqctl_checked(c, dqctl_bin, d, "why", "checkout")
    c.check("before dqd's restart" in out and "restart it, or its application" in out and
            "dqd was not running from" in out, "dqctl why says all of it: %r" % out)
    out = t.dqctl_checked(c, dqctl_bin, d, "status")
    c.check("before dqd's restart" in out and "restart it, or its application" in out,
            "dqctl status names the connection and the hint: %r" % out)

    # the wrapper restarts: instances of the window the first run stopped in, and new ones
    c.check(w.wait(lambda x: x.running), "the listener was dialled again")
    w.try_connect("127.0.0.1", d.ingest_port)
    m = 500
    spans(w, m, lambda i: t.now_ns())
    c.check(d.wait_until(lambda: sum(counted(d, "checkout").values()) == m, timeout=20),
            "the second run counted the %d: %r" % (m, counted(d, "checkout")))
    second = counted(d, "checkout")
    d.stop(c, "dqd (second run)")
    total = {k: before[k] + second[k] for k in before}
    c.eq(stored(db, "checkout"), total, "both runs' instances are in the store, exactly")
    c.eq(stored(db, "other"), {k: other_before[k] + other_second[k] for k in other_before},
         "both runs' instances of other are in the store, exactly")
    last_window = other_last_end // win * win
    runs = query(db, "SELECT count(DISTINCT run_ns) FROM windows WHERE probe = 'other' AND "
                     "kind = 'observed' AND ? < end_ns AND start_ns < ?",
                 last_window, last_window + win)
    c.eq(runs[0][0], 2, "the window of the first run's last instance has a row of each run")

    # ---- a run killed without a stop ----
    d = t.Dqd(dqd_bin, wd, window_ms=WINDOW_MS, lag_ms=2 * WINDOW_MS, db=db, config=cfg)
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    d.stopped = True
    t.Dqd.running.remove(d)
    last_record = query(db, "SELECT max(time_ns) FROM events")[0][0]
    d = t.Dqd(dqd_bin, wd, window_ms=WINDOW_MS, lag_ms=2 * WINDOW_MS, db=db, config=cfg)
    gap = d.status().get("downtime") or {}
    c.eq((gap.get("clean"), gap.get("from_ns")), (False, last_record),
         "after a kill: no stop recorded, the gap from the last record")
    out = t.dqctl_checked(c, dqctl_bin, d, "status")
    c.check("it did not record a stop" in out, "dqctl status says so: %r" % out)
    d.stop(c, "dqd (after the kill)")
    w.close()
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    t.run_script("test_stop", body)
