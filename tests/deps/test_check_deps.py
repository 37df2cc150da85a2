"""tools/check-deps on the repository (must be clean) and on fixtures: one that follows
its module order (clean/) and one with deliberately wrong includes (fixture/) that it
must reject, naming each violation: an upward include, a private header, two modules
that include each other.

Usage: test_check_deps.py REPO_ROOT
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tool_check import check, finish, run as run_tool  # noqa: E402

ROOT = sys.argv[1]
TOOL = os.path.join(ROOT, "tools", "check-deps")


def run(*args):
    return run_tool(TOOL, *args)


rc, out = run("--root", ROOT)
check(rc == 0, "the repository follows tools/modules: " + out.strip().splitlines()[-1])

clean = os.path.join(HERE, "clean")
rc, out = run("--root", clean, "--modules", os.path.join(clean, "modules"))
check(rc == 0, "a clean fixture passes")

fixture = os.path.join(HERE, "fixture")
rc, out = run("--root", fixture, "--modules", os.path.join(fixture, "modules"))
check(rc == 1, "the wrong fixture is rejected (exit %d)" % rc)
check("low/low.c:4: low includes high.h of high, which is above it" in out,
      "the upward include is named with its file and line")
check("high/high.c:8: high includes mid_internal.h, a private header of mid" in out,
      "the private header is named")
check("high and low include each other" in out, "the mutual include is named")
check("mid.c" not in out, "a correct file is not blamed")

# a modules file that names a missing folder is a usage error, not a pass
bad = os.path.join(HERE, "fixture", "modules")
rc, out = run("--root", clean, "--modules", bad)
check(rc == 2 and "no folder" in out, "a missing module folder is an error (exit %d)" % rc)

finish(out)
