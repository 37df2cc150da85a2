"""Issue 16, acceptance 2 (and issue 27's heatmap, marks and exemplars): the dashboard's
main-thread time per live update.

A diagram with many leaves (default 200 leaves, 212 probes, all enabled), dqd and dqsim in
simulated time, and the page in headless Chromium with every leaf's panel open (default
200). The test lets one window close at a time and waits until the page has finished
all the work that window's event caused (the event's handler, the frame it scheduled and
the ΔQ fetches of the panels on screen); the page itself times that work
(window.dqdPerf, performance.now() around each piece). As a cross-check, Chromium's own
Performance.getMetrics gives the main thread's total task time over the same windows.
Also timed: a full rebuild of the tree and a filter keystroke over it.

The same run first measures a baseline: the page with no panel open over as many windows
(the tree and the header only), and prints the ratios against it.

Usage: bench_dashboard.py DQD DQSIM OUT_DIR [--leaves N] [--open N] [--windows N]
Prints a table and writes OUT_DIR/bench-dashboard.json.
"""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

from dqdtest import Dqd, HeldSim, make_workdir, remove_workdir  # noqa: E402

import cdp  # noqa: E402


def diagram_text(leaves, groups=10):
    per = (leaves + groups - 1) // groups
    names = ["p%03d" % i for i in range(leaves)]
    lines = ["# bench: %d leaves in %d sequences under an all-to-finish fan" % (leaves, groups),
             "root = a:fan(%s);" % ", ".join("s:g%02d" % g for g in range(groups))]
    for g in range(groups):
        part = names[g * per:(g + 1) * per]
        if part:
            lines.append("g%02d = %s;" % (g, " -> ".join(part)))
    return "\n".join(lines) + "\n", names


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main():
    args = sys.argv[1:]
    opts = {"--leaves": 200, "--open": 200, "--windows": 40}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = int(args[i + 1])
            del args[i:i + 2]
    dqd_bin, dqsim_bin, out_dir = args[:3]
    os.makedirs(out_dir, exist_ok=True)
    work = make_workdir("dqd-bench-web-")
    text, leaves = diagram_text(opts["--leaves"])
    diagram = os.path.join(work, "bench.dq")
    with open(diagram, "w") as f:
        f.write(text)
    d = Dqd(dqd_bin, work, window_ms=1000, lag_ms=100, diagram=diagram,
            extra=["--clock", "sim"])
    names = d.get("/api/v1/diagram")["probes"]
    cfg_probes = len(names)
    sim = None
    browser = None
    try:
        for n in names:
            d.api("PUT", "/api/v1/probes/" + n, {"enabled": True})
        # instances with trace ids: the panels have exemplars (a table, dots on the heatmap)
        sim = HeldSim(dqsim_bin, diagram, d.ingest_port, rate=100,
                      extra=["--leaf-mean", "1:3", "--trace-ids"])
        sim.run(30)
        opened = leaves[:opts["--open"]]
        browser = cdp.Browser.launch(out_dir)
        for domain in ("Page", "Runtime", "Performance"):
            browser.call(domain + ".enable")

        def metrics():
            m = browser.call("Performance.getMetrics")["metrics"]
            return {x["name"]: x["value"] for x in m}

        def measure(windows):
            """The page's own time per window update and Chromium's task time per window
            (its idle rate over 2 s, measured first, taken off) over `windows` windows."""
            time.sleep(1.0)
            browser.evaluate("window.dqdPerf.samples.length = 0")
            m_idle0 = metrics()
            time.sleep(2.0)
            m_idle1 = metrics()
            idle = (m_idle1["TaskDuration"] - m_idle0["TaskDuration"]) * 1e3 / 2.0
            m0 = metrics()
            wall0 = time.time()
            for _ in range(windows):
                sim.run(1)
                want = d.status()["last_window"]["wid"]
                # one evaluation per window, waiting in the page (a 5 ms timer), so the
                # measurement does not poll the page from outside
                if not browser.evaluate(
                        "new Promise(res => { const t0 = Date.now(); const check = () => "
                        "(document.querySelector('#window-label').dataset.wid === '%d' && "
                        "window.dqdPerf.open.size === 0) ? res(true) : Date.now() - t0 > "
                        "30000 ? res(false) : setTimeout(check, 5); check(); })" % want,
                        timeout=40):
                    raise RuntimeError("window %d never reached the page" % want)
            wall = time.time() - wall0
            m1 = metrics()
            samples = browser.evaluate("window.dqdPerf.samples")
            return {
                "samples": samples, "wall": wall, "idle": idle,
                "task": ((m1["TaskDuration"] - m0["TaskDuration"]) * 1e3 - idle * wall)
                / windows,
                "script": (m1["ScriptDuration"] - m0["ScriptDuration"]) * 1e3 / windows,
                "layout": (m1["LayoutDuration"] + m1["RecalcStyleDuration"] -
                           m0["LayoutDuration"] - m0["RecalcStyleDuration"]) * 1e3 / windows,
                "by_kind": {k[:-len("Duration")]: (m1[k] - m0[k]) * 1e3 / windows
                            for k in m1 if k.endswith("Duration")},
            }

        def ready(n_panels):
            if not browser.wait_for("document.querySelectorAll('.panel').length === %d && "
                                    "document.querySelector('#live').textContent === 'live' "
                                    "&& window.dqdState.probes.size === %d"
                                    % (n_panels, cfg_probes), timeout=60):
                raise RuntimeError("the page did not open %d panels" % n_panels)

        # the baseline, in the same run: the page with no panel open (the tree and the
        # header follow every window, nothing is charted)
        browser.navigate(d.url + "/")
        ready(0)
        base = measure(opts["--windows"])
        # then the page reloaded with a panel open for each of the `--open` leaves
        browser.evaluate("location.hash = '#open=%s'" % ",".join(opened))
        browser.call("Page.reload")
        ready(len(opened))
        browser.wait_for("Number(document.querySelector('.panel .chart[data-kind=\"cdf\"]')"
                         ".dataset.drawn) > 0", timeout=30)
        drawn_before = browser.evaluate(
            "[...document.querySelectorAll('.panel')].filter(p => p.querySelector('canvas'))"
            ".length")
        run = measure(opts["--windows"])
        samples, wall, idle_task_per_s = run["samples"], run["wall"], run["idle"]
        drawn_after = browser.evaluate(
            "[...document.querySelectorAll('.panel')].filter(p => p.querySelector('canvas'))"
            ".length")
        # what the panels on screen show: heatmap columns, exemplar dots and rows, marks
        shown = browser.evaluate(
            "[...document.querySelectorAll('.panel')].filter(p => p.querySelector("
            "'.chart[data-kind=\"heat\"] canvas')).map(p => { const h = p.querySelector("
            "'.chart[data-kind=\"heat\"]'); return [p.dataset.probe, Number(h.dataset.columns),"
            " Number(h.dataset.dots), p.querySelectorAll('table.exemplars tr').length - 1]; })")
        event_bytes = browser.evaluate(
            "fetch('/api/v1/status').then(r => r.json()).then(j => j.data.probes)")
        # the tree: a full rebuild, and a filter keystroke
        rebuild = browser.evaluate(
            "(() => { const t0 = performance.now(); window.dqdBench.rebuildTree();"
            " document.body.offsetHeight; return performance.now() - t0; })()")
        filt = browser.evaluate(
            "(() => { const f = document.querySelector('#filter'); const t0 = performance.now();"
            " f.value = 'p01'; f.dispatchEvent(new Event('input')); document.body.offsetHeight;"
            " const ms = performance.now() - t0; f.value = ''; f.dispatchEvent(new Event('input'));"
            " return ms; })()")
        browser.screenshot(os.path.join(out_dir, "bench-dashboard.png"))
        n = len(samples)

        def summary(xs):
            return {"mean": statistics.mean(xs), "p50": pct(xs, 0.5), "p95": pct(xs, 0.95),
                    "max": max(xs)}

        result = {
            "probes": cfg_probes, "open": len(opened), "windows": opts["--windows"],
            "updates_timed": n, "panels_drawn": drawn_after, "heatmaps_shown": shown,
            "per_update_ms": summary(samples),
            "chromium_task_ms_per_window": run["task"],
            "chromium_script_ms_per_window": run["script"],
            "chromium_layout_style_ms_per_window": run["layout"],
            "tree_filter_ms": filt, "tree_pass_ms": rebuild, "wall_s": wall,
            "idle_task_ms_per_s": idle_task_per_s,
            "chromium_ms_per_window_by_kind": run["by_kind"],
            "baseline_no_panel": {"per_update_ms": summary(base["samples"]),
                                  "chromium_task_ms_per_window": base["task"],
                                  "chromium_script_ms_per_window": base["script"],
                                  "chromium_layout_style_ms_per_window": base["layout"]},
        }
        with open(os.path.join(out_dir, "bench-dashboard.json"), "w") as f:
            json.dump(result, f, indent=1)
        print("dashboard: %d probes enabled, %d panels open (%d drawn, on screen), %d windows"
              % (cfg_probes, len(opened), drawn_after, opts["--windows"]))
        print("  main-thread time per window update (page's own timing): mean %.2f ms, "
              "p50 %.2f, p95 %.2f, max %.2f" % (result["per_update_ms"]["mean"],
                                               result["per_update_ms"]["p50"],
                                               result["per_update_ms"]["p95"],
                                               result["per_update_ms"]["max"]))
        print("  Chromium's main-thread tasks per window: %.2f ms (script %.2f, layout+style "
              "%.2f; idle %.2f ms/s taken off)" % (result["chromium_task_ms_per_window"],
                                                  result["chromium_script_ms_per_window"],
                                                  result["chromium_layout_style_ms_per_window"],
                                                  idle_task_per_s))
        print("  Chromium's durations per window, ms: %s" % ", ".join(
            "%s %.2f" % (k, v) for k, v in sorted(run["by_kind"].items())))
        b = result["baseline_no_panel"]
        print("  baseline, same run, no panel open: page %.2f ms per update (p95 %.2f), "
              "Chromium %.2f ms per window; with %d panels open: x%.2f (page), x%.2f "
              "(Chromium)" % (b["per_update_ms"]["mean"], b["per_update_ms"]["p95"],
                              b["chromium_task_ms_per_window"], len(opened),
                              result["per_update_ms"]["mean"] / b["per_update_ms"]["mean"],
                              result["chromium_task_ms_per_window"] /
                              b["chromium_task_ms_per_window"]))
        print("  heatmaps on screen (probe, columns, exemplar dots, exemplar rows): %r" % shown)
        mean = result["per_update_ms"]["mean"]
        print("%s main-thread time per window update, mean %.2f ms < 16 ms (issue 27)" %
              ("PASS" if mean < 16 else "MISS", mean))
        print("  tree of %s probes: rebuilt and laid out in %.1f ms, a filter keystroke %.1f ms; "
              "panels with charts before/after: %d/%d; wall %.1f s" %
              (event_bytes, rebuild, filt, drawn_before, drawn_after, wall))
        return 0
    finally:
        if browser:
            browser.close()
        if sim:
            sim.stop()
        d.stop(None)
        remove_workdir(work)


if __name__ == "__main__":
    sys.exit(main())
