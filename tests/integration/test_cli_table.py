"""Issue 25 items 6-7, the units and exit-code table: one rule for every command, said the
same way everywhere.

- Every dqctl command's --help ends with the same exit-code table as `dqctl --help`, and
  docs/api.md's dqctl table has the same five codes with the same meanings.
- The codes are what a script sees: 2 for a usage error (an unknown option, a duration
  with an unknown unit: nothing is sent), 3 when dqd cannot be reached (every command
  that talks to it) and when dqd refuses (an unknown probe, with "did you mean"), 4 for an
  investigation without a verdict (--timeout; a bare --timeout is milliseconds), 1 for a
  problem found, 0 otherwise.
- A bare duration is milliseconds for every dqctl argument (set-timeout, qta, diagnose
  --timeout, watch --for) and a unit may follow; dqd's duration flags and JSON settings
  take their bare milliseconds or a unit (--window 250ms, "lag": "1.5s").

usage: test_cli_table.py DQD DQCTL SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

TABLE = ["Exit status, the same for every command:",
         "  0  success; for a diagnosis: healthy",
         "  1  a problem was found (what that is for this command is said above)",
         "  2  usage: bad arguments or input; nothing was asked of dqd",
         "  3  dqd cannot be reached, or it refused the request (an unknown probe, …)",
         "  4  an investigation ended without a verdict: inconclusive, aborted, or timed out"]
# what each code means in docs/api.md's table, in words that must be there
DOC_WORDS = {"0": ["success", "healthy"], "1": ["a problem was found"],
             "2": ["usage", "nothing was asked of dqd"],
             "3": ["cannot be reached", "refused the request"],
             "4": ["without a verdict", "inconclusive", "aborted", "--timeout"]}


def run(dqctl, *args, timeout=60):
    r = subprocess.run([dqctl, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def commands(c, dqctl):
    rc, out, err = run(dqctl, "--help")
    c.eq(rc, 0, "dqctl --help exits 0")
    c.check(all(line in out for line in TABLE), "dqctl --help ends with the table: %r" %
            out[-700:])
    names = re.findall(r"^  ([a-z-]+)  ", out.split("commands:\n", 1)[1], re.M)
    c.check(len(names) >= 20, "the commands are listed: %r" % names)
    return names


def help_tables(c, dqctl, names):
    for name in names:
        rc, out, err = run(dqctl, "help", name)
        c.check(rc == 0 and all(line in out for line in TABLE),
                "dqctl help %s has the exit-code table (%d): %r" % (name, rc, out[-600:]))


def doc_table(c, src):
    with open(os.path.join(src, "docs", "api.md")) as f:
        text = f.read()
    part = text.split("\n## dqctl\n", 1)[1]
    rows = dict(re.findall(r"^\| ([0-4]) \| (.*) \|$", part.split("\n### ", 1)[0], re.M))
    c.eq(sorted(rows), ["0", "1", "2", "3", "4"], "docs/api.md's dqctl table has codes 0 to 4")
    for code, words in DOC_WORDS.items():
        c.check(all(w in rows.get(code, "") for w in words),
                "docs/api.md: exit %s is %r: %r" % (code, words, rows.get(code)))


def unreachable(c, dqctl, names):
    url = "http://127.0.0.1:%d" % t.free_port()
    args = {"dq": ["x"], "enable": ["x"], "disable": ["x"], "delete": ["x"],
            "set-timeout": ["x", "250"], "qta": ["x"], "why": ["x"], "snapshot": ["1"],
            "trigger": ["x", "load"], "diagnose": [], "watch": ["--count", "1"],
            "model": None, "diagram": []}
    for name in names:
        if args.get(name, []) is None:
            continue
        rc, out, err = run(dqctl, name, *args.get(name, []), "--server", url)
        c.check(rc == 3 and "cannot reach dqd" in err,
                "dqctl %s with dqd unreachable exits 3: %d %r" % (name, rc, err[:200]))
        rc, out, err = run(dqctl, name, "--bogus-option", "--server", url)
        c.eq(rc, 2, "dqctl %s --bogus-option exits 2 (usage, nothing sent)" % name)


def with_dqd(c, dqd_bin, dqctl):
    wd = t.make_workdir("dqd-it-table-")
    diagram = os.path.join(wd, "d.dq")
    with open(diagram, "w") as f:
        f.write("flow = front_b2 -> store;\n")
    cfg = os.path.join(wd, "cfg.json")
    with open(cfg, "w") as f:
        json.dump({"lag": "150ms", "default_dmax_ms": "0.5s"}, f)
    d = t.Dqd(dqd_bin, wd, window_ms=100, lag_ms=100, diagram=diagram, config=cfg,
              extra=["--window", "100ms", "--lag", "0.15s", "--webhook-timeout", "2s"])
    try:
        st = d.status()
        c.eq((st["window_ms"], st["lag_ms"]), (100, 150),
             "dqd's flags take units: --window 100ms, --lag 0.15s")
        c.eq(d.get("/api/v1/probes/flow")["dmax_ms"], 500.0,
             "dqd's JSON settings take units: \"default_dmax_ms\": \"0.5s\"")

        def ctl(*a, timeout=60):
            return run(dqctl, *a, "--server", d.url, timeout=timeout)
        # a bare duration is milliseconds, a unit may follow
        rc, out, err = ctl("set-timeout", "store", "250")
        c.check(rc == 0 and d.get("/api/v1/probes/store")["dmax_ms"] == 250.0,
                "set-timeout 250 is 250 ms: %d %r" % (rc, err))
        rc, out, err = ctl("set-timeout", "store", "1.5s")
        c.check(rc == 0 and d.get("/api/v1/probes/store")["dmax_ms"] == 1500.0,
                "set-timeout 1.5s is 1500 ms")
        c.check("dmax 1.5 s," in out, "and it is printed value and unit: %r" % out)
        rc, out, err = ctl("qta", "store", "0.9@250")
        c.check(rc == 0 and d.get("/api/v1/probes/store")["qta"]["points"] == [[0.9, 0.25]],
                "qta 0.9@250 is 250 ms: %r" % err)
        rc, out, err = ctl("set-timeout", "store", "250h")
        c.eq(rc, 2, "an unknown unit is a usage error")
        t0 = time.monotonic()
        rc, out, err = ctl("watch", "--for", "300")
        took = time.monotonic() - t0
        c.check(rc == 0 and took < 20, "watch --for 300 stops after 300 ms (exit %d, %.1f s)" %
                (rc, took))
        # refused by dqd: 3, in the CLI's words
        rc, out, err = ctl("enable", "frnt_b2")
        c.check(rc == 3 and "Did you mean front_b2?" in err and "--create" in err,
                "an unknown probe: exit 3, did you mean: %r" % err)
        # no verdict in time: 4; a bare --timeout is milliseconds (no wrapper reports, so
        # the investigation waits for data far longer than 300 ms)
        t0 = time.monotonic()
        rc, out, err = ctl("diagnose", "flow", "--wait", "--timeout", "300")
        took = time.monotonic() - t0
        c.check(rc == 4 and "no verdict after 300 ms" in err and took < 20,
                "diagnose --wait --timeout 300 gives up after 300 ms with exit 4: %d %r %.1f s" %
                (rc, err, took))
        rc, out, err = ctl("diagnose", "--abort", "1")
        c.eq(rc, 0, "the investigation is ended")
        rc, out, err = ctl("diagnose", "--abort", "1")
        c.eq(rc, 3, "ending it again: dqd refuses, exit 3")
    finally:
        d.stop(c)
        t.remove_workdir(wd)


def body(c):
    dqd_bin, dqctl, src = sys.argv[1], sys.argv[2], sys.argv[3]
    names = commands(c, dqctl)
    help_tables(c, dqctl, names)
    doc_table(c, src)
    unreachable(c, dqctl, names)
    with_dqd(c, dqd_bin, dqctl)


t.run_script("cli_table", body)
