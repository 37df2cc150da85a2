#!/usr/bin/env python3
"""docs_shape: tools/doc-samples' shape comparison (--against, docs_samples_realtime)
on made-up transcripts: what it must let through (other numbers, units, statistics, a
ramp of another length, notes of a busy machine, a different second half of a ramp) and
what it must not (a reworded sentence, a missing section, a line out of order)."""

import importlib.machinery
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
loader = importlib.machinery.SourceFileLoader("doc_samples",
                                              os.path.join(ROOT, "tools", "doc-samples"))
spec = importlib.util.spec_from_loader("doc_samples", loader)
ds = importlib.util.module_from_spec(spec)
loader.exec_module(ds)

SAMPLE = """dqd http://127.0.0.1:39545 (window 250 ms, store /tmp/dqd-scenario-tree-k9rnchxt), Erlang node connected

== tree: checkout
  [  12.7 s] load  40/s
  [  13.7 s] load  70/s
  [  14.7 s] TRIGGER qta on checkout fired after 3 bad windows in a row
  [  15.6 s] INVESTIGATION 1 opened at checkout (problem: qta, origin: trigger)
  [  17.6 s]   narrowing down: descend into orders
               descend into orders: orders holds 65 % of the 50 %-quantile latency of checkout's children (21 ms ± 0.13 ms of 32.2 ms); the runner-up payment holds 19 % (6.25 ms ± 0.13 ms)
  [  18.7 s] load 100/s
  [  24.4 s] VERDICT LOCALIZED at stock_db
             localized at stock_db: stock_db holds 88 % of the mean latency of inventory's children (15 ms ± 0.5 ms of 17 ms); no other child holds any; stock_db explains 100 % of checkout's change (10.9 ms of 10.9 ms)
  [  25.0 s] load 130/s
  [  26.0 s] TRIGGER lost on checkout fired after 3 bad windows in a row

== result
  expected: localized at stock_db: YES

== dqctl why stock_db
  Verdict: localized at stock_db: stock_db holds 88 % of the 50 %-quantile latency of inventory's children (15 ms ± 0.5 ms of 17 ms); the runner-up reserve holds 12 % (2 ms ± 0 ms).
  In dqd, stock_db is enabled now."""

RUN = """dqd http://127.0.0.1:41111 (window 250 ms, store /tmp/dqd-scenario-tree-zzzzzzzz), Erlang node connected

== tree: checkout
  [   2.1 s] load  40/s
  [   3.1 s] load  70/s
  [   4.1 s] load 100/s
  [   4.2 s] note: a trigger fired before the fault (a noisy baseline)
  [   5.2 s] TRIGGER divergence on checkout fired after 3 bad windows in a row
  [   5.2 s] INVESTIGATION 2 opened at checkout (problem: divergence, origin: trigger)
  [   7.3 s]   narrowing down: descend into orders
               descend into orders: orders holds 7 % of the mean latency of checkout's children (980 µs ± 0.5 ms of 1.2 s); no other child holds any
  [   9.9 s] VERDICT LOCALIZED at stock_db
             localized at stock_db: stock_db holds 90 % of the 90 %-quantile latency of inventory's children (15.4 ms ± 0.52 ms of 17 ms); the runner-up reserve holds 10 % (2 ms ± 0.1 ms)

== result
  expected: localized at stock_db: YES

== dqctl why stock_db
  Verdict: localized at stock_db: stock_db holds 90 % of the mean latency of inventory's children (15.4 ms ± 0.52 ms of 17 ms); no other child holds any.
  In dqd, stock_db is enabled now.
{"scenario": "tree"}"""

# The search went on after the culprit (the tree scenario once did, beside a sanitizer
# build): its verdict says what that search found.
WENT_ON = RUN.replace("  [   9.9 s] VERDICT", "  [   9.1 s]   culprit at stock_db\n"
                      "  [   9.5 s]   narrowing down: descend into payment\n"
                      "  [   9.9 s] VERDICT").replace(
    "  Verdict: localized at stock_db: stock_db holds 90 % of the mean latency of inventory's "
    "children (15.4 ms ± 0.52 ms of 17 ms); no other child holds any.",
    "  Verdict: localized at stock_db: stock_db (96 %); the rest of checkout's change is not "
    "localized (the search went on: the part it found last, rules, explains 4 % of checkout's "
    "change (0.47 ms of 11.7 ms), less than a tenth: not named a culprit (…)).")


def check(name, sample, run, ok):
    got = ds.shape_difference(sample, run)
    if (got is None) != ok:
        print("FAIL %s: want %s, got %r" % (name, "a match" if ok else "a difference", got))
        return 1
    print("ok   %s%s" % (name, "" if ok else ": " + got[2][:60]))
    return 0


def main():
    failed = 0
    failed += check("the same run", SAMPLE, SAMPLE, True)
    failed += check("another run of the same shape", SAMPLE, RUN, True)
    failed += check("a reworded sentence", SAMPLE,
                    RUN.replace("holds 7 % of the mean latency of", "holds 7 % of"), False)
    failed += check("a missing section", SAMPLE, RUN.replace("== result", "== outcome"), False)
    failed += check("a line out of order", SAMPLE,
                    RUN.replace("  [   7.3 s]   narrowing down: descend into orders\n", "")
                    .replace("  [   9.9 s] VERDICT", "  [   7.3 s]   narrowing down: descend "
                             "into orders\n  [   9.9 s] VERDICT"), False)
    failed += check("another verdict: compared up to it", SAMPLE,
                    RUN.replace("VERDICT LOCALIZED", "VERDICT DIFFUSE"), True)
    failed += check("the verdict at another node: compared up to it", SAMPLE,
                    RUN.replace("VERDICT LOCALIZED at stock_db", "VERDICT LOCALIZED at reserve")
                    .replace("localized at stock_db: stock_db holds",
                             "localized at reserve: reserve holds"), True)
    failed += check("another verdict, a line before it changed", SAMPLE,
                    RUN.replace("VERDICT LOCALIZED", "VERDICT DIFFUSE")
                    .replace("INVESTIGATION 2 opened at", "INVESTIGATION 2 began at"), False)
    failed += check("the search went on after the culprit: the why verdict by its node",
                    SAMPLE, WENT_ON, True)
    failed += check("the search went on, the why verdict at another node", SAMPLE,
                    WENT_ON.replace("  Verdict: localized at stock_db:",
                                    "  Verdict: localized at reserve:"), False)
    failed += check("the search went on and named a second culprit", SAMPLE,
                    WENT_ON.replace("  Verdict: localized at stock_db: stock_db (96 %); the "
                                    "rest of checkout's change is not localized",
                                    "  Verdict: localized at stock_db and rules: stock_db "
                                    "(96 %), rules (4 %) explain 100 % of checkout's change"),
                    False)
    failed += check("the why verdict reworded, the search not gone on", SAMPLE,
                    RUN.replace("no other child holds any.", "no other child holds any; "
                                "the rest of checkout's change is not localized."), False)
    failed += check("a node's own time said (a busy machine)", SAMPLE,
                    RUN.replace("of 1.2 s); no other child holds any",
                                "of 1.2 s); no other child holds any; checkout's own mean "
                                "latency is 1.3 s, 0.12 s ± 0.05 s more than its children "
                                "account for (time outside them, or dependence between them)"),
                    True)
    failed += check("a node's own time, the clause reworded", SAMPLE,
                    RUN.replace("of 1.2 s); no other child holds any",
                                "of 1.2 s); no other child holds any; checkout's own mean "
                                "latency is 1.3 s, beyond its children"), False)
    failed += check("a new column in the header", SAMPLE,
                    RUN.replace("Erlang node connected", "Erlang node connected, 3 links"), False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
