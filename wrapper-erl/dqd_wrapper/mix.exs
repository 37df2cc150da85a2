# dqd_wrapper as a Mix dependency (wrapper-erl/README.md, "Elixir and Mix"). Mix builds
# it like any Mix project: erlc compiles src/*.erl into the using project's _build, so no
# rebar3 is needed (offline, no `mix local.rebar`) and nothing is written into this folder.
# rebar3 ignores this file. The application resource is read from src/dqd_wrapper.app.src,
# the file rebar3 uses, so the two builds make the same application.
defmodule DqdWrapper.MixProject do
  use Mix.Project

  {:ok, [{:application, :dqd_wrapper, app}]} =
    :file.consult(Path.join(__DIR__, "src/dqd_wrapper.app.src"))

  @app app
  @optional Keyword.get(app, :optional_applications, [])

  def project do
    [
      app: :dqd_wrapper,
      version: to_string(@app[:vsn]),
      description: to_string(@app[:description]),
      language: :erlang,
      erlc_options: [:debug_info, :warn_unused_vars, :warn_shadow_vars],
      deps: []
    ]
  end

  def application do
    required = @app[:applications] -- ([:kernel, :stdlib] ++ @optional)

    [
      mod: @app[:mod],
      registered: @app[:registered],
      env: @app[:env],
      extra_applications: required ++ Enum.map(@optional, &{&1, :optional})
    ]
  end
end
