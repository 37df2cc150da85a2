%% dqsd_otel's connection API, kept so start-up code written for it works: the
%% connection itself is dqd_wrapper_conn (configured address, reconnects on its own).
-module(dqsd_otel_tcp_client).

-export([try_connect/2, disconnect/0]).

-spec try_connect(string() | binary(), integer()) -> ok.
try_connect(IP, Port) ->
    _ = dqd_wrapper:connect(IP, Port),
    ok.

-spec disconnect() -> ok.
disconnect() ->
    _ = dqd_wrapper_conn:connect(none),
    ok.
