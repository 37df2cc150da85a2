"""Integration test (issue 12, a what-if on live data): `dqctl model` on ΔQs measured by a
real dqd. Instances of probes a and b with known durations go in through the ingest port
(legacy dialect); then

  dqctl model e2e.dq --set a=probe:a --set b='scale(probe:b,0.5)'

must give the mean, quantiles and lost mass that follow from those durations; probe:NAME@W
picks an older window; the model of the measured parts agrees with dqd's own calculated
ΔQ of e2e (and with calculated:e2e); the human output names the windows used; a model
with no measured DIST needs no dqd; a window with fewer instances than dqd's
min_instances is refused (exit 2, the window named); an unknown probe, a probe with no
window yet and an unreachable dqd exit 3 with a message that names the probe and the
server.

usage: test_dqctl_model.py DQD_BINARY DQCTL_BINARY
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000


def body(c):
    dqd_bin, dqctl_bin = sys.argv[1], sys.argv[2]
    wd = t.make_workdir("dqd-it-model-")
    model = os.path.join(wd, "e2e.dq")
    with open(model, "w") as f:
        f.write("e2e = a -> b;\n")
    d = t.Dqd(dqd_bin, wd, window_ms=100, lag_ms=300, diagram=model)

    def ctl(*args, env=None):
        return t.dqctl(dqctl_bin, *args, env=env)

    def model_json(*sets, server=None):
        args = ["model", model]
        for s in sets:
            args += ["--set", s]
        args += ["--json"]
        if server:
            args += ["--server", server]
        rc, out, err = ctl(*args)
        c.eq(rc, 0, "dqctl %s exit status (%r)" % (" ".join(args[2:]), err))
        try:
            return json.loads(out.splitlines()[0])
        except (ValueError, IndexError):
            c.check(False, "dqctl model --json prints JSON: %r" % out[:200])
            return None

    # Window 1: a takes 8 ms. Window 2 (the latest): a takes 10 ms; b takes 10, 11, …, 49
    # ms once each (40 successes) plus 10 failures: lost 10/50 = 0.2; c (not in the
    # diagram) 5 instances, fewer than dqd's min_instances (30).
    s = t.connect(d.ingest_port)
    w2 = d.window_of(t.now_ns())  # the open window; the one before closes 300 ms after it ends
    w1 = w2 - 1
    base1 = w1 * 100 * MS + 60 * MS
    base2 = w2 * 100 * MS + 55 * MS
    lines = [t.legacy_line("a", base1 - 8 * MS + i, base1 + i) for i in range(30)]
    lines += [t.legacy_line("c", base2 - 3 * MS + i, base2 + i) for i in range(5)]
    lines += [t.legacy_line("a", base2 - 10 * MS + i, base2 + i) for i in range(30)]
    lines += [t.legacy_line("b", base2 - (10 + i) * MS, base2) for i in range(40)]
    lines += [t.legacy_line("b", base2 - 5 * MS, base2, "fa") for _ in range(10)]
    s.sendall("".join(lines).encode())
    c.check(d.wait_window("a", w2) is not None, "window 2 of a closed")
    c.check(d.wait_window("b", w2) is not None, "window 2 of b closed")
    calc = d.wait_window("e2e", w2, kind="calculated")
    c.check(calc is not None, "dqd calculated e2e for window 2")
    bdq = d.dq("b")
    c.check(bdq and bdq["bin_width"] == 0.001, "b's bins are 1 ms: %r" % (bdq or {}).get("bin_width"))

    # the what-if: b twice as fast. dqd's 1 ms bins are (t, t + 1] ms (docs/engine.md): a's
    # 10 ms are in bin 9, (9, 10], b's 10 … 49 ms in bins 9 … 48, each mass spread over its
    # bin. 0.5·b maps bin t to (t/2, t/2 + ½]: bins 2j and 2j + 1 both into bin j, so 0.5·b
    # holds 0.02 in (4, 5], 0.04 in each of (5, 6] … (23, 24], 0.02 in (24, 25], 0.2 lost.
    # Their sequence shares each pair of bins between two (a spread by a spread): e2e has
    # 0.01 in (13, 14], 0.03 in (14, 15], 0.04 in each bin to (32, 33], then 0.03, 0.01.
    # The exact p-quantile of the durations themselves is 10 ms + 0.5·(the ceil(p·50)-th of
    # b's sorted durations, failures at the end): within a bin of it.
    j = model_json("a=probe:a", "b=scale(probe:b,0.5)", server=d.url)
    if j:
        w = j["bin_width"]
        c.near(w, 0.001, 1e-12, "the grid is no finer than the measured 1 ms bins")
        c.eq(j["node"], "e2e", "the root is reported")
        c.near(j["lost"], 0.2, 1e-9, "the lost mass of b is kept by scale")
        # the bins' middles: 9.5 ms + 0.5·29 ms (each bin's mean is kept by scale)
        c.near(j["mean"], 0.024, 1e-9, "mean of a + 0.5 b (scale keeps each bin's mean)")
        for p, exact in (("0.5", 0.010 + 0.5 * 0.034), ("0.9", None), ("0.95", None)):
            if exact is None:  # beyond the tangible mass 0.8: not reached
                c.eq(j["quantiles"][p], None, "p%s not reached with 0.2 lost" % p)
            else:
                c.near(j["quantiles"][p], exact, w, "p%s of a + 0.5 b" % p)
        # cdf[i] is F at the right edge (i + 1) ms, by the bins above
        cdf = j["cdf"]
        c.near(cdf[12], 0.0, 1e-9, "nothing by 13 ms")
        c.near(cdf[13], 0.01, 1e-9, "F(14 ms) = 0.01")
        c.near(cdf[14], 0.04, 1e-9, "F(15 ms) = 0.01 + 0.03")
        c.near(cdf[24], 0.44, 1e-9, "F(25 ms) = 0.04 + 10 bins of 0.04")
        c.near(cdf[25], 0.48, 1e-9, "F(26 ms) = 0.04 + 11 bins of 0.04")
        c.near(cdf[33], 0.79, 1e-9, "F(34 ms) = 0.8 − 0.01")
        c.near(cdf[34], 0.8, 1e-9, "everything tangible by 35 ms")

    # shift: a 5 ms slower, b unchanged: a's (9, 10] becomes (14, 15] (a shift by whole bins
    # moves masses bin for bin), so e2e's median is 15 + 34 ms (the 25th of 50, at the right
    # edge) and its mean the bins' middles 14.5 + 29 ms
    j = model_json("a=shift(probe:a,0.005)", "b=probe:b", server=d.url)
    if j:
        c.near(j["quantiles"]["0.5"], 0.049, 1e-9, "median with a shifted by 5 ms")
        c.near(j["mean"], 0.0435, 1e-9, "mean with a shifted by 5 ms")

    # the measured parts as they are: the model agrees with dqd's own calculated e2e, and
    # with calculated:e2e given to the model directly
    j = model_json("a=probe:a", "b=probe:b", server=d.url)
    if j and calc:
        c.near(j["mean"], calc["mean"], 1e-6, "model mean = dqd's calculated mean")
        c.near(j["lost"], calc["lost"], 1e-9, "model lost = dqd's calculated lost")
        for p in ("0.5",):
            c.near(j["quantiles"][p], calc["quantiles"][p], 1e-9, "model p%s = dqd's" % p)
    with open(os.path.join(wd, "one.dq"), "w") as f:
        f.write("top = e2e -> tail;\n")
    rc, out, err = ctl("model", os.path.join(wd, "one.dq"), "--set", "e2e=calculated:e2e",
                       "--set", "tail=wait(0)", "--json", "--server", d.url)
    c.eq(rc, 0, "calculated:e2e (%r)" % err)
    if rc == 0 and calc:
        jj = json.loads(out)
        c.near(jj["mean"], calc["mean"], 1e-6, "calculated:e2e has dqd's mean")

    # probe:a@1 is the window before: a = 8 ms there, in the bin (7, 8] (and $DQD_URL instead
    # of --server): its quantiles are 8 ms, its mean the bin's middle
    rc, out, err = ctl("model", model, "--set", "a=probe:a@1", "--set", "b=wait(0)", "--json",
                       env={"DQD_URL": d.url})
    c.eq(rc, 0, "probe:a@1 via DQD_URL (%r)" % err)
    if rc == 0:
        jj = json.loads(out)
        c.near(jj["quantiles"]["0.5"], 0.008, 1e-9, "window 1 of a: 8 ms")
        c.near(jj["mean"], 0.0075, 1e-9, "window 1 of a: mean 7.5 ms (the bin's middle)")
    rc, out, err = ctl("--server", d.url, "model", model, "--set", "a=probe:a@latest",
                       "--set", "b=wait(0)", "--json")
    c.eq(rc, 0, "a global --server reaches model (%r)" % err)
    if rc == 0:
        c.near(json.loads(out)["mean"], 0.0095, 1e-9, "probe:a@latest is window 2: (9, 10] ms")

    # the human output says which windows were used
    rc, out, err = ctl("model", model, "--set", "a=probe:a", "--set", "b=scale(probe:b,0.5)",
                       "--server", d.url)
    c.eq(rc, 0, "human output exit status (%r)" % err)
    c.check(out.startswith("measured  a = probe:a: observed, window "), "measured line: %r" %
            out[:200])
    c.check("30 instances (0 failed or timed out), bins of 1 ms" in out, "a's window: %r" % out)
    c.check("b = scale(probe:b,0.5): observed" in out and "50 instances (10 failed" in out,
            "b's window: %r" % out)
    c.check("e2e  (calculated; bin width 1 ms" in out, "the report follows: %r" % out)

    # errors: an unknown probe, a probe with no window yet (registered by a PUT)
    rc, out, err = ctl("model", model, "--set", "a=probe:nosuch", "--set", "b=wait(0)",
                       "--server", d.url)
    c.eq(rc, 3, "unknown probe exits 3")
    c.check("probe nosuch" in err and d.url in err and "404" in err,
            "unknown probe message names the probe and the server: %r" % err)
    st, _ = d.api("PUT", "/api/v1/probes/fresh?create=1", {"enabled": False})
    c.eq(st, 200, "probe fresh registered")
    rc, out, err = ctl("model", model, "--set", "a=probe:fresh", "--set", "b=wait(0)",
                       "--server", d.url)
    c.eq(rc, 3, "a probe with no window yet exits 3")
    c.check("probe fresh" in err and "no observed" in err and d.url in err,
            "no-window message: %r" % err)
    rc, out, err = ctl("model", model, "--set", "a=probe:a@7", "--set", "b=wait(0)",
                       "--server", d.url)
    c.eq(rc, 3, "a window that does not exist exits 3")
    c.check("window 7 back" in err, "window message: %r" % err)
    # a window thinner than min_instances: refused, naming the window and the numbers
    rc, out, err = ctl("model", model, "--set", "a=probe:c", "--set", "b=wait(0)",
                       "--server", d.url)
    c.eq(rc, 2, "a window under min_instances exits 2 (%r)" % err)
    c.check("the window of c it names (the latest, 0 back: " in err and
            "holds 5 instances, fewer than dqd's min_instances (30)" in err,
            "thin window message: %r" % err)
    c.eq(out, "", "nothing computed from a thin window")
    s.close()
    d.stop(c)

    # dqd gone: the measured DIST is a connection error naming probe and server; the same
    # model without measured DISTs needs no dqd at all
    url = "http://127.0.0.1:%d" % t.free_port()
    rc, out, err = ctl("model", model, "--set", "a=probe:a", "--set", "b=wait(0)",
                       "--server", url)
    c.eq(rc, 3, "unreachable dqd exits 3")
    c.check("probe a" in err and url in err and "cannot reach dqd" in err,
            "unreachable message: %r" % err)
    c.eq(out, "", "nothing on stdout when unreachable")
    rc, out, err = ctl("model", model, "--set", "a=wait(0.01)", "--set", "b=scale(wait(0.04),0.5)",
                       "--json", "--server", url)
    c.eq(rc, 0, "no measured DIST: no dqd needed (%r)" % err)
    if rc == 0:
        c.near(json.loads(out)["quantiles"]["0.5"], 0.030, 1e-4, "offline what-if still works")
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_dqctl_model.py DQD_BINARY DQCTL_BINARY")
    t.run_script("test_dqctl_model", body)
