#!/usr/bin/env escript
%% -*- erlang -*-
%%! +sbwt none +sbwtdcpu none +sbwtdio none
%% Benchmark of the dqd wrapper's per-call cost, in one run:
%%   - disabled probe (wrapper stopped; probe without dMax), with the probe table in
%%     persistent_term (what the wrapper uses) and, for comparison, in ETS + atomics;
%%   - enabled start+end, start+fail, and with_span around a no-op;
%%   - the original design (dqsd_otel: one process per instance, erlang:send_after)
%%     as the baseline, feeding the same encoder and connection;
%%   - probes bound to functions (dqd_wrapper_trace): a plain function call with no
%%     pattern anywhere (untraced), the same with another function of the module traced
%%     (a function without a pattern), the traced function (an instance per call), and
%%     the traced function while its budget samples it out; with the schedulers'
%%     utilisation while each runs.
%% Enabled cases are timed until every line has been written to the socket of a
%% sink in another OS process, so work done off the caller (sweeper, connection)
%% is counted too.
%% Prints ns per call (best of several interleaved rounds) and the ratios.
-mode(compile).

-define(ROUNDS, 9).
-define(N_OFF, 1000000).
-define(N_ON, 100000).

main(Args) ->
    Ebin = case Args of
               [E | _] -> E;
               [] -> filename:join([filename:dirname(escript:script_name()), "..",
                                    "dqd_wrapper", "_build", "default", "lib", "dqd_wrapper",
                                    "ebin"])
           end,
    true = code:add_patha(Ebin),
    {ok, Sink, Port} = sink(),
    application:load(dqd_wrapper),
    [application:set_env(dqd_wrapper, K, V)
     || {K, V} <- [{dqd_address, {"127.0.0.1", Port}}, {buffer_size, 4 * ?N_ON},
                   {running, false}, {probes, []}, {otel, false}, {telemetry, false},
                   {sweep_interval_ms, 10}, {flush_interval_ms, 100},
                   %% no sampling in the traced cases (and slots of an hour: the budget
                   %% never changes the sampling bits the sampled case sets)
                   {trace_probe_rate, 1000000000}, {trace_node_rate, 1000000000},
                   {trace_slot_ms, 3600000}]],
    [os:unsetenv(V) || {_, V, _} <- dqd_wrapper_config:keys()],
    {ok, _} = application:ensure_all_started(dqd_wrapper),
    wait_connected(),
    io:format("dqd_wrapper benchmark: OTP ~s, ~b schedulers, best of ~b interleaved rounds~n",
              [erlang:system_info(otp_release), erlang:system_info(schedulers_online),
               ?ROUNDS]),
    %% Rounds interleave the cases so that load from other processes on the machine
    %% hits them alike; each case reports its best round (least disturbed).
    ok = dqd_wrapper:set_timeout(<<"on">>, 60000),
    Off = fun() -> ok = dqd_wrapper:set_running(false) end,
    On = fun() -> ok = dqd_wrapper:set_running(true) end,
    Target = {?MODULE, target, 0},
    Unbound = fun() -> On(), _ = dqd_wrapper_trace:unbind(<<"target">>), ok end,
    Bound = fun() ->
                    On(),
                    case maps:get(bindings, dqd_wrapper_trace:info()) of
                        #{<<"target">> := _} -> ok;
                        _ -> ok = dqd_wrapper_trace:bind(<<"target">>, 60000, Target)
                    end,
                    sample_bit(false)
            end,
    Sampled = fun() -> Bound(), sample_bit(true) end,
    Cases = [{empty, Off, off, fun() -> loop_empty(?N_OFF) end},
             {stopped, Off, off, fun() -> loop_probe(?N_OFF) end},
             {nodmax, On, off, fun() -> loop_probe(?N_OFF) end},
             {ets_stopped, Off, off, fun() -> loop_ets(?N_OFF, 0) end},
             {ets_nodmax, Off, off, fun() -> loop_ets(?N_OFF, 1) end},
             {'end', On, on, fun() -> loop_end(?N_ON) end},
             {fail, On, on, fun() -> loop_fail(?N_ON) end},
             {with, On, on, fun() -> loop_with(?N_ON) end},
             {orig, On, on, fun() -> loop_orig(?N_ON, same) end},
             {shipped, On, on, fun() -> loop_orig(?N_ON, shipped) end},
             {untraced, Unbound, off, fun() -> loop_call(?N_OFF) end},
             {no_pattern, Bound, off, fun() -> loop_other(?N_OFF) end},
             {traced, Bound, on, fun() -> loop_call(?N_ON) end},
             {traced_caller, Bound, suspended, fun() -> loop_call(?N_ON) end},
             {with_caller, On, suspended, fun() -> loop_with(?N_ON) end},
             {sampled, Sampled, off, fun() -> loop_call(?N_OFF) end}],
    ets_setup(),
    R = rounds(Cases, ?ROUNDS, #{}),
    ets_teardown(),
    Util = [{K, utilisation(Setup, Loop, Kind)}
            || {K, Setup, Kind, Loop} <- [{untraced, Unbound, off, fun() -> loop_call(?N_OFF) end},
                                           {with, On, on, fun() -> loop_with(?N_ON) end},
                                           {traced, Bound, on, fun() -> loop_call(?N_ON) end},
                                           {sampled, Sampled, off, fun() -> loop_call(?N_OFF) end}]],
    Unbound(),
    Get = fun(K) -> maps:get(K, R) end,
    {Empty, _, _, _} = Get(empty),
    {Stopped, _, _, _} = Get(stopped),
    {NoDmax, _, _, _} = Get(nodmax),
    {EtsOff, _, _, _} = Get(ets_stopped),
    {EtsNoDmax, _, _, _} = Get(ets_nodmax),
    End = Get('end'),
    Fail = Get(fail),
    With = Get(with),
    Orig = Get(orig),
    OrigFmt = Get(shipped),
    Upd0 = update_cost(0),
    Upd10k = update_cost(10000),
    Stats = dqd_wrapper:stats(),
    ok = application:stop(dqd_wrapper),
    catch port_close(Sink),
    io:format("~n~-47s ~9s ~9s ~9s ~9s~n",
              ["case (ns per call)", "CPU", "probe CPU", "wall e2e", "caller"]),
    row("empty loop (overhead, not subtracted)", Empty, Empty),
    row("disabled probe: wrapper stopped (start+end)", Stopped, Stopped),
    row("disabled probe: running, no dMax (start+end)", NoDmax, NoDmax),
    row("  same, ETS+atomics table: wrapper stopped", EtsOff, EtsOff),
    row("  same, ETS+atomics table: running, no dMax", EtsNoDmax, EtsNoDmax),
    erow("enabled start_span+end_span", End),
    erow("enabled start_span+fail_span", Fail),
    erow("enabled with_span(fun() -> ok end)", With),
    erow("baseline: process per instance + send_after", Orig),
    erow("  baseline as dqsd_otel shipped (io_lib:format)", OrigFmt),
    Ratio = fun(A, B, I) -> element(I, A) / element(I, B) end,
    io:format("~nratios: CPU / probe CPU / wall end-to-end~n"),
    [io:format("  ~-32s = ~.1fx / ~.1fx / ~.1fx~n",
               [L, Ratio(A, B, 1), Ratio(A, B, 4), Ratio(A, B, 2)])
     || {L, A, B} <- [{"baseline / enabled start+end", Orig, End},
                      {"baseline / enabled start+fail", Orig, Fail},
                      {"baseline / with_span", Orig, With},
                      {"shipped dqsd_otel / start+end", OrigFmt, End}]],
    io:format("  (target: enabled start+end >= 3x cheaper than the baseline, probe CPU)~n"),
    io:format("  disabled probe: ~.1f ns (target <= 100 ns)~n", [Stopped]),
    io:format("  persistent_term vs ETS+atomics, stopped: ~.1f vs ~.1f ns; no dMax: ~.1f vs ~.1f ns~n",
              [Stopped, EtsOff, NoDmax, EtsNoDmax]),
    io:format("probe-table update (set_timeout through the local API): ~.1f us with no "
              "other processes, ~.1f us with 10000 idle processes~n", [Upd0, Upd10k]),
    io:format("lines written ~b, dropped ~b~n",
              [maps:get(sent, Stats), maps:get(dropped, Stats) + maps:get(unreported_drops, Stats)]),
    {Bare, _, _, _} = Get(untraced),
    {NoPat, _, _, _} = Get(no_pattern),
    {Samp, _, _, _} = Get(sampled),
    Traced = Get(traced),
    Noise = noise(untraced),
    {TracedAlone, _, _, _} = Get(traced_caller),
    {WithAlone, _, _, _} = Get(with_caller),
    TracedCaller = TracedAlone - Bare,
    io:format("~nprobes bound to functions (ns per call)~n"),
    row("untraced call (no pattern in the node)", Bare, Bare),
    row("call without a pattern, another one traced", NoPat, NoPat),
    erow("traced call (exception_trace, an instance each)", Traced),
    row("traced function sampled out (budget spent)", Samp, Samp),
    row("traced call, caller alone (tracer suspended)", TracedAlone, TracedAlone),
    row("with_span, caller alone (connection suspended)", WithAlone, WithAlone),
    io:format("  traced call on the caller: ~.1f ns over the untraced call (target <= 3000 ns);"
              " probe-side CPU (caller and tracer): ~.1f ns; a manual span (with_span): ~.1f ns "
              "on the caller, ~.1f ns probe-side CPU~n", [TracedCaller, element(4, Traced), WithAlone,
                                        element(4, With)]),
    io:format("  without a pattern: ~.1f ns vs ~.1f ns untraced, difference ~.1f ns; noise of the "
              "untraced call over the rounds ~.1f ns (target: difference within it)~n",
              [NoPat, Bare, NoPat - Bare, Noise]),
    io:format("  scheduler utilisation while each ran (busy / wall time over the ~b normal and "
              "~b dirty CPU schedulers; the calling loop keeps one busy):~n",
              [erlang:system_info(schedulers_online),
               erlang:system_info(dirty_cpu_schedulers_online)]),
    [io:format("    ~-10s ~5.1f %~n", [K, 100 * U]) || {K, U} <- Util],
    Ok = Stopped =< 100 andalso Ratio(Orig, End, 4) >= 3 andalso TracedCaller =< 3000
        andalso abs(NoPat - Bare) =< Noise,
    io:format("targets: ~s~n", [case Ok of true -> "met"; false -> "NOT met" end]).

%% The function the traced cases call, and another of the same module never traced.
target() -> ok.
other() -> ok.

loop_call(N) when N =< 0 -> ok;
loop_call(N) ->
    target(),
    loop_call(N - 1).

loop_other(N) when N =< 0 -> ok;
loop_other(N) ->
    other(),
    loop_other(N - 1).

%% Sets or clears the trace control word's bit of the one binding (bit 0): what the
%% budget does to a function over its budget.
sample_bit(Off) ->
    W = erlang:system_info(trace_control_word),
    _ = erlang:system_flag(trace_control_word, case Off of
                                                   true -> W bor 1;
                                                   false -> W band bnot 1
                                               end),
    ok.

%% The schedulers' utilisation (busy / wall time, all schedulers) while Loop runs once
%% (for Kind on: until the connection has written its instances).
utilisation(Setup, Loop, Kind) ->
    Setup(),
    erlang:system_flag(scheduler_wall_time, true),
    S0 = lists:sort(erlang:statistics(scheduler_wall_time)),
    S0s = sent(),
    Loop(),
    _ = Kind =:= on andalso wait_sent(S0s + ?N_ON),
    S1 = lists:sort(erlang:statistics(scheduler_wall_time)),
    erlang:system_flag(scheduler_wall_time, false),
    {A, T} = lists:foldl(fun({{I, A0, T0}, {I, A1, T1}}, {AA, TT}) ->
                                 {AA + A1 - A0, TT + T1 - T0}
                         end, {0, 0}, lists:zip(S0, S1)),
    A / max(1, T).

%% The spread of a case's rounds (worst minus best), ns per call.
noise(Name) ->
    L = get({all, Name}),
    lists:max(L) - lists:min(L).

row(Label, Ns, _) ->
    io:format("~-47s ~9.1f ~9s ~9s ~9s~n", [Label, float(Ns), "-", "-", "-"]).
erow(Label, {Cpu, E2e, Caller, Probe}) ->
    io:format("~-47s ~9.1f ~9.1f ~9.1f ~9.1f~n", [Label, Cpu, Probe, E2e, Caller]).

%%% Loops (explicit, so no fun call per iteration) -----------------------------

loop_empty(N) when N =< 0 -> ok;
loop_empty(N) -> loop_empty(N - 1).

loop_probe(N) when N =< 0 -> ok;
loop_probe(N) ->
    {C, H} = dqd_wrapper:start_span(<<"off">>),
    ok = dqd_wrapper:end_span(C, H),
    loop_probe(N - 1).

loop_end(N) when N =< 0 -> ok;
loop_end(N) ->
    {C, H} = dqd_wrapper:start_span(<<"on">>),
    ok = dqd_wrapper:end_span(C, H),
    loop_end(N - 1).

loop_fail(N) when N =< 0 -> ok;
loop_fail(N) ->
    {_, H} = dqd_wrapper:start_span(<<"on">>),
    ok = dqd_wrapper:fail_span(H),
    loop_fail(N - 1).

loop_with(N) when N =< 0 -> ok;
loop_with(N) ->
    ok = dqd_wrapper:with_span(<<"on">>, fun noop/0),
    loop_with(N - 1).

noop() -> ok.

%% The original design, as in dqsd_otel: the probe table in ETS, a process spawned
%% per instance that arms erlang:send_after for dMax and waits for end or timeout.
loop_orig(N, Enc) ->
    Tab = ets:new(orig_registry, [set, public, {read_concurrency, true}]),
    ets:insert(Tab, [{running, true}, {<<"on">>, 60000}]),
    loop_orig(N, Tab, Enc),
    ets:delete(Tab).

%% Mode same: the span process hands the instance to the connection exactly as the
%% new design does (monotonic times, encoded by the connection), so only the
%% process-and-timer-per-instance design differs. Mode shipped: as dqsd_otel did it
%% (epoch ns from system_time, io_lib:format in the span process).
loop_orig(N, _, _) when N =< 0 -> ok;
loop_orig(N, Tab, Mode) ->
    Pid = orig_start(Tab, <<"on">>, Mode),
    Pid ! {end_span, now_ns(Mode)},
    loop_orig(N - 1, Tab, Mode).

now_ns(same) -> erlang:monotonic_time(nanosecond);
now_ns(shipped) -> erlang:system_time(nanosecond).

orig_start(Tab, Name, Mode) ->
    case ets:lookup(Tab, running) of
        [{_, true}] ->
            case ets:lookup(Tab, Name) of
                [{_, T}] ->
                    Start = now_ns(Mode),
                    spawn(fun() -> orig_span(Name, Start, T, Mode) end);
                [] -> ignore
            end;
        _ -> ignore
    end.

orig_span(Name, Start, T, Mode) ->
    Timer = erlang:send_after(T, self(), timeout),
    receive
        {end_span, End} ->
            erlang:cancel_timer(Timer),
            orig_send(Mode, Name, Start, End, ok);
        timeout ->
            orig_send(Mode, Name, Start, Start + T * 1000000, to)
    end.

orig_send(same, Name, Start, End, Status) ->
    dqd_wrapper_core:report(Name, Start, End, Status, <<>>);
orig_send(shipped, Name, Start, End, Status) ->
    dqd_wrapper_core:emit(list_to_binary(lists:flatten(
                            io_lib:format("n:~s;b:~p;e:~p;s:~s~n", [Name, Start, End, Status])))).

%% Microseconds per probe-table update (persistent_term:put, which scans every
%% process for references to the old term) with Extra idle processes alive.
update_cost(Extra) ->
    Pids = [spawn(fun() -> receive stop -> ok end end) || _ <- lists:seq(1, Extra)],
    N = 200,
    T0 = erlang:monotonic_time(nanosecond),
    [ok = dqd_wrapper:set_timeout(<<"upd">>, 1 + I rem 2) || I <- lists:seq(1, N)],
    T = (erlang:monotonic_time(nanosecond) - T0) / N / 1000,
    [P ! stop || P <- Pids],
    ok = dqd_wrapper:clear_timeout(<<"upd">>),
    T.

%%% The ETS + atomics alternative for the probe table (disabled path only) ------

ets_setup() ->
    _ = ets:new(bench_probes, [set, public, named_table, {read_concurrency, true}]),
    persistent_term:put(bench_ets_running, atomics:new(1, [])).

ets_teardown() ->
    persistent_term:erase(bench_ets_running),
    ets:delete(bench_probes).

loop_ets(N, Running) ->
    atomics:put(persistent_term:get(bench_ets_running), 1, Running),
    loop_ets(N).

loop_ets(N) when N =< 0 -> ok;
loop_ets(N) ->
    {C, H} = ets_start(<<"off">>),
    ok = ets_end(C, H),
    loop_ets(N - 1).

ets_start(Name) ->
    case atomics:get(persistent_term:get(bench_ets_running), 1) of
        0 -> {undefined, ignore};
        _ ->
            case ets:lookup(bench_probes, Name) of
                [] -> {undefined, ignore};
                [{_, _Dmax}] -> {undefined, enabled}
            end
    end.

ets_end(undefined, ignore) -> ok;
ets_end(_, _) -> ok.

%%% Timing -----------------------------------------------------------------------

rounds(_, 0, Acc) -> Acc;
rounds(Cases, K, Acc) ->
    rounds(Cases, K - 1,
           lists:foldl(fun({Name, Setup, Kind, Fun}, A) ->
                               Setup(),
                               T = measure(Kind, Fun),
                               put({all, Name}, [element(1, T) | case get({all, Name}) of
                                                                    undefined -> [];
                                                                    L -> L
                                                                end]),
                               maps:update_with(Name, fun(Best) -> min(Best, T) end, T, A)
                       end, Acc, Cases)).

%% {CPU ns per call, wall ns per call end to end, wall ns per call in the caller}.
%% CPU = runtime of all schedulers, so work moved to other processes (span
%% processes, the connection) is counted wherever it ran. For enabled probes the
%% end is when the connection has written all N lines to the socket.
measure(off, Fun) ->
    garbage_collect(),
    T0 = erlang:monotonic_time(nanosecond),
    Fun(),
    T = (erlang:monotonic_time(nanosecond) - T0) / ?N_OFF,
    {T, T, T, T};
measure(suspended, Fun) ->
    %% The caller alone: the processes that take its messages (the tracer, the
    %% connection) are suspended while it runs, so on a loaded machine they do not
    %% compete with it for a CPU; the wall time per call is then the caller's cost.
    Others = [P || P <- [whereis(dqd_wrapper_trace), whereis(dqd_wrapper_conn)], is_pid(P)],
    garbage_collect(),
    S0 = sent(),
    [true = erlang:suspend_process(P) || P <- Others],
    T0 = erlang:monotonic_time(nanosecond),
    Fun(),
    T = (erlang:monotonic_time(nanosecond) - T0) / ?N_ON,
    [true = erlang:resume_process(P) || P <- Others],
    wait_sent(S0 + ?N_ON),
    {T, T, T, T};
measure(on, Fun) ->
    garbage_collect(),
    S0 = sent(),
    {C0, _} = erlang:statistics(runtime),
    T0 = erlang:monotonic_time(nanosecond),
    Fun(),
    T1 = erlang:monotonic_time(nanosecond),
    wait_sent(S0 + ?N_ON),
    T2 = erlang:monotonic_time(nanosecond),
    {C1, _} = erlang:statistics(runtime),
    {Probe, _} = probe_side(Fun),
    {(C1 - C0) * 1.0e6 / ?N_ON, (T2 - T0) / ?N_ON, (T1 - T0) / ?N_ON, Probe}.

%% CPU ns per call on the probe side only: the connection is suspended while the
%% calls run, so its encoding and socket work (identical for every design, since
%% all hand it the same message) is left out. Finished when all N instances have
%% been handed over (the pending counter), which for the baseline means every span
%% process has done its work.
probe_side(Fun) ->
    Conn = whereis(dqd_wrapper_conn),
    garbage_collect(),
    P0 = dqd_wrapper_core:pending(),
    S0 = sent(),
    true = erlang:suspend_process(Conn),
    {C0, _} = erlang:statistics(runtime),
    Fun(),
    wait_pending(P0 + ?N_ON),
    {C1, _} = erlang:statistics(runtime),
    true = erlang:resume_process(Conn),
    wait_sent(S0 + ?N_ON),
    {(C1 - C0) * 1.0e6 / ?N_ON, ok}.

wait_pending(Target) ->
    case dqd_wrapper_core:pending() >= Target of
        true -> ok;
        false -> erlang:yield(), wait_pending(Target)
    end.

sent() -> maps:get(sent, dqd_wrapper:stats()).

wait_sent(Target) ->
    ok = dqd_wrapper:flush(),
    case sent() >= Target of
        true -> ok;
        false -> timer:sleep(1), wait_sent(Target)
    end.

wait_connected() ->
    case dqd_wrapper:stats() of
        #{connected := true} -> ok;
        _ -> timer:sleep(10), wait_connected()
    end.

%% A sink standing in for dqd, in a separate OS process (another Erlang VM) as dqd
%% would be, so its reads are not counted in this VM's CPU: it listens on an
%% ephemeral port, prints it, and reads and discards until the connection closes.
sink() ->
    Erl = os:find_executable("erl"),
    Code = "{ok, L} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127,0,0,1}}, "
           "{recbuf, 1 bsl 20}]), {ok, P} = inet:port(L), io:format(\"~b~n\", [P]), "
           "{ok, S} = gen_tcp:accept(L), "
           "F = fun F() -> case gen_tcp:recv(S, 0) of {ok, _} -> F(); _ -> halt() end end, "
           "F().",
    Port = open_port({spawn_executable, Erl},
                     [{args, ["-noshell", "-eval", Code]}, {line, 64}, binary, exit_status]),
    receive
        {Port, {data, {eol, Line}}} -> {ok, Port, binary_to_integer(Line)};
        {Port, {exit_status, St}} -> error({sink_failed, St})
    after 20000 -> error(sink_timeout)
    end.
