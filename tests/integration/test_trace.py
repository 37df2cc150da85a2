"""Integration test (issue 18): probes bound to functions, on the dqd side.

A probe bound in the config to an Erlang function (`"mfa"`) is enabled with the v2
`trace;NAME;MS;MOD:FUN/ARITY` command instead of set_timeout: on a v2 wrapper's own
connection (acknowledged), in the enabled set sent after a hello, and recorded
not_applied, with its reason, for a legacy wrapper's command listener (which cannot
trace); a plain probe still gets set_timeout on both. The v2 wrapper's state line with
the tracer's fields shows in GET /api/v1/probes (`mfa`, `trace`), and `why` says the probe
was a traced function and what it cost, or why the wrapper refused it. Functions may be
any Erlang atoms (issue 25): an Elixir module unquoted, quoted atoms holding ';', ',' and
'"', through the config, the trace command, its ack, the state line and the API. A
malformed `mfa` stops dqd at start with a message naming the probe, the value escaped.

usage: test_trace.py DQD_BINARY
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402
from test_links import LegacyWrapper, V2Wrapper  # noqa: E402


# issue 25: functions of any Erlang atoms. QUOTED_CANON is how the wrapper writes QUOTED
# back: the module unquoted, since it may be.
ELIXIR = "Elixir.Shop.Orders:place/1"
QUOTED = "'my_mod':'say \\\\\"hi\\\\\", x=1; ok'/2"
QUOTED_CANON = "my_mod:'say \\\\\"hi\\\\\", x=1; ok'/2"


def commands_for(d, probe):
    """The newest run of commands recorded for probe (why's last_change)."""
    return d.get("/api/v1/why/%s" % probe).get("last_change") or []


def body(c):
    dqd_bin = sys.argv[1]
    work = t.make_workdir("dqd-trace-")
    try:
        legacy = LegacyWrapper()
        cfg = os.path.join(work, "dqd.json")
        with open(cfg, "w") as f:
            json.dump({"wrappers": ["127.0.0.1:%d" % legacy.port],
                       "probes": {"stock": {"mfa": "shop_db:stock/1", "dmax_ms": 64},
                                  "plain": {"dmax_ms": 10},
                                  "orders": {"mfa": ELIXIR, "dmax_ms": 32},
                                  "doit": {"mfa": QUOTED, "dmax_ms": 16}}}, f)
        d = t.Dqd(dqd_bin, work, config=cfg)
        c.check(legacy.accept(), "dqd connected to the legacy listener")
        legacy.reader.read_until("start_stub", 3.0)
        w = V2Wrapper(d.ingest_port)
        c.eq(w.reader.read_line(3.0), "start_stub", "nothing enabled yet: only start_stub")

        probes = {p["name"]: p for p in d.get("/api/v1/probes")}
        c.eq(probes["stock"]["mfa"], "shop_db:stock/1", "the probe shows its function")
        c.eq(probes["plain"]["mfa"], None, "a plain probe has no function")

        # enable both: the bound one goes as trace on v2, not at all on the legacy link
        for name in ("stock", "plain"):
            st, _ = d.api("PUT", "/api/v1/probes/%s" % name, {"enabled": True})
            c.eq(st, 200, "enable %s" % name)
        got = set(w.reader.read_lines(2, 3.0))
        c.eq(got, {"trace;stock;64;shop_db:stock/1", "set_timeout;plain;10"},
             "v2 wrapper: trace for the bound probe, set_timeout for the plain one")
        leg = legacy.reader.read_lines(1, 2.0)
        c.eq(leg, ["set_timeout;plain;10"], "legacy wrapper: only the plain probe")
        c.eq(legacy.reader.read_line(0.5), None, "legacy wrapper: no trace line at all")
        w.send("ack;trace;stock;64;shop_db:stock/1\n")

        def rows(probe):
            return [r for r in commands_for(d, probe) if r["command"] == "trace"]

        ok = d.wait_until(lambda: any(r["status"] == "acked" for r in rows("stock")), 3.0)
        c.check(ok, "the trace command is acknowledged by the v2 wrapper: %r" % rows("stock"))
        na = [r for r in rows("stock") if r["status"] == "not_applied"]
        c.eq(len(na), 1, "the legacy link's trace row is not_applied")
        if na:
            c.check("legacy wrapper cannot trace" in (na[0]["detail"] or ""),
                    "the reason says a legacy wrapper cannot trace: %r" % na[0]["detail"])
            c.eq((na[0]["args"] or {}).get("mfa"), "shop_db:stock/1", "args carry the function")

        # the wrapper's state line: the pattern installed, calls traced, sampling
        w.send("state;running:1;probes:plain=10,stock=64;traced:stock=shop_db:stock/1;"
               "tcalls:stock=400;sampling:stock=0.5;tdropped:stock=2\n")
        ok = d.wait_until(lambda: (d.get("/api/v1/probes/stock").get("trace") or {})
                          .get("calls") == 400, 3.0)
        tr = d.get("/api/v1/probes/stock")["trace"]
        c.check(ok, "probes/stock shows the wrapper's figures: %r" % tr)
        c.eq(tr["installed"], 1, "installed on one connection")
        c.eq(tr["sampling"], 0.5, "its sampling fraction")
        c.eq(tr["dropped"], 2, "its dropped calls")
        c.eq(tr["refused"], None, "not refused")
        why = d.get("/api/v1/why/stock")
        text = " ".join(why["sentences"])
        c.check("stock is a traced function" in text and "shop_db:stock/1" in text,
                "why says it was a traced function: %r" % text)
        c.check("400 traced calls" in text and "sampled 50.0 %" in text,
                "why says what tracing it cost: %r" % text)
        c.near((why["traced"] or {}).get("cost_ms"), 1.0, 1e-9, "cost: 400 x 2.5 us")
        c.check("NOT APPLIED on 1 link" in text, "why shows the legacy link's not_applied")
        c.eq(d.get("/api/v1/why/plain")["traced"], None, "a plain probe: no traced part")

        # a refusal: the reason shows, and the pattern is not installed any more
        w.send("state;running:1;probes:plain=10;trefused:stock=tail_recursive\n")
        ok = d.wait_until(lambda: (d.get("/api/v1/probes/stock")["trace"] or {})
                          .get("refused") == "tail_recursive", 3.0)
        c.check(ok, "the refusal shows in probes/stock")
        tr = d.get("/api/v1/probes/stock")["trace"]
        c.eq(tr["installed"], 0, "a refused probe has no pattern installed")
        text = " ".join(d.get("/api/v1/why/stock")["sentences"])
        c.check("tail_recursive" in text, "why names the refusal: %r" % text)
        # a malformed tracer field is a protocol error for that line only
        before = d.status()["protocol_errors_total"]
        w.send("state;running:1;probes:;traced:stock=Shop:f/1\nping\n")
        ok = d.wait_until(lambda: d.status()["protocol_errors_total"] == before + 1, 3.0)
        c.check(ok, "a bad traced: field is counted as one protocol error")

        # a new v2 connection gets the enabled set with the binding
        w2 = V2Wrapper(d.ingest_port, node="shop@host2")
        got = set(w2.reader.read_lines(3, 3.0))
        c.eq(got, {"trace;stock;64;shop_db:stock/1", "set_timeout;plain;10", "start_stub"},
             "the enabled set after a hello carries the binding")
        # disabling: clear_timeout on v2
        st, _ = d.api("PUT", "/api/v1/probes/stock", {"enabled": False})
        c.eq(st, 200, "disable stock")
        c.eq(w.reader.read_line(3.0), "clear_timeout;stock", "disable sends clear_timeout")
        c.eq(w2.reader.read_line(3.0), "clear_timeout;stock", "on every v2 link")

        # any Erlang atom (issue 25): an Elixir module, quoted atoms with ';', ',', '"'
        c.eq(probes["orders"]["mfa"], ELIXIR, "the Elixir function as configured")
        c.eq(probes["doit"]["mfa"], QUOTED, "the quoted function as configured")
        for name in ("orders", "doit"):
            st, _ = d.api("PUT", "/api/v1/probes/%s" % name, {"enabled": True})
            c.eq(st, 200, "enable %s" % name)
        want = {"trace;orders;32;" + ELIXIR, "trace;doit;16;" + QUOTED}
        c.eq(set(w.reader.read_lines(2, 3.0)), want, "the trace commands carry them as written")
        c.eq(set(w2.reader.read_lines(2, 3.0)), want, "on every v2 link")
        c.eq(legacy.reader.read_line(0.5), None, "nothing on the legacy link")
        before = d.status()["protocol_errors_total"]
        for line in sorted(want):
            w.send("ack;%s\n" % line)
        # the wrapper names the functions its own way (quoted where it must)
        w.send("state;running:1;probes:doit=16,orders=32;traced:doit=" + QUOTED_CANON
               + ",orders=" + ELIXIR + ";tcalls:doit=3,orders=5\n")
        ok = d.wait_until(lambda: [(d.get("/api/v1/probes/%s" % n).get("trace") or {})
                                   .get("calls") for n in ("doit", "orders")] == [3, 5], 3.0)
        c.check(ok, "the state line naming quoted functions is read: %r"
                % [d.get("/api/v1/probes/%s" % n).get("trace") for n in ("doit", "orders")])
        for name in ("doit", "orders"):
            tr = d.get("/api/v1/probes/%s" % name)["trace"] or {}
            c.eq(tr.get("installed"), 1, "%s: installed on the link that said so" % name)
        c.eq(d.status()["protocol_errors_total"], before, "no protocol error on the way")
        for name, mfa in (("doit", QUOTED), ("orders", ELIXIR)):
            acked = [r for r in commands_for(d, name) if r["command"] == "trace"
                     and r["status"] == "acked"]
            c.check(acked, "%s: the trace command is acknowledged" % name)
            c.eq([(r["args"] or {}).get("mfa") for r in acked[:1]], [mfa],
                 "%s: the command's args carry the function as JSON" % name)
            text = " ".join(d.get("/api/v1/why/%s" % name)["sentences"])
            c.check("is a traced function" in text and mfa in text,
                    "why names the function: %r" % text)
        w.close()
        w2.close()
        legacy.close()
        d.stop(c)

        def start_with(mfa):
            """dqd started with stock bound to mfa: it must refuse; its stderr."""
            with open(cfg, "w") as f:
                json.dump({"probes": {"stock": {"mfa": mfa}}}, f)
            r = subprocess.run([dqd_bin, "--config", cfg, "--db", os.path.join(work, "x.db"),
                                "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=20)
            c.eq(r.returncode, 2, "dqd refuses the mfa %r" % mfa)
            return r.stderr

        # a malformed function stops dqd at start, naming the probe
        err = start_with("shop_db:Stock/1")
        c.check('probe "stock".mfa' in err and "is not a function" in err,
                "the message names the probe and says what is wrong: %r" % err)
        # issue 26: a value with a line break is shown escaped, the message on one line
        err = start_with("shop_db:stock/1\nFAKE: injected")
        lines = [ln for ln in err.splitlines() if "is not a function" in ln]
        c.check(len(lines) == 1 and '"shop_db:stock/1\\nFAKE: injected"' in lines[0]
                and not any(ln.startswith("FAKE") for ln in err.splitlines()),
                "the value is escaped, the message one line: %r" % err)
    finally:
        t.remove_workdir(work)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_trace.py DQD_BINARY")
    t.run_script("test_trace", body)
