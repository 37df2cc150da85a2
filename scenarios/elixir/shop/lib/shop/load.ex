defmodule Shop.Load do
  @moduledoc """
  The load of the `elixir` scenario, driven by scenarios/run through stdin, one command a
  line, one answer each: `rate R` (checkouts per second, 0 stops), `quit`. Prints READY
  first. Each checkout runs in a process of its own, started on a 10 ms tick.
  """

  @tick_ms 10

  def main do
    IO.puts("READY")
    loop(nil)
  end

  defp loop(gen) do
    case IO.gets("") do
      line when is_binary(line) ->
        case String.split(line) do
          ["rate", r] ->
            gen = rate(gen, String.to_integer(r))
            IO.puts("OK rate")
            loop(gen)

          ["quit"] ->
            rate(gen, 0)

          _ ->
            IO.puts("ERR unknown command: " <> String.trim(line))
            loop(gen)
        end

      _ ->
        rate(gen, 0)
    end
  end

  defp rate(nil, 0), do: nil
  defp rate(nil, r), do: spawn_link(fn -> tick(r, 0.0) end)

  defp rate(gen, r) do
    Process.unlink(gen)
    Process.exit(gen, :kill)
    rate(nil, r)
  end

  # Starts r checkouts a second: r * tick / 1000 on each tick, the fractions carried over.
  defp tick(r, carry) do
    due = carry + r * @tick_ms / 1000
    n = trunc(due)
    for i <- 1..n//1, do: spawn(fn -> Shop.Orders.checkout(%{id: i}) end)
    Process.sleep(@tick_ms)
    tick(r, due - n)
  end
end
