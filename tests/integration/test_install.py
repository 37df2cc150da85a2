"""Integration test (issue 13): `make install` into a temporary DESTDIR.

`make install PREFIX=P DESTDIR=D` runs `cmake --install BUILD --prefix P` with DESTDIR=D
(checked on `make -n`); this test runs that same command on the build under test, then
  1. checks the files: dqd and dqctl in P/bin, the docs in P/share/doc/dqd, the systemd
     unit in P/lib/systemd/system, which names P/bin/dqd (never D), runs dqd as a dynamic
     (unprivileged) user with its database in /var/lib/dqd;
  2. checks the unit with `systemd-analyze verify` (its ExecStart pointed into D, where
     the program is);
  3. starts the installed dqd as an unprivileged user (nobody) on a database in a
     directory of its own, and talks to it with the installed dqctl;
  4. installs again with another prefix: the unit follows it.

usage: test_install.py CMAKE BUILD_DIR SOURCE_DIR
"""

import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402


def install(cmake, build, prefix, destdir):
    env = dict(os.environ, DESTDIR=destdir)
    return subprocess.run([cmake, "--install", build, "--prefix", prefix], env=env,
                          capture_output=True, timeout=120)


def executable(path):
    return os.path.isfile(path) and os.stat(path).st_mode & stat.S_IXUSR


def body(c):
    cmake, build, src = sys.argv[1], sys.argv[2], sys.argv[3]
    root = tempfile.mkdtemp(prefix="dqd-it-install-")
    os.chmod(root, 0o755)  # the unprivileged user below must reach the programs
    try:
        run(c, cmake, build, src, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(c, cmake, build, src, root):
    # `make install` is this command (a dry run shows it with PREFIX and DESTDIR)
    p = subprocess.run(["make", "-n", "-C", src, "install", "BUILD=" + build, "PREFIX=/opt/pfx",
                        "DESTDIR=/tmp/stage"], capture_output=True, timeout=60)
    out = p.stdout.decode()
    c.check(p.returncode == 0 and
            re.search(r'DESTDIR="/tmp/stage" cmake --install %s --prefix "/opt/pfx"' %
                      re.escape(build), out),
            "make install runs cmake --install with PREFIX and DESTDIR: %r" % out[-400:])

    dest = os.path.join(root, "stage")
    prefix = "/usr/local"
    p = install(cmake, build, prefix, dest)
    if not c.eq(p.returncode, 0, "cmake --install (%s)" % p.stderr.decode()[-400:]):
        return
    top = dest + prefix
    dqd, dqctl = top + "/bin/dqd", top + "/bin/dqctl"
    c.check(executable(dqd), "dqd installed in PREFIX/bin")
    c.check(executable(dqctl), "dqctl installed in PREFIX/bin")
    docs = top + "/share/doc/dqd"
    for name in ("README.md", "running.md", "configuration.md", "protocol.md", "api.md",
                 "store.md"):
        c.check(os.path.isfile(os.path.join(docs, name)), "doc %s installed" % name)
    # what the installed docs link to beside them (pictures, the Prometheus rules, each
    # other) is installed too; links out of docs/ (../scenarios/…) point into the sources,
    # and so do README.md's (docs/running.md, wrapper-erl/README.md: the repository's front
    # page, installed as it is)
    missing = []
    for name in sorted(os.listdir(docs)):
        if not name.endswith(".md") or name == "README.md":
            continue
        with open(os.path.join(docs, name), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([A-Za-z0-9_./-]+)(?:#[^)]*)?\)", text):
            if not target.startswith("../") and not os.path.exists(os.path.join(docs, target)):
                missing.append("%s -> %s" % (name, target))
    c.check(not missing, "every link of the installed docs to a file beside them resolves: "
            "missing %s" % missing)
    unit_path = top + "/lib/systemd/system/dqd.service"
    if not c.check(os.path.isfile(unit_path), "systemd unit installed"):
        return
    with open(unit_path) as f:
        unit = f.read()
    c.check(not re.search(r"@[A-Z_]+@", unit), "every @VAR@ of the unit is filled in")
    c.check("\nExecStart=/usr/local/bin/dqd --db /var/lib/dqd/dqd.db $DQD_OPTIONS\n" in unit,
            "the unit runs PREFIX/bin/dqd on /var/lib/dqd/dqd.db")
    c.check(dest not in unit, "the unit does not name DESTDIR")
    for line in ("DynamicUser=yes", "StateDirectory=dqd", "EnvironmentFile=-/etc/default/dqd",
                 "RestartPreventExitStatus=2", "WantedBy=multi-user.target",
                 "Documentation=file:///usr/local/share/doc/dqd/running.md"):
        c.check("\n%s\n" % line in unit, "the unit has %s" % line)
    c.check("\nUser=" not in unit, "no fixed user: a dynamic, unprivileged one")

    # systemd-analyze verify (Debian package systemd): the unit with its program in DESTDIR
    tool = shutil.which("systemd-analyze")
    if c.check(tool, "systemd-analyze found (make deps installs the Debian package systemd)"):
        staged = os.path.join(root, "dqd.service")
        with open(staged, "w") as f:
            f.write(unit.replace("ExecStart=/usr/local/bin/dqd", "ExecStart=" + dqd))
        p = subprocess.run([tool, "verify", "--man=no", staged], capture_output=True,
                           timeout=60, cwd=root)
        said = (p.stdout + p.stderr).decode()
        c.check(p.returncode == 0 and said.strip() == "",
                "systemd-analyze verify accepts the unit without a warning: %d %r" %
                (p.returncode, said))

    # the installed programs: dqd as an unprivileged user, dqctl talks to it
    p = subprocess.run([dqd, "--version"], capture_output=True, timeout=20)
    c.eq(p.stdout.decode().strip(), "dqd 0.1.0", "installed dqd --version")
    state = os.path.join(root, "var-lib-dqd")  # stands for /var/lib/dqd
    os.mkdir(state)
    extra = []
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(state, nobody.pw_uid, nobody.pw_gid)
        extra = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid,
                 "--clear-groups", "--"]
    d = t.Dqd(dqd, state, db=os.path.join(state, "dqd.db"), wrap=extra)
    try:
        owner = os.stat(os.path.join(state, "dqd.db")).st_uid
        c.check(owner != 0, "the database belongs to the unprivileged user (uid %d)" % owner)
        with open("/proc/%d/status" % d.proc.pid) as f:
            uid = [line.split()[1] for line in f if line.startswith("Uid:")]
        c.check(uid and uid[0] != "0", "the installed dqd runs unprivileged (uid %r)" % uid)
        rc, out, err = t.dqctl(dqctl, "status", "--server", d.url)
        c.eq(rc, 0, "the installed dqctl talks to the installed dqd (%r)" % err)
        c.check(out.startswith("dqd 0.1.0") and os.path.join(state, "dqd.db") in out,
                "dqctl status: %r" % out[:200])
    finally:
        d.stop(c, "installed dqd")

    # another prefix: the unit follows
    dest2 = os.path.join(root, "stage2")
    p = install(cmake, build, "/opt/dqd", dest2)
    c.eq(p.returncode, 0, "cmake --install --prefix /opt/dqd")
    with open(dest2 + "/opt/dqd/lib/systemd/system/dqd.service") as f:
        unit2 = f.read()
    c.check("\nExecStart=/opt/dqd/bin/dqd --db /var/lib/dqd/dqd.db" in unit2,
            "with PREFIX /opt/dqd the unit runs /opt/dqd/bin/dqd")
    c.check(executable(dest2 + "/opt/dqd/bin/dqctl"), "dqctl in /opt/dqd/bin")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: test_install.py CMAKE BUILD_DIR SOURCE_DIR")
    t.run_script("test_install", body)
