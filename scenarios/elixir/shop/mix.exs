# The shop of the `elixir` scenario (scenarios/README.md): a Mix project that uses dqd's
# wrapper as a path dependency, as wrapper-erl/README.md ("Elixir and Mix") tells. The
# scenario runner builds a copy of it in its temporary directory, with DQD_WRAPPER_PATH
# naming the wrapper of this checkout.
defmodule Shop.MixProject do
  use Mix.Project

  def project do
    [app: :shop, version: "0.1.0", elixir: "~> 1.14", deps: deps()]
  end

  def application do
    [extra_applications: [:logger]]
  end

  defp deps do
    wrapper = System.get_env("DQD_WRAPPER_PATH", "../../../wrapper-erl/dqd_wrapper")
    [{:dqd_wrapper, path: wrapper}]
  end
end
