"""Issue 12, end to end in simulated time: dqd + dqsim's queueing stations + dqctl.

price, pool: tests/overload/stations.dq, a pipeline of four FIFO stations (parse: one
server, exponential service; price: one server, uniform service; store: one server,
exponential service; pool: two servers, exponential service). Only `pipeline` is
enabled. The load is raised in steps from 30/s (a quiet baseline) until the bottleneck
runs at rho ~ 0.8, held there, and then a person asks `dqctl diagnose pipeline`: in
`price` without saying what to look for (dqd infers an overload, the latency having
risen with the arrivals), in `pool` with --overload. The bottleneck is price in one run
and the pool in the other. The verdict must be `overload` naming the bottleneck; every
stage's rho within +-0.1 of the utilisation dqsim measures (busy server time over the
same simulated interval); the root's saturation rate within +-15 % of the true one
(servers / mean service time of the bottleneck, from dqsim's accounting); `dqctl why`
cites it; the JSON has the documented fields.

mm1k: scenarios/matrix/mm1k.dq, two identical M/M/1/K stations (exponential service,
mean 4 ms, K = 50) in sequence; a QTA trigger on pipeline (1.6 x its quiet quantiles);
the rate ramped from 40/s by 15/s every 3 simulated seconds until requests are lost.
Unattended, an overload investigation must open before the first lost request, name
both stations (bottleneck and co-bottleneck), and predict a saturation rate within
+-20 % of the rate at which loss began.

Usage: test_overload.py DQD DQCTL DQSIM SOURCE_DIR [price|pool|mm1k ...]
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from dqdtest import Dqd, HeldSim, make_workdir, remove_workdir, run_script

DQD, DQCTL, DQSIM, SRC = sys.argv[1:5]
CASES = sys.argv[5:] or ["price", "pool", "mm1k"]
STATIONS_DQ = os.path.join(SRC, "tests", "overload", "stations.dq")
MM1K_DQ = os.path.join(SRC, "scenarios", "matrix", "mm1k.dq")
STAGES = ["parse", "price", "store", "pool"]
SEED = int(os.environ.get("DQ_SEED", "7"))  # make matrix runs other seeds

# the runs: each station's service (dqsim --station) and which one is the bottleneck at
# the final rate of 100/s (rho = 100/s x mean service / servers)
RUNS = {
    "price": {"stations": ["parse:1:exp:4", "price:1:uniform:6:10", "store:1:exp:5",
                           "pool:2:exp:10"],
              "bottleneck": "price", "overload_flag": False},   # rho .4 .8 .5 .5
    "pool": {"stations": ["parse:1:exp:4", "price:1:uniform:3:7", "store:1:exp:5",
                          "pool:2:exp:16"],
             "bottleneck": "pool", "overload_flag": True},      # rho .4 .5 .5 .8
}
STAGE_KEYS = {"probe", "rho", "rho_low", "rho_high", "service_ms", "servers",
              "saturation_per_s", "method"}
OVERLOAD_KEYS = {"bottleneck", "saturation_per_s", "qta_violation_per_s",
                 "divergence_onset_per_s", "stages"}


def dqctl(d, *args, timeout=180):
    return subprocess.run([DQCTL, "--server", d.url, *args], capture_output=True, text=True,
                          timeout=timeout)


def enabled_names(d):
    return sorted(p["name"] for p in d.get("/api/v1/probes") if p["enabled"])


def start(work, diagram, cfg):
    path = os.path.join(work, "dqd.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return Dqd(DQD, work, window_ms=1000, lag_ms=100, diagram=diagram, config=path,
               extra=["--clock", "sim"])


def ramp_diagnose(c, name):
    run = RUNS[name]
    work = make_workdir("dqd-overload-")
    cfg = {"probes": {"pipeline": {"enabled": True, "dmax_ms": 1000},
                      "pool": {"servers": 2}}}
    d = start(work, STATIONS_DQ, cfg)
    extra = []
    for s in run["stations"]:
        extra += ["--station", s]
    sim = HeldSim(DQSIM, STATIONS_DQ, d.ingest_port, rate=30, extra=extra, seed=SEED)
    try:
        sim.run(40)                      # the quiet baseline
        for rate in (50, 70, 85, 100):   # the ramp
            sim.say("rate %d" % rate)
            sim.run(5)
        sim.run(10)                      # held at the final rate
        c.eq(enabled_names(d), ["pipeline"],
             "%s: only the root is enabled before the button is pressed" % name)
        mark = sim.stations()
        args = ["diagnose", "pipeline", "--wait", "--timeout", "150s"]
        if run["overload_flag"]:
            args.append("--overload")
        sim.drive()
        r = dqctl(d, *args)
        sim.stop_driving()
        util = sim.stations()
        if os.environ.get("VERBOSE"):
            print(r.stdout[-3000:])
            print({k: v.get("util") for k, v in util.items()})
        c.eq(r.returncode, 1, "%s: dqctl diagnose exits 1 (a bottleneck named): %s %s" %
             (name, r.stdout[-1500:], r.stderr[-400:]))
        invs = d.get("/api/v1/investigations")
        inv = invs[0] if invs else {}
        ov = inv.get("overload") or {}
        c.eq(inv.get("verdict"), "overload", "%s: the verdict is overload (%s at %s)" %
             (name, inv.get("verdict"), inv.get("verdict_node")))
        c.eq(ov.get("bottleneck"), run["bottleneck"], "%s: the bottleneck is named" % name)
        c.check(OVERLOAD_KEYS <= set(ov), "%s: the overload object has %s: %r" %
                (name, sorted(OVERLOAD_KEYS), sorted(ov)))
        stages = {s["probe"]: s for s in ov.get("stages", [])}
        if os.environ.get("VERBOSE"):
            print("readings", {k: v.get("readings") for k, v in stages.items()})
        c.eq(sorted(stages), sorted(STAGES), "%s: every stage is weighed" % name)
        for st in STAGES:
            s = stages.get(st, {})
            c.check(STAGE_KEYS <= set(s), "%s: stage %s has %s" % (name, st, sorted(STAGE_KEYS)))
            true = util.get(st, {}).get("util")
            rho = s.get("rho")
            c.check(rho is not None and true is not None and abs(rho - true) <= 0.1,
                    "%s: %s rho %s within 0.1 of the simulator's utilisation %s (method %s)" %
                    (name, st, rho, true, s.get("method")))
        c.eq(stages.get("pool", {}).get("servers"), 2, "%s: the pool has 2 servers" % name)
        b = util.get(run["bottleneck"], {})
        served = b.get("served", 0) - mark.get(run["bottleneck"], {}).get("served", 0)
        busy = b.get("busy_s", 0) - mark.get(run["bottleneck"], {}).get("busy_s", 0)
        true_sat = b.get("servers", 1) * served / busy if busy > 0 else None
        sat = ov.get("saturation_per_s")
        c.check(sat is not None and true_sat and abs(sat - true_sat) <= 0.15 * true_sat,
                "%s: saturation %s/s within 15 %% of the true %s/s" % (name, sat, true_sat))
        c.check("STAGE" in r.stdout and "saturates at" in r.stdout and
                run["bottleneck"] in r.stdout,
                "%s: dqctl prints the stages as a table:\n%s" % (name, r.stdout[-1500:]))
        j = dqctl(d, "log", str(inv.get("id", 0)), "--json")
        c.check(j.returncode == 0 and '"overload"' in j.stdout,
                "%s: dqctl log --json carries the overload object" % name)
        w = dqctl(d, "why", run["bottleneck"])
        c.check(w.returncode == 0 and "overload" in w.stdout and "saturates" in w.stdout,
                "%s: dqctl why %s cites the overload verdict:\n%s" %
                (name, run["bottleneck"], w.stdout[-1500:]))
        if run["overload_flag"]:
            # asked for: both say so where they tell how the investigation opened
            t = dqctl(d, "log", str(inv.get("id", 0)))
            c.check("by a person (dqctl); an overload investigation, as asked"
                    in t.stdout, "%s: dqctl log says the overload was asked for:\n%s" %
                    (name, t.stdout[:1500]))
            c.check("overload investigation from the start, as asked" in w.stdout,
                    "%s: dqctl why says the overload was asked for:\n%s" %
                    (name, w.stdout[-1500:]))
    finally:
        sim.stop()
        d.stop(c, "%s dqd" % name)
        remove_workdir(work)


def quantile_median(d, probe, q, windows=10):
    vals = []
    for back in range(windows):
        x = d.dq(probe, window=back)
        if x and x["quantiles"].get(q) is not None:
            vals.append(x["quantiles"][q])
    vals.sort()
    return vals[len(vals) // 2] if vals else None


def overload_of(d, inv_id):
    """1 when investigation inv_id is an overload investigation (asked for, opened by a
    load trigger, or inferred)."""
    hyps = d.get("/api/v1/investigations/%d" % inv_id)["hypotheses"]
    return any(h["stats"] and (h["stats"].get("overload") is True or
                               h["stats"].get("mode") == "overload") for h in hyps)


def mm1k(c):
    work = make_workdir("dqd-overload-mm1k-")
    cfg = {"probes": {"pipeline": {"enabled": True, "dmax_ms": 1000}},
           "triggers": [{"probe": "pipeline", "kind": "qta", "fire_after": 3,
                         "clear_after": 5}]}
    d = start(work, MM1K_DQ, cfg)
    extra = ["--station", "worker_1:1:exp:4:K=50", "--station", "worker_2:1:exp:4:K=50"]
    sim = HeldSim(DQSIM, MM1K_DQ, d.ingest_port, rate=40, extra=extra, seed=SEED)
    try:
        sim.run(40)
        p50, p90 = quantile_median(d, "pipeline", "0.5"), quantile_median(d, "pipeline", "0.9")
        c.check(p50 and p90, "mm1k: the quiet quantiles of pipeline: %s, %s" % (p50, p90))
        st, _ = d.api("PUT", "/api/v1/probes/pipeline",
                      {"qta": {"points": [[0.5, 1.6 * p50], [0.9, 1.6 * p90]]}})
        c.eq(st, 200, "mm1k: the QTA is set from the quiet quantiles")
        rate, opened, loss_rate, inv = 40, None, None, None
        sim.stations()
        while rate < 400 and (loss_rate is None or inv is None or inv.get("open")):
            rate += 15
            sim.say("rate %d" % rate)
            for _ in range(6):
                sim.run(0.5)
                invs = d.get("/api/v1/investigations")
                st = sim.stations()
                lost = sum(s["rejected"] for s in st.values())
                if invs and opened is None and overload_of(d, invs[-1]["id"]):
                    opened = {"rate": rate, "lost_before": lost}
                if lost > 0 and loss_rate is None:
                    loss_rate = rate
                if invs:
                    inv = invs[-1]
        c.check(opened is not None, "mm1k: an overload investigation opened (%r)" % opened)
        c.check(opened is not None and opened["lost_before"] == 0 and
                (loss_rate is None or opened["rate"] <= loss_rate),
                "mm1k: it opened before the first lost request (opened at %s/s, loss from "
                "%s/s)" % (opened and opened["rate"], loss_rate))
        c.check(loss_rate is not None, "mm1k: the ramp reached the loss (from %s/s)" % loss_rate)
        inv = d.get("/api/v1/investigations/%d" % inv["id"]) if inv else {}
        ov = inv.get("overload") or {}
        c.eq(inv.get("verdict"), "overload", "mm1k: the verdict is overload (%s at %s)" %
             (inv.get("verdict"), inv.get("verdict_node")))
        named = {ov.get("bottleneck")} | set(ov.get("co_bottlenecks", []))
        c.eq(sorted(named), ["worker_1", "worker_2"],
             "mm1k: both identical stations are named (bottleneck and co-bottleneck)")
        sat = ov.get("saturation_per_s")
        if os.environ.get("VERBOSE"):
            print("opened", opened, "loss from", loss_rate, "saturation", sat)
            print(json.dumps(ov, indent=1)[:3000])
        c.check(sat is not None and loss_rate and abs(sat - loss_rate) <= 0.2 * loss_rate,
                "mm1k: predicted saturation %s/s within 20 %% of the rate loss began at %s/s" %
                (sat, loss_rate))
        # why it became an overload investigation, in dqctl log and dqctl why: at its
        # opening (the root's overload_why) or at a later check (that step's reason)
        hyps = inv.get("hypotheses") or [{}]
        why_open = (hyps[0].get("stats") or {}).get("overload_why")
        later = [h["stats"]["reason"] for h in hyps if h.get("stats") and
                 h["stats"].get("mode") == "overload" and h["stats"].get("reason")]
        said = why_open or (later[0] if later else None)
        t = dqctl(d, "log", str(inv.get("id", 0)))
        c.check(said is not None and said in t.stdout,
                "mm1k: dqctl log says why it is an overload investigation (%r):\n%s" %
                (said, t.stdout[:2000]))
        w = dqctl(d, "why", ov.get("bottleneck") or "worker_1")
        c.check(said is not None and said.split(":")[0] in w.stdout,
                "mm1k: dqctl why says why it is an overload investigation (%r):\n%s" %
                (said, w.stdout[-2000:]))
        if os.environ.get("VERBOSE"):
            print(t.stdout[:2500])
            print(w.stdout[-2500:])
    finally:
        sim.stop()
        d.stop(c, "mm1k dqd")
        remove_workdir(work)


def body(c):
    for name in CASES:
        if name in RUNS:
            ramp_diagnose(c, name)
        elif name == "mm1k":
            mm1k(c)
        else:
            raise SystemExit("unknown case %s" % name)


run_script("overload", body)
