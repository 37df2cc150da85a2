"""Integration test (issue 25): the wrapper as a Mix dependency, by the README's lines.

wrapper-erl/README.md ("Elixir and Mix") gives two lines for a project's mix.exs deps: a
git dependency (sparse checkout of wrapper-erl/dqd_wrapper) and a path dependency. For
each, this test takes the line exactly (only its URL or path replaced by a local clone's),
puts it in a scratch Mix project whose code runs a span through the wrapper, and builds
it offline: Mix's and hex's homes in a temporary directory, HEX_OFFLINE, proxies pointed
at a closed port, no MIX_REBAR3 (and no rebar3 fetched: Mix builds the wrapper through
its mix.exs).
  1. a temporary clone of this repository holding the working tree's wrapper-erl/ on the
     branch the git line names (test_rebar3_dep.make_clone);
  2. `mix deps.get` and `mix compile` of the scratch project succeed;
  3. `mix run` starts dqd_wrapper with the scratch application and a span runs through it;
  4. for the path line, the build wrote nothing into the dependency's folder (every
     file's size and time, compared before and after): the README says so.

usage: test_mix_dep.py SOURCE_DIR
"""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dqdtest as t  # noqa: E402
from test_rebar3_dep import in_tmp, make_clone, readme_block, sh  # noqa: E402

GIT = re.compile(r'^\{:dqd_wrapper, git: "([^"]+)", branch: "([^"]+)", sparse: "([^"]+)"\}$')
PATH = re.compile(r'^\{:dqd_wrapper, path: "([^"]+)"\}$')


def tree_state(root):
    state = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            st = os.lstat(os.path.join(d, n))
            state[os.path.relpath(os.path.join(d, n), root)] = (st.st_size, st.st_mtime_ns)
    return state


def scratch(c, tmp, name, dep_line, env, watch=None):
    """A scratch Mix project NAME with deps [dep_line], built and run: a span through the
    wrapper. With watch (a folder), nothing in it may change during the build."""
    app = os.path.join(tmp, name)
    os.makedirs(os.path.join(app, "lib"))
    with open(os.path.join(app, "mix.exs"), "w") as f:
        f.write("defmodule Scratch.MixProject do\n  use Mix.Project\n\n"
                "  def project do\n    [app: :scratch, version: \"0.1.0\", deps: [%s]]\n"
                "  end\n\n  def application, do: [extra_applications: [:logger]]\nend\n"
                % dep_line)
    with open(os.path.join(app, "lib", "scratch.ex"), "w") as f:
        f.write("defmodule Scratch do\n"
                "  def run, do: :dqd_wrapper.with_span(\"scratch\", fn -> 42 end)\nend\n")
    before = tree_state(watch) if watch else None
    for step in (["deps.get"], ["compile"]):
        rc, out, err = sh(["mix"] + step, app, env)
        if not c.eq(rc, 0, "%s: mix %s:\n%s%s" % (name, step[0], out[-2000:], err[-2000:])):
            return
    if watch:
        after = tree_state(watch)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        c.eq(changed, [], "%s: the build wrote nothing into the dependency's folder" % name)
    code = ("started = Enum.map(Application.started_applications(), &elem(&1, 0)); "
            "IO.puts(\"#{:dqd_wrapper in started} #{Scratch.run()}\")")
    rc, out, err = sh(["mix", "run", "--no-compile", "-e", code], app, env, timeout=60)
    c.eq((rc, out.strip().splitlines()[-1:]), (0, ["true 42"]),
         "%s: the scratch application starts dqd_wrapper and runs a span through it (%r)"
         % (name, err[-1000:]))


def body(c):
    in_tmp(c, "dqd-it-mix-dep-", run)


def run(c, src, tmp):
    lines = readme_block(src, "the Mix dependency lines", "elixir")
    g = [m for m in map(GIT.match, lines) if m]
    p = [m for m in map(PATH.match, lines) if m]
    if not c.check(len(lines) == 2 and len(g) == 1 and len(p) == 1,
                   "the README has a git and a path line: %r" % lines):
        return
    url, branch, sparse = g[0].groups()
    path = p[0].group(1)
    c.eq(sparse, "wrapper-erl/dqd_wrapper", "the git line checks out the application's folder")
    c.check(path.endswith("/wrapper-erl/dqd_wrapper"), "the path line names it too: %r" % path)
    for tool in ("git", "mix", "elixir"):
        if not c.check(shutil.which(tool), "%s installed (make deps)" % tool):
            return
    repo = make_clone(c, src, tmp, branch)
    if not repo:
        return
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DQD_", "MIX_", "HEX_")) and k != "ERL_LIBS"}
    env.update({"MIX_HOME": os.path.join(tmp, "mix-home"),
                "HEX_HOME": os.path.join(tmp, "hex-home"), "HEX_OFFLINE": "1",
                "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
                "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
                "DQD_ADDRESS": "none"})
    git_line = g[0].group(0)
    local = git_line.replace('"%s"' % url, '"file://%s"' % repo)
    c.check(local != git_line and local.count("file://") == 1, "only the URL is replaced")
    scratch(c, tmp, "scratch_git", local, env)
    path_line = p[0].group(0)
    wrapper = os.path.join(repo, "wrapper-erl", "dqd_wrapper")
    local = path_line.replace('"%s"' % path, '"%s"' % wrapper)
    c.check(local != path_line, "only the path is replaced")
    scratch(c, tmp, "scratch_path", local, env, watch=wrapper)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: test_mix_dep.py SOURCE_DIR")
    t.run_script("test_mix_dep", body)
