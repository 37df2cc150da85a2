#!/usr/bin/env python3
"""bench_unread.py DQD: what clients that pipeline GET /metrics and never read cost dqd.
dqd gets 10,000 probes (10 v2 wrappers with 1,000 names each: a /metrics of ~17 MB), then
40 clients each send 400 pipelined GET /metrics with a 4 KiB receive window and never
read. Prints dqd's RSS before and at the peak (baseline: the same dqd before the clients),
whether /-/healthy still answers, and the HTTP counters. Issue 14: 40 such clients took
dqd from 40 to 628 MB."""

import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from dqdtest import pipeliner  # noqa: E402


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([l for l in f if l.startswith("VmRSS")][0].split()[1]) / 1024


def main():
    dqd = sys.argv[1]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    work = tempfile.mkdtemp(prefix="bench-unread-")
    p = subprocess.Popen([dqd, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--db",
                          work + "/dqd.db", "--log-level", "error"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    m = re.match(r"dqd ready ingest=(\d+) http=(\d+)", p.stdout.readline().decode())
    ingest, http = int(m.group(1)), int(m.group(2))
    now = time.time_ns()
    held = []
    for k in range(10):
        s = socket.create_connection(("127.0.0.1", ingest))
        s.sendall(b"h:2;node:n%d@h;app:bench\n" % k + b"".join(
            b"n:p%d_%04d;b:%d;e:%d;s:ok\n" % (k, i, now - 1000000, now) for i in range(1000)))
        held.append(s)
    time.sleep(3)
    url = "http://127.0.0.1:%d" % http
    size = len(urllib.request.urlopen(url + "/metrics").read())
    base = rss_mb(p.pid)
    for _ in range(40):
        held.append(pipeliner(http))
    peak = base
    for _ in range(20):
        time.sleep(0.5)
        peak = max(peak, rss_mb(p.pid))
    t = time.perf_counter()
    st = urllib.request.urlopen(url + "/-/healthy", timeout=30).status
    dt = time.perf_counter() - t
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    counters = [l for l in text.splitlines() if l.startswith("dqd_http_connections_closed") or
                l.startswith("dqd_http_pending")]
    print("/metrics %.1f MB; dqd RSS %.0f MB before the clients, %.0f MB at the peak (+%.0f MB, "
          "x%.2f); /-/healthy %d in %.0f ms" % (size / 1e6, base, peak, peak - base, peak / base,
                                                 st, dt * 1e3))
    for line in counters:
        print("  " + line)
    p.terminate()
    p.wait()
    for s in held:
        s.close()


if __name__ == "__main__":
    main()
