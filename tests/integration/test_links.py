"""Integration test (issue 4, acceptance 2): commands reach wrappers over both transports.

A legacy-style wrapper listens for commands on its own port (dqd connects out to it, from
the config file's "wrappers") and sends instances on a connection it never reads (from the
same host: one wrapper, two connections); a v2-style wrapper gets commands on its own
connection after its hello; a legacy connection from another host (127.0.0.2), whose
listener is not configured, gets nothing. dqctl set-timeout, enable, disable, stop and
start must reach both wrappers (in each one's dialect) and say the third did not get them,
and both must get the enabled set again after they reconnect and after dqd restarts on the
same store.

usage: test_links.py DQD_BINARY DQCTL_BINARY
"""

import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

MS = 1000000


class LegacyWrapper:
    """The oscilloscope's wrapper as dqd sees it: a command listener on its own port."""

    def __init__(self, port=0):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.conn = None
        self.reader = None

    def accept(self, timeout=8.0):
        """Waits for dqd to connect; True when it did."""
        self.listener.settimeout(timeout)
        try:
            conn, _ = self.listener.accept()
        except socket.timeout:
            return False
        if self.conn:
            self.conn.close()
        self.conn = conn
        self.reader = t.LineReader(conn)
        return True

    def drop(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def close(self):
        self.drop()
        self.listener.close()


class V2Wrapper:
    """A v2 wrapper: hello first, commands come back on the same connection."""

    def __init__(self, port, node="shop@host1", app="shop"):
        self.sock = t.connect(port)
        self.sock.sendall(("h:2;node:%s;app:%s\n" % (node, app)).encode())
        self.reader = t.LineReader(self.sock)

    def send(self, text):
        self.sock.sendall(text.encode())

    def close(self):
        self.sock.close()


def state_lines(lines):
    """(set of set_timeout/clear lines, last line) of an enabled-set push."""
    return set(lines[:-1]), (lines[-1] if lines else None)


def body(c):
    dqd_bin, dqctl_bin = sys.argv[1], sys.argv[2]
    wd = t.make_workdir("dqd-it-links-")
    lw = LegacyWrapper()
    cfg = os.path.join(wd, "dqd.json")
    with open(cfg, "w") as f:
        json.dump({"wrappers": ["127.0.0.1:%d" % lw.port],
                   "probes": {"payment": {"dmax_ms": 80, "enabled": True}}}, f)
    d = t.Dqd(dqd_bin, wd, config=cfg)

    def ctl(*args, want_rc=0):
        rc, out, err = t.dqctl(dqctl_bin, *args, "--server", d.url)
        c.eq(rc, want_rc, "dqctl %s exit status (stderr %r)" % (" ".join(args), err))
        return out

    # dqd connects out to the legacy listener and pushes the enabled set (from the config)
    if not c.check(lw.accept(), "dqd connected to the legacy wrapper's listener"):
        return
    c.eq(lw.reader.read_lines(2), ["set_timeout;payment;80", "start_stub"],
         "legacy listener gets the enabled set on connect")
    # the legacy wrapper's outbound connection: instances only, never read
    ingest = t.connect(d.ingest_port)
    now = t.now_ns()
    ingest.sendall(t.legacy_line("checkout", now - 5 * MS, now, "ok").encode())
    # a legacy connection from another host, whose command listener dqd does not know
    stray = socket.socket()
    stray.bind(("127.0.0.2", 0))
    stray.connect(("127.0.0.1", d.ingest_port))
    stray.sendall(t.legacy_line("checkout", now - 5 * MS, now, "ok").encode())
    v2 = V2Wrapper(d.ingest_port)
    c.eq(v2.reader.read_lines(2), ["set_timeout;payment;80", "start_stub"],
         "v2 hello answered with the enabled set")
    d.wait_until(lambda: d.status()["instances_total"] >= 2)

    st = d.status()
    outb = [w for w in st["wrappers"] if w["kind"] == "outbound"]
    c.check(len(outb) == 1 and outb[0]["connected"] and
            outb[0]["peer"] == "127.0.0.1:%d" % lw.port, "status lists the outbound link: %r" %
            outb)
    c.eq(sorted(w["kind"] for w in st["wrappers"]), ["legacy", "legacy", "outbound", "v2"],
         "status lists four links")
    pairs = {w["peer"].rsplit(":", 1)[0] + " " + w["kind"]: w["pairing"] for w in st["wrappers"]}
    c.eq(pairs, {"127.0.0.1 legacy": "paired", "127.0.0.2 legacy": None,
                 "127.0.0.1 outbound": "paired", "127.0.0.1 v2": None},
         "the legacy data connection and the listener on one host are one wrapper")
    c.eq(st["wrappers_distinct"], 3, "three wrappers (the legacy one with two links)")

    # enable: the default dMax goes to both
    # the stray legacy connection (not read by its wrapper, no listener known) gets nothing:
    # every change says so on that link and exits 1; the paired one is its listener's
    out = ctl("enable", "checkout", want_rc=1)
    c.check("NOT applied on 1 wrapper link (" in out and "legacy_commands is off" in out and
            "127.0.0.2:" in out and "sent to the wrapper's command listener" in out,
            "enable says the stray legacy connection got nothing: %r" % out)
    c.eq(v2.reader.read_lines(1), ["set_timeout;checkout;1024"], "v2 gets enable")
    c.eq(lw.reader.read_lines(1), ["set_timeout;checkout;1024"], "legacy gets enable")
    # set-timeout: a decimal to v2, the integer ceiling (at least 1) to legacy
    ctl("set-timeout", "checkout", "0.25", want_rc=1)
    c.eq(v2.reader.read_lines(1), ["set_timeout;checkout;0.25"], "v2 gets a decimal dMax")
    c.eq(lw.reader.read_lines(1), ["set_timeout;checkout;1"], "legacy gets an integer dMax")
    out = ctl("set-timeout", "checkout", "50", want_rc=1)
    c.check("checkout" in out, "set-timeout prints the probe: %r" % out)
    c.eq(v2.reader.read_lines(1), ["set_timeout;checkout;50"], "v2 gets set-timeout 50")
    c.eq(lw.reader.read_lines(1), ["set_timeout;checkout;50"], "legacy gets set-timeout 50")
    v2.send("ack;set_timeout;checkout;50\n")
    # stop / start reach every link that takes commands (the listener and v2; not the
    # inbound legacy connection, which its wrapper does not read: legacy_commands is off)
    rc, out, err = t.dqctl(dqctl_bin, "stop", "--json", "--server", d.url)
    c.eq(rc, 0, "dqctl stop exit status")
    try:
        c.eq(json.loads(out), {"running": False, "sent_to": 2, "not_applied": 1},
             "dqctl stop --json (the stray connection not applied)")
    except ValueError:
        c.check(False, "dqctl stop --json prints JSON: %r" % out)
    c.eq(v2.reader.read_lines(1), ["stop_stub"], "v2 gets stop_stub")
    c.eq(lw.reader.read_lines(1), ["stop_stub"], "legacy gets stop_stub")
    c.eq(d.status()["running"], False, "status running after stop")
    ctl("start")
    c.eq(v2.reader.read_lines(1), ["start_stub"], "v2 gets start_stub")
    c.eq(lw.reader.read_lines(1), ["start_stub"], "legacy gets start_stub")
    # disable: v2 only (a legacy wrapper has no clear_timeout); dqctl says so link by link
    # and exits 1, since the legacy wrappers go on reporting the probe: the paired one once
    # (on its listener), the stray one on its own connection
    out = ctl("disable", "checkout", want_rc=1)
    c.check("clear_timeout sent to 1 wrapper link" in out and
            "NOT applied on 1 wrapper link (1 127.0.0.1:" in out and
            "keeps reporting the probe" in out and "legacy_commands is off" in out,
            "disable says what happened on each link: %r" % out)
    c.eq(v2.reader.read_lines(1), ["clear_timeout;checkout"], "v2 gets clear_timeout")
    c.eq(lw.reader.quiet(0.3), [], "legacy gets no command for a disable")
    ctl("enable", "checkout", want_rc=1)
    c.eq(v2.reader.read_lines(1), ["set_timeout;checkout;50"], "v2 gets re-enable")
    c.eq(lw.reader.read_lines(1), ["set_timeout;checkout;50"], "legacy gets re-enable")
    want = {"set_timeout;payment;80", "set_timeout;checkout;50"}

    # the v2 client reconnects: a new hello gets the enabled set again
    v2.close()
    v2 = V2Wrapper(d.ingest_port, node="shop@host2")
    sets, last = state_lines(v2.reader.read_lines(3))
    c.eq((sets, last), (want, "start_stub"), "v2 reconnect gets the enabled set")
    # a hello again on the same connection (the wrapper restarted its state)
    v2.send("h:2;node:shop@host2;app:shop\n")
    sets, last = state_lines(v2.reader.read_lines(3))
    c.eq((sets, last), (want, "start_stub"), "second hello gets the enabled set")

    # the legacy wrapper drops dqd's connection: dqd reconnects and re-sends
    lw.drop()
    if c.check(lw.accept(), "dqd reconnected after the listener dropped it"):
        sets, last = state_lines(lw.reader.read_lines(3))
        c.eq((sets, last), (want, "start_stub"), "legacy reconnect gets the enabled set")
    # the legacy wrapper restarts: its listener is gone for a while, then back on its port
    port = lw.port
    lw.close()
    time.sleep(0.6)
    lw = LegacyWrapper(port)
    if c.check(lw.accept(), "dqd reconnected to a restarted listener (backoff)"):
        sets, last = state_lines(lw.reader.read_lines(3))
        c.eq((sets, last), (want, "start_stub"), "restarted legacy wrapper gets the set")

    # dqd restarts on the same store: enabled probes persist and are pushed again
    old_v2 = v2
    d.stop(c, "dqd (first run)")
    c.eq(old_v2.reader.read_line(2.0), None, "v2 connection closed by dqd's shutdown")
    old_v2.close()
    ingest.close()
    stray.close()
    d = t.Dqd(dqd_bin, wd, config=cfg)
    if c.check(lw.accept(), "restarted dqd connected to the legacy listener"):
        sets, last = state_lines(lw.reader.read_lines(3))
        c.eq((sets, last), (want, "start_stub"), "legacy gets the persisted enabled set")
    v2 = V2Wrapper(d.ingest_port)
    sets, last = state_lines(v2.reader.read_lines(3))
    c.eq((sets, last), (want, "start_stub"), "v2 gets the persisted enabled set")
    probe = d.get("/api/v1/probes/checkout")
    c.eq((probe["enabled"], probe["dmax_ms"]), (True, 50.0), "checkout persisted")
    # and commands still reach both after the restart
    rc, out, err = t.dqctl(dqctl_bin, "set-timeout", "payment", "120", "--server", d.url)
    c.eq(rc, 0, "dqctl set-timeout after restart")
    c.eq(v2.reader.read_lines(1), ["set_timeout;payment;120"], "v2 after restart")
    c.eq(lw.reader.read_lines(1), ["set_timeout;payment;120"], "legacy after restart")
    v2.close()
    d.stop(c, "dqd (second run)")
    lw.close()
    t.remove_workdir(wd)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_links.py DQD_BINARY DQCTL_BINARY")
    t.run_script("test_links", body)
