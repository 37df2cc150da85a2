"""Issue 24, in simulated time: verdicts that hold while the fault is held.

dqd --clock sim and dqsim --clock sim --hold (scenarios/sim), one topology and one or two
faults per run. Only the root is enabled, with a QTA trigger on it. 60 simulated seconds of
baseline; the root's QTA is then set from the baseline's own quantiles (p50 × 1.1 + 1 ms,
p95 × 1.15 + 2 ms: every fault below moves the root well past it) and 20 more quiet
seconds must open nothing. The fault (or both faults, at once, in different subtrees) is
then held for 10 simulated minutes (3 in the sanitizer build: DQ_HELD_S) and cleared. Read from the API
(/api/v1/investigations and each one's hypotheses), never from logs:

  - exactly one investigation, opened by the trigger, with one verdict: localized, at a
    faulty leaf, naming every faulty leaf as a culprit (one verdict per fault), each with
    a share of the root's change between 0 and 100 %, the shares adding up to at most
    100 %;
  - while the fault is held: no second investigation, the verdict re-checked (a
    `recheck` hypothesis that holds) and never judged back to normal, and every culprit's
    probe still enabled at the end of the hold;
  - after the fault ends: back to the root alone within a simulated minute (a `disable`
    hypothesis), and no investigation opens in the 30 s after that.

Topologies (the brief of issue 24: a sequence tree, a fan-out with a choice, a
first-to-finish):

  tree   scenarios/tree27.dq: root → 3 services → 9 components → 27 leaves (sequences;
         one all-to-finish)
  rare   scenarios/matrix/rare.dq: a choice between a common path (85 %) and a rare one
         (15 %), the rare one a fan-out (all-to-finish) of three parts
  race   scenarios/matrix/race.dq: first-to-finish of a primary and a slower backup

The culprits are read from the verdict's evidence, `summary.evidence.culprits` (a list of
`{"probe", "share"}`, share a fraction of the root's change: issue 24, "every culprit"); a
verdict without that list names only its `verdict_node`.

The tutorial's first scenario (docs/tutorial.md §1: tree27 at 300 requests/s, root's QTA
0.5@60 ms and 0.95@75 ms with a QTA trigger, `fault front_b2 slow 15`, `dqctl diagnose root
--wait`), case tutorial_trigger, and the README's push-button diagnosis of the same fault
after a baseline with no trigger, case tutorial_person, run the same way with the fault
held two minutes after the first verdict: the verdict stands (one investigation, its
verdict unchanged, no re-check back to normal, the culprit's path enabled; for the
person's, every probe from the root down to the culprit), then the fault ends and the
probes go within a minute.

Each run prints its simulated and wall seconds. Usage:
  test_held.py DQD DQCTL DQSIM SCENARIOS_DIR CASE
CASE: TOPOLOGY_one, TOPOLOGY_two, tutorial_trigger or tutorial_person
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
import dqdtest  # noqa: E402
from dqdtest import Dqd, make_workdir, remove_workdir, run_script  # noqa: E402

DQD, DQCTL, DQSIM, SCENARIOS, CASE = sys.argv[1:6]

# per topology: its diagram (under scenarios/), root, probes, and the faults of each case
# (leaf, dqsim's fault); the two faults lie in different subtrees of the root
TOPOLOGIES = {
    "tree": {"diagram": "tree27.dq", "root": "root",
             "one": [("front_b2", "slow 15")],
             "two": [("front_b2", "slow 15"), ("store_c1", "slow 10")]},
    "rare": {"diagram": "matrix/rare.dq", "root": "req",
             "one": [("r_b_2", "slow 40")],
             "two": [("r_b_2", "slow 40"), ("reply_1", "slow 15")]},
    "race": {"diagram": "matrix/race.dq", "root": "req",
             "one": [("p_check_2", "slow 10")],
             "two": [("p_read_1", "slow 8"), ("p_send_3", "slow 4")]},
}
BASELINE_S = 60
QUIET_S = 20
HOLD_S = dqdtest.held_seconds()
RELEASE_WITHIN_S = 60
AFTER_S = 30
STEP_S = 10
TUTORIAL_HOLD_S = 120


def culprits(inv):
    """[(probe, share or None)] the verdict names: its evidence's culprits, else its node."""
    ev = ((inv.get("summary") or {}).get("evidence") or {})
    listed = ev.get("culprits")
    if isinstance(listed, list) and listed:
        return [(c.get("probe") or c.get("node"), c.get("share")) for c in listed]
    return [(inv["verdict_node"], None)] if inv.get("verdict_node") else []


def enabled(d):
    return sorted(p["name"] for p in d.get("/api/v1/probes") if p["enabled"])


def baseline_quantiles(d, root, windows):
    """Median over the last `windows` closed windows of root's p50 and p95 (seconds)."""
    p50, p95 = [], []
    for back in range(windows):
        dq = d.dq(root, window=back)
        if dq is None:
            break
        q = dq.get("quantiles") or {}
        if q.get("0.5") is not None and q.get("0.95") is not None:
            p50.append(q["0.5"])
            p95.append(q["0.95"])
    p50.sort()
    p95.sort()
    return (p50[len(p50) // 2], p95[len(p95) // 2], len(p50)) if p50 else (None, None, 0)


def hypotheses(d, inv_id):
    return d.get("/api/v1/investigations/%d" % inv_id)["hypotheses"]


def transcript(d, invs):
    """Each investigation's hypotheses, one line each, times from its opening (seconds)."""
    for inv in invs:
        print("investigation %d (%s, %s) opened at %s: %s %s" % (
            inv["id"], inv["origin"], inv["problem"], inv["node"], inv["verdict"],
            inv["verdict_node"] or ""))
        for h in hypotheses(d, inv["id"]):
            print("  +%5.0f s %-8s %-10s %s %s" % (
                h["time"] - inv["opened"], h["action"], h["node"],
                ",".join(h["probes"] or []), (h["stats"] or {}).get("reason", "")[:400]))
    sys.stdout.flush()


def start(cfg, diagram, seed):
    """dqd --clock sim with the configuration cfg, and dqsim held: (work, dqd, dqsim)."""
    work = make_workdir("dqd-held-")
    path = os.path.join(work, "dqd.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    d = Dqd(DQD, work, window_ms=1000, lag_ms=200, diagram=diagram, config=path,
            extra=["--clock", "sim"])
    sim = dqdtest.HeldSim(DQSIM, diagram, d.ingest_port, rate=300, seed=seed,
                          extra=["--leaf-mean", "2:2"])
    return work, d, sim


def check_stands(c, d, what, inv, named, path):
    """While the fault is held: one root and one verdict hypothesis, re-checks that hold and
    none back to normal, and every probe of path still enabled."""
    hyps = hypotheses(d, inv["id"]) if inv else []
    acts = [h["action"] for h in hyps]
    c.eq((acts.count("root"), acts.count("verdict")), (1, 1),
         "%s: one root and one verdict hypothesis: %r" % (what, acts))
    rechecks = [h for h in hyps if h["action"] == "recheck"]
    c.check(any(h["stats"].get("holds") for h in rechecks),
            "%s: the verdict is re-checked while the fault is held: %r" %
            (what, [h["stats"].get("reason") for h in rechecks][:3]))
    back = [h["stats"].get("reason") for h in rechecks if not h["stats"].get("holds")]
    c.eq(back, [], "%s: no re-check finds the culprit back to normal while the fault is held"
         % what)
    on = enabled(d)
    c.check(all(p in on for p in path), "%s: %s still enabled: %r" % (what, ", ".join(path), on))
    return on


def check_release(c, d, sim, what, root, invs):
    """The fault ends: back to the root alone within a minute, logged, and no investigation
    opens in the AFTER_S after that. Returns the simulated seconds it took, or None."""
    sim.say("clear all")
    t_clear = sim.now
    released = None
    while sim.now - t_clear < RELEASE_WITHIN_S - 1e-6:
        sim.run(1)
        if enabled(d) == [root]:
            released = sim.now - t_clear
            break
    c.check(released is not None, "%s: back to %s alone within %d s of the fault's end: %r" %
            (what, root, RELEASE_WITHIN_S, enabled(d)))
    sim.run(AFTER_S)
    after = d.get("/api/v1/investigations")
    c.eq([i["id"] for i in after], [i["id"] for i in invs],
         "%s: no investigation opens after the fault ended" % what)
    c.eq(enabled(d), [root], "%s: still the root alone %d s later" % (what, AFTER_S))
    c.check(any("disable" in [h["action"] for h in hypotheses(d, i["id"])] for i in invs),
            "%s: the release is logged (a disable hypothesis)" % what)
    return released


def held(c):
    topo_name, which = CASE.rsplit("_", 1)
    topo = TOPOLOGIES[topo_name]
    faults = topo[which]
    root = topo["root"]
    diagram = os.path.join(SCENARIOS, topo["diagram"])
    what = "held %s/%s" % (topo_name, which)
    t_wall = time.monotonic()
    work, d, sim = start({"probes": {root: {"enabled": True, "dmax_ms": 500}},
                          "triggers": [{"probe": root, "kind": "qta"}]}, diagram, 7)
    try:
        total = len(d.get("/api/v1/diagram")["probes"])
        sim.run(BASELINE_S)
        p50, p95, n = baseline_quantiles(d, root, 40)
        if not c.check(n >= 30, "%s: %s has a baseline (%d windows)" % (what, root, n)):
            return
        points = [[0.5, round(1.1 * p50 + 0.001, 5)], [0.95, round(1.15 * p95 + 0.002, 5)]]
        st, env = d.api("PUT", "/api/v1/probes/%s" % root, {"qta": {"points": points}})
        c.eq(st, 200, "%s: the QTA is set from the baseline %r: %r" % (what, points, env))
        print("%s: %s baseline p50 %.2f ms, p95 %.2f ms; QTA %r" %
              (what, root, 1e3 * p50, 1e3 * p95, points), flush=True)
        sim.run(QUIET_S)
        c.eq(d.get("/api/v1/investigations"), [],
             "%s: no investigation before the fault" % what)
        # the faults, at once
        for leaf, fault in faults:
            sim.say("fault %s %s" % (leaf, fault))
        t_fault = sim.now
        first = None  # (simulated seconds after the fault, the investigation)
        max_on = 1
        seen = {}
        while sim.now - t_fault < HOLD_S - 1e-6:
            sim.run(1 if first is None else STEP_S)
            invs = d.get("/api/v1/investigations")
            for inv in invs:
                seen.setdefault(inv["id"], sim.now - t_fault)
            max_on = max(max_on, len(enabled(d)))
            if first is None:
                done = [i for i in invs if not i["open"] and i["verdict"]]
                if done:
                    first = (sim.now - t_fault, done[-1])
        invs = d.get("/api/v1/investigations")
        names = [leaf for leaf, _ in faults]
        c.check(first is not None, "%s: a verdict within the %d s the fault was held" %
                (what, HOLD_S))
        c.eq(len(invs), 1, "%s: exactly one investigation while the fault was held "
             "(opened at %s s after the fault): %r" % (
                 what, sorted(seen.values()),
                 [(i["id"], i["verdict"], i["verdict_node"], i["origin"],
                   ((i.get("summary") or {}).get("evidence") or {}).get("reason"))
                  for i in invs]))
        inv = invs[-1] if invs else {}
        named = culprits(inv) if inv else []
        c.eq((inv.get("origin"), inv.get("verdict")), ("trigger", "localized"),
             "%s: the trigger's investigation localized (%s)" %
             (what, ((inv.get("summary") or {}).get("evidence") or {}).get("reason")))
        c.eq(sorted(p for p, _ in named), sorted(names),
             "%s: every culprit named, none other (verdict at %s)" %
             (what, inv.get("verdict_node")))
        shares = [s for _, s in named if s is not None]
        if len(faults) > 1:
            c.check(len(shares) == len(named),
                    "%s: each culprit with its share of %s's change: %r" % (what, root, named))
        c.check(all(0.0 <= s <= 1.0 for s in shares) and sum(shares) <= 1.0 + 1e-9,
                "%s: shares between 0 and 100 %%, adding up to at most 100 %%: %r" %
                (what, named))
        transcript(d, invs)
        on = check_stands(c, d, what, inv, named, [p for p, _ in named])
        trig = [t for t in d.get("/api/v1/triggers") if t["probe"] == root]
        print("%s: after %d s held: the trigger %s; %d probes enabled: %s" % (
            what, HOLD_S, "fired" if trig and trig[0]["fired"] else "clear", len(on),
            ",".join(on)), flush=True)
        released = check_release(c, d, sim, what, root, invs)
        wall = time.monotonic() - t_wall
        print("%s: first verdict %s at %s, %s windows after the fault; culprits %s; at most "
              "%d of %d probes enabled; released %s s after the fault ended; %.0f simulated "
              "s in %.1f wall s (%.0f×)" % (
                  what, first[1]["verdict"] if first else "none",
                  first[1]["verdict_node"] if first else "-",
                  "%.0f" % first[0] if first else "-",
                  ", ".join("%s %s" % (p, "-" if s is None else "%.0f %%" % (100 * s))
                            for p, s in named) or "none",
                  max_on, total, "-" if released is None else "%.0f" % released, sim.now, wall,
                  sim.now / wall), flush=True)
    finally:
        sim.stop()
        d.stop(c, "%s dqd" % what)
        remove_workdir(work)


def tutorial(c, origin):
    """tree27, front_b2 15 ms slower 60 s after the start, `dqctl diagnose root --wait` 5 s
    later while simulated time goes on; the fault held TUTORIAL_HOLD_S after the verdict.
    origin trigger: the tutorial's root.json (QTA and QTA trigger); person: root enabled,
    nothing else (its 60 s are its baseline)."""
    what = "tutorial %s" % origin
    root = {"enabled": True, "dmax_ms": 500}
    cfg = {"probes": {"root": root}}
    if origin == "trigger":
        root["qta"] = {"points": [[0.5, 0.06], [0.95, 0.075]], "max_lost": 0.01}
        cfg["triggers"] = [{"probe": "root", "kind": "qta"}]
    t_wall = time.monotonic()
    work, d, sim = start(cfg, os.path.join(SCENARIOS, "tree27.dq"), 1)
    try:
        sim.run(BASELINE_S)
        sim.say("fault front_b2 slow 15")
        t_fault = sim.now
        sim.run(5)
        sim.drive()
        r = subprocess.run([DQCTL, "--server", d.url, "diagnose", "root", "--wait",
                            "--timeout", "120s"], capture_output=True, text=True, timeout=180)
        sim.stop_driving()
        c.check(r.returncode == 1 and "front_b2" in r.stdout,
                "%s: dqctl diagnose root --wait names front_b2 (exit %d): %s %s" %
                (what, r.returncode, r.stdout[-600:], r.stderr[-300:]))
        t_verdict = sim.now
        invs = d.get("/api/v1/investigations")
        first = [(i["id"], i["origin"], i["verdict"], i["verdict_node"]) for i in invs]
        while sim.now - t_verdict < TUTORIAL_HOLD_S - 1e-6:
            sim.run(STEP_S)
        invs = d.get("/api/v1/investigations")
        transcript(d, invs)
        c.eq([(i["id"], i["origin"], i["verdict"], i["verdict_node"]) for i in invs], first,
             "%s: the verdict stands %d s later: the same investigations, the same verdict" %
             (what, TUTORIAL_HOLD_S))
        c.eq([(i["origin"], i["verdict"], i["verdict_node"]) for i in invs],
             [(origin, "localized", "front_b2")], "%s: one investigation, localized at "
             "front_b2" % what)
        path = ["root", "front", "front_b", "front_b2"] if origin == "person" else ["front_b2"]
        check_stands(c, d, what, invs[0] if invs else None, [], path)
        released = check_release(c, d, sim, what, "root", invs)
        wall = time.monotonic() - t_wall
        print("%s: verdict %s %.0f s after the fault, held %d s; released %s s after the fault "
              "ended; %.0f simulated s in %.1f wall s (%.0f×)" % (
                  what, " ".join(str(x) for x in first[0][2:]) if first else "none",
                  t_verdict - t_fault, TUTORIAL_HOLD_S,
                  "-" if released is None else "%.0f" % released, sim.now, wall,
                  sim.now / wall), flush=True)
    finally:
        sim.stop()
        d.stop(c, "%s dqd" % what)
        remove_workdir(work)


def body(c):
    if CASE.startswith("tutorial_"):
        tutorial(c, CASE[len("tutorial_"):])
    else:
        held(c)


run_script("held", body)
