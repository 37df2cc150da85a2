defmodule Shop.Orders do
  @moduledoc """
  A checkout with no probe in its code. dqd's configuration (scenarios/elixir/dqd.json)
  binds its probes to these functions, private ones included, and dqd's wrapper traces a
  function only while dqd has its probe enabled. place/1 is the slow step.
  """

  @doc "Checks, places and confirms one order: {:ok, order} or {:error, :invalid}."
  def checkout(order) do
    if valid?(order) do
      order |> place() |> send_receipt()
    else
      {:error, :invalid}
    end
  end

  defp valid?(order) do
    work(1)
    is_map(order)
  end

  defp place(order) do
    work(6 + :rand.uniform(4))
    Map.put(order, :placed, true)
  end

  defp send_receipt(order) do
    work(:rand.uniform(2))
    {:ok, order}
  end

  defp work(ms), do: Process.sleep(ms)
end
