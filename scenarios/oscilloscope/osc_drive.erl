%% Drives the unmodified dqsd_otel (fnieri/dqsd_otel) the way an application does: starts
%% its supervisor, its command listener and its data connection, then makes spans.
-module(osc_drive).
-export([run/1]).

log(F, A) -> io:format("drive ~s: " ++ F ++ "~n", [ts() | A]).
ts() -> calendar:system_time_to_rfc3339(erlang:system_time(millisecond), [{unit, millisecond}, {offset, "Z"}]).

run([IngestS, ListenS, SilentS, NS, Phase2File]) ->
    Ingest = list_to_integer(IngestS),
    Listen = list_to_integer(ListenS),
    Silent = list_to_integer(SilentS),
    N = list_to_integer(NS),
    ok = application:start(opentelemetry_api),
    {ok, _} = dqsd_otel_sup:start_link(),
    ok = dqsd_otel_tcp_server:start_server("127.0.0.1", Listen),
    dqsd_otel_tcp_client:try_connect("127.0.0.1", Ingest),
    log("data connection open; silent for ~p s (nothing enabled yet)", [Silent]),
    timer:sleep(Silent * 1000),
    log("~p s over; waiting for checkout to be enabled", [Silent]),
    T = wait_enabled(<<"checkout">>, 600),
    log("checkout enabled with timeout ~p ms; stub running: ~p", [T, ets:lookup(otel_state, stub_running)]),
    spans(N),
    log("~p spans made", [N]),
    wait_file(Phase2File, 3600),
    log("after dqd's restart: 100 more spans", []),
    spans(100),
    timer:sleep(2000),
    log("done", []),
    halt(0).

wait_enabled(Name, 0) -> log("~s never enabled", [Name]), halt(1);
wait_enabled(Name, K) ->
    case ets:lookup(timeout_registry, Name) of
        [{_, T}] -> T;
        [] -> timer:sleep(100), wait_enabled(Name, K - 1)
    end.

wait_file(_, 0) -> ok;
wait_file(F, K) ->
    case filelib:is_file(F) of
        true -> ok;
        false -> timer:sleep(100), wait_file(F, K - 1)
    end.

%% every 50th fails, the others end after a few microseconds of work; paced at about
%% 10,000 spans a second
spans(N) -> spans(N, 0).
spans(N, N) -> timer:sleep(500);
spans(N, I) ->
    case I rem 50 of
        0 ->
            {_Ctx, Pid} = dqsd_otel:start_span(<<"checkout">>),
            dqsd_otel:fail_span(Pid);
        _ ->
            dqsd_otel:with_span(<<"checkout">>, fun() -> work(200 + I rem 300) end)
    end,
    case I rem 100 of 99 -> timer:sleep(10); _ -> ok end,
    spans(N, I + 1).

work(0) -> ok;
work(K) -> work(K - 1).
