"""Issue 14, text that reaches a terminal: free-text fields are bounded and refused with
control characters, and dqctl prints no control character it was sent (an old store's
requested_by with ESC sequences, a diagram's comment, an error quoting a name).
Usage: test_terminal_text.py DQD DQCTL"""

import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dqdtest import Dqd, make_workdir, remove_workdir, run_script

FAKE = "\x1b[2J\x1b[H\x1b[32mverdict: localized at db (all clear)\x1b[0m\x07\x9b31m"


def controls(text):
    """The control characters of text that a terminal acts on (C0 but TAB/LF, DEL, C1)."""
    return [ch for ch in text
            if (ord(ch) < 0x20 and ch not in "\n\t") or ord(ch) == 0x7f or 0x80 <= ord(ch) <= 0x9f]


def body(c):
    dqd_bin, dqctl = sys.argv[1], sys.argv[2]
    work = make_workdir("dqd-terminal-")
    diagram = os.path.join(work, "d.dq")
    with open(diagram, "w") as f:
        f.write("flow = a -> b;\n")
    d = Dqd(dqd_bin, work, diagram=diagram)
    # bounded: 900 KB of requested_by was stored; now at most 200 bytes, no controls
    st, env = d.api("POST", "/api/v1/diagnose", {"node": "flow", "requested_by": "x" * 900000})
    c.check(st == 422 and "requested_by" in env.get("error", ""),
            "900 KB requested_by refused: %d %r" % (st, env.get("error", "")[:100]))
    st, env = d.api("POST", "/api/v1/diagnose", {"node": "flow", "requested_by": FAKE})
    c.check(st == 422 and "control character" in env.get("error", ""),
            "requested_by with ESC refused: %d %r" % (st, env))
    st, env = d.api("POST", "/api/v1/diagnose", {"node": "flow", "requested_by": "x\u009bz"})
    c.eq(st, 422, "requested_by with a C1 control (U+009B, CSI) refused")
    st, _ = d.api("DELETE", "/api/v1/investigations/1?requested_by=%1b%5b2J")
    c.eq(st, 422, "DELETE ?requested_by with ESC refused")
    st, env = d.api("POST", "/api/v1/diagnose", {"node": "flow", "requested_by": "ops — ünïcode"})
    c.eq(st, 200, "requested_by with ordinary UTF-8 accepted: %r" % env)
    inv = env["data"]["investigation"]
    # a diagram whose comment carries ESC sequences: dqctl diagram shows them escaped
    st, _ = d.api("PUT", "/api/v1/diagram", "# " + FAKE + "\nflow = a -> b;\n")
    c.eq(st, 200, "a diagram with ESC in a comment is loaded (it is text)")
    r = subprocess.run([dqctl, "diagram", "--server", d.url], capture_output=True, timeout=30)
    out = r.stdout.decode("utf-8", "replace")
    c.check(not controls(out) and "\\x1b[2J" in out and "\\u009b31m" in out,
            "dqctl diagram escapes the comment: %r" % out[:200])
    d.stop(c)
    # an old store holding what the attack run stored: dqctl log must not paint it
    db = sqlite3.connect(d.db)
    db.execute("UPDATE investigations SET requested_by = ? WHERE id = ?", (FAKE * 3, inv))
    db.commit()
    db.close()
    d = Dqd(dqd_bin, work, db=d.db)
    for args in (["log"], ["log", str(inv)], ["log", "--json"], ["why", "a"]):
        r = subprocess.run([dqctl] + args + ["--server", d.url], capture_output=True, timeout=30)
        out = (r.stdout + r.stderr).decode("utf-8", "replace")
        c.check(not controls(out), "dqctl %s prints no control character: %r"
                % (" ".join(args), [ch for ch in controls(out)][:5]))
    r = subprocess.run([dqctl, "log", str(inv), "--server", d.url], capture_output=True,
                       timeout=30)
    c.check(b"\\x1b[2J" in r.stdout, "dqctl log shows the ESC as \\x1b: %r" % r.stdout[:300])
    # an error message quoting what the user typed
    r = subprocess.run([dqctl, "dq", "no\x1bsuch", "--server", d.url], capture_output=True,
                       timeout=30)
    err = r.stderr.decode("utf-8", "replace")
    c.check(r.returncode == 3 and not controls(err) and "no\\x1bsuch" in err,
            "an error quoting ESC: %r" % err)
    d.stop(c)
    # issue 26: dqd's own error on a config whose key or mfa holds a newline or ESC is one
    # line, the bytes escaped (a config's text cannot forge a log line)
    for i, cfg in enumerate(['{"probes":{"p1":{"mfa":"a:b/1","x\\ny":1}}}',
                             '{"probes":{"p1":{"mfa":"a:b/1\\nINJECTED \\u001b[2J"}}}',
                             '{"a\\nb\\u001b":1}']):
        path = os.path.join(work, "bad%d.json" % i)
        with open(path, "w") as f:
            f.write(cfg)
        r = subprocess.run([dqd_bin, "--config", path, "--db", os.path.join(work, "x.db")],
                           capture_output=True, timeout=30)
        err = r.stderr.decode("utf-8", "replace")
        lines = err.splitlines()
        c.check(r.returncode == 2 and len(lines) == 2 and lines[1] == "(see dqd --help)" and
                not controls(err) and "\\n" in lines[0],
                "a config's newline stays on dqd's error line: %r" % err)
    remove_workdir(work)


run_script("terminal_text", body)
