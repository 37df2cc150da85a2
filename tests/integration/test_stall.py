#!/usr/bin/env python3
"""test_stall.py DQD: what a wrapper sends while dqd does not run is kept.

dqd (window 1 s, lag 1 s) takes a stream of instances whose END is the time they are sent;
part way, dqd is stopped (SIGSTOP) for 2 s, longer than the lag, as when its machine
stalls or a debugger holds it, and then continued. What the wrapper sent meanwhile waits in
the socket. When dqd runs again its window timer is late: it must read that backlog before
it closes the windows due, not close them first and refuse the backlog as late (before,
about 1,000 instances of a 3.5 s stop were refused), and its open windows must reach the
newest instances (room for a stall: PROBES_STALL_WINDOWS). Checked: every instance sent is
recorded in the probe's windows, none refused as late or future, and the log says dqd did
not run. Then a stop of 8 s, beyond that room: what does not fit is refused, counted, and
the log says so (a line once a minute at most).

The margins: with window and lag 1 s, dqd has 6 windows open, and a stop of up to about
3.7 s fits in them wherever in a window it begins (5 s at best); the 2 s stop holds with
the stop lasting up to 1.5 s longer than asked on a loaded machine. With any stop longer
than the lag, dqd before this fix refused part of the backlog as late.

Last, the same with --otlp (windows of 2 s open 3 s for spans, a wrapper's lines late
after 1 s still): a 2.5 s stop loses none of the wrapper's lines, which are judged from when
dqd last waited for input, not from when it read them after the stop; nor does a 1.8 s
stop that ends 50 ms after dqd's window timer was due (late by less than a stall).

usage: test_stall.py DQD_BINARY
"""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000  # ns


class Sender:
    """Sends a few instances of one probe every 5 ms, END = now, and counts them."""

    def __init__(self, sock, name):
        self.sock, self.name, self.sent = sock, name, 0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.is_set():
            end = t.now_ns()
            lines = "".join(t.legacy_line(self.name, end - 2 * MS - i, end - i, "ok")
                            for i in range(3))
            try:
                self.sock.sendall(lines.encode())
            except OSError:
                return
            self.sent += 3
            time.sleep(0.005)

    def stop(self):
        self.stop_flag.set()
        self.thread.join(10)


def recorded(d, name):
    """The instances of name in /metrics (recorded in its windows), or None."""
    return d.metrics().value("dqd_instances_total", probe=name, status="ok")


def stall(c, d, name, seconds, end_phase=None):
    """Streams instances of name, stops dqd for seconds part way; returns what was sent.
    end_phase: the stop ends that long after an odd second, when windows of 2 s that
    close 3 s after their end fall due, not at a time set by when dqd started."""
    sock = t.connect(d.ingest_port)
    s = Sender(sock, name)
    time.sleep(1.5)
    if end_phase is not None:
        now = time.time()
        end = int(now + seconds) + 1
        end += 1 - end % 2  # odd
        time.sleep(end + end_phase - seconds - now)
    os.kill(d.proc.pid, signal.SIGSTOP)
    time.sleep(seconds)
    os.kill(d.proc.pid, signal.SIGCONT)
    time.sleep(1.5)
    s.stop()
    sock.close()
    c.check(d.wait_until(lambda: d.status()["instances_total"] >= s.sent + d.base, 30.0),
            "dqd parsed every instance of %s sent (%d)" % (name, s.sent))
    d.base += s.sent
    return s.sent


def body(c):
    wd = t.make_workdir("dqd-it-stall-")
    try:
        d = t.Dqd(sys.argv[1], wd, window_ms=1000, lag_ms=1000)
        d.base = 0
        sent = stall(c, d, "held", 2.0)
        c.check(sent > 300, "the sender sent through the stop: %d" % sent)
        m = d.metrics()
        c.eq((m.value("dqd_ingest_rejected_total", reason="late"),
              m.value("dqd_ingest_rejected_total", reason="future")), (0.0, 0.0),
             "nothing sent during a 2 s stop is refused (late, future)")
        c.eq(recorded(d, "held"), float(sent),
             "every instance sent is in held's windows")
        err = d.stderr()
        c.check("warn  dqd did not run for at least " in err,
                "the log says dqd did not run:\n%s" % err[-1500:])

        # beyond the open windows' room: refused, counted and said
        sent2 = stall(c, d, "beyond", 8.0)
        m = d.metrics()
        late = m.value("dqd_ingest_rejected_total", reason="late") or 0.0
        future = m.value("dqd_ingest_rejected_total", reason="future") or 0.0
        got = recorded(d, "beyond") or 0.0
        c.check(late + future > 0, "an 8 s stop loses what does not fit in the open windows")
        c.eq(got + late + future, float(sent2),
             "each instance of beyond is recorded or counted refused (%d + %d + %d of %d)" %
             (got, late, future, sent2))
        said = d.wait_until(lambda: "instance(s) refused in the last" in d.stderr(), 10.0)
        c.check(said, "the log says instances were refused:\n%s" % d.stderr()[-1500:])
        d.stop(c)

        # with --otlp windows stay open 3 s for spans (their deadlines mid-window: windows
        # of 2 s), while a wrapper's lines keep their own lag of 1 s: the lines sent during
        # a 2.5 s stop are judged from when dqd last waited for input, not from when it
        # read them (before, those of the stop's first 1.5 s were refused as late)
        d = t.Dqd(sys.argv[1], wd, window_ms=2000, lag_ms=1000, db=os.path.join(wd, "otlp.db"),
                  extra=["--otlp", "127.0.0.1:0", "--otlp-lag", "3000"])
        d.base = 0
        sent = stall(c, d, "held_otlp", 2.5)
        # a stop of 1.8 s (longer than the lag, shorter than a window: no deadline in it)
        # that ends 50 ms after the timer was due: the timer is not late enough to be a
        # stall, the wait after it is (before adbd1d0, its backlog was judged from its read)
        sent += stall(c, d, "held_otlp", 1.8, end_phase=0.05)
        m = d.metrics()
        c.eq((m.value("dqd_ingest_rejected_total", reason="late"),
              m.value("dqd_ingest_rejected_total", reason="future")), (0.0, 0.0),
             "with --otlp nothing a wrapper sent during the stops is refused (late, future)")
        c.eq(recorded(d, "held_otlp"), float(sent), "every instance sent is in held_otlp's windows")
        c.check("warn  dqd did not run for at least " in d.stderr(),
                "with --otlp too the log says dqd did not run:\n%s" % d.stderr()[-1500:])
        d.stop(c)
    finally:
        t.remove_workdir(wd)


if __name__ == "__main__":
    t.run_script("test_stall", body)
