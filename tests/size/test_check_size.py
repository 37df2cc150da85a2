"""tools/check-size on fixtures written here into a temporary directory: a function of 150
lines passes and one of 151 is named with its file and line; a .c file of 1,500 lines
passes and one of 1,501 is named; the exceptions (settings_render_markdown, settings.c,
http.c) are not blamed, while the same function name elsewhere is; braces in comments,
strings, character literals and macros do not count as code; struct and array
initialisers are not functions; a missing folder is a usage error; folders given on the
command line limit the check. Then the measurement runs on the repository's own folders
(it may fail there while a long function waits to be split; it must not crash).

Usage: test_check_size.py REPO_ROOT
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tool_check import check, finish, run as run_tool  # noqa: E402

ROOT = sys.argv[1]
TOOL = os.path.join(ROOT, "tools", "check-size")


def run(*args):
    return run_tool(TOOL, *args)


def function(name, lines):
    """A function definition of exactly `lines` lines (the type on a line of its own)."""
    assert lines >= 4
    body = ["    x += %d;" % i for i in range(lines - 4)]
    return "\n".join(["static int", "%s(int x) {" % name] + body + ["    return x;", "}"]) + "\n"


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def padded(text, total):
    """text followed by comment lines up to `total` lines."""
    n = text.count("\n")
    return text + "".join("/* filler */\n" for _ in range(total - n))


with tempfile.TemporaryDirectory() as tmp:
    write(tmp, "modules", "a a a.h\nsettings controller/settings settings.h\n"
                          "http controller/http http.h\n")
    write(tmp, "a/a.h", "int ok(int x);\n")
    tricky = (
        '#define OPEN {\n'
        'static const char *s = "}}}{{{";\n'
        "static const char c = '{';\n"
        "/* } { */\n"
        "// {\n"
        "static const int table[] = {1, 2, 3};\n"
        "struct pair { int a, b; };\n"
        "static const struct pair pairs[] = {{1, 2}, {3, 4}};\n")
    write(tmp, "a/a.c", tricky + function("fits", 150) + function("too_long", 151))
    write(tmp, "a/exact.c", padded("", 1500))
    write(tmp, "a/over.c", padded("", 1501))
    write(tmp, "a/md.c", function("settings_render_markdown", 160))
    write(tmp, "controller/settings/settings.h", "int s(void);\n")
    write(tmp, "controller/settings/settings.c",
          padded(function("settings_render_markdown", 160), 1600))
    write(tmp, "controller/http/http.h", "int h(void);\n")
    write(tmp, "controller/http/http.c", padded("", 1700))

    rc, out = run("--root", tmp, "--modules", os.path.join(tmp, "modules"), "--list", "5")
    fixture_out = out
    problems = "\n".join(line for line in out.splitlines() if line.startswith("check-size:"))
    check(rc == 1, "the fixture fails (exit %d)" % rc)
    check("a/a.c:" in out and "too_long is 151 lines" in out,
          "a function of 151 lines is named with its file and line")
    check("fits" not in problems, "a function of 150 lines passes")
    check("  150  a/a.c:" in out, "--list measures the 150-line function as 150")
    check("a/over.c: 1501 lines" in out, "a .c file of 1,501 lines is named")
    check("exact.c" not in problems, "a .c file of 1,500 lines passes")
    check("a/md.c:1: settings_render_markdown is 160 lines" in out,
          "the exception holds for its own file only")
    check("controller/settings/settings.c" not in problems,
          "settings_render_markdown in settings.c and settings.c itself are exceptions")
    check("controller/http/http.c" not in problems, "http.c is an exception")
    check("check-size: 3 problem(s)" in out, "exactly three problems")
    names = [line.split(": ")[-1] for line in out.splitlines() if line.startswith("  ")]
    check(not any(n in ("table", "pairs", "pair", "OPEN") for n in names),
          "initialisers, struct bodies and macros are not functions")

    rc, out = run("--root", tmp, "--modules", os.path.join(tmp, "modules"), "no_such")
    check(rc == 2 and "no folder" in out, "a missing folder is a usage error (exit %d)" % rc)

    rc, out = run("--root", tmp, "--modules", os.path.join(tmp, "modules"), "a/")
    check("controller/http" not in out and "a/over.c" in out, "folders given limit the check")

rc, out = run("--root", ROOT, "--list", "1000")
rows = [line for line in out.splitlines() if line.startswith("  ") or line[:5].strip().isdigit()]
check(rc in (0, 1) and len(rows) > 500,
      "the repository's folders are measured (%d functions listed, exit %d)" % (len(rows), rc))

finish(fixture_out)
