"""Issue 16: the overload verdict's stage table in the dashboard, in a real headless Chromium.

dqd and dqsim's queueing stations (tests/overload/stations.dq: parse, price, store, pool
in sequence, only `pipeline` enabled) in simulated time; the load is ramped until `price`
runs at rho ~ 0.8 (as tests/overload does). Then the person opens pipeline's panel, ticks
"overload" and presses Diagnose: the page must POST {node: pipeline, overload: true},
and once dqd's verdict is in, show the investigation with its stage table: one row per
stage, in dqd's order, each stage's rho as dqd has it, the bottleneck's row marked, and
the saturation rate in the line above it. Then the data link goes down (dqsim's
--clock-link keeps simulated time going): the tree marks pipeline silent, and not once
the data is back. Then dqd restarts on the same port: the page says it is reconnecting,
and is live again by itself with the new dqd's state. No request to another host, no
console error (but the browser's failed reconnects while dqd was away).
A screenshot of the table is kept in OUT_DIR.

Usage: test_dashboard_overload.py DQD DQSIM SOURCE_DIR OUT_DIR
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

from dqdtest import Dqd, HeldSim, make_workdir, remove_workdir, run_script  # noqa: E402

import cdp  # noqa: E402

STATIONS = ["parse:1:exp:4", "price:1:uniform:6:10", "store:1:exp:5", "pool:2:exp:10"]


def main(c):
    dqd_bin, dqsim_bin, src, out_dir = sys.argv[1:5]
    os.makedirs(out_dir, exist_ok=True)
    diagram = os.path.join(src, "tests", "overload", "stations.dq")
    work = make_workdir("dqd-web-overload-")
    cfg_path = os.path.join(work, "dqd.json")
    with open(cfg_path, "w") as f:
        json.dump({"probes": {"pipeline": {"enabled": True, "dmax_ms": 1000},
                              "pool": {"servers": 2}}}, f)
    d = Dqd(dqd_bin, work, window_ms=1000, lag_ms=100, diagram=diagram, config=cfg_path,
            extra=["--clock", "sim"])
    extra = []
    for s in STATIONS:
        extra += ["--station", s]
    # --clock-link: simulated time goes on while the data link is down (the silence below)
    sim = HeldSim(dqsim_bin, diagram, d.ingest_port, rate=30, extra=extra + ["--clock-link"])
    browser = None
    try:
        sim.run(40)                       # the quiet baseline
        for rate in (50, 70, 85, 100):    # the ramp: price ends at rho ~ 0.8
            sim.say("rate %d" % rate)
            sim.run(5)
        sim.run(10)
        browser = cdp.Browser.launch(out_dir)
        watch = browser.watch()
        requests = watch.requests
        browser.navigate(d.url + "/#open=pipeline")
        panel = "document.querySelector('.panel[data-probe=\"pipeline\"] %s')"
        c.check(browser.wait_for("!!(%s) && document.querySelector('#live').textContent === "
                                 "'live'" % (panel % "button.diagnose"), timeout=30),
                "pipeline's panel is open with its Diagnose button")

        # tick "overload", press Diagnose, and let simulated time run until the verdict
        browser.evaluate((panel % "input.overload") + ".checked = true; " +
                         (panel % "button.diagnose") + ".click()")
        inv = d.wait_until(lambda: d.get("/api/v1/investigations"), timeout=10)
        c.check(inv, "the Diagnose button opened an investigation")
        sim.drive()
        try:
            done = d.wait_until(lambda: not d.get("/api/v1/investigations")[0]["open"],
                                timeout=150, step=0.2)
        finally:
            sim.stop_driving()
        c.check(done, "the investigation ended")
        inv = d.get("/api/v1/investigations")[0]
        ov = inv.get("overload") or {}
        c.eq(inv["verdict"], "overload", "dqd's verdict is overload")
        c.eq(ov.get("bottleneck"), "price", "dqd names price the bottleneck")
        posted = [json.loads(r["body"] or "{}") for r in requests
                  if r["method"] == "POST" and r["url"].endswith("/api/v1/diagnose")]
        c.check(posted and posted[0].get("node") == "pipeline" and
                posted[0].get("overload") is True,
                "the page POSTed {node: pipeline, overload: true}: %r" % posted)

        # the page shows the verdict and the stage table (it follows the events)
        table = browser.wait_for(
            "(() => { const b = document.querySelector('#inv-detail'); if (b.dataset.id !== "
            "'%d' || b.dataset.verdict !== 'overload') return null; const rows = [...b."
            "querySelectorAll('table.stages tr[data-probe]')]; return rows.length ? {rows: "
            "rows.map(r => [r.dataset.probe, r.classList.contains('bottleneck'), [...r.cells]"
            ".map(td => td.textContent)]), head: [...b.querySelectorAll('table.stages th')]"
            ".map(th => th.textContent), line: b.querySelector('.overload > div')."
            "textContent} : null; })()" % inv["id"], timeout=30)
        c.check(table, "the page shows investigation %d's overload verdict with a stage table"
                % inv["id"])
        table = table or {"rows": [], "head": [], "line": ""}
        stages = ov.get("stages", [])
        c.eq([r[0] for r in table["rows"]], [s["probe"] for s in stages],
             "one row per stage, in dqd's order")
        marked = [r[0] for r in table["rows"] if r[1]]
        c.eq(marked, [ov.get("bottleneck")] + list(ov.get("co_bottlenecks") or []),
             "the bottleneck's row (and only the named ones) is marked")
        rho_col = table["head"].index("ρ") if "ρ" in table["head"] else -1
        c.check(rho_col >= 0, "the table has a ρ column: %r" % table["head"])
        for s, r in zip(stages, table["rows"]):
            shown = r[2][rho_col] if rho_col >= 0 else ""
            try:
                ok = abs(float(shown) - s["rho"]) <= 0.0051
            except ValueError:
                ok = False
            c.check(ok, "%s: the page's ρ %r is dqd's %.4f" % (s["probe"], shown, s["rho"]))
        sat = ov.get("saturation_per_s")
        c.check(sat and ("saturates at " in table["line"]) and
                ("bottleneck " + ov["bottleneck"]) in table["line"],
                "the line above the table names the bottleneck and the saturation: %r"
                % table["line"])
        browser.evaluate("document.querySelector('#inv-detail table.stages').scrollIntoView()")
        browser.screenshot(os.path.join(out_dir, "dashboard-overload.png"))

        # the data link goes down (simulated time goes on over the clock link): pipeline
        # goes silent, and the tree says so; it comes back with the data
        row = "document.querySelector('#tree li[data-node=\"pipeline\"]')"
        sim.say("disconnect")
        sim.run(3)
        c.check(d.wait_until(lambda: any(x["probe"] == "pipeline"
                                         for x in d.status()["silent"]), timeout=10),
                "dqd has pipeline silent once the data link is down")
        silent = browser.wait_for("(() => { const l = %s; return l.dataset.silent === '1' && "
                                  "l.querySelector('.badges').textContent; })()" % row,
                                  timeout=15)
        c.check(silent and "silent" in silent, "pipeline's row says silent: %r" % silent)
        sim.say("reconnect")
        sim.run(3)
        c.check(browser.wait_for("%s.dataset.silent === '0'" % row, timeout=15),
                "pipeline's row is no longer silent once data returns")

        # dqd goes away and comes back on the same port with the same database: the page
        # says it is reconnecting, then reconnects by itself and fetches everything again
        # (the new dqd's status, the investigation from the store). Requests that found no
        # dqd meanwhile (the stream's reconnects, a refresh an event had scheduled just
        # before the stop) are the only expected errors.
        before_gap = len(watch.problems)
        sim.stop()
        port, old_closed = d.http_port, d.status()["windows_closed"]
        d.stop(c, "the first dqd")
        c.check(browser.wait_for("document.querySelector('#live').textContent === "
                                 "'reconnecting…'", timeout=15),
                "the page says it is reconnecting while dqd is away")
        d = Dqd(dqd_bin, work, window_ms=1000, lag_ms=100, diagram=diagram, config=cfg_path,
                extra=["--clock", "sim", "--http", "127.0.0.1:%d" % port])
        c.eq(d.http_port, port, "the second dqd listens on the same port")
        back = browser.wait_for(
            "(() => { const s = window.dqdState.status; return document.querySelector("
            "'#live').textContent === 'live' && s && s.windows_closed === 0 && !!document."
            "querySelector('#inv-list tr[data-id=\"%d\"]') && {closed: s.windows_closed}; "
            "})()" % inv["id"], timeout=20)
        c.check(back, "the page is live again on the new dqd (its status: %r windows closed, "
                "the first had %d) and lists investigation %d from the store"
                % (back and back["closed"], old_closed, inv["id"]))
        away = [x for x in watch.problems[before_gap:]
                if "ERR_CONNECTION_REFUSED" in x or "Failed to fetch" in x]
        watch.problems[:] = [x for x in watch.problems if x not in away]
        print("while dqd was away: %d requests found no dqd: %r" % (len(away), away))

        watch.check_clean(c, d.url)
    finally:
        if browser:
            browser.close()
        sim.stop()
        d.stop(c)
        remove_workdir(work)


if __name__ == "__main__":
    run_script("dashboard_overload", main)
