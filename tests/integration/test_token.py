"""The API's changes need a token when one is set, and are refused beyond loopback
without one (docs/api.md, authorization). Reads stay open. Usage: test_token.py DQD DQCTL"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dqdtest import Dqd, make_workdir, remove_workdir, run_script


def body(c):
    dqd_bin, dqctl = sys.argv[1], sys.argv[2]
    work = make_workdir("dqd-token-")
    d = Dqd(dqd_bin, work, extra=["--api-token", "s3cret"])
    st, env = d.api("PUT", "/api/v1/probes/x", {"enabled": True})
    c.eq((st, env.get("errorType")), (401, "unauthorized"), "a change without the token")
    c.eq(d.api("GET", "/api/v1/probes")[0], 200, "reads need no token")
    run = lambda env: subprocess.run([dqctl, "enable", "x", "--create", "--server", d.url],
                                     capture_output=True, text=True, env=env, timeout=30)
    r = run({k: v for k, v in os.environ.items() if k != "DQD_TOKEN"})
    c.check(r.returncode == 2 and "Bearer" in r.stderr, "dqctl without DQD_TOKEN: %r" % r.stderr)
    r = run(dict(os.environ, DQD_TOKEN="wrong"))
    c.eq(r.returncode, 2, "dqctl with a wrong token")
    r = run(dict(os.environ, DQD_TOKEN="s3cret"))
    c.eq(r.returncode, 0, "dqctl with DQD_TOKEN: %s" % r.stderr)
    c.check(any(p["name"] == "x" and p["enabled"] for p in d.get("/api/v1/probes")),
            "the change went through")
    d.stop(c)
    # bound beyond loopback without a token: changes refused, reads fine
    d2 = Dqd(dqd_bin, work, extra=["--http", "0.0.0.0:0"])
    st, env = d2.api("POST", "/api/v1/wrapper/stop")
    c.check(st == 403 and "api_token" in env.get("error", ""),
            "beyond loopback without a token: %r %r" % (st, env))
    c.eq(d2.api("GET", "/api/v1/status")[0], 200, "reads beyond loopback")
    d2.stop(c)
    remove_workdir(work)


run_script("token", body)
