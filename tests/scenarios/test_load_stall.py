#!/usr/bin/env python3
"""A stalled scenario node does not launch its stall's arrivals at once afterwards.

The Erlang scenario node (scenarios/erlang/src/dqs_scenario.erl) draws Poisson arrivals on
an absolute clock. After a stall of its VM (a busy machine did not run it), every arrival
that fell due meanwhile used to start at once: a burst of a whole stall's requests that
the scenario does not describe, which piled onto the diagram's first steps and misled a
diagnosis (docs_tutorial in a stress test). Arrivals overdue by more than 100 ms are now
skipped and counted (`skipped` in the node's stats).

The test runs a real node of the tree scenario at RATE requests/s (its wrapper has no dqd
to talk to: it keeps reconnecting, which costs nothing here), stops the VM with SIGSTOP for
STALL_S, lets it run again, and after SETTLE_S reads its counters:
  - the arrivals skipped are at least half of those the stall held back (mean RATE times
    the stall less the 100 ms still launched: Poisson, 180 for 200/s and 1 s; the bound is
    90, more than 6 standard deviations below);
  - the arrivals started from just before the stop to the reading are at most what the
    time the node could run explains (the reading's time less the stall, plus the 100 ms of
    catch-up), with 5 standard deviations and 10 of slack: about 135 for 200/s, where a
    burst would start RATE times the whole span, 260 or more.
  - no more are skipped than fell due in the whole span, and in the RUN_S after it the node
    starts at least a tenth of its rate (a generator that skipped everything fails).
Times are measured, not assumed: on a busy machine the node may stall longer by itself,
which only lowers what it starts and raises what it skips.

Usage: test_load_stall.py  (needs erl and erlc: make deps)
"""

import importlib.machinery
import importlib.util
import math
import os
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import dqdtest  # noqa: E402  (free_port: a port nothing listens on)

loader = importlib.machinery.SourceFileLoader("scenarios_run", os.path.join(ROOT, "scenarios", "run"))
spec = importlib.util.spec_from_loader("scenarios_run", loader)
run = importlib.util.module_from_spec(spec)
loader.exec_module(run)

RATE = 200.0
STALL_S = 1.0
SETTLE_S = 0.3
RUN_S = 2.0
CATCH_UP_S = 0.1

failures = 0


def check(cond, what):
    global failures
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures += 1


def main():
    with tempfile.TemporaryDirectory(prefix="dqd-load-stall-") as tmp:
        ebin = os.path.join(tmp, "ebin")
        run.compile_erlang(ebin)
        node = run.Node(ebin, tmp, os.path.join(ROOT, "scenarios", "tree"), "tree", dqdtest.free_port())
        try:
            node.cmd("rate %g" % RATE)
            time.sleep(1.0)  # the generator running at its rate
            before = node.stats()
            t0 = time.monotonic()
            os.kill(node.proc.pid, signal.SIGSTOP)
            time.sleep(STALL_S)
            t_stop = time.monotonic() - t0
            os.kill(node.proc.pid, signal.SIGCONT)
            time.sleep(SETTLE_S)
            after = node.stats()
            span = time.monotonic() - t0
            time.sleep(RUN_S)  # and it goes on launching at its rate
            later = node.stats()
            run_s = time.monotonic() - t0 - span
        finally:
            try:
                os.kill(node.proc.pid, signal.SIGCONT)
            except OSError:
                pass
            node.stop()
    started = after["started"] - before["started"]
    skipped = after["skipped"] - before["skipped"]
    held_back = RATE * max(t_stop - CATCH_UP_S, 0.0)
    could_run = RATE * (span - t_stop + CATCH_UP_S)
    bound = could_run + 5.0 * math.sqrt(could_run) + 10.0
    print("stopped %.3f s of %.3f s: %d started, %d skipped (%.0f due in the stall beyond the "
          "catch-up; at most %.0f may start)" % (t_stop, span, started, skipped, held_back, bound))
    check(skipped >= 0.5 * held_back,
          "the stall's overdue arrivals are skipped and counted: %d >= %.0f" %
          (skipped, 0.5 * held_back))
    check(started <= bound,
          "no burst after the stall: %d started <= %.0f (a burst would start about %.0f)" %
          (started, bound, RATE * span))
    check(skipped <= RATE * span + 5.0 * math.sqrt(RATE * span) + 10.0,
          "no more skipped than fell due in the whole span: %d" % skipped)
    went_on = later["started"] - after["started"]
    check(went_on >= 0.1 * RATE * run_s,
          "it goes on launching after the stall: %d in %.2f s (at least a tenth of the rate)" %
          (went_on, run_s))
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except run.SetupError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
