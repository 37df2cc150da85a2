"""Integration test (issue 13, acceptance 2): one dqd per database, and no empty database
left by a start that failed.

  1. A second dqd on the --db of a running one exits 2 at once, with a message naming the
     first one's pid; the first runs on, untouched; the sqlite3 shell still reads the
     database meanwhile.
  2. The lock file DB.lock holds the holder's pid and goes away with a clean stop; a lock
     file left by a killed dqd (SIGKILL) does not keep the next one from starting.
  3. A failed start (bad config, missing diagram, ingest port taken, database in use)
     leaves no new file behind: no database, no -wal/-shm, no lock file; a failed start on
     an existing database keeps it.

usage: test_db_lock.py DQD_BINARY
"""

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402


def run_dqd(dqd_bin, *args, timeout=20):
    """(exit status, stdout, stderr) of a dqd expected to stop by itself."""
    p = subprocess.run([dqd_bin, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"] +
                       list(args), capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def body(c):
    dqd_bin = sys.argv[1]
    wd = t.make_workdir("dqd-it-lock-")
    db = os.path.join(wd, "dqd.db")
    lock = db + ".lock"

    # ---- 1. a second dqd on the same database ----
    a = t.Dqd(dqd_bin, wd, db=db)
    c.check(os.path.exists(lock), "the lock file exists while dqd runs")
    with open(lock) as f:
        c.eq(f.read().strip(), str(a.proc.pid), "the lock file holds the holder's pid")
    st, env = a.api("PUT", "/api/v1/probes/keep?create=1", {"enabled": True})
    c.eq(st, 200, "first dqd takes a change")
    before = sorted(os.listdir(wd))
    t0 = time.time()
    rc, out, err = run_dqd(dqd_bin, "--db", db)
    c.eq(rc, 2, "a second dqd on the same --db exits 2 (%r)" % err)
    c.check(time.time() - t0 < 5, "and does so at once")
    c.check("pid %d" % a.proc.pid in err and db in err and "in use by another dqd" in err,
            "the message names the database and the other dqd's pid: %r" % err)
    c.eq(out, "", "the refused dqd printed no ready line")
    c.eq(sorted(os.listdir(wd)), before, "the refused dqd created no file")
    c.eq(a.proc.poll(), None, "the first dqd still runs")
    c.eq(a.get("/api/v1/probes/keep")["enabled"], True, "the first dqd is untouched")
    # the sqlite3 shell (and any SQLite client) still reads while dqd runs
    shell = shutil.which("sqlite3")
    if c.check(shell, "sqlite3 shell installed (make deps)"):
        p = subprocess.run([shell, db, "SELECT name, enabled FROM probes WHERE name = 'keep';"],
                           capture_output=True, timeout=20)
        c.eq((p.returncode, p.stdout.decode().strip()), (0, "keep|1"),
             "the sqlite3 shell reads the database of a running dqd (%r)" % p.stderr)
    con = sqlite3.connect(db)
    c.eq(con.execute("SELECT count(*) FROM probes WHERE name = 'keep'").fetchone()[0], 1,
         "python's sqlite3 reads it too")
    con.close()
    a.stop(c)
    c.check(not os.path.exists(lock), "a clean stop removes the lock file")

    # ---- 2. after a stop the database is free; a killed dqd's lock file is no obstacle ----
    b = t.Dqd(dqd_bin, wd, db=db)
    c.eq(b.get("/api/v1/probes/keep")["enabled"], True, "the next dqd opens the database")
    b.proc.send_signal(signal.SIGKILL)
    b.proc.wait(timeout=10)
    b.stopped = True
    t.Dqd.running.remove(b)
    b.proc.stdout.close()
    b.stderr_file.close()
    c.check(os.path.exists(lock), "a killed dqd leaves its lock file")
    d = t.Dqd(dqd_bin, wd, db=db)
    with open(lock) as f:
        c.eq(f.read().strip(), str(d.proc.pid), "the next dqd takes the stale lock file over")
    d.stop(c)

    # ---- 3. failed starts leave no new file ----
    fresh = os.path.join(wd, "fresh")
    os.mkdir(fresh)
    newdb = os.path.join(fresh, "new.db")
    bad_cfg = os.path.join(wd, "bad.json")
    with open(bad_cfg, "w") as f:
        f.write('{"window": 0}')
    rc, out, err = run_dqd(dqd_bin, "--db", newdb, "--config", bad_cfg)
    c.eq(rc, 2, "a bad config exits 2 (%r)" % err)
    c.eq(os.listdir(fresh), [], "a bad config creates no database")
    rc, out, err = run_dqd(dqd_bin, "--db", newdb, "--diagram", os.path.join(wd, "nosuch.dq"))
    c.eq(rc, 1, "a missing diagram exits 1 (%r)" % err)
    c.check("nosuch.dq" in err, "the message names the diagram: %r" % err)
    c.eq(os.listdir(fresh), [], "a missing diagram leaves no database, -wal, -shm or lock file")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    p = subprocess.run([dqd_bin, "--listen", "127.0.0.1:%d" % port, "--http", "127.0.0.1:0",
                        "--db", newdb], capture_output=True, timeout=20)
    taken.close()
    c.eq(p.returncode, 1, "an ingest port in use exits 1")
    c.check(b"address already in use" in p.stderr, "the message says why: %r" % p.stderr)
    c.eq(os.listdir(fresh), [], "a port in use leaves no database behind")
    # an existing database is kept when the start fails
    before = os.path.getsize(db)
    rc, out, err = run_dqd(dqd_bin, "--db", db, "--diagram", os.path.join(wd, "nosuch.dq"))
    c.eq(rc, 1, "a missing diagram on an existing database exits 1")
    c.check(os.path.exists(db) and os.path.getsize(db) == before,
            "the existing database is kept as it was")
    c.check(not os.path.exists(lock), "and its lock file is gone")
    con = sqlite3.connect(db)
    c.eq(con.execute("SELECT enabled FROM probes WHERE name = 'keep'").fetchone(), (1,),
         "with its rows")
    con.close()
    # a missing directory: the error names the path, nothing is created anywhere
    rc, out, err = run_dqd(dqd_bin, "--db", os.path.join(wd, "no", "dir", "x.db"))
    c.eq(rc, 1, "a --db in a missing directory exits 1")
    c.check("x.db" in err and "No such file or directory" in err,
            "the message names the path and says why: %r" % err)
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_db_lock.py DQD_BINARY")
    t.run_script("test_db_lock", body)
