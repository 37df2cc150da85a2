"""tool_check.py: what the tests of the repository's own tools share (tests/deps/ for
tools/check-deps, tests/size/ for tools/check-size): one line per check, ok or FAIL, with
the failures counted, and a run of a tool with its output."""
import subprocess
import sys

failures = 0


def check(cond, what):
    """Prints the check's line and counts it when it fails."""
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    failures += 0 if cond else 1


def run(tool, *args):
    """(exit code, stdout + stderr) of the Python tool at path `tool` with args."""
    p = subprocess.run([sys.executable, tool, *args], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout + p.stderr


def finish(out):
    """Exits 1 (printing out, the last tool output, for the failures' context) when a
    check failed, else prints that all passed."""
    if failures:
        print(out)
        sys.exit(1)
    print("all checks passed")
