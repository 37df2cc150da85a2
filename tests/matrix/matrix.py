"""The diagnosis matrix: dqd and the simulator dqsim in simulated time, over topologies,
fault kinds, fault timings and fresh seeds; each case states the answer the decision
table of docs/diagnosis.md gives, and every run must give it.

For each run: dqd --clock sim on a temporary store, dqsim --clock sim --hold (it moves
only when told), the fault switched on at the start or after a 60 s baseline, then
`POST /api/v1/diagnose` at the root, and simulated time advanced 5 s at a time until the
investigation has a verdict (at most 300 s). Recorded per run: the verdict and its node,
the probes the investigation enabled over the probes of the diagram, what is still
enabled at the end, simulated and wall seconds.

Usage:
  matrix.py --dqd DQD --dqsim DQSIM --diagrams DIR [--subset] [--repeat N] [--seed S]
            [--only TOPOLOGY[/FAULT[/TIMING]]] [--markdown FILE]

--subset runs one case per topology and fault kind (what `make test` runs); the default
is the whole matrix (`make matrix`). Seeds come from the system's random source unless
--seed is given, and each run prints its own: `--seed S --only deep/slow/after` replays it.
Exit 0 when every run gave its case's answer and the mean probe share is at most 20 %.
"""

import argparse
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from dqdtest import Dqd  # noqa: E402

# Each topology: its diagram, its root, and per fault kind the fault as dqsim's stdin takes
# it and the leaves it may hit (one is drawn per run from the seed), each with the answer
# of the decision table: the leaf itself, or healthy when no user can notice the fault (a
# backup replica that rarely wins its race: a fault there is masked by the primary).
DEEP_LEAVES = ["%s_%s%d" % (s, c, i) for s in ("front", "auth", "core", "store")
               for c in "abcd" for i in range(1, 5)]
FAN_LEAVES = ["%s_%d_%d" % (st, k, i) for k in range(1, 9) for st in ("lookup", "filter", "merge")
              for i in range(1, 4)]
PRIMARY = ["%s_%d" % (st, i) for st in ("p_read", "p_check", "p_send") for i in range(1, 4)]
BACKUP = ["%s_%d" % (st, i) for st in ("b_read", "b_check", "b_queue", "b_wait", "b_copy",
                                       "b_send") for i in range(1, 4)]
CHOICE_LEAVES = ["%s_%d" % (st, i) for st in ("parse", "reply", "c_find", "c_get", "c_copy",
                                              "m_load", "m_compute", "m_store")
                 for i in range(1, 4)]
TOPOLOGIES = {
    "deep": {"diagram": "deep.dq", "root": "root", "faults": {
        "slow": ("slow 15", DEEP_LEAVES, []),
        "erratic": ("erratic 10", DEEP_LEAVES, []),
        "fail": ("fail 0.1", DEEP_LEAVES, [])}},
    "fanout": {"diagram": "fanout.dq", "root": "req", "faults": {
        "slow": ("slow 15", FAN_LEAVES, []),
        "erratic": ("erratic 10", FAN_LEAVES, []),
        "fail": ("fail 0.1", FAN_LEAVES, [])}},
    # a primary step 4 ms slower still wins the race (primary ~18 ms, backup ~36 ms): the
    # user waits longer, it is found; a fault in the backup is hidden by the primary
    "race": {"diagram": "race.dq", "root": "req", "faults": {
        "slow": ("slow 4", PRIMARY + BACKUP, BACKUP),
        "erratic": ("erratic 10", BACKUP, BACKUP),
        "fail": ("fail 0.1", BACKUP, BACKUP)}},
    # with no reference (no QTA, no baseline) the search follows where the time goes and
    # looks at the spread only where the time is balanced: the cache holds most of req's
    # time and the hit path most of the cache's, so an erratic step elsewhere (parse,
    # reply, the miss path) is not theirs to find; after a baseline it is
    "choice": {"diagram": "choice.dq", "root": "req", "faults": {
        "slow": ("slow 15", CHOICE_LEAVES, []),
        "erratic": ("erratic 10", CHOICE_LEAVES, [],
                    [n for n in CHOICE_LEAVES if not n.startswith("c_")]),
        "fail": ("fail 0.1", CHOICE_LEAVES, [])}},
}
FAULT_KINDS = ["none", "slow", "erratic", "fail"]

# When the fault starts, and what is enabled then: only the root (enabled by the
# configuration, no history), nothing at all, or the root after a 60 s baseline.
TIMINGS = ["start-root", "start-none", "after"]

PROBE_SHARE_MAX = 0.20
RATE = 300
STEP_S = 5
VERDICT_WITHIN_S = 300


class Sim:
    """dqsim --clock sim --hold, its stdout read by a thread."""

    def __init__(self, dqsim, diagram, port, seed, workdir, rate=RATE, extra=()):
        self.proc = subprocess.Popen(
            [dqsim, "--diagram", diagram, "--dqd", "127.0.0.1:%d" % port, "--clock", "sim",
             "--hold", "--leaf-mean", "2:2", "--rate", str(rate), "--seed", str(seed),
             "--batch-ms", "20", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=workdir)
        self.lines = queue.Queue()
        self.seen = []
        t = threading.Thread(target=self._read, daemon=True)
        t.start()
        self.now = 0.0

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, prefix, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.time()))
            except queue.Empty:
                break
            if line is None:
                raise RuntimeError("dqsim ended: %s" % "\n".join(self.seen[-10:]))
            self.seen.append(line)
            if line.startswith(prefix):
                return line
        raise RuntimeError("dqsim: no `%s` within %g s: %s" % (prefix, timeout,
                                                               "\n".join(self.seen[-10:])))

    def say(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def run(self, seconds):
        # dqsim also says `held at` when it first stands still: wait for the line of this
        # run, the one at the time it was told to reach
        target = self.now + seconds
        self.say("run %g" % seconds)
        while True:
            line = self.wait_for("held at")
            self.now = float(line.split()[2])
            if self.now >= target - 1e-6:
                return

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.say("quit")
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def expected(topo, fault, leaf, timing):
    """The decision table's answer: (verdict, node or None). A fault no user can notice is
    healthy; so, from the start (no QTA, no baseline), is one the no-reference rule cannot
    see (the fault's fourth entry)."""
    f = TOPOLOGIES[topo]["faults"].get(fault)
    if fault == "none" or leaf in f[2]:
        return ("healthy", None)
    if timing != "after" and len(f) > 3 and leaf in f[3]:
        return ("healthy", None)
    return ("localized", leaf)


def investigation_probes(d, inv_id):
    """Probes the investigation enabled: its expand lists, and the node when diagnose
    enabled it (the first command of hypothesis 0 is not listed: read the commands)."""
    inv = d.get("/api/v1/investigations/%d" % inv_id)
    names = set()
    for h in inv["hypotheses"]:
        if h["action"] in ("expand", "enable"):
            names.update(h["probes"])
    return inv, names


def one_run(args, topo, fault, timing, seed):
    t = TOPOLOGIES[topo]
    rng = random.Random(seed)
    leaf = rng.choice(t["faults"][fault][1]) if fault != "none" else None
    want = expected(topo, fault, leaf, timing)
    work = tempfile.mkdtemp(prefix="dqd-matrix-")
    diagram = os.path.join(args.diagrams, t["diagram"])
    cfg = {"probes": {}} if timing == "start-none" else \
        {"probes": {t["root"]: {"enabled": True, "dmax_ms": 500}}}
    cfg_path = os.path.join(work, "dqd.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    row = {"topology": topo, "fault": fault, "timing": timing, "seed": seed, "leaf": leaf,
           "want": want, "got": None, "share": None, "left": None, "sim_s": None,
           "wall_s": None, "error": None}
    t0 = time.monotonic()
    d = sim = None
    try:
        d = Dqd(args.dqd, work, window_ms=1000, lag_ms=200, diagram=diagram, config=cfg_path,
                extra=["--clock", "sim"])
        sim = Sim(args.dqsim, diagram, d.ingest_port, seed, work)
        sim.wait_for("connected")
        sim.run(0)
        if timing == "after":
            sim.run(60)
        if fault != "none":
            sim.say("fault %s %s" % (leaf, t["faults"][fault][0]))
            sim.wait_for("fault")
        sim.run(20)
        before = {p["name"] for p in d.get("/api/v1/probes") if p["enabled"]}
        st, env = d.api("POST", "/api/v1/diagnose", {"node": t["root"]})
        if st != 200:
            raise RuntimeError("diagnose: %d %r" % (st, env))
        inv_id = env["data"]["investigation"]
        start = sim.now
        inv = None
        while sim.now - start < VERDICT_WITHIN_S:
            sim.run(STEP_S)
            inv = d.get("/api/v1/investigations/%d" % inv_id)
            if not inv["open"]:
                break
        # a few more windows: a healthy verdict releases at once, others keep probes
        sim.run(STEP_S)
        inv, names = investigation_probes(d, inv_id)
        if t["root"] not in before and any(p["name"] == t["root"] and p["enabled"]
                                           for p in d.get("/api/v1/probes")):
            names.add(t["root"])
        total = len(d.get("/api/v1/diagram")["probes"])
        after = {p["name"] for p in d.get("/api/v1/probes") if p["enabled"]}
        row["got"] = (inv["verdict"] or "open", inv["verdict_node"]
                      if inv["verdict"] in ("localized",) else None)
        row["share"] = len(names) / total
        row["left"] = sorted(after - before)
        row["sim_s"] = sim.now
    except Exception as e:  # a run that breaks is a failed run, with the reason
        row["error"] = str(e)[:300]
    finally:
        if sim:
            sim.stop()
        if d:
            d.stop(None)
        shutil.rmtree(work, ignore_errors=True)
    row["wall_s"] = time.monotonic() - t0
    return row


def ok(row):
    if row["error"] or row["got"] is None:
        return False
    if row["got"] != row["want"]:
        return False
    # a healthy verdict leaves nothing enabled that the investigation enabled
    return row["want"][0] != "healthy" or not row["left"]


def cases(args):
    out = []
    for topo in TOPOLOGIES:
        for fault in FAULT_KINDS:
            for timing in TIMINGS:
                if args.subset and timing != ("after" if fault == "none" else "start-root"):
                    continue
                name = "%s/%s/%s" % (topo, fault, timing)
                if args.only and not name.startswith(args.only):
                    continue
                out.append((topo, fault, timing))
    return out


def markdown(rows):
    lines = ["| topology | fault | timing | runs | right | probe share (mean) | wrong answers |",
             "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    groups = {}
    for r in rows:
        groups.setdefault((r["topology"], r["fault"], r["timing"]), []).append(r)
    for (topo, fault, timing), rs in groups.items():
        right = sum(ok(r) for r in rs)
        shares = [r["share"] for r in rs if r["share"] is not None]
        wrong = ["seed %d: %s" % (r["seed"], r["error"] or "%s %s" % r["got"])
                 for r in rs if not ok(r)]
        lines.append("| %s | %s | %s | %d | %d | %s | %s |" % (
            topo, fault, timing, len(rs), right,
            "%.0f %%" % (100 * sum(shares) / len(shares)) if shares else "-",
            "; ".join(wrong) or ""))
    return "\n".join(lines) + "\n"


# Two identical M/M/1/K stations in sequence (scenarios/matrix/mm1k.dq): exponential
# service of 4 ms, K = 50. 60 s at 100 requests/s (rho 0.4: the baseline), then 200/s (rho
# 0.8) for 20 s, then the diagnose. Both stations slow down alike: the right verdict is
# overload at pipeline naming both as co-bottlenecks (the latency rose with the rate), or
# diffuse at pipeline; never one worker picked by chance.
STATION_FLAGS = ["--station", "worker_1:1:exp:4:K=50", "--station", "worker_2:1:exp:4:K=50"]


def stations_run(args, seed):
    work = tempfile.mkdtemp(prefix="dqd-stations-")
    diagram = os.path.join(args.diagrams, "mm1k.dq")
    cfg_path = os.path.join(work, "dqd.json")
    with open(cfg_path, "w") as f:
        json.dump({"probes": {"pipeline": {"enabled": True, "dmax_ms": 512}}}, f)
    row = {"seed": seed, "got": None, "error": None, "reason": ""}
    d = sim = None
    t0 = time.monotonic()
    try:
        d = Dqd(args.dqd, work, window_ms=1000, lag_ms=200, diagram=diagram, config=cfg_path,
                extra=["--clock", "sim"])
        sim = Sim(args.dqsim, diagram, d.ingest_port, seed, work, rate=100, extra=STATION_FLAGS)
        sim.wait_for("connected")
        sim.run(60)
        sim.say("rate 200")
        sim.run(20)
        st, env = d.api("POST", "/api/v1/diagnose", {"node": "pipeline"})
        if st != 200:
            raise RuntimeError("diagnose: %d %r" % (st, env))
        inv_id = env["data"]["investigation"]
        start = sim.now
        inv = d.get("/api/v1/investigations/%d" % inv_id)
        while inv["open"] and sim.now - start < VERDICT_WITHIN_S:
            sim.run(STEP_S)
            inv = d.get("/api/v1/investigations/%d" % inv_id)
        row["got"] = (inv["verdict"] or "open", inv["verdict_node"])
        row["reason"] = ((inv.get("summary") or {}).get("evidence") or {}).get("reason", "")
        ov = inv.get("overload") or {}
        row["named"] = sorted({ov.get("bottleneck")} | set(ov.get("co_bottlenecks") or [])
                              - {None})
    except Exception as e:  # a run that breaks is a failed run, with the reason
        row["error"] = str(e)[:300]
    finally:
        if sim:
            sim.stop()
        if d:
            d.stop(None)
        shutil.rmtree(work, ignore_errors=True)
    row["wall_s"] = time.monotonic() - t0
    return row


def station_right(r):
    """Overload at pipeline with both workers named, or diffuse at pipeline."""
    return r["got"] == ("diffuse", "pipeline") or (
        r["got"] == ("overload", "pipeline") and r.get("named") == ["worker_1", "worker_2"])


def stations(args, seeds, n):
    """n runs of the two identical stations: each must name both or neither."""
    rows = []
    for _ in range(n):
        seed = args.seed if args.seed is not None else seeds.randrange(1, 2**31)
        r = stations_run(args, seed)
        rows.append(r)
        good = station_right(r)
        print("%-4s stations seed %-10d got %-28s (%.1f s)%s  %s" % (
            "ok" if good else "FAIL", seed, "%s %s" % r["got"] if r["got"] else "-",
            r["wall_s"], "  ERROR " + r["error"] if r["error"] else "", r["reason"][:300]),
            flush=True)
    right = sum(station_right(r) for r in rows)
    kinds = ", ".join("%d %s" % (sum(r["got"] and r["got"][0] == k for r in rows), k)
                      for k in ("overload", "diffuse"))
    print("stations: %d/%d runs right: overload at pipeline naming both workers or diffuse "
          "at pipeline (%s; two identical M/M/1/K stations at rho 0.8)" %
          (right, len(rows), kinds))
    return right == len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dqd", required=True)
    ap.add_argument("--dqsim", required=True)
    ap.add_argument("--diagrams", required=True)
    ap.add_argument("--subset", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--only")
    ap.add_argument("--markdown")
    ap.add_argument("--stations", type=int, default=None,
                    help="runs of the two identical stations (default: 10, 3 with --subset; "
                         "0: none)")
    args = ap.parse_args()
    args.dqd, args.dqsim, args.diagrams = (os.path.abspath(args.dqd), os.path.abspath(args.dqsim),
                                           os.path.abspath(args.diagrams))
    seeds = random.Random(args.seed) if args.seed is not None else random.SystemRandom()
    rows = []
    for topo, fault, timing in cases(args):
        for _ in range(args.repeat):
            seed = args.seed if args.seed is not None else seeds.randrange(1, 2**31)
            r = one_run(args, topo, fault, timing, seed)
            rows.append(r)
            print("%-4s %-7s %-8s %-10s seed %-10d want %-22s got %-28s share %5s left %s "
                  "(%.0f sim s, %.1f s)%s" % (
                      "ok" if ok(r) else "FAIL", topo, fault, timing, seed,
                      "%s %s" % (r["want"][0], r["want"][1] or ""),
                      "%s %s" % r["got"] if r["got"] else "-",
                      "%.0f%%" % (100 * r["share"]) if r["share"] is not None else "-",
                      ",".join(r["left"] or []) or "-", r["sim_s"] or 0, r["wall_s"],
                      "  ERROR " + r["error"] if r["error"] else ""), flush=True)
    shares = [r["share"] for r in rows if r["share"] is not None]
    mean_share = sum(shares) / len(shares) if shares else 0.0
    right = sum(ok(r) for r in rows)
    print("matrix: %d/%d runs right, mean probe share %.1f %% (at most %.0f %%)" % (
        right, len(rows), 100 * mean_share, 100 * PROBE_SHARE_MAX))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(rows))
    n_st = args.stations if args.stations is not None else (3 if args.subset else 10)
    st_ok = (stations(args, seeds, n_st) if n_st > 0 and (not args.only or args.only == "stations")
             else True)
    return 0 if right == len(rows) and mean_share <= PROBE_SHARE_MAX and st_ok else 1


if __name__ == "__main__":
    sys.exit(main())
