"""Integration test (issue 13): the wrapper as a rebar3 dependency, by the README's line.

wrapper-erl/README.md gives one line for a project's rebar.config. This test takes that
line exactly (only its URL replaced by a file:// URL of a local clone), puts it in a
scratch rebar3 application that uses the wrapper, and builds it offline (no hex package,
rebar3's home and cache in a temporary directory, proxies and hex's CDN pointed at a
closed port; REBAR_OFFLINE is not set, since it refuses git fetches too, file:// ones
included):
  1. a temporary clone of this repository, holding the working tree's wrapper-erl/ (so
     uncommitted changes are what is tested) on the branch the line names;
  2. `rebar3 compile` of the scratch application succeeds, and rebar.lock records the
     dependency as the git_subdir the line says;
  3. `rebar3 release` of the scratch application takes dqd_wrapper into the release, and
     an Erlang node on the release's libraries starts the scratch application, which
     calls dqd_wrapper. (rebar3 3.19 builds a git_subdir dependency inside its sparse
     checkout, _build/default/lib/dqd_wrapper/wrapper-erl/dqd_wrapper/ebin: `rebar3
     path` does not list it, but compile, shell and release find it.)

usage: test_rebar3_dep.py SOURCE_DIR
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402

LINE = re.compile(r'^\{deps, \[\{dqd_wrapper, \{git_subdir, "([^"]+)", \{branch, "([^"]+)"\}, '
                  r'"([^"]+)"\}\}\]\}\.$')


def readme_block(src, marker, lang):
    """The lines of the README's first LANG code block after the comment starting with
    MARKER ([] when there is none)."""
    with open(os.path.join(src, "wrapper-erl", "README.md")) as f:
        text = f.read()
    at = text.find("<!-- " + marker)
    block = text.find("```%s\n" % lang, at) if at >= 0 else -1
    if block < 0:
        return []
    return text[block + len(lang) + 4:].split("\n```", 1)[0].split("\n")


def readme_line(src):
    """The rebar3 line of the README: the first line of the erlang block after its marker."""
    lines = readme_block(src, "the rebar3 dependency line", "erlang")
    return lines[0] if lines else None


def sh(args, cwd, env=None, timeout=400):
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def make_clone(c, src, tmp, branch):
    """A clone of src in tmp/dqd holding the working tree's wrapper-erl/ (uncommitted
    changes included, rebar3's _build left out) committed on `branch`; its path, or None
    when git failed."""
    repo = os.path.join(tmp, "dqd")
    gitenv = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                  GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    rc, out, err = sh(["git", "clone", "-q", "--no-local", src, repo], tmp, gitenv)
    if not c.eq(rc, 0, "git clone of the repository (%s)" % err):
        return None
    shutil.rmtree(os.path.join(repo, "wrapper-erl"))
    shutil.copytree(os.path.join(src, "wrapper-erl"), os.path.join(repo, "wrapper-erl"),
                    ignore=shutil.ignore_patterns("_build"))
    sh(["git", "add", "-A", "wrapper-erl"], repo, gitenv)
    sh(["git", "commit", "-q", "-m", "the working tree's wrapper"], repo, gitenv)
    rc, out, err = sh(["git", "checkout", "-q", "-B", branch], repo, gitenv)
    c.eq(rc, 0, "branch %s in the clone (%s)" % (branch, err))
    return repo


def in_tmp(c, prefix, fn):
    """fn(c, SOURCE_DIR from the command line, a temporary folder removed afterwards)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        fn(c, os.path.abspath(sys.argv[1]), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def body(c):
    in_tmp(c, "dqd-it-rebar3-dep-", run)


def run(c, src, tmp):
    line = readme_line(src)
    m = LINE.match(line or "")
    if not c.check(m, "the README has the one-line git_subdir dependency: %r" % line):
        return
    url, branch, subdir = m.groups()
    c.eq(subdir, "wrapper-erl/dqd_wrapper", "the line names the application's directory")
    c.check(os.path.basename(subdir) == "dqd_wrapper" and
            os.path.isfile(os.path.join(src, subdir, "src", "dqd_wrapper.app.src")),
            "its last path part is the application's name, and it holds the application")
    for tool in ("git", "rebar3", "erl"):
        if not c.check(shutil.which(tool), "%s installed (make deps)" % tool):
            return

    # 1. a clone with the working tree's wrapper, on the branch the line names
    repo = make_clone(c, src, tmp, branch)
    if not repo:
        return

    # 2. a scratch application with exactly the README's line
    app = os.path.join(tmp, "scratch")
    os.makedirs(os.path.join(app, "src"))
    local = line.replace('"%s"' % url, '"file://%s"' % repo)
    c.check(local != line and local.count("file://") == 1, "only the URL is replaced")
    with open(os.path.join(app, "rebar.config"), "w") as f:
        f.write(local + "\n")
        f.write('{relx, [{release, {scratch, "0.1.0"}, [scratch]}, {dev_mode, false},\n'
                '        {include_erts, false}, {include_src, false}]}.\n')
    with open(os.path.join(app, "src", "scratch.app.src"), "w") as f:
        f.write('{application, scratch, [{description, "uses dqd_wrapper"}, {vsn, "0.1.0"},\n'
                ' {registered, []}, {applications, [kernel, stdlib, dqd_wrapper]},\n'
                ' {env, []}]}.\n')
    with open(os.path.join(app, "src", "scratch.erl"), "w") as f:
        f.write("-module(scratch).\n-export([run/0]).\n"
                "run() -> dqd_wrapper:with_span(<<\"scratch\">>, fun() -> 42 end).\n")
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    env = dict(os.environ, HOME=home, REBAR_CACHE_DIR=os.path.join(tmp, "rebar3-cache"),
               REBAR_SKIP_PROJECT_PLUGINS="true",
               http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
               HEX_CDN="http://127.0.0.1:9", NO_COLOR="1")
    for k in list(env):
        if k.startswith("DQD_"):
            del env[k]
    rc, out, err = sh(["rebar3", "compile"], app, env)
    if not c.eq(rc, 0, "rebar3 compile of the scratch application:\n%s%s" %
                (out[-2000:], err[-2000:])):
        return
    with open(os.path.join(app, "rebar.lock")) as f:
        lock = f.read()
    c.check('{git_subdir,"file://%s"' % repo in lock.replace("\n", "").replace(" ", "") and
            '"wrapper-erl/dqd_wrapper"' in lock,
            "rebar.lock records the git_subdir dependency: %r" % lock)

    # 3. a release of it holds the wrapper, which starts and works
    rc, out, err = sh(["rebar3", "release"], app, env)
    if not c.eq(rc, 0, "rebar3 release:\n%s%s" % (out[-2000:], err[-2000:])):
        return
    rel = os.path.join(app, "_build", "default", "rel", "scratch", "lib")
    libs = sorted(os.listdir(rel)) if os.path.isdir(rel) else []
    c.check(any(x.startswith("dqd_wrapper-") for x in libs),
            "the release includes dqd_wrapper: %r" % libs)
    paths = [os.path.join(rel, x, "ebin") for x in libs]
    code = ("{ok, Started} = application:ensure_all_started(scratch), "
            "io:format(\"~p ~p~n\", [lists:member(dqd_wrapper, Started), scratch:run()]), "
            "halt().")
    rc, out, err = sh(["erl", "-noshell", "-pa"] + paths + ["-eval", code], app, env,
                      timeout=60)
    c.eq((rc, out.strip()), (0, "true 42"),
         "the scratch application starts dqd_wrapper and runs a span through it (%r)" % err)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_rebar3_dep.py SOURCE_DIR")
    t.run_script("test_rebar3_dep", body)
