#!/usr/bin/env python3
"""bench_change_links.py DQD [LINKS]: how long one probe change (PUT enabled/dMax, then a
disable) holds dqd's loop when LINKS v2 wrappers are connected (each gets the command and
a commands row), against the same change with 10 links, measured in the same run. Issue 14:
with 5,000 links one change stalled the loop 0.34 s, past a 200 ms lag."""

import json
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def run(dqd, links, rounds=5):
    work = tempfile.mkdtemp(prefix="bench-links-")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    want = min(hard, links * 2 + 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    p = subprocess.Popen([dqd, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--db",
                          work + "/dqd.db", "--max-ingest-connections", str(links + 16),
                          "--log-level", "warn"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    m = re.match(r"dqd ready ingest=(\d+) http=(\d+)", p.stdout.readline().decode())
    ingest, http = int(m.group(1)), int(m.group(2))
    socks = []
    for i in range(links):
        s = socket.create_connection(("127.0.0.1", ingest))
        s.sendall(b"h:2;node:n%d@h;app:bench\n" % i)
        socks.append(s)
    time.sleep(1 + links / 2500)

    def put(body):
        req = urllib.request.Request("http://127.0.0.1:%d/api/v1/probes/x?create=1" % http,
                                     data=json.dumps(body).encode(), method="PUT",
                                     headers={"Content-Type": "application/json"})
        t = time.perf_counter()
        urllib.request.urlopen(req).read()
        return time.perf_counter() - t
    times = []
    for k in range(rounds):
        times.append(put({"enabled": True, "dmax_ms": 50 + k}))
        times.append(put({"enabled": False}))
    p.terminate()
    p.wait()
    for s in socks:
        s.close()
    times.sort()
    return times[len(times) // 2]


def main():
    dqd = sys.argv[1]
    links = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    base = run(dqd, 10)
    big = run(dqd, links)
    print("one probe change: %.1f ms with 10 links, %.1f ms with %d links (x%.0f; %.1f us per "
          "link)" % (base * 1e3, big * 1e3, links, big / base, (big - base) / links * 1e6))


if __name__ == "__main__":
    main()
