"""Issue 27: the operator's screen in a real headless Chromium, while dqsim --trace-ids feeds
a dqd in simulated time with every kind of operator in its diagram.

Before the page opens, the test makes history: windows, a dMax change, a probe disabled, a
slow leaf that fires root's QTA trigger and a diagnosis with a verdict, the fault gone and
the trigger cleared, then dqd stopped and started again on the same store. Then the page,
with `#open=…&range=1h`, must:

  - show the range from the store across the restart (the windows of both runs), and keep
    it in the URL;
  - draw each heatmap with as many columns as the store's ΔQs in the range, exemplars as
    dots on it;
  - put a mark of every kind on root's time charts (dqd started and stopped, probe
    enabled, disabled, dMax changed, trigger fired and cleared, investigation opened, its
    steps, its verdict), whose hover says its sentence and links to the investigation;
  - list root's exemplars with the trace ids dqsim sent, linked through trace_url;
  - show each node's operator (sequence, first-to-finish, all-to-finish, choice with its
    weights) in the tree and in its panel, with its children's contributions;
  - grey a disabled probe's numbers with their age, and not draw a calculated ΔQ from it;
  - pass layout checks at 1500 and 800 px: annotations inside their plots, chart titles
    apart from their subtitles, the tree at most a third of 800 px, names in the
    investigations list not cut, no provisional or missing investigation id, shares within
    0 … 100 %, placeholders that are examples, a form error at its field, a message when
    the filter matches nothing, a legend of what is drawn, the loss axis in %, snapshots
    with the QTA and the calculated ΔQ;
  - request nothing from a host other than dqd, and log no console error.

Screenshots go to OUT_DIR; with --docs-dir DIR the ones docs/running.md shows are copied
there (`make docs-screenshots`).

Usage: test_dashboard_history.py DQD DQSIM OUT_DIR [--docs-dir DIR]
"""

import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

from dqdtest import Dqd, HeldSim, make_workdir, remove_workdir, run_script  # noqa: E402

import cdp  # noqa: E402

TRACE_URL = "http://jaeger.example:16686/trace/{trace_id}"
DIAGRAM = """# issue 27's page test: every operator
root = s:web -> s:api -> s:db;
web  = f:race(cdn1, cdn2);
api  = p:route[0.3, 0.7](fast, slow);
db   = a:fan(shard1, shard2, shard3);
"""
ALL = ["root", "web", "race", "cdn1", "cdn2", "api", "route", "fast", "slow", "db", "fan",
       "shard1", "shard2", "shard3"]
MARK_KINDS = ["dqd_started", "dqd_stopped", "probe_enabled", "probe_disabled", "probe_dmax",
              "trigger_fired", "trigger_cleared", "investigation_opened", "step", "verdict"]

PANEL = "document.querySelector('.panel[data-probe=\"%s\"]')"

# Layout checks of the whole page: a list of what is wrong (empty when all is well).
LAYOUT_JS = r"""(() => {
  const bad = [];
  const inside = (a, b, slack) => a.left >= b.left - slack && a.right <= b.right + slack &&
    a.top >= b.top - slack && a.bottom <= b.bottom + slack;
  const onScreen = (r) => r.bottom > 0 && r.top < innerHeight && r.width > 0;
  // annotations (failure mass, dMax, the failure band's label) inside their plot
  for (const a of document.querySelectorAll('.annot')) {
    if (a.hidden) continue;
    const r = a.getBoundingClientRect(), o = a.closest('.u-over').getBoundingClientRect();
    if (onScreen(r) && !inside(r, o, 1)) bad.push('annotation "' + a.textContent + '" outside its plot');
  }
  // chart titles and subtitles: apart, within their chart
  for (const c of document.querySelectorAll('.panel .chart')) {
    const t = c.querySelector('.t').getBoundingClientRect(), s = c.querySelector('.sub').getBoundingClientRect();
    const box = c.getBoundingClientRect();
    if (!onScreen(box)) continue;
    if (s.height && t.bottom > s.top + 0.5) bad.push(c.dataset.kind + ': title over its subtitle');
    if (t.right > box.right + 1 || s.right > box.right + 1) bad.push(c.dataset.kind + ': title wider than its chart');
  }
  // the tree's names keep room for themselves (the numbers give way)
  for (const n of document.querySelectorAll('#tree li:not(.filtered-out) > .row .name')) {
    const r = n.getBoundingClientRect();
    if (onScreen(r) && r.width < Math.min(40, n.scrollWidth)) bad.push('tree name squeezed: ' + n.title);
  }
  // names in the investigations list wrap instead of being cut
  for (const td of document.querySelectorAll('#inv-list td')) {
    if (td.getClientRects().length && td.scrollWidth > td.clientWidth + 1) bad.push('cut cell: ' + td.textContent);
  }
  const text = document.body.innerText;
  if (/investigation -\d|#-\d|investigation null|investigation undefined/.test(text)) bad.push('a provisional investigation id');
  if (/\b1 windows\b/.test(text)) bad.push('"1 windows"');
  for (const td of document.querySelectorAll('td.share')) {
    const m = /^(-?[0-9.]+)%$/.exec(td.textContent.trim());
    if (m && (Number(m[1]) < 0 || Number(m[1]) > 100)) bad.push('share ' + td.textContent);
  }
  // placeholders are examples, never the value set now
  for (const f of document.querySelectorAll('.panel input.dmax, .panel input.qta')) {
    if (!/^e\.g\. /.test(f.placeholder)) bad.push('placeholder "' + f.placeholder + '"');
  }
  return bad;
})()"""


def diagram_file(work):
    path = os.path.join(work, "ops.dq")
    with open(path, "w") as f:
        f.write(DIAGRAM)
    return path


def start(dqd_bin, work, diagram, db):
    cfg = {"probes": {"root": {"enabled": True, "dmax_ms": 300,
                               "qta": {"points": [[0.5, 0.03], [0.95, 0.06]], "max_lost": 0.05}}},
           "triggers": [{"probe": "root", "kind": "qta", "fire_after": 2, "clear_after": 2}],
           "deescalate_windows": 2, "snapshot_windows": 3}
    path = os.path.join(work, "dqd.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return Dqd(dqd_bin, work, window_ms=1000, lag_ms=100, diagram=diagram, config=path, db=db,
               extra=["--clock", "sim", "--trace-url", TRACE_URL])


def make_history(c, dqd_bin, dqsim_bin, work, diagram, db):
    """Runs dqd twice on one store; returns the second dqd and its held dqsim."""
    d = start(dqd_bin, work, diagram, db)
    sim = HeldSim(dqsim_bin, diagram, d.ingest_port, rate=200,
                  extra=["--trace-ids", "--leaf-mean", "2:4"])
    for n in ALL:
        d.api("PUT", "/api/v1/probes/" + n, {"enabled": True})
    sim.run(10)
    c.eq(d.api("PUT", "/api/v1/probes/route", {"dmax_ms": 250})[0], 200, "route's dMax changed")
    sim.run(5)
    sim.say("fault shard2 slow 40")
    sim.drive()
    c.check(d.wait_until(lambda: any(i["verdict"] for i in d.get("/api/v1/investigations")),
                         timeout=90), "root's trigger opened a search that found a verdict")
    sim.stop_driving()
    sim.say("clear shard2")
    sim.drive()
    c.check(d.wait_until(lambda: any(t["probe"] == "root" and not t["fired"]
                                     for t in d.get("/api/v1/triggers")) and
                         any(m["kind"] == "trigger_cleared" for m in d.get(
                             "/api/v1/marks?from=0")["marks"]), timeout=60),
            "the trigger cleared once the fault went")
    sim.stop_driving()
    for n in ALL:  # all on again (the search's de-escalation may have disabled some)
        d.api("PUT", "/api/v1/probes/" + n, {"enabled": True})
    sim.run(3)
    stopped_at = d.status()["now"]
    first_run = d.get("/api/v1/probes/root/windows")["windows"]
    sim.stop()
    d.stop(c)
    d = start(dqd_bin, work, diagram, db)
    sim = HeldSim(dqsim_bin, diagram, d.ingest_port, rate=200,
                  extra=["--trace-ids", "--leaf-mean", "2:4", "--start-at",
                         "%.3f" % (stopped_at + 20)])
    # failures of fast (taken 3 times in 10): root and route lose about 4.5 %, within root's
    # QTA, so their CDFs show a failure mass (some 9 failures a window)
    sim.say("fault fast fail 0.15")
    sim.run(6)
    # shard3 goes: its numbers stay, older every window
    c.eq(d.api("PUT", "/api/v1/probes/shard3", {"enabled": False})[0], 200, "shard3 disabled")
    sim.run(6)
    return d, sim, first_run


def layout(c, browser, what):
    bad = browser.evaluate(LAYOUT_JS)
    c.check(bad == [], "%s: layout: %r" % (what, bad))


def main(c):
    args = sys.argv[1:]
    docs_dir = None
    if "--docs-dir" in args:
        i = args.index("--docs-dir")
        docs_dir = args[i + 1]
        del args[i:i + 2]
    dqd_bin, dqsim_bin, out_dir = args[:3]
    os.makedirs(out_dir, exist_ok=True)
    work = make_workdir("dqd-web-history-")
    diagram = diagram_file(work)
    db = os.path.join(work, "dqd.db")
    d, sim, first_run = make_history(c, dqd_bin, dqsim_bin, work, diagram, db)
    browser = None
    shots = []

    def shot(name):
        path = browser.screenshot(os.path.join(out_dir, name))
        shots.append(path)

    try:
        browser = cdp.Browser.launch(out_dir, width=1500, height=1000)
        watch = browser.watch()
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": 1500, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        browser.navigate(d.url + "/#open=root,route,shard3&range=1h")
        c.check(browser.wait_for("document.querySelector('#live').textContent === 'live' && "
                                 "document.querySelectorAll('.panel').length === 3", timeout=30),
                "the page opens root, route and shard3")
        c.eq(browser.evaluate("document.querySelector('#range').value"), "1h",
             "the range from the URL: the last hour")

        # 1. the range: the store's windows of both runs in root's quantile chart
        # (an hour of 1 s windows is downsampled to bins of 4 s: 900 points at most)
        got = browser.wait_for("(() => { const s = window.dqdState.series.get('root');"
                               " return s && s.length && window.dqdState.panels.get('root')"
                               ".seriesKey === '1h' ? s.map(w => [w.start, w.span, w.n]) :"
                               " null; })()", timeout=20)
        stored = d.get("/api/v1/probes/root/windows?from=0")
        # (the window a run started in is stored from the run's start: partial)
        c.check(got and got[0][0] < first_run[0]["start"] + 1 and
                max(x[0] for x in got) > first_run[-1]["start"] + 15 and
                all(x[1] <= 4 + 1e-6 for x in got) and
                sum(x[2] for x in got) == sum(w["n"] for w in stored["windows"]),
                "root's series hold the first run's windows (from %r) and the second's, in 4 s "
                "bins: %r" % (first_run[0]["start"], got))
        c.check(browser.wait_for("Number(%s.querySelector('.chart[data-kind=\"quantiles\"]')"
                                 ".dataset.drawn) > 0" % (PANEL % "root")),
                "root's quantile chart is drawn")
        browser.evaluate("document.querySelector('#range').value = '15m';"
                         "document.querySelector('#range').dispatchEvent(new Event('change'))")
        c.check(browser.wait_for("location.hash.includes('range=15m')"), "the URL keeps the range")

        # 2. the heatmap: the store's columns, exemplars as dots
        heat = PANEL % "root" + ".querySelector('.chart[data-kind=\"heat\"]')"
        cols = browser.wait_for("(() => { const p = window.dqdState.panels.get('root');"
                                " return p.heat.key === '15m' && p.heat.cols.length &&"
                                " Number(%s.dataset.columns) === p.heat.cols.length &&"
                                " %s.querySelector('canvas') ? Number(%s.dataset.columns) : 0;"
                                " })()" % (heat, heat, heat),
                                timeout=20)
        b = browser.evaluate("(() => { const p = window.dqdState.panels.get('root');"
                             " return [p.heat.cols[0].start, p.heat.cols.length]; })()")
        url = [r["url"] for r in watch.requests if "/probes/root/heatmap" in r["url"]][-1]
        api_cols = d.get(url[len(d.url):])["columns"]
        c.check(cols and cols == len(api_cols) == b[1],
                "root's heatmap is drawn with the %d columns the store has (drawn %r)" %
                (len(api_cols), cols))
        c.check(browser.wait_for("Number(%s.dataset.dots) > 0" % heat),
                "root's exemplars are dots on its heatmap (%r)" % browser.evaluate(
                    heat + ".dataset.dots"))

        # 3. marks: one of every kind on the open panels' charts (root's: dqd's, its trigger's,
        # its investigation's; route's dMax; shard3's disabling), a hover says it, links on
        kinds = set()
        for name in ("root", "route", "shard3"):
            browser.evaluate(PANEL % name + ".scrollIntoView()")
            browser.wait_for("%s.querySelectorAll('.chart[data-kind=\"quantiles\"] .mark')"
                             ".length > 0" % (PANEL % name), timeout=20)
            kinds |= set(browser.evaluate("[...%s.querySelectorAll('.mark')].map(m => "
                                          "m.dataset.kind)" % (PANEL % name)))
        c.check(set(MARK_KINDS) <= kinds, "a mark of every kind: %r (missing %r)" % (
            sorted(kinds), sorted(set(MARK_KINDS) - kinds)))
        browser.evaluate(PANEL % "root" + ".scrollIntoView()")
        # the first verdict mark is the oldest verdict's (marks come oldest first)
        verdict = min((i for i in d.get("/api/v1/investigations") if i["verdict"]),
                      key=lambda i: i["id"])
        browser.evaluate("(() => { const m = %s.querySelector('.chart[data-kind=\"quantiles\"] "
                         ".mark[data-kind=\"verdict\"]'); m.dispatchEvent(new MouseEvent("
                         "'mouseenter')); })()" % (PANEL % "root"))
        tip = browser.wait_for("(() => { const t = document.querySelector('#mark-tip');"
                               " return !t.hidden && t.textContent; })()")
        c.check(tip and ("investigation %d" % verdict["id"]) in tip and "verdict" in tip,
                "hovering the verdict's mark says it: %r" % tip)
        browser.evaluate("document.querySelector('#mark-tip a.inv-link').click()")
        c.check(browser.wait_for("document.querySelector('#inv-detail').dataset.id === '%d'"
                                 % verdict["id"], timeout=15),
                "its link opens the investigation")
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"investigations\"]')"
                         ".click()")
        layout(c, browser, "the investigations at 1500 px")
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"probes\"]').click()")

        # 4. exemplars: trace ids dqsim sent, linked through trace_url
        links = browser.wait_for("(() => { const a = [...%s.querySelectorAll('table.exemplars "
                                 "a.trace')]; return a.length ? a.map(x => [x.textContent, "
                                 "x.getAttribute('href')]) : null; })()" % (PANEL % "root"),
                                 timeout=20)
        c.check(links and all(re.match(r"^[0-9a-f]{16}$", t) and
                              h == TRACE_URL.replace("{trace_id}", t) for t, h in links),
                "root's exemplars show their trace ids linked with trace_url: %r" %
                (links or [])[:2])
        api_ex = d.get("/api/v1/probes/root/exemplars?from=%r&limit=30" % b[0])["exemplars"]
        c.check(links and links[0][0] in [e["trace_id"] for e in api_ex],
                "the first is one of the range's exemplars")

        # 5. operators: in the tree and in the panels
        ops = browser.evaluate("Object.fromEntries([...document.querySelectorAll('#tree li')]"
                               ".map(l => [l.dataset.node, [...l.querySelector(':scope > .row')"
                               ".querySelectorAll('.op')].map(o => o.textContent)]))")
        c.eq((ops.get("root"), ops.get("race"), ops.get("route"), ops.get("fan"),
              ops.get("fast"), ops.get("slow")),
             (["seq"], ["first"], ["choice"], ["all"], ["p 0.3"], ["p 0.7"]),
             "the tree shows each operator and a choice's weights")
        browser.evaluate(PANEL % "route" + ".scrollIntoView()")
        route = browser.wait_for("(() => { const f = %s.querySelector('.family');"
                                 " return f.querySelectorAll('tr[data-child]').length === 2 &&"
                                 " f.textContent; })()" % (PANEL % "route"), timeout=20)
        c.check(route and "probabilistic choice of 2 children" in route and "0.3" in route,
                "route's panel: its operator, its children's weights and contributions: %r" %
                route)
        c.check("probabilistic choice of fast, slow" in browser.evaluate(
            PANEL % "route" + ".querySelector('.facts').textContent"), "… and in its facts")

        # 6. a disabled probe: greyed with its age; no calculated ΔQ drawn from it
        row = browser.evaluate("(() => { const n = document.querySelector('#tree li[data-node="
                               "\"shard3\"] .nums'); return [n.className, n.textContent]; })()")
        c.check("stale" in row[0] and re.search(r"\d+ (s|min|h) old", row[1]),
                "shard3's row is greyed with its age: %r" % row)
        browser.evaluate(PANEL % "shard3" + ".scrollIntoView()")
        facts = browser.wait_for("(() => { const f = %s.querySelector('.facts'); return "
                                 "f.classList.contains('stale') && f.textContent; })()" %
                                 (PANEL % "shard3"))
        c.check(facts and "disabled" in facts and " old" in facts,
                "shard3's panel says disabled, its numbers greyed with their age: %r" % facts)

        # 7. a custom range (UTC fields) over both runs; layout at 1500 px, then the defects'
        # own checks
        now = d.status()["now"]
        lo, hi = int(first_run[0]["start"]) - 5, int(now) + 3
        browser.evaluate("(() => { const r = document.querySelector('#range'); r.value = "
                         "'custom'; r.dispatchEvent(new Event('change')); const iso = (s) => "
                         "new Date(s * 1000).toISOString().slice(0, 19); document.querySelector("
                         "'#range-from').value = iso(%d); document.querySelector('#range-to')"
                         ".value = iso(%d); document.querySelector('#range-apply').click(); })()"
                         % (lo, hi))
        browser.evaluate(PANEL % "root" + ".scrollIntoView()")
        c.check(browser.wait_for("location.hash.includes('range=%d-%d') && window.dqdState"
                                 ".panels.get('root').heat.key === '%d-%d' && Number(%s"
                                 ".dataset.columns) === window.dqdState.panels.get('root').heat"
                                 ".cols.length" % (lo, hi, lo, hi, heat), timeout=20),
                "a custom range from the UTC fields, kept in the URL")
        browser.evaluate("window.scrollTo(0, 0); document.querySelector('#tab-probes')"
                         ".scrollTop = 0")
        browser.wait_for("%s.querySelectorAll('.chart[data-kind=\"quantiles\"] .mark').length"
                         % (PANEL % "root"))
        layout(c, browser, "1500 px")
        shot("dashboard-history.png")
        browser.evaluate(PANEL % "route" + ".scrollIntoView()")
        browser.wait_for("%s.querySelectorAll('.family tr[data-child]').length === 2" %
                         (PANEL % "route"))
        shot("dashboard-operators.png")
        browser.evaluate(PANEL % "shard3" + ".scrollIntoView()")
        browser.wait_for("%s.querySelector('.chart[data-kind=\"cdf\"] canvas')" % (PANEL % "shard3"))
        legend = browser.evaluate("[...%s.querySelectorAll('.chart[data-kind=\"cdf\"] "
                                  ".u-legend .u-label')].map(l => l.textContent)" %
                                  (PANEL % "shard3"))
        c.check(legend and "QTA" not in legend and "calculated" not in legend,
                "shard3's legend lists only what is drawn (no QTA, no calculated): %r" % legend)
        # root's failure mass labelled inside its plot (the layout check above), and its dMax
        # (300 ms, right of the plot) said in the subtitle, not drawn over the curves
        cdf = browser.evaluate("(() => { const b = %s.querySelector('.chart[data-kind=\"cdf\"]');"
                               " const a = b.querySelector('.annot.lost'), d = b.querySelector("
                               "'.annot.dmax'); return [a && !a.hidden && a.textContent, !d || "
                               "d.hidden, b.querySelector('.sub').textContent]; })()" %
                               (PANEL % "root"))
        c.check(cdf[0] and cdf[0].startswith("failure mass ") and cdf[1] and
                "dMax 300 ms is right of the plot" in cdf[2],
                "root's CDF: the failure mass labelled, dMax beyond the plot said above it: %r"
                % cdf)
        ticks = browser.evaluate("(() => { const u = window.dqdState.panels.get('root').charts"
                                 ".loss; return u.axes[1].values(u, [0, 0.5, 1]); })()")
        c.eq(ticks, ["0 %", "0.5 %", "1 %"], "the loss axis says %")
        # a form error at its field, not in a toast
        browser.evaluate("(() => { const p = %s; p.querySelector('input.qta').value = "
                         "'0.5@fast'; p.querySelector('button.set-qta').click(); })()" %
                         (PANEL % "root"))
        err = browser.evaluate("(() => { const p = %s; return [p.querySelector('.field-error')"
                               ".textContent, p.querySelector('input.qta').getAttribute("
                               "'aria-invalid'), document.querySelector('#toast').className]; "
                               "})()" % (PANEL % "root"))
        c.check(err[0] and "0.5@fast" in err[0] and err[1] == "true" and "error" not in err[2],
                "a bad QTA is said at its field: %r" % err)
        now_dmax = browser.evaluate(PANEL % "root" + ".querySelector('.dmax-now').textContent")
        c.eq(now_dmax, "(now 300 ms)", "the dMax set now is beside the field")
        browser.evaluate("(() => { const f = document.querySelector('#filter'); f.value = "
                         "'zzz'; f.dispatchEvent(new Event('input')); })()")
        c.check(browser.evaluate("!document.querySelector('#no-match').hidden && document"
                                 ".querySelector('#no-match').textContent.includes('zzz')"),
                "a filter that matches nothing says so")
        browser.evaluate("(() => { const f = document.querySelector('#filter'); f.value = '';"
                         " f.dispatchEvent(new Event('input')); })()")

        # 8. snapshots: QTA and the calculated ΔQs too
        snaps = d.get("/api/v1/snapshots")
        c.check(snaps, "the trigger stored a snapshot")
        if snaps:
            browser.evaluate("document.querySelector('.tabs button[data-tab=\"snapshots\"]')"
                             ".click()")
            browser.wait_for("!!document.querySelector('#snap-list tr[data-id=\"%d\"]')" %
                             snaps[0]["id"], timeout=15)
            browser.evaluate("document.querySelector('#snap-list tr[data-id=\"%d\"]').click()"
                             % snaps[0]["id"])
            series = browser.wait_for("(() => { const p = document.querySelector('#snap-detail "
                                      ".plot'); return p && p.dataset.drawn === '1' && "
                                      "p.dataset.series; })()", timeout=15)
            c.check(series and "calculated" in series and "QTA" in series,
                    "the snapshot draws the calculated ΔQ and the QTA: %r" % series)
            browser.evaluate("document.querySelector('.tabs button[data-tab=\"probes\"]')"
                             ".click()")

        # 9. 800 px: the tree at most a third; the same layout checks
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": 800, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        c.check(browser.wait_for("document.querySelector('#side').getBoundingClientRect()"
                                 ".width <= 800 / 3"),
                "at 800 px the tree takes at most a third: %r px" % browser.evaluate(
                    "document.querySelector('#side').getBoundingClientRect().width"))
        c.check(browser.wait_for("(() => { const p = window.dqdState.panels.get('root'); const u ="
                                 " p.charts.cdf; return u && Math.abs(u.width - p.el.cdf"
                                 ".querySelector('.plot').clientWidth) <= 2 && u.width > 400; })()",
                                 timeout=10),
                "at 800 px the charts take the width they have (one above the other): %r" %
                browser.evaluate("(() => { const p = window.dqdState.panels.get('root'); return"
                                 " [p.charts.cdf.width, p.el.cdf.querySelector('.plot')"
                                 ".clientWidth]; })()"))
        browser.evaluate("window.scrollTo(0, 0); document.querySelector('#tab-probes')"
                         ".scrollTop = 0")
        layout(c, browser, "800 px")
        shot("dashboard-800.png")
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"investigations\"]')"
                         ".click()")
        layout(c, browser, "the investigations at 800 px")
        browser.evaluate("document.querySelector('.tabs button[data-tab=\"probes\"]').click()")
        watch.check_clean(c, d.url)
        if docs_dir:
            for path in shots:
                shutil.copyfile(path, os.path.join(docs_dir, os.path.basename(path)))
                print("docs screenshot: %s" % os.path.join(docs_dir, os.path.basename(path)))
    finally:
        if browser:
            browser.close()
        sim.stop()
        d.stop(c)
        remove_workdir(work)


if __name__ == "__main__":
    run_script("dashboard_history", main)
