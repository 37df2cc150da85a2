"""Integration test (issue 13): a diagram loaded with PUT /api/v1/diagram survives a
restart, and the investigation a trigger opened before the restart goes on after it.

  1. dqd A starts without --diagram; the diagram checkout = validate -> pay -> ship comes
     through the API; a QTA trigger on checkout fires (pay is slow) and opens an
     investigation; A is stopped while it is open.
  2. dqd B starts on the same database without --diagram: the diagram is there (same text,
     "(api)"), and the investigation resumes and ends localized at pay.
  3. --diagram FILE wins over the recorded diagram, and is recorded in turn: a dqd started
     after it without --diagram has the file's diagram.
  4. PUT of a diagram that does not parse changes nothing, also after a restart.

usage: test_diagram_restart.py DQD_BINARY
"""

import json
import os
import random
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000
STAGES = (("validate", 1.0, 3.0), ("pay", 16.0, 32.0), ("ship", 1.0, 2.0))
DIAGRAM = "# through the API\ncheckout = validate -> pay -> ship;\n"


class Feeder:
    """Sends checkout and its stages (about 2500 instances/s) to whichever dqd is set."""

    def __init__(self):
        self.port = None
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def point_at(self, port):
        with self.lock:
            self.port = port

    def run(self):
        rnd = random.Random(13)
        s, at_port = None, None
        while not self.stop.is_set():
            with self.lock:
                port = self.port
            if port != at_port:
                if s:
                    s.close()
                s, at_port = None, port
                if port:
                    try:
                        s = t.connect(port)
                    except OSError:
                        s, at_port = None, None
            if not s:
                time.sleep(0.02)
                continue
            lines = []
            for _ in range(50):
                t0 = t.now_ns() - 100 * MS
                at = t0
                for name, lo, hi in STAGES:
                    end = at + int(rnd.uniform(lo, hi) * MS)
                    lines.append(t.legacy_line(name, at, end))
                    at = end
                lines.append(t.legacy_line("checkout", t0, at))
            try:
                s.sendall("".join(lines).encode())
            except OSError:
                s.close()
                s, at_port = None, None
            time.sleep(0.02)
        if s:
            s.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)


def investigations(d):
    return d.get("/api/v1/investigations")


def body(c):
    dqd_bin = sys.argv[1]
    wd = t.make_workdir("dqd-it-diagram-restart-")
    db = os.path.join(wd, "dqd.db")
    cfg = os.path.join(wd, "dqd.json")
    with open(cfg, "w") as f:
        json.dump({"probes": {"checkout": {"enabled": True,
                                           "qta": {"points": [[0.95, 0.020]]}}},
                   "triggers": [{"probe": "checkout", "kind": "qta", "fire_after": 2}],
                   "min_instances": 30, "min_windows": 2}, f)
    feeder = Feeder()
    try:
        run(c, dqd_bin, wd, db, cfg, feeder)
    finally:
        feeder.close()
    t.remove_workdir(wd)


def run(c, dqd_bin, wd, db, cfg, feeder):
    # ---- 1. A: the diagram through the API, a trigger fires, stop mid-investigation ----
    a = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=200, db=db, config=cfg)
    c.eq(a.get("/api/v1/diagram")["text"], None, "A starts without a diagram")
    st, env = a.api("PUT", "/api/v1/diagram", DIAGRAM)
    c.eq(st, 200, "PUT /api/v1/diagram (%r)" % (env,))
    c.eq(a.status()["diagram"], "(api)", "A's diagram came through the API")
    feeder.point_at(a.ingest_port)
    opened = a.wait_until(lambda: [i for i in investigations(a) if i["open"]], timeout=30)
    if not c.check(opened, "the trigger fired and opened an investigation in A"):
        a.stop(c)
        return
    inv = opened[0]
    c.eq((inv["node"], inv["origin"]), ("checkout", "trigger"), "opened at checkout by trigger")
    feeder.point_at(None)
    a.stop(c)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT text, path FROM diagrams ORDER BY id").fetchall()
    con.close()
    c.eq(rows, [(DIAGRAM, None)], "the store recorded the diagram sent through the API")

    # ---- 2. B: same database, no --diagram: the diagram is back, the search goes on ----
    b_started = time.time()
    b = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=200, db=db, config=cfg)
    g = b.get("/api/v1/diagram")
    c.eq(g["text"], DIAGRAM, "after the restart the diagram is there")
    c.eq(g["roots"], ["checkout"], "with its root")
    c.eq(sorted(g["probes"]), ["checkout", "pay", "ship", "validate"], "and its probes")
    c.eq(b.status()["diagram"], "(api)", "status says it came through the API")
    c.check("diagram loaded from the store" in b.stderr(), "the log says where it came from")
    c.eq(b.get("/api/v1/probes/pay")["parent"], "checkout", "pay's parent after the restart")
    feeder.point_at(b.ingest_port)

    def closed():
        for i in investigations(b):
            if i["id"] == inv["id"] and not i["open"]:
                return i
        return None
    done = b.wait_until(closed, timeout=60)
    if c.check(done, "investigation %d ended after the restart: %r" %
               (inv["id"], investigations(b)[:2])):
        c.eq((done["verdict"], done["verdict_node"]), ("localized", "pay"),
             "the resumed investigation localized the slow stage")
        c.check(done["closed"] >= b_started, "it ended in B, after the restart: closed %r, B "
                "started %r" % (done["closed"], b_started))
    full = b.get("/api/v1/investigations/%d" % inv["id"])
    c.check(any(h["action"] == "expand" or h["action"] == "enable"
                for h in full["hypotheses"]),
            "it enabled checkout's children: %r" % [h["action"] for h in full["hypotheses"]])
    feeder.point_at(None)
    b.stop(c)

    # ---- 3. --diagram FILE wins, and is recorded for the next start ----
    path = os.path.join(wd, "file.dq")
    text = "checkout = validate -> pay -> ship -> notify;\n"
    with open(path, "w") as f:
        f.write(text)
    d = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=200, db=db, diagram=path)
    g = d.get("/api/v1/diagram")
    c.eq((g["text"], g["path"]), (text, path), "--diagram wins over the recorded diagram")
    d.stop(c)
    d = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=200, db=db)
    g = d.get("/api/v1/diagram")
    c.eq((g["text"], g["path"]), (text, path), "the file's diagram is the one recorded last")
    c.eq(d.status()["diagram"], path, "status names the file")

    # ---- 4. a diagram that does not parse changes nothing ----
    st, env = d.api("PUT", "/api/v1/diagram", "checkout = -> ;")
    c.eq(st, 422, "a bad diagram is refused")
    d.stop(c)
    d = t.Dqd(dqd_bin, wd, window_ms=200, lag_ms=200, db=db)
    c.eq(d.get("/api/v1/diagram")["text"], text, "a refused diagram is not recorded")
    d.stop(c)
    con = sqlite3.connect(db)
    c.eq(con.execute("SELECT count(*) FROM diagrams").fetchone()[0], 2,
         "two diagrams recorded (the API's, the file's; restarts add no row)")
    c.eq(con.execute("SELECT source FROM diagrams_v ORDER BY id").fetchall(),
         [("(api)",), (path,)], "diagrams_v shows where each came from")
    con.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_diagram_restart.py DQD_BINARY")
    t.run_script("test_diagram_restart", body)
