"""The diagnosis matrix: dqd and the simulator dqsim in simulated time, over topologies,
fault kinds, fault timings and fresh seeds; each case states the answer the decision
table of docs/diagnosis.md gives, and every run must give it.

For each run: dqd --clock sim on a temporary store, dqsim --clock sim --hold (it moves
only when told), the fault switched on at the start or after a 60 s baseline, then
`POST /api/v1/diagnose` at the root, and simulated time advanced 5 s at a time until the
investigation has a verdict (at most 300 s). Recorded per run: the verdict and its node,
every culprit it names (`summary.evidence.culprits`, else its node) with their shares, the
windows from the request to the verdict, the probes the investigation enabled over the
probes of the diagram, what is still enabled at the end, simulated and wall seconds.

Issue 24 added:
  - the topology `rare`: a choice whose rarely taken branch (15 %) is a fan-out of three
    parts; every fault hits a leaf of that branch. Only after a baseline (with no
    reference the decision table cannot find it: docs/diagnosis.md, "No reference");
  - the fault kind `two`: two leaves of different subtrees of the root at once (the
    topology's slow fault on one, a smaller one on the other), after a baseline: the
    verdict must name both, with shares between 0 and 100 % adding up to at most 100 %;
  - the timing `held`: as `after`, and the fault stays on until HOLD_S after it began
    (600 s; 180 in the sanitizer build's `make test`, DQ_HELD_S). Right also needs: no other investigation opened meanwhile, the culprit's probe still enabled
    at the end (a person's localized verdict keeps its path), and once the fault is
    cleared, what the investigation enabled released within 60 s.

Usage:
  matrix.py --dqd DQD --dqsim DQSIM --diagrams DIR [--subset] [--repeat N] [--seed S]
            [--only TOPOLOGY[/FAULT[/TIMING]]] [--markdown FILE] [--transcript]

--subset runs one case per topology and fault kind (but two faults in the choice and the
rare branch, and the rare branch's erratic fault: see SUBSET_LEAVES), and one held case (what `make test`
runs); the default is the whole matrix (`make matrix`). Seeds come from the system's
random source unless --seed is given, and each run prints its own: `--seed S --only
deep/slow/after` replays it (simulated time starts on the same second in every run, so a
seed gives the same run; `make test` runs the subset with `--seed 1`, a test that gives the
same answer every time, and `make matrix` the whole matrix on fresh seeds); --transcript prints the hypotheses of every wrong run. Exit 0 when every run gave its case's answer and the mean
probe share is at most 20 %.
"""

import argparse
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from dqdtest import Dqd, held_seconds  # noqa: E402

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
RARE_LEAVES = ["r_%s_%d" % (p, i) for p in "abc" for i in range(1, 4)]


def leaves_of(prefixes, leaves):
    return [n for n in leaves if n.startswith(prefixes)]


# Two faults at once (`two`): the subtrees of each topology's root (groups of leaves); a
# run draws two subtrees and a leaf in each. The first gets the first fault, the second
# the second, smaller one, so that one culprit leads and the other is the part of the
# root's change it leaves unexplained.
TWO = {
    "deep": (("slow 15", "slow 10"), [leaves_of(s, DEEP_LEAVES)
                                      for s in ("front", "auth", "core", "store")]),
    "fanout": (("slow 15", "slow 10"), [leaves_of(("lookup_%d" % k, "filter_%d" % k,
                                                   "merge_%d" % k), FAN_LEAVES)
                                        for k in range(1, 9)]),
    # the primary's stages (a fault in the backup is hidden): the primary stays ahead
    "race": (("slow 8", "slow 4"), [leaves_of(s, PRIMARY) for s in ("p_read", "p_check",
                                                                     "p_send")]),
    "choice": (("slow 15", "slow 10"), [leaves_of(s, CHOICE_LEAVES)
                                        for s in ("parse", "reply", "c_", "m_")]),
    "rare": (("slow 40", "slow 15"), [RARE_LEAVES, ["parse_%d" % i for i in range(1, 4)],
                                      ["reply_%d" % i for i in range(1, 4)]]),
}
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
    # issue 24: a step in a branch taken by 15 % of the requests (a fan-out of three parts)
    # moves a sixth of the root's mass and little of its mean; found against a baseline
    "rare": {"diagram": "rare.dq", "root": "req", "after_only": True, "faults": {
        "slow": ("slow 12", RARE_LEAVES, []),
        "erratic": ("erratic 10", RARE_LEAVES, []),
        "fail": ("fail 0.2", RARE_LEAVES, [])}},
}
FAULT_KINDS = ["none", "slow", "erratic", "fail", "two"]

# When the fault starts, and what is enabled then: only the root (enabled by the
# configuration, no history), nothing at all, or the root after a 60 s baseline; `held`
# is `after` with the fault kept on for HOLD_S.
TIMINGS = ["start-root", "start-none", "after", "held"]
# the held case `make test` runs (matrix_subset)
SUBSET_HELD = ("deep", "slow", "held")
# cells `make test` leaves to `make matrix`: with only the root's history (`after`), the
# children enabled by the search have no baseline of their own, so a second, smaller
# fault is weighed by raw means among siblings that differ by nature, and an erratic step
# in a rarely taken branch barely moves the root (docs/diagnosis.md, "Verdicts that
# hold"): answers the full matrix records, right or wrong. (The rare branch's slow step,
# found since a diffuse branch hands over to the runner-up, is in the subset.)
SUBSET_LEAVES = {("rare", "erratic"), ("rare", "two"), ("choice", "two")}

PROBE_SHARE_MAX = 0.20
RATE = 300
STEP_S = 5
VERDICT_WITHIN_S = 300
HOLD_S = held_seconds()
RELEASE_WITHIN_S = 60
# simulated time starts on a whole second, the same in every run: started at the wall
# clock's time, the 1 s windows fell at another offset into the run each time, and one seed
# could answer differently from run to run (race/none/after at seed 281371015: 4 of 6)
START_AT = 1893456000


class Sim:
    """dqsim --clock sim --hold, its stdout read by a thread."""

    def __init__(self, dqsim, diagram, port, seed, workdir, rate=RATE, extra=()):
        self.proc = subprocess.Popen(
            [dqsim, "--diagram", diagram, "--dqd", "127.0.0.1:%d" % port, "--clock", "sim",
             "--hold", "--leaf-mean", "2:2", "--rate", str(rate), "--seed", str(seed),
             "--batch-ms", "20", "--start-at", str(START_AT), *extra],
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


def expected(topo, fault, leaves, timing):
    """The decision table's answer: (verdict, the culprits named) for the faulty leaves. A
    fault no user can notice is healthy; so, from the start (no QTA, no baseline), is one
    the no-reference rule cannot see (the fault's fourth entry). Two faults: localized,
    naming both."""
    if fault == "two":
        return ("localized", sorted(leaves))
    f = TOPOLOGIES[topo]["faults"].get(fault)
    leaf = leaves[0] if leaves else None
    if fault == "none" or leaf in f[2]:
        return ("healthy", [])
    if timing not in ("after", "held") and len(f) > 3 and leaf in f[3]:
        return ("healthy", [])
    return ("localized", [leaf])


def draw_faults(rng, topo, fault):
    """[(leaf, dqsim's fault)] of one run, drawn from its seed."""
    if fault == "none":
        return []
    if fault == "two":
        (first, second), groups = TWO[topo]
        g1, g2 = rng.sample(range(len(groups)), 2)
        return [(rng.choice(groups[g1]), first), (rng.choice(groups[g2]), second)]
    f = TOPOLOGIES[topo]["faults"][fault]
    return [(rng.choice(f[1]), f[0])]


def culprits(inv):
    """[(probe, share or None)] a verdict names: its evidence's culprits (issue 24), else
    its node when it is localized."""
    listed = ((inv.get("summary") or {}).get("evidence") or {}).get("culprits")
    if isinstance(listed, list) and listed:
        return [(c.get("probe") or c.get("node"), c.get("share")) for c in listed]
    return [(inv["verdict_node"], None)] if inv.get("verdict") == "localized" else []


def investigation_probes(d, inv_id):
    """Probes the investigation enabled: its expand lists, and the node when diagnose
    enabled it (the first command of hypothesis 0 is not listed: read the commands)."""
    inv = d.get("/api/v1/investigations/%d" % inv_id)
    names = set()
    for h in inv["hypotheses"]:
        if h["action"] in ("expand", "enable"):
            names.update(h["probes"])
    return inv, names


def enabled_set(d):
    return {p["name"] for p in d.get("/api/v1/probes") if p["enabled"]}


def hold(d, sim, inv_id, t_fault, before, row):
    """The `held` timing after the verdict: the fault on until HOLD_S after it began, then
    cleared; records the other investigations, whether the culprits stayed enabled, and
    the simulated seconds until only what was enabled before the request is left."""
    while sim.now - t_fault < HOLD_S - 1e-6:
        sim.run(min(2 * STEP_S, HOLD_S - (sim.now - t_fault)))
    invs = d.get("/api/v1/investigations")
    row["others"] = ["%s %s" % (i["verdict"] or "open", i["verdict_node"] or i["node"])
                     for i in invs if i["id"] != inv_id]
    on = enabled_set(d)
    row["kept"] = all(p in on for p, _ in row["culprits"])
    sim.say("clear all")
    sim.wait_for("fault all off")
    t_clear = sim.now
    while sim.now - t_clear < RELEASE_WITHIN_S - 1e-6:
        sim.run(1)
        if enabled_set(d) <= before:
            row["release_s"] = sim.now - t_clear
            break


# An erratic step's only sign is a few very slow passes. dqd concludes from three windows
# with a pass far beyond anything the baseline showed, never from one or two (one stall, a
# pause of the runtime, is no fault: docs/diagnosis.md, "The far tail"), and only where the
# baseline's fitted tail expects few: at a watch's last look (z 3.76), three passes
# where it expects 0.05 or less, four where it expects up to 0.2 (the rare root's fits
# expect 0.01-0.2 beyond twice its largest over 40 windows: at --seed 609696281 --only
# rare/erratic/held, 0.17 beyond 78 ms gave the third pass z 2.9). Passes just beyond the
# baseline's largest say little by their count (k of 20 s's passes beyond every pass of the
# minute before come by chance at (1/4)^k: 1.6 % for three, where a check allows itself
# 0.05 %). So, after a baseline, when the root had fewer than EVIDENCE_MIN passes beyond
# twice its largest duration before the fault by the time of the verdict (dqsim's count when
# the diagnosis was asked, or for a verdict a window or more later, a watch's, at the first
# 5-s step after it), healthy is right as well as the culprit; the summary line counts
# those runs apart.
EVIDENCE_MIN = 4


def evidence(sim, row):
    """Records dqsim's counts of root passes beyond its pre-fault largest (and twice it);
    with fewer than EVIDENCE_MIN beyond twice it, healthy is accepted too."""
    sim.say("status")
    line = sim.wait_for("status ")
    m = re.search(r"beyond_max=([0-9]+) beyond_twice=([0-9]+)", line)
    if not m:
        raise RuntimeError("dqsim's status has no beyond_twice: %s" % line)
    row["beyond"] = (int(m.group(1)), int(m.group(2)))
    # the latest count decides (a verdict after a watch: the passes it watched too)
    row["also"] = ("healthy", []) if row["beyond"][1] < EVIDENCE_MIN else None


def one_run(args, topo, fault, timing, seed):
    t = TOPOLOGIES[topo]
    rng = random.Random(seed)
    faults = draw_faults(rng, topo, fault)
    leaves = [leaf for leaf, _ in faults]
    want = expected(topo, fault, leaves, timing)
    work = tempfile.mkdtemp(prefix="dqd-matrix-")
    diagram = os.path.join(args.diagrams, t["diagram"])
    cfg = {"probes": {}} if timing == "start-none" else \
        {"probes": {t["root"]: {"enabled": True, "dmax_ms": 500}}}
    cfg_path = os.path.join(work, "dqd.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    row = {"topology": topo, "fault": fault, "timing": timing, "seed": seed,
           "leaf": ",".join(leaves) or None, "want": want, "got": None, "culprits": [],
           "share": None, "left": None, "windows": None, "verdicts": [], "others": None,
           "kept": None, "release_s": None, "sim_s": None, "wall_s": None, "error": None,
           "beyond": None, "also": None}
    t0 = time.monotonic()
    d = sim = None
    try:
        d = Dqd(args.dqd, work, window_ms=1000, lag_ms=200, diagram=diagram, config=cfg_path,
                extra=["--clock", "sim"])
        sim = Sim(args.dqsim, diagram, d.ingest_port, seed, work)
        sim.wait_for("connected")
        sim.run(0)
        if timing in ("after", "held"):
            sim.run(60)
        for leaf, what in faults:
            sim.say("fault %s %s" % (leaf, what))
            sim.wait_for("fault")
        t_fault = sim.now
        sim.run(20)
        erratic = fault == "erratic" and timing in ("after", "held")
        if erratic:
            evidence(sim, row)  # what the root showed when the diagnosis was asked
        before = enabled_set(d)
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
        if erratic and inv["closed"] is not None and inv["closed"] - inv["opened"] > 1:
            evidence(sim, row)  # a verdict after a watch or a search: what it could see
        # a few more windows: a healthy verdict releases at once, others keep probes
        sim.run(STEP_S)
        inv, names = investigation_probes(d, inv_id)
        if t["root"] not in before and any(p["name"] == t["root"] and p["enabled"]
                                           for p in d.get("/api/v1/probes")):
            names.add(t["root"])
        total = len(d.get("/api/v1/diagram")["probes"])
        after = enabled_set(d)
        row["got"] = (inv["verdict"] or "open", inv["verdict_node"]
                      if inv["verdict"] in ("localized",) else None)
        row["culprits"] = culprits(inv)
        if inv["closed"] is not None:
            row["windows"] = inv["closed"] - inv["opened"]  # 1 s windows
        row["share"] = len(names) / total
        row["left"] = sorted(after - before)
        if timing == "held":
            hold(d, sim, inv_id, t_fault, before, row)
        row["verdicts"] = ["%s %s" % (i["verdict"] or "open", i["verdict_node"] or i["node"])
                           for i in reversed(d.get("/api/v1/investigations"))]
        row["sim_s"] = sim.now
        if args.transcript:
            row["transcript"] = transcript(d)
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


def transcript(d):
    """Every investigation's hypotheses, one line each (time from its opening, action,
    node, probes, reason), oldest first."""
    lines = []
    for inv in reversed(d.get("/api/v1/investigations")):
        lines.append("investigation %d (%s, %s) at %s: %s %s" % (
            inv["id"], inv["origin"], inv["problem"], inv["node"], inv["verdict"],
            inv["verdict_node"] or ""))
        for h in d.get("/api/v1/investigations/%d" % inv["id"])["hypotheses"]:
            lines.append("  +%5.0f s %-8s %-10s %s %s" % (
                h["time"] - inv["opened"], h["action"], h["node"], ",".join(h["probes"] or []),
                (h["stats"] or {}).get("reason", "")[:400]))
    return lines


def shares_ok(row):
    """Every share a culprit is given lies in [0, 1] and they add up to at most 1."""
    shares = [s for _, s in row["culprits"] if s is not None]
    return all(0.0 <= s <= 1.0 for s in shares) and sum(shares) <= 1.0 + 1e-9


def ok(row):
    if row["error"] or row["got"] is None:
        return False
    if row["also"] and row["got"][0] == row["also"][0]:
        return ok_as(row, row["also"])
    return ok_as(row, row["want"])


def ok_as(row, want):
    verdict, named = want
    if row["got"][0] != verdict or sorted(p for p, _ in row["culprits"]) != named:
        return False
    if named and row["got"][1] not in named:
        return False
    if not shares_ok(row) or (len(named) > 1 and
                              any(s is None for _, s in row["culprits"])):
        return False
    if row["timing"] == "held" and (row["others"] or (named and not row["kept"]) or
                                    row["release_s"] is None):
        return False
    # a healthy verdict leaves nothing enabled that the investigation enabled
    return verdict != "healthy" or not row["left"]


def timings_of(topo, fault):
    if fault == "two" or TOPOLOGIES[topo].get("after_only"):
        return ["after", "held"] if fault not in ("none", "two") else ["after"]
    return TIMINGS if fault != "none" else ["start-root", "start-none", "after"]


def cases(args):
    out = []
    for topo in TOPOLOGIES:
        for fault in FAULT_KINDS:
            for timing in timings_of(topo, fault):
                if args.subset and (topo, fault, timing) != SUBSET_HELD and \
                        (timing != timings_of(topo, fault)[0 if fault != "none" else -1] or
                         (topo, fault) in SUBSET_LEAVES):
                    continue
                name = "%s/%s/%s" % (topo, fault, timing)
                if args.only and not name.startswith(args.only):
                    continue
                out.append((topo, fault, timing))
    return out


def describe(r):
    """A run's answer in words: its verdicts (each investigation's, oldest first), every
    culprit with its share, and for `held` what happened while the fault stayed."""
    if r["error"]:
        return "ERROR " + r["error"]
    named = ", ".join("%s%s" % (p, "" if s is None else " %.0f %%" % (100 * s))
                      for p, s in r["culprits"]) or "-"
    text = "verdicts %s; culprits %s" % ("; ".join(r["verdicts"]) or "-", named)
    if r["beyond"] is not None:
        text += ("; root passes by the verdict beyond its largest before the fault: %d, twice "
                 "it: %d%s" % (r["beyond"][0], r["beyond"][1],
                               " (healthy right too)" if r["also"] else ""))
    if r["timing"] == "held":
        text += "; held: %d other investigation(s)%s, culprits %s, released %s" % (
            len(r["others"] or []), ": " + "; ".join(r["others"]) if r["others"] else "",
            "kept" if r["kept"] else "NOT kept",
            "after %.0f s" % r["release_s"] if r["release_s"] is not None else
            "NOT within %d s" % RELEASE_WITHIN_S)
    return text


def mean_of(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def markdown(rows):
    lines = ["| topology | fault | timing | runs | right | all culprits named | first verdict "
             "(windows, mean) | probe share (mean) | wrong answers |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    groups = {}
    for r in rows:
        groups.setdefault((r["topology"], r["fault"], r["timing"]), []).append(r)
    for (topo, fault, timing), rs in groups.items():
        right = sum(ok(r) for r in rs)
        named = sum(not r["error"] and sorted(p for p, _ in r["culprits"]) == r["want"][1]
                    for r in rs)
        share = mean_of([r["share"] for r in rs])
        windows = mean_of([r["windows"] for r in rs])
        wrong = ["seed %d: %s" % (r["seed"], describe(r)) for r in rs if not ok(r)]
        lines.append("| %s | %s | %s | %d | %d | %d | %s | %s | %s |" % (
            topo, fault, timing, len(rs), right, named,
            "%.0f" % windows if windows is not None else "-",
            "%.0f %%" % (100 * share) if share is not None else "-",
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
    ap.add_argument("--transcript", action="store_true",
                    help="print the investigations' hypotheses of every wrong run")
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
            print("%-4s %-7s %-8s %-10s seed %-10d want %-30s got %-28s windows %4s share "
                  "%5s left %s (%.0f sim s, %.1f s)  %s" % (
                      "ok" if ok(r) else "FAIL", topo, fault, timing, seed,
                      "%s %s" % (r["want"][0], ",".join(r["want"][1])),
                      "%s %s" % r["got"] if r["got"] else "-",
                      "%.0f" % r["windows"] if r["windows"] is not None else "-",
                      "%.0f%%" % (100 * r["share"]) if r["share"] is not None else "-",
                      ",".join(r["left"] or []) or "-", r["sim_s"] or 0, r["wall_s"],
                      describe(r)), flush=True)
            if not ok(r) and r.get("transcript"):
                print("\n".join("     " + ln for ln in r["transcript"]), flush=True)
    shares = [r["share"] for r in rows if r["share"] is not None]
    mean_share = sum(shares) / len(shares) if shares else 0.0
    right = sum(ok(r) for r in rows)
    by_topo = ", ".join("%s %.1f %%" % (t, 100 * mean_of([r["share"] for r in rows
                                                           if r["topology"] == t]))
                        for t in TOPOLOGIES if any(r["topology"] == t and r["share"] is not None
                                                   for r in rows))
    win = mean_of([r["windows"] for r in rows])
    thin = sum(ok(r) and r["also"] is not None and r["got"][0] == r["also"][0]
               and r["want"][0] != r["also"][0] for r in rows)
    print("matrix: %d/%d runs right (%d of them healthy on thin evidence: an erratic step's "
          "root with fewer than %d passes beyond twice its largest), mean probe share %.1f %% "
          "(at most %.0f %%; %s), first verdict after %s windows on average" % (
              right, len(rows), thin, EVIDENCE_MIN, 100 * mean_share, 100 * PROBE_SHARE_MAX,
              by_topo or "-", "%.1f" % win if win is not None else "-"))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(rows))
    n_st = args.stations if args.stations is not None else (3 if args.subset else 10)
    st_ok = (stations(args, seeds, n_st) if n_st > 0 and (not args.only or args.only == "stations")
             else True)
    return 0 if right == len(rows) and mean_share <= PROBE_SHARE_MAX and st_ok else 1


if __name__ == "__main__":
    sys.exit(main())
