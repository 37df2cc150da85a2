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
    # the token is read from a file (or DQD_API_TOKEN), never taken from the command line
    tok = os.path.join(work, "token")
    with open(tok, "w") as f:
        f.write("s3cret\n")
    os.chmod(tok, 0o600)
    r = subprocess.run([dqd_bin, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--db",
                        os.path.join(work, "argv.db"), "--api-token", "s3cret"],
                       capture_output=True, text=True, timeout=30)
    c.check(r.returncode == 2 and "cannot read the token file s3cret" in r.stderr and
            "not the token itself" in r.stderr,
            "a token given on the command line is refused: %d %r" % (r.returncode, r.stderr))
    empty = os.path.join(work, "empty")
    open(empty, "w").close()
    r = subprocess.run([dqd_bin, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--db",
                        os.path.join(work, "argv.db"), "--api-token", empty],
                       capture_output=True, text=True, timeout=30)
    c.check(r.returncode == 2 and "holds no token" in r.stderr, "an empty token file: %r" % r.stderr)
    d = Dqd(dqd_bin, work, extra=["--api-token", tok])
    c.check("s3cret" not in " ".join(d.args), "the token is not on dqd's command line")
    with open("/proc/%d/cmdline" % d.proc.pid, "rb") as f:
        c.check(b"s3cret" not in f.read(), "/proc/PID/cmdline does not show the token")
    st, env = d.api("PUT", "/api/v1/probes/x", {"enabled": True})
    c.eq((st, env.get("errorType")), (401, "unauthorized"), "a change without the token")
    c.eq(d.api("GET", "/api/v1/probes")[0], 200, "reads need no token")
    run = lambda env: subprocess.run([dqctl, "enable", "x", "--create", "--server", d.url],
                                     capture_output=True, text=True, env=env, timeout=30)
    r = run({k: v for k, v in os.environ.items() if k != "DQD_TOKEN"})
    c.check(r.returncode == 3 and "Bearer" in r.stderr,
            "dqctl without DQD_TOKEN: dqd refuses, exit 3: %r" % r.stderr)
    r = run(dict(os.environ, DQD_TOKEN="wrong"))
    c.eq(r.returncode, 3, "dqctl with a wrong token (dqd refuses)")
    r = run(dict(os.environ, DQD_TOKEN="s3cret"))
    c.eq(r.returncode, 0, "dqctl with DQD_TOKEN: %s" % r.stderr)
    c.check(any(p["name"] == "x" and p["enabled"] for p in d.get("/api/v1/probes")),
            "the change went through")
    d.stop(c)
    # from the environment: DQD_API_TOKEN
    os.environ["DQD_API_TOKEN"] = "fromenv"
    try:
        de = Dqd(dqd_bin, work)
    finally:
        del os.environ["DQD_API_TOKEN"]
    st, env = de.api("POST", "/api/v1/wrapper/stop")
    c.eq(st, 401, "DQD_API_TOKEN: a change without it")
    r = subprocess.run([dqctl, "stop", "--server", de.url], capture_output=True, text=True,
                       env=dict(os.environ, DQD_TOKEN="fromenv"), timeout=30)
    c.check(r.returncode in (0, 1) and "unauthorized" not in r.stderr,
            "DQD_API_TOKEN: dqctl with it: %r" % r.stderr)
    de.stop(c)
    # systemd's LoadCredential=api_token:FILE: $CREDENTIALS_DIRECTORY/api_token
    creds = os.path.join(work, "creds")
    os.makedirs(creds)
    with open(os.path.join(creds, "api_token"), "w") as f:
        f.write("fromcreds\n")
    os.chmod(os.path.join(creds, "api_token"), 0o600)
    os.environ["CREDENTIALS_DIRECTORY"] = creds
    try:
        dc = Dqd(dqd_bin, work)
    finally:
        del os.environ["CREDENTIALS_DIRECTORY"]
    c.eq(dc.api("POST", "/api/v1/wrapper/stop")[0], 401, "a systemd credential: a change without it")
    r = subprocess.run([dqctl, "stop", "--server", dc.url], capture_output=True, text=True,
                       env=dict(os.environ, DQD_TOKEN="fromcreds"), timeout=30)
    c.check(r.returncode in (0, 1), "a systemd credential: dqctl with it: %r" % r.stderr)
    dc.stop(c)
    # a token file readable by others: a warning in the log
    os.chmod(tok, 0o644)
    dw = Dqd(dqd_bin, work, extra=["--api-token", tok])
    dw.stop(c)
    c.check("readable by other users" in dw.stderr(), "warned about a readable token file")
    # bound beyond loopback with a token: reads need it too (but /-/healthy), unless
    # public_reads is on
    os.chmod(tok, 0o600)
    db = Dqd(dqd_bin, work, extra=["--http", "0.0.0.0:0", "--api-token", tok])
    c.eq(db.request("GET", "/api/v1/status")[0], 401, "beyond loopback: a read without the token")
    c.eq(db.request("GET", "/metrics")[0], 401, "beyond loopback: /metrics without the token")
    c.eq(db.request("GET", "/-/healthy")[0], 200, "beyond loopback: /-/healthy stays open")
    r = subprocess.run([dqctl, "status", "--server", db.url], capture_output=True, text=True,
                       env=dict(os.environ, DQD_TOKEN="s3cret"), timeout=30)
    c.eq(r.returncode, 0, "beyond loopback: dqctl status with DQD_TOKEN: %s" % r.stderr)
    db.stop(c)
    dp = Dqd(dqd_bin, work, extra=["--http", "0.0.0.0:0", "--api-token", tok,
                                   "--public-reads", "on"])
    c.eq(dp.request("GET", "/api/v1/status")[0], 200, "public_reads on: reads are open")
    c.eq(dp.api("POST", "/api/v1/wrapper/stop")[0], 401, "public_reads on: changes still need it")
    dp.stop(c)
    # bound beyond loopback without a token: changes refused, reads fine
    d2 = Dqd(dqd_bin, work, extra=["--http", "0.0.0.0:0"])
    st, env = d2.api("POST", "/api/v1/wrapper/stop")
    c.check(st == 403 and "api_token" in env.get("error", ""),
            "beyond loopback without a token: %r %r" % (st, env))
    c.eq(d2.api("GET", "/api/v1/status")[0], 200, "reads beyond loopback")
    d2.stop(c)
    remove_workdir(work)


run_script("token", body)
