%% Entry points for integration tests and demos: start the wrapper against a given
%% dqd and drive probes with a synthetic workload. Used by tools/run-wrapper (an
%% `erl -eval` front end) and callable from any Erlang test:
%%
%%   dqd_wrapper_harness:start("127.0.0.1", 7400, [{running, true}]),
%%   dqd_wrapper_harness:workload(<<"checkout">>, 200, 5000, 20.0, 0.01).
-module(dqd_wrapper_harness).

-export([main/1, start/3, workload/5, wait_connected/1]).

%% Starts the wrapper connected to Host:Port with extra application env Env.
%% OS DQD_* variables still take precedence, as in production.
-spec start(string(), inet:port_number(), [{atom(), term()}]) -> ok.
start(Host, Port, Env) ->
    _ = application:load(dqd_wrapper),
    [application:set_env(dqd_wrapper, K, V) || {K, V} <- [{dqd_address, {Host, Port}} | Env]],
    {ok, _} = application:ensure_all_started(dqd_wrapper),
    ok.

%% Waits up to Ms for the link to dqd.
-spec wait_connected(non_neg_integer()) -> ok | timeout.
wait_connected(Ms) when Ms =< 0 -> timeout;
wait_connected(Ms) ->
    case dqd_wrapper:stats() of
        #{connected := true} -> ok;
        _ -> timer:sleep(20), wait_connected(Ms - 20)
    end.

%% Runs probe Name at Rate instances per second for DurationMs. Each instance runs
%% in its own process (as a request handler would), takes an exponentially
%% distributed time with mean MeanMs, and fails with probability FailP. Returns the
%% number of instances started.
-spec workload(binary(), pos_integer(), pos_integer(), number(), float()) -> non_neg_integer().
workload(Name, Rate, DurationMs, MeanMs, FailP) ->
    Interval = max(1, 1000 div Rate),
    PerTick = max(1, Rate * Interval div 1000),
    Deadline = erlang:monotonic_time(millisecond) + DurationMs,
    loop(Name, Interval, PerTick, Deadline, MeanMs, FailP, 0).

loop(Name, Interval, PerTick, Deadline, MeanMs, FailP, N) ->
    case erlang:monotonic_time(millisecond) >= Deadline of
        true -> N;
        false ->
            [spawn(fun() -> instance(Name, MeanMs, FailP) end) || _ <- lists:seq(1, PerTick)],
            timer:sleep(Interval),
            loop(Name, Interval, PerTick, Deadline, MeanMs, FailP, N + PerTick)
    end.

instance(Name, MeanMs, FailP) ->
    {Ctx, H} = dqd_wrapper:start_span(Name),
    timer:sleep(round(-math:log(1.0 - rand:uniform()) * MeanMs)),
    case rand:uniform() < FailP of
        true -> dqd_wrapper:fail_span(H);
        false -> dqd_wrapper:end_span(Ctx, H)
    end.

%% erl -noshell -eval 'dqd_wrapper_harness:main(["HOST:PORT", ...])'
%% Options: --enable NAME=MS (local set_timeout, and start reporting),
%%          --load NAME:RATE:MEAN_MS[:FAIL_P] (repeatable), --seconds S (default 10).
%% Without --load it just keeps the wrapper running for S seconds (dqd drives it).
-spec main([string()]) -> no_return().
main([Addr | Opts]) ->
    {ok, {Host, Port}} = dqd_wrapper_config:parse_addr(Addr),
    ok = start(Host, Port, []),
    case wait_connected(5000) of
        ok -> io:format("dqd_wrapper_harness: connected to ~s~n", [Addr]);
        timeout -> io:format("dqd_wrapper_harness: not connected yet to ~s~n", [Addr])
    end,
    {Enables, Loads, Seconds} = opts(Opts, [], [], 10),
    [ok = dqd_wrapper:set_timeout(N, Ms) || {N, Ms} <- Enables],
    [ok = dqd_wrapper:set_running(true) || Enables =/= []],
    Workers = [spawn_monitor(fun() -> exit({done, N, workload(N, R, Seconds * 1000, M, F)}) end)
               || {N, R, M, F} <- Loads],
    [receive {'DOWN', Ref, process, _, {done, Name, Count}} ->
             io:format("dqd_wrapper_harness: ~s: ~b instances~n", [Name, Count])
     end || {_, Ref} <- Workers],
    timer:sleep(case Loads of [] -> Seconds * 1000; _ -> 200 end),
    ok = dqd_wrapper:flush(),
    io:format("dqd_wrapper_harness: ~p~n", [dqd_wrapper:stats()]),
    _ = dqd_wrapper:stop(),
    halt(0).

opts([], E, L, S) -> {lists:reverse(E), lists:reverse(L), S};
opts(["--enable", Spec | T], E, L, S) ->
    [N, Ms] = string:split(Spec, "="),
    {ok, Ns} = dqd_wrapper_line:parse_ms(list_to_binary(Ms)),
    opts(T, [{list_to_binary(N), Ns / 1000000} | E], L, S);
opts(["--load", Spec | T], E, L, S) ->
    {N, R, M, F} = case string:split(Spec, ":", all) of
                       [N0, R0, M0] -> {N0, R0, M0, "0"};
                       [N0, R0, M0, F0] -> {N0, R0, M0, F0}
                   end,
    opts(T, E, [{list_to_binary(N), list_to_integer(R), num(M), num(F)} | L], S);
opts(["--seconds", Sec | T], E, L, _) ->
    opts(T, E, L, list_to_integer(Sec)).

num(S) ->
    try list_to_float(S) catch error:badarg -> float(list_to_integer(S)) end.
