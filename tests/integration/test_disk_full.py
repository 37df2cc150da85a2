"""Issue 14, answers that lie: with the store unable to write (an injected write error: the
file size limit of dqd lowered under its database and WAL, SIGXFSZ ignored, so every write
that would grow them fails with EFBIG as on a full disk), every change dqd answers 200
survives a restart, every one it refuses says so (503) and is not made; store errors are
counted and logged (rate-limited); nothing crashes; once the store can write again
changes work. A change to many wrapper links writes its command rows as one batch (one
transaction): all of them with a 200, none with a 503. Usage: test_disk_full.py DQD"""

import os
import resource
import signal
import socket
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest
from dqdtest import Dqd, make_workdir, remove_workdir, run_script

N_PROBES = 12


class PipedDqd(Dqd):
    """A dqd whose stderr is a FIFO read by a thread (a log file would hit the same file size
    limit as the store), started with SIGXFSZ ignored (EFBIG instead of a kill)."""

    def __init__(self, binary, workdir, **kw):
        # the name Dqd will pick: it counts the folder's entries, this FIFO among them
        path = os.path.join(workdir, "dqd-%d.stderr" % (len(os.listdir(workdir)) + 1))
        os.mkfifo(path)
        self.chunks = []

        def reader():
            with open(path, "rb") as f:
                while True:
                    b = f.read1(65536)
                    if not b:
                        return
                    self.chunks.append(b)
        self.reader = threading.Thread(target=reader, daemon=True)
        self.reader.start()
        orig = dqdtest.subprocess.Popen

        def popen(*a, **k):
            prev = k.get("preexec_fn")

            def pre():
                if prev:
                    prev()
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            k["preexec_fn"] = pre
            return orig(*a, **k)
        dqdtest.subprocess.Popen = popen
        try:
            super().__init__(binary, workdir, **kw)
        finally:
            dqdtest.subprocess.Popen = orig

    def stderr(self):
        if self.stopped:
            self.reader.join(5)
        return b"".join(self.chunks).decode("utf-8", "replace")


def limit_writes(pid, nbytes):
    """The soft limit only (raising a hard limit again would need privileges)."""
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard if nbytes is None else nbytes, hard))


N_LINKS = 40


def command_rows(db, probe):
    """Wrappers with a command row for probe (read beside the running dqd)."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
    try:
        return con.execute("SELECT count(*), count(DISTINCT wrapper) FROM commands "
                           "WHERE probe = ?", (probe,)).fetchone()
    finally:
        con.close()


def links_phase(c, dqd_bin, work):
    """One change to N_LINKS v2 links: its rows are one batch, all there or none."""
    d = PipedDqd(dqd_bin, work, window_ms=200, lag_ms=200)
    links = []
    for i in range(N_LINKS):
        s = socket.create_connection(("127.0.0.1", d.ingest_port), timeout=5)
        s.sendall(("h:2;node:n%02d@h;app:a\n" % i).encode())
        links.append(s)
    deadline = time.time() + 10
    while time.time() < deadline and len(d.get("/api/v1/status").get("wrappers", [])) < N_LINKS:
        time.sleep(0.1)
    st, _ = d.api("PUT", "/api/v1/probes/batch_ok?create=1", {"enabled": True, "dmax_ms": 50})
    c.eq(st, 200, "a change to %d links with a working store" % N_LINKS)
    c.eq(command_rows(d.db, "batch_ok"), (N_LINKS, N_LINKS),
         "one command row per link, all of them")
    limit_writes(d.proc.pid, 4096)
    st, env = d.api("PUT", "/api/v1/probes/batch_ok", {"enabled": True, "dmax_ms": 80})
    rows = command_rows(d.db, "batch_ok")[0] - N_LINKS
    c.check((st, rows) in ((503, 0), (200, N_LINKS)),
            "the second change's rows are one batch that matches its answer: %d and %d rows "
            "(%r)" % (st, rows, env.get("error")))
    c.eq(st, 503, "with the store full, the change to %d links is refused" % N_LINKS)
    limit_writes(d.proc.pid, None)
    for s in links:
        s.close()
    d.stop(c)


def body(c):
    dqd_bin = sys.argv[1]
    work = make_workdir("dqd-disk-full-")
    links_phase(c, dqd_bin, make_workdir("dqd-disk-full-links-"))
    diagram = os.path.join(work, "d.dq")
    with open(diagram, "w") as f:
        f.write("root = " + " -> ".join("p%02d" % i for i in range(N_PROBES)) + ";\n")
    d = PipedDqd(dqd_bin, work, diagram=diagram, window_ms=200, lag_ms=200)
    st, _ = d.api("PUT", "/api/v1/probes/p00", {"enabled": True, "dmax_ms": 50})
    c.eq(st, 200, "a change with a working store")
    time.sleep(0.6)
    errors_before = d.metrics().value("dqd_store_errors_total")
    # the store cannot grow any more: every write past 4 KiB of a file fails (EFBIG)
    limit_writes(d.proc.pid, 4096)
    answers = {}
    for i in range(1, N_PROBES):
        name = "p%02d" % i
        st, env = d.api("PUT", "/api/v1/probes/" + name, {"enabled": True, "dmax_ms": 77})
        answers[name] = (st, env)
    st_stop, env_stop = d.api("POST", "/api/v1/wrapper/stop")
    st_qta, env_qta = d.api("PUT", "/api/v1/probes/p00",
                            {"qta": {"points": [[0.5, 0.01]]}})
    w = socket.create_connection(("127.0.0.1", d.ingest_port), timeout=5)
    for _ in range(10):  # instances, so that windows have rows to write
        now = time.time_ns()
        w.sendall(("n:p00;b:%d;e:%d;s:ok\n" % (now - 3000000, now)).encode() * 20)
        time.sleep(0.1)
    time.sleep(0.6)  # windows close and fail to persist
    w.close()
    refused = [n for n, (st, _) in answers.items() if st == 503]
    odd = {n: st for n, (st, _) in answers.items() if st not in (200, 503)}
    c.eq(odd, {}, "every answer is 200 or 503")
    c.check(len(refused) >= 1, "changes the store did not take are refused: %d of %d"
            % (len(refused), len(answers)))
    for n in refused:
        err = answers[n][1].get("error", "")
        c.check("store" in err and answers[n][1].get("errorType") == "unavailable",
                "%s: the refusal says why: %r" % (n, err))
    # (no wrapper is connected: a stop has no command row to record, so it needs no store)
    c.check(st_stop in (200, 503), "wrapper/stop with the store failing: %d" % st_stop)
    c.check(st_qta in (200, 503), "a QTA with the store failing: %d" % st_qta)
    c.check(d.status()["running"] == (st_stop != 200), "running follows what was answered")
    errors = d.metrics().value("dqd_store_errors_total")
    c.check(errors > errors_before, "store errors counted: %s -> %s" % (errors_before, errors))
    c.eq(d.request("GET", "/-/healthy")[0], 200, "dqd answers while its store fails")
    # the store can write again
    limit_writes(d.proc.pid, None)
    st, env = d.api("PUT", "/api/v1/probes/p%02d" % (N_PROBES - 1),
                    {"enabled": True, "dmax_ms": 77})
    c.eq(st, 200, "once the store can write, a change works again: %r" % env.get("error"))
    answers["p%02d" % (N_PROBES - 1)] = (st, env)
    d.stop(c)
    log = d.stderr()
    c.check("store:" in log and "disk I/O error" in log, "store errors are logged:\n%s"
            % log[-3000:])
    window_errs = log.count("store: window")
    c.check(window_errs >= 1, "failed window writes are logged")
    c.check(log.count("\n") < 400, "the log stays bounded (%d lines)" % log.count("\n"))
    # after a restart: what was answered 200 is there, what was refused is not
    d2 = Dqd(dqd_bin, work, db=d.db, window_ms=200, lag_ms=200)
    for n, (st, _) in sorted(answers.items()):
        p = d2.get("/api/v1/probes/" + n)
        state = (p["enabled"], p["dmax_ms"])
        if st == 200:
            c.eq(state, (True, 77), "%s was answered 200: it survived the restart" % n)
        else:
            c.check(state != (True, 77), "%s was refused: it was not made (%r)" % (n, state))
    q = d2.get("/api/v1/probes/p00").get("qta")
    c.check((q is not None) == (st_qta == 200), "the QTA is there iff it was answered 200")
    d2.stop(c)
    print("disk full: %d of %d changes refused, %d store errors, %d window-error log lines"
          % (len(refused), len(answers) - 1, errors, window_errs), flush=True)
    remove_workdir(work)


run_script("disk_full", body)
