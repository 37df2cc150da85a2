"""Issue 16, acceptance 1: dqd's dashboard in a real headless Chromium while dqsim feeds dqd.

dqd runs in simulated time (--clock sim) with tree27 and an API token; dqsim is held and
moved on by the test, so every change the page must show follows a step the test made,
and the test waits for the DOM to show it (no sleeping and hoping). Chromium (Debian's)
is driven over its DevTools port by tests/web/cdp.py. The page must:

  - list every node of the diagram in its tree;
  - draw the charts of each opened probe (the CDF, the quantiles, the loss and rate);
  - show the next window once the test lets one close, in the header and in the charts;
  - ask for the token when a change needs one, keep it in session storage, send it and
    Content-Type: application/json with the change (the token is nowhere in the page);
  - show the verdict, the why sentences, the hypothesis tree and the commands after
    `dqctl diagnose root --wait` found a slowed leaf;
  - request nothing from a host other than dqd, and log no console error or exception.

Screenshots go to OUT_DIR (the build folder); with --docs-screenshot PATH the overview is
copied there too (docs/dashboard.png, made by this test).

Usage: test_dashboard.py DQD DQCTL DQSIM DIAGRAM OUT_DIR [--docs-screenshot PATH]
"""

import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

from dqdtest import Dqd, HeldSim, make_workdir, remove_workdir, run_script  # noqa: E402

import cdp  # noqa: E402

TOKEN = "dashboard-test-token-7f3a"
LEAF = "front_b2"


# For the opened probe's CDF chart: every plotted point (x ms, y) of the observed and the
# calculated curves against the ΔQ the page fetched: y must be 0 before the first right
# edge and cdf[k - 1] from the k-th right edge k*w on (k - L for a calculated ΔQ with lag L:
# its lower bound). {points, bad: [first mismatches]}
CDF_EDGES_JS = """(() => {
  const p = window.dqdState.panels.get(%r);
  const u = p && p.charts.cdf;
  if (!u || !p.dqs || p.density) return null;
  const bad = [];
  let points = 0;
  // the curves drawn, by their labels (a calculated ΔQ from stale children is not drawn)
  const at = (label) => u.series.findIndex((s) => s.label === label);
  [[at('observed'), p.dqs.observed], [at('calculated'), p.dqs.calculated]].forEach(([k, q]) => {
    if (!q || k < 0) return;
    const cdf = [];
    q.pdf.reduce((s, v, i) => (cdf[i] = Math.min(1, s + v)), 0);
    u.data[0].forEach((xms, i) => {
      // a calculated ΔQ with lag L is drawn as its lower bound: cdf[i - L] at edge i + 1
      const edges = Math.floor(xms / (q.bin_width * 1e3) + 1e-6) - (q.lag > 0 ? q.lag : 0);
      const want = edges <= 0 ? 0 : cdf[Math.min(edges, cdf.length) - 1];
      points++;
      if (Math.abs(u.data[k][i] - want) > 1e-9 && bad.length < 5)
        bad.push([k, xms, u.data[k][i], want]);
    });
  });
  return {points: points, bad: bad, first: [u.data[0][1], u.data[1][1]]};
})()"""

# The density view of the opened probe: at x ms, bin floor(x / w)'s mass per ms (the bin
# (i*w, (i+1)*w] drawn from its left edge to its right), 0 past the grid.
DENSITY_JS = """(() => {
  const p = window.dqdState.panels.get(%r);
  const u = p && p.charts.cdf;
  if (!u || !p.dqs || !p.density) return null;
  const bad = [];
  let points = 0;
  const at = (label) => u.series.findIndex((s) => s.label === label);
  [[at('observed'), p.dqs.observed], [at('calculated'), p.dqs.calculated]].forEach(([k, q]) => {
    if (!q || k < 0) return;
    u.data[0].forEach((xms, i) => {
      const b = Math.floor(xms / (q.bin_width * 1e3) + 1e-6);
      const want = b < q.pdf.length ? q.pdf[b] / (q.bin_width * 1e3) : 0;
      points++;
      if (Math.abs(u.data[k][i] - want) > 1e-9 * Math.max(1, want) && bad.length < 5)
        bad.push([k, xms, u.data[k][i], want]);
    });
  });
  return {points: points, bad: bad};
})()"""


def main(c):
    args = sys.argv[1:]
    docs_png = None
    if "--docs-screenshot" in args:
        i = args.index("--docs-screenshot")
        docs_png = args[i + 1]
        del args[i:i + 2]
    dqd_bin, dqctl_bin, dqsim_bin, diagram, out_dir = args[:5]
    os.makedirs(out_dir, exist_ok=True)
    work = make_workdir("dqd-web-")
    cfg = {"probes": {"root": {"enabled": True, "dmax_ms": 500,
                               "qta": {"points": [[0.5, 0.055], [0.95, 0.07]],
                                       "max_lost": 0.01}}},
           "triggers": [{"probe": "root", "kind": "qta", "fire_after": 3}],
           "deescalate_windows": 3}
    cfg_path = os.path.join(work, "dqd.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    token_path = os.path.join(work, "token")  # the token comes from a file, never argv
    with open(token_path, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token_path, 0o600)
    d = Dqd(dqd_bin, work, window_ms=1000, lag_ms=100, diagram=diagram, config=cfg_path,
            extra=["--clock", "sim", "--api-token", token_path])
    sim = HeldSim(dqsim_bin, diagram, d.ingest_port, rate=300, extra=["--leaf-mean", "2:2"])
    browser = None
    try:
        sim.run(20)
        c.check(d.dq("root") is not None, "root reports before the page opens")
        browser = cdp.Browser.launch(out_dir)

        watch = browser.watch()
        requests = watch.requests
        browser.navigate(d.url + "/#open=root")

        # 1. the tree lists every node of the diagram
        nodes = sorted(d.get("/api/v1/diagram")["probes"])
        listed = browser.wait_for(
            "(() => { const s = new Set([...document.querySelectorAll('#tree li[data-node]')]"
            ".map(l => l.dataset.node)); return s.size >= %d ? [...s].sort() : null; })()"
            % len(nodes), timeout=30)
        c.eq(listed, nodes, "the tree lists the diagram's %d nodes" % len(nodes))
        c.check(browser.wait_for("document.querySelector('#live').textContent === 'live'"),
                "the live indicator says live")
        root_row = browser.wait_for(
            "(() => { const l = document.querySelector('#tree li[data-node=\"root\"]');"
            " return l && l.dataset.enabled === '1' && l.querySelector('.nums').textContent; })()")
        c.check(root_row and "·" in root_row,
                "root's row shows it enabled with p50 · p95 · lost: %r" % root_row)

        # 2. the opened probe's charts are drawn (uPlot canvases)
        def drawn(probe, kind):
            return browser.evaluate(
                "(() => { const b = document.querySelector('.panel[data-probe=\"%s\"] "
                ".chart[data-kind=\"%s\"]'); return b && b.querySelector('canvas') ? "
                "Number(b.dataset.drawn) : 0; })()" % (probe, kind))

        for kind in ("cdf", "quantiles", "loss"):
            c.check(browser.wait_for("(() => { const b = document.querySelector('.panel"
                                     "[data-probe=\"root\"] .chart[data-kind=\"%s\"]'); "
                                     "return b && b.querySelector('canvas') && "
                                     "Number(b.dataset.drawn) > 0; })()" % kind, timeout=20),
                    "root's %s chart is drawn" % kind)
        browser.evaluate("document.querySelector('.panel[data-probe=\"root\"]')"
                         ".scrollIntoView()")
        cdf_sub = browser.evaluate("document.querySelector('.panel[data-probe=\"root\"] "
                                   ".chart[data-kind=\"cdf\"] .sub').textContent")
        c.check(cdf_sub and "observed n" in cdf_sub,
                "root's CDF has the observed ΔQ: %r" % cdf_sub)
        # the CDF is drawn at the bins' right edges (bin i holds (i*w, (i+1)*w], cdf[i] is
        # P(delay <= (i+1)*w)): compared point by point with the ΔQ the page fetched
        edges = browser.evaluate(CDF_EDGES_JS % "root")
        c.check(edges and edges["points"] > 10 and not edges["bad"],
                "root's CDF curves step at the bins' right edges: %r" % (edges,))
        browser.screenshot(os.path.join(out_dir, "dashboard-opened.png"))

        # 3. a new window: the test lets one close and waits for the DOM to show it
        w0 = browser.evaluate("document.querySelector('#window-label').dataset.wid")
        q0 = drawn("root", "quantiles")
        c.check(w0, "the header names the last window (%r)" % w0)
        sim.run(1)
        want = d.get("/api/v1/probes/root/windows")["windows"][-1]["wid"]
        c.check(want > int(w0 or 0), "dqd closed a window after the step (%r > %r)" % (want, w0))
        got = browser.wait_for("document.querySelector('#window-label').dataset.wid === '%d'"
                               % want, timeout=15)
        c.check(got, "the page shows window %d after it closed (it shows %r)" % (
            want, browser.evaluate("document.querySelector('#window-label').dataset.wid")))
        c.check(browser.wait_for("Number(document.querySelector('.panel[data-probe=\"root\"] "
                                 ".chart[data-kind=\"quantiles\"]').dataset.drawn) > %d" % q0),
                "root's quantile chart is drawn again for the new window")
        n_points = browser.evaluate(
            "window.dqdState.series.get('root').length")
        c.check(n_points and n_points >= 20, "root's series holds the ring's windows (%r)" %
                n_points)

        # 4. a change needs the token: the page asks, keeps it in the tab, sends it
        browser.evaluate("document.querySelector('#tree li[data-node=\"front\"] > .row')"
                         ".click()")
        c.check(browser.wait_for("!!document.querySelector('.panel[data-probe=\"front\"]')"),
                "clicking front in the tree opens its panel")
        browser.evaluate("document.querySelector('.panel[data-probe=\"front\"] button.enable')"
                         ".click()")
        c.check(browser.wait_for("!document.querySelector('#token-dialog').hidden"),
                "the page asks for the token before a change")
        browser.evaluate("document.querySelector('#token-input').value = %s; "
                         "document.querySelector('#token-ok').click()" % json.dumps(TOKEN))
        c.check(d.wait_until(lambda: d.get("/api/v1/probes/front")["enabled"], timeout=10),
                "the Enable button enabled front in dqd")
        c.eq(browser.evaluate("sessionStorage.getItem('dqd.api_token')"), TOKEN,
             "the token is kept in the tab's session storage")
        c.check(browser.wait_for("document.querySelector('.panel[data-probe=\"front\"] "
                                 "button.enable').dataset.enabled === '1'"),
                "front's panel says enabled (from the probe event)")
        sim.run(3)
        for kind in ("cdf", "quantiles", "loss"):
            c.check(browser.wait_for("Number(document.querySelector('.panel[data-probe="
                                     "\"front\"] .chart[data-kind=\"%s\"]').dataset.drawn) "
                                     "> 0" % kind, timeout=15),
                    "front's %s chart is drawn once it has windows" % kind)
        page = browser.evaluate("fetch('/').then(r => r.text())")
        c.check(page and TOKEN not in page and "dqd" in page,
                "the page itself does not hold the token")
        # 5. a slowed leaf, `dqctl diagnose`: the page shows the verdict and the why chain
        sim.run(20)
        sim.say("fault %s slow 15" % LEAF)
        sim.run(5)
        # root's QTA trigger fired on the slower root (fire_after 3) and opened a search:
        # the tree shows both on root's row
        root_li = "document.querySelector('#tree li[data-node=\"root\"]')"
        state = browser.wait_for("(() => { const l = %s; return l.dataset.fired === '1' && "
                                 "l.dataset.investigating === '1' && l.querySelector("
                                 "'.badges').textContent; })()" % root_li, timeout=15)
        c.check(state and "qta" in state and "searching" in state,
                "root's row shows its trigger fired and a search under way: %r (%r)" % (
                    state, browser.evaluate("(() => { const l = %s; return [l.dataset.fired, "
                                            "l.dataset.investigating, l.querySelector("
                                            "'.badges').textContent]; })()" % root_li)))
        sim.drive()
        env = dict(os.environ, DQD_TOKEN=TOKEN)
        r = subprocess.run([dqctl_bin, "--server", d.url, "diagnose", "root", "--wait",
                            "--timeout", "120s"], capture_output=True, text=True, timeout=180,
                           env=env)
        sim.stop_driving()
        c.eq(r.returncode, 1, "dqctl diagnose root --wait finds a problem: %s %s" %
             (r.stdout[-600:], r.stderr[-300:]))
        inv = d.get("/api/v1/investigations")[0]
        c.eq((inv["verdict"], inv["verdict_node"]), ("localized", LEAF), "the verdict")
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"investigations\"]')"
                         ".click()")
        row = browser.wait_for("!!document.querySelector('#inv-list tr[data-id=\"%d\"]')"
                               % inv["id"], timeout=15)
        c.check(row, "the investigation is listed")
        browser.evaluate("document.querySelector('#inv-list tr[data-id=\"%d\"]').click()"
                         % inv["id"])
        shown = browser.wait_for(
            "(() => { const b = document.querySelector('#inv-detail'); return b.dataset.id === "
            "'%d' && b.dataset.verdict === 'localized' && b.querySelectorAll("
            "'.why-sentences li').length > 0 && b.textContent; })()" % inv["id"], timeout=20)
        c.check(shown and ("localized at " + LEAF) in shown,
                "the page shows the verdict localized at %s" % LEAF)
        # every culprit the verdict names, with the share of root's change it explains
        ev = d.get("/api/v1/investigations/%d" % inv["id"])["summary"]["evidence"]
        culprits = ev.get("culprits") or []
        listed = browser.evaluate(
            "[...document.querySelectorAll('#inv-detail .verdict-block ul.culprits li')]"
            ".map(l => [l.dataset.probe, l.textContent])")
        c.check(culprits and [x[0] for x in listed or []] == [x["probe"] for x in culprits]
                and all(("%.2f%%" % (100 * x["share"])) in t for x, (_, t) in
                        zip(culprits, listed)),
                "the verdict block lists every culprit with its share: %r (evidence %r)" %
                (listed, culprits))
        why = d.get("/api/v1/why/" + LEAF)
        c.check(shown and why["sentences"] and why["sentences"][0] in shown,
                "the page shows the why sentences (%r)" % (why["sentences"][:1],))
        actions = browser.evaluate("[...document.querySelectorAll('#inv-detail .hyp')]"
                                   ".map(h => h.dataset.action)")
        c.check(actions and actions[0] == "root" and "descend" in actions and
                "verdict" in actions, "the hypothesis tree from root to verdict: %r" % actions)
        # the commands come in their own request after the detail: wait for them
        c.check(browser.wait_for("document.querySelectorAll('#inv-detail table.commands tr')"
                                 ".length > 1", timeout=15), "the commands sent are listed")
        c.check(browser.wait_for("document.querySelector('#tree li[data-node=\"root\"]')"
                                 ".dataset.verdict === 'localized'"),
                "the tree marks root with the verdict")
        browser.screenshot(os.path.join(out_dir, "dashboard-verdict.png"))

        # the QTA trigger fired with the fault: its snapshot, before and after
        snaps = d.get("/api/v1/snapshots")
        c.check(snaps, "the trigger stored a snapshot")
        if snaps:
            browser.evaluate("document.querySelector('.tabs button[data-tab=\"snapshots\"]')"
                             ".click()")
            c.check(browser.wait_for("!!document.querySelector('#snap-list tr[data-id=\"%d\"]')"
                                     % snaps[0]["id"], timeout=15), "the snapshot is listed")
            browser.evaluate("document.querySelector('#snap-list tr[data-id=\"%d\"]').click()"
                             % snaps[0]["id"])
            shown = browser.wait_for(
                "(() => { const p = document.querySelector('#snap-detail .plot'); return p && "
                "p.dataset.drawn === '1' && p.querySelector('canvas') && "
                "document.querySelector('#snap-detail').textContent; })()", timeout=15)
            c.check(shown and "before" in shown and "after" in shown,
                    "the snapshot's before/after CDFs are drawn: %r" % (shown or "")[:200])

        # the density view of root's ΔQ
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"probes\"]').click()")
        n0 = drawn("root", "cdf")
        browser.evaluate("document.querySelector('.panel[data-probe=\"root\"] input.density')"
                         ".click()")
        c.check(browser.wait_for("Number(document.querySelector('.panel[data-probe=\"root\"] "
                                 ".chart[data-kind=\"cdf\"]').dataset.drawn) > %d && document"
                                 ".querySelector('.panel[data-probe=\"root\"] .chart[data-kind="
                                 "\"cdf\"]').dataset.view === 'density'" % n0),
                "root's ΔQ switches to the density: %r" % browser.evaluate(
                    "(() => { const b = document.querySelector('.panel[data-probe=\"root\"] "
                    ".chart[data-kind=\"cdf\"]'); return [%d, b.dataset.drawn, b.dataset.view, "
                    "b.querySelector('.sub').textContent, document.querySelector('.panel"
                    "[data-probe=\"root\"] input.density').checked]; })()" % n0))
        dens = browser.evaluate(DENSITY_JS % "root")
        c.check(dens and dens["points"] > 10 and not dens["bad"],
                "root's density spreads each bin's mass over its interval: %r" % (dens,))
        browser.evaluate("document.querySelector('.panel[data-probe=\"root\"] input.density')"
                         ".click()")

        # Diagnose from a panel (store_c has no data yet, and time is held: the investigation
        # waits for its first windows), then Abort from the page
        browser.evaluate("document.querySelector('#tree li[data-node=\"store_c\"] > .row')"
                         ".click()")
        c.check(browser.wait_for("!!document.querySelector('.panel[data-probe=\"store_c\"] "
                                 "button.diagnose')"), "store_c's panel opens")
        before = {i["id"] for i in d.get("/api/v1/investigations")}
        browser.evaluate("document.querySelector('.panel[data-probe=\"store_c\"] "
                         "button.diagnose').click()")
        new_inv = d.wait_until(lambda: [i for i in d.get("/api/v1/investigations")
                                        if i["id"] not in before], timeout=10)
        c.check(new_inv and new_inv[0]["node"] == "store_c" and new_inv[0]["open"],
                "the Diagnose button opened an investigation at store_c: %r" % new_inv)
        if new_inv:
            iid = new_inv[0]["id"]
            c.check(browser.wait_for("(() => { const b = document.querySelector('#inv-detail');"
                                     " return b.dataset.id === '%d' && !!b.querySelector("
                                     "'button.abort'); })()" % iid, timeout=15),
                    "the page shows the new investigation searching, with Abort")
            browser.evaluate("document.querySelector('#inv-detail button.abort').click()")
            c.check(browser.wait_for("document.querySelector('#inv-detail').dataset.verdict "
                                     "=== 'aborted'", timeout=15),
                    "Abort ends it: the page shows the verdict aborted")
            inv2 = d.get("/api/v1/investigations/%d" % iid)
            c.eq(inv2["verdict"], "aborted", "dqd has investigation %d aborted" % iid)
            c.check(any(r["method"] == "POST" and r["url"].endswith("/api/v1/diagnose")
                        and json.loads(r["body"] or "{}").get("node") == "store_c"
                        for r in requests), "the page POSTed {node: store_c} to /api/v1/diagnose")
        browser.evaluate("document.querySelector('.panel[data-probe=\"store_c\"] "
                         "button[title=\"close\"]').click()")

        # the overview for the docs: the Probes tab with root and the leaf found
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"probes\"]').click()")
        browser.evaluate("document.querySelector('.panel[data-probe=\"front\"] "
                         "button[title=\"close\"]').click()")
        browser.evaluate("document.querySelector('#tree li[data-node=\"%s\"] > .row').click()"
                         % LEAF)
        sim.run(2)
        c.check(browser.wait_for("Number(document.querySelector('.panel[data-probe=\"%s\"] "
                                 ".chart[data-kind=\"cdf\"]').dataset.drawn) > 0" % LEAF,
                                 timeout=15), "the leaf's CDF is drawn")
        c.check(browser.wait_for("document.querySelector('.panel[data-probe=\"root\"] "
                                 ".chart[data-kind=\"cdf\"] .sub').textContent"
                                 ".includes('calculated')", timeout=15),
                "root's CDF overlays the calculated ΔQ once its children report")
        browser.evaluate("window.scrollTo(0, 0); document.querySelector('#tab-probes')"
                         ".scrollTop = 0; document.querySelector('#toast').className = ''")
        time.sleep(0.3)  # the last frame's paint, for the picture only
        overview = browser.screenshot(os.path.join(out_dir, "dashboard.png"))
        if docs_png:
            shutil.copyfile(overview, docs_png)
            print("docs screenshot: %s" % docs_png)

        # front's panel again: dMax, QTA, then Disable (its Enable button says Disable now)
        browser.evaluate("document.querySelector('#tree li[data-node=\"front\"] > .row')"
                         ".click()")
        c.check(browser.wait_for("document.querySelector('.panel[data-probe=\"front\"] "
                                 "button.enable').textContent === 'Disable'"),
                "front's panel offers Disable")
        # dMax and QTA from front's panel (after the search, whose children inherit dMax):
        # dqd takes them, the panel's head shows them
        panel = "document.querySelector('.panel[data-probe=\"front\"] %s')"
        browser.evaluate((panel % "input.dmax") + ".value = '300ms'; " +
                         (panel % "button.set-dmax") + ".click()")
        c.check(d.wait_until(lambda: d.get("/api/v1/probes/front")["dmax_ms"] == 300,
                             timeout=10), "the dMax field set front's dMax to 300 ms in dqd")
        c.check(browser.wait_for((panel % ".facts") + ".textContent.includes('dMax 300 ms')"),
                "front's panel shows dMax 300 ms: %r" % browser.evaluate(
                    (panel % ".facts") + ".textContent"))
        browser.evaluate((panel % "input.qta") + ".value = '0.5@20ms 0.95@45ms lost<2%'; " +
                         (panel % "button.set-qta") + ".click()")
        c.check(d.wait_until(lambda: d.get("/api/v1/probes/front")["qta"], timeout=10),
                "the QTA field set front's QTA in dqd")
        qta = d.get("/api/v1/probes/front")["qta"] or {}
        c.eq(([[round(x, 6) for x in pt] for pt in qta.get("points", [])],
              qta.get("max_lost")), ([[0.5, 0.02], [0.95, 0.045]], 0.02),
             "front's QTA is the one typed (points in seconds, lost below 2 %)")
        c.check(browser.wait_for((panel % ".facts") + ".textContent.includes('QTA 0.5@20ms')"),
                "front's panel shows its QTA: %r" % browser.evaluate(
                    (panel % ".facts") + ".textContent"))
        browser.evaluate((panel % "button.clear-qta") + ".click()")
        c.check(d.wait_until(lambda: d.get("/api/v1/probes/front")["qta"] is None,
                             timeout=10), "Clear removed front's QTA in dqd")
        browser.evaluate("document.querySelector('.panel[data-probe=\"front\"] "
                         "button.enable').click()")
        c.check(d.wait_until(lambda: not d.get("/api/v1/probes/front")["enabled"],
                             timeout=10), "the Disable button disabled front in dqd")
        c.check(browser.wait_for("document.querySelector('#tree li[data-node=\"front\"]')"
                                 ".dataset.enabled === '0'"),
                "the tree shows front disabled (from the probe event)")

        perf = browser.evaluate("(() => { const p = window.dqdPerf; return {updates: p.updates,"
                                " samples: p.samples.length, max: Math.max(0, ...p.samples)};"
                                " })()")
        print("page: %r" % perf)
        c.check(perf["samples"] >= 2, "the page timed its window updates: %r" % perf)

        # every node's panel open at once: only those on screen get charts, and one that
        # comes on screen is drawn then (the page reloaded with #open=all of them)
        browser.evaluate("location.hash = '#open=' + %s.join(',')" % json.dumps(nodes))
        browser.call("Page.reload")
        c.check(browser.wait_for("document.querySelectorAll('.panel').length === %d && "
                                 "document.querySelector('#live').textContent === 'live'"
                                 % len(nodes), timeout=30),
                "the page reopens with all %d panels" % len(nodes))
        sim.run(1)
        want = d.status()["last_window"]["wid"]
        c.check(browser.wait_for("document.querySelector('#window-label').dataset.wid === "
                                 "'%d'" % want, timeout=15), "the page is live after the reload")
        on_screen = ("[...document.querySelectorAll('.panel')].filter(p => { const r = "
                     "p.getBoundingClientRect(); return r.bottom > -200 && r.top < "
                     "innerHeight + 200; }).map(p => p.dataset.probe)")
        with_canvas = ("[...document.querySelectorAll('.panel')].filter(p => "
                       "p.querySelector('canvas')).map(p => p.dataset.probe)")
        browser.wait_for("%s.length > 0" % with_canvas, timeout=15)
        shown, drawn_now = browser.evaluate(on_screen), browser.evaluate(with_canvas)
        c.check(drawn_now and len(drawn_now) < len(nodes) and set(drawn_now) <= set(shown),
                "with %d panels open only those on screen have charts: drawn %r, on screen "
                "%r" % (len(nodes), drawn_now, shown))
        # the lowest panel of a probe that has windows to draw
        last = next((n for n in reversed(nodes)
                     if d.get("/api/v1/probes/%s/windows" % n)["windows"]), None)
        c.check(last and last not in drawn_now and last not in shown,
                "a panel with windows (%s) is off screen and not drawn" % last)
        browser.evaluate("document.querySelector('.panel[data-probe=\"%s\"]')"
                         ".scrollIntoView()" % last)
        c.check(browser.wait_for("!!document.querySelector('.panel[data-probe=\"%s\"] "
                                 "canvas')" % last, timeout=15),
                "%s's panel is drawn once it is scrolled on screen" % last)

        puts = [r for r in requests if r["method"] in ("PUT", "POST", "DELETE")]
        c.check(len(puts) >= 3, "the page sent its changes (%d)" % len(puts))
        for r in puts:
            h = {k.lower(): v for k, v in r["headers"].items()}
            c.eq(h.get("authorization"), "Bearer " + TOKEN,
                 "%s %s carries the token" % (r["method"], r["url"]))
            if r["body"] is not None:
                c.eq(h.get("content-type"), "application/json",
                     "%s %s says Content-Type: application/json" % (r["method"], r["url"]))

        # nothing but dqd, and no console error
        watch.check_clean(c, d.url)
    finally:
        if browser:
            browser.close()
        sim.stop()
        d.stop(c)
        remove_workdir(work)


if __name__ == "__main__":
    run_script("dashboard", main)
