%% The scenario node: a synthetic Erlang system instrumented with dqd_wrapper, driven
%% by scenarios/run. What one request does is the scenario's .dq outcome diagram: every
%% named node of the diagram is a probe (dqd_wrapper:with_span), sequences run in order,
%% a: branches run in parallel processes and all must finish, f: branches race (the
%% first success wins), p: picks a branch at random, and each outcome (leaf) does the
%% work its scenario file gives it: sleep for a random time, take a token of a shared
%% pool (dqs_pool) and hold it for a random service time, or run on a shared processor
%% (cpu): Cores of them shared by every job on it, so a job that starts while N others
%% run takes its work time x max(1, (N + 1) / Cores) - processor sharing, with the
%% slowdown fixed when the job starts.
%%
%% Requests arrive as a Poisson process at a rate that can be changed at run time
%% (arrivals overdue by more than 100 ms after a stall of the VM are skipped: load_loop).
%% The node reads one command per line on stdin and answers one line on stdout:
%%   rate R                      arrival rate in requests per second -> "OK rate R"
%%   fault LEAF slow MS          every instance of LEAF takes MS milliseconds longer
%%   fault LEAF erratic P MS     with probability P an instance takes Exp(MS) longer
%%   fault LEAF fail P           with probability P an instance fails (fail_span)
%%   fault all ...               the same fault in every leaf of this node (a sick node);
%%                               a leaf's own fault, if it has one, takes precedence
%%   clear LEAF | clear all      remove faults (clear all: every fault, `fault all` too)
%%   stats                       -> "STATS {json}" (cumulative counters: started, ok,
%%                               failed, rejected, skipped arrivals; pools, the
%%                               node's name: node() in the wrapper's hello, and
%%                               time_offset_ns: a pool's now_ns + it is the wall clock
%%                               the wrapper stamps instances with)
%%   bench PROBE N               time N empty with_span calls of PROBE (enabled by dqd)
%%                               and of a disabled probe, in this node under its load
%%   traced MODULE               -> "OK traced {json}": the functions of MODULE with a trace
%%                               pattern now (any tool's), the processes whose tracer is the
%%                               wrapper's, and the probes the wrapper ever bound to functions
%%   quit                        stop the node
%% Scenario file (file:consult terms):
%%   {rate, R}.  {pool, Name, Servers, QueueLimit}.  {cpu, Name, Cores}.
%%   {leaf, Name, Work}.  {default_leaf, Work}.
%%   {entry, Module, Function}: a request calls Module:Function() instead of walking the
%%   diagram with spans (the traced scenario: plain functions, bound to probes by dqd's
%%   config, that call leaf/1 for their work).
%%   {background, CpuName, Leaf, Every, Jobs, Ms}: after every Every completions of
%%   Leaf, a background task (a compaction, say) puts Jobs extra jobs on CpuName for Ms
%%   milliseconds - work that grows with the load and slows every job there meanwhile.
%%   At most one runs at a time per processor; a request for another meanwhile is dropped.
%%   Work = {delay, Dist} | {pool, PoolName, Dist} | {cpu, CpuName, Dist}
%%   Dist = {const, Ms} | {exp, MeanMs} | {shifted_exp, MinMs, MeanExtraMs}
%%        | {uniform, LoMs, HiMs}
%%   {variant, Name, Terms}: started with a third argument Name, the node uses Terms in
%%   place of the base terms they replace (a leaf, pool or cpu: the one of that name;
%%   any other kind, such as rate: every base term of that kind).
-module(dqs_scenario).

-export([main/1, start/1, leaf/1]).

-define(C_STARTED, 1).
-define(C_OK, 2).
-define(C_FAILED, 3).
-define(C_REJECTED, 4).
-define(C_SKIPPED, 5).

%% erl ... -run dqs_scenario start SCENARIO_FILE DQ_FILE [VARIANT]
-spec start([string()]) -> no_return().
start(Args) -> main(Args).

-spec main([string()]) -> no_return().
main([TermsFile, DqFile]) ->
    main([TermsFile, DqFile, none]);
main([TermsFile, DqFile, Variant]) ->
    case setup(TermsFile, DqFile, Variant) of
        ok ->
            out("READY ~ts", [persistent_term:get(dqs_root)]),
            command_loop();
        {error, Why} ->
            out("ERR ~ts", [Why]),
            halt(2)
    end;
main(_) ->
    out("ERR usage: dqs_scenario SCENARIO_FILE DQ_FILE [VARIANT]", []),
    halt(2).

%% The terms of variant V: its own terms, then the base terms it does not replace (a
%% leaf, pool or cpu replaces the base term of that kind and name; any other term every
%% base term of its kind).
variant(Terms, none) ->
    {ok, [T || T <- Terms, element(1, T) =/= variant]};
variant(Terms, V) ->
    case [Ts || {variant, N, Ts} <- Terms, to_bin(N) =:= to_bin(V)] of
        [Over | _] ->
            Keys = [term_key(T) || T <- Over],
            {ok, Over ++ [T || T <- Terms, element(1, T) =/= variant,
                               not lists:member(term_key(T), Keys)]};
        [] ->
            {error, io_lib:format("no variant ~ts", [V])}
    end.

term_key({K, Name, _}) when K =:= leaf; K =:= cpu -> {K, to_bin(Name)};
term_key({pool, Name, _, _}) -> {pool, to_bin(Name)};
term_key(T) -> element(1, T).

setup(TermsFile, DqFile, Variant) ->
    Consulted = case file:consult(TermsFile) of
                    {ok, All} -> variant(All, Variant);
                    Err -> Err
                end,
    case {Consulted, dqs_dq:parse_file(DqFile)} of
        {{ok, Terms}, {ok, Root, Defs}} ->
            Leaves = maps:from_list([{to_bin(N), W} || {leaf, N, W} <- Terms]),
            Default = proplists:get_value(default_leaf, Terms, {delay, {exp, 1.0}}),
            [dqs_pool:start(pool_name(N), S, Q) || {pool, N, S, Q} <- Terms],
            persistent_term:put(dqs_defs, Defs),
            persistent_term:put(dqs_root, Root),
            persistent_term:put(dqs_entry, proplists:lookup(entry, Terms)),
            persistent_term:put(dqs_leaves, {Leaves, Default}),
            persistent_term:put(dqs_pools, [to_bin(N) || {pool, N, _, _} <- Terms]),
            %% cpu: {atomics [running jobs, jobs done, sum of slowdowns x 1000], cores}
            persistent_term:put(dqs_cpus, maps:from_list(
                                            [{to_bin(N), {atomics:new(3, []), C}}
                                             || {cpu, N, C} <- Terms])),
            persistent_term:put(dqs_background,
                                maps:from_list([{to_bin(L), {to_bin(C), E, J, Ms}}
                                                || {background, C, L, E, J, Ms} <- Terms])),
            persistent_term:put(dqs_counters, counters:new(5, [write_concurrency])),
            persistent_term:put(dqs_t0, erlang:monotonic_time(millisecond)),
            ets:new(dqs_faults, [named_table, public, {read_concurrency, true}]),
            ets:new(dqs_first_loss, [named_table, public]),
            ets:new(dqs_counts, [named_table, public, {write_concurrency, true}]),
            {ok, _} = dqd_wrapper:start(),
            Rate = proplists:get_value(rate, Terms, 0),
            register(dqs_load, spawn(fun() -> load_init(Rate) end)),
            ok;
        {{error, R}, _} when is_list(R) ->
            {error, io_lib:format("~ts: ~ts", [TermsFile, R])};
        {{error, R}, _} ->
            {error, io_lib:format("~ts: ~p", [TermsFile, R])};
        {_, {error, R}} ->
            {error, io_lib:format("~ts: ~ts", [DqFile, R])}
    end.

pool_name(N) -> list_to_atom("dqs_pool_" ++ binary_to_list(to_bin(N))).

to_bin(A) when is_atom(A) -> atom_to_binary(A, utf8);
to_bin(L) when is_list(L) -> list_to_binary(L);
to_bin(B) when is_binary(B) -> B.

out(Fmt, Args) ->
    io:format(standard_io, Fmt ++ "~n", Args).

%%% commands -------------------------------------------------------------------

command_loop() ->
    case io:get_line(standard_io, "") of
        eof -> halt(0);
        {error, _} -> halt(0);
        Line ->
            case string:lexemes(string:trim(Line), " \t") of
                ["quit"] ->
                    out("OK quit", []),
                    halt(0);
                [] -> ok;
                Words -> command(Words)
            end,
            command_loop()
    end.

command(["rate", R]) ->
    case num(R) of
        {ok, V} when V >= 0 ->
            dqs_load ! {rate, V},
            out("OK rate ~s", [R]);
        _ -> out("ERR bad rate ~s", [R])
    end;
command(["fault", Leaf, "slow", Ms]) -> fault(Leaf, {slow, num(Ms)});
command(["fault", Leaf, "erratic", P, Ms]) -> fault(Leaf, {erratic, num(P), num(Ms)});
command(["fault", Leaf, "fail", P]) -> fault(Leaf, {fail, num(P)});
command(["clear", "all"]) ->
    ets:delete_all_objects(dqs_faults),
    out("OK clear all", []);
command(["clear", Leaf]) ->
    ets:delete(dqs_faults, list_to_binary(Leaf)),
    out("OK clear ~s", [Leaf]);
command(["bench", Probe, N]) ->
    case string:to_integer(N) of
        {Count, []} when Count > 0 ->
            out("OK bench ~s", [json(bench(list_to_binary(Probe), Count))]);
        _ -> out("ERR bad count ~s", [N])
    end;
command(["traced", Mod]) ->
    out("OK traced ~s", [json(traced(list_to_atom(Mod)))]);
command(["stats"]) ->
    out("STATS ~s", [json(stats())]);
command(Words) ->
    out("ERR unknown command: ~ts", [lists:join(" ", Words)]).

fault(Leaf, F) ->
    Vals = tl(tuple_to_list(F)),
    case lists:all(fun({ok, V}) -> V >= 0; (_) -> false end, Vals) of
        true ->
            Fault = list_to_tuple([element(1, F) | [V || {ok, V} <- Vals]]),
            %% every leaf: the atom `all`, which no leaf name (a binary) can be
            Key = case Leaf of
                      "all" -> all;
                      _ -> list_to_binary(Leaf)
                  end,
            ets:insert(dqs_faults, {Key, Fault}),
            out("OK fault ~s ~p", [Leaf, Fault]);
        false ->
            out("ERR bad fault arguments", [])
    end.

%% Nanoseconds per with_span of an empty fun: Probe (enabled by dqd: its instances are
%% reported like any other), a probe nobody enabled, and the bare fun call.
bench(Probe, N) ->
    F = fun() -> ok end,
    On = time_ns(fun() -> dqd_wrapper:with_span(Probe, F) end, N),
    Off = time_ns(fun() -> dqd_wrapper:with_span(<<"dqs_bench_off">>, F) end, N),
    Bare = time_ns(F, N),
    Enabled = maps:is_key(Probe, maps:get(probes, dqd_wrapper:state(), #{})),
    #{n => N, probe => Probe, probe_enabled => Enabled, enabled_ns => On, disabled_ns => Off,
      bare_ns => Bare}.

time_ns(F, N) ->
    T0 = erlang:monotonic_time(nanosecond),
    loop_n(F, N),
    (erlang:monotonic_time(nanosecond) - T0) / N.

loop_n(_, 0) -> ok;
loop_n(F, N) ->
    F(),
    loop_n(F, N - 1).

traced(Mod) ->
    _ = code:ensure_loaded(Mod),
    Patterns = [iolist_to_binary(io_lib:format("~s/~b", [F, A]))
                || {F, A} <- Mod:module_info(functions),
                   erlang:trace_info({Mod, F, A}, traced) =/= {traced, false}],
    Tracer = whereis(dqd_wrapper_trace),
    Flagged = length([P || is_pid(Tracer), P <- processes(),
                           erlang:trace_info(P, tracer) =:= {tracer, Tracer}]),
    Info = dqd_wrapper_trace:info(),
    #{patterns => list_join(Patterns), flagged_processes => Flagged,
      bound => list_join([N || {N, _} <- maps:to_list(maps:get(bindings, Info))]),
      ever_bound => list_join(maps:get(ever, Info)),
      trace_control_word => erlang:system_info(trace_control_word)}.

%% A list as one comma-separated string (the stats JSON encoder is flat).
list_join(L) -> iolist_to_binary(lists:join(",", lists:sort(L))).

num(S) ->
    case string:to_float(S) of
        {F, []} -> {ok, F};
        _ ->
            case string:to_integer(S) of
                {I, []} -> {ok, float(I)};
                _ -> error
            end
    end.

stats() ->
    C = persistent_term:get(dqs_counters),
    Now = erlang:monotonic_time(millisecond),
    FirstLoss = case ets:lookup(dqs_first_loss, loss) of
                    [{loss, T}] -> (T - persistent_term:get(dqs_t0)) / 1000;
                    [] -> null
                end,
    Pools = maps:from_list([{P, dqs_pool:stats(pool_name(P))}
                            || P <- persistent_term:get(dqs_pools)]),
    Cpus = maps:map(fun(_, {A, Cores}) ->
                            #{running => atomics:get(A, 1), done => atomics:get(A, 2),
                              slowdown_sum => atomics:get(A, 3) / 1000, cores => Cores}
                    end, persistent_term:get(dqs_cpus)),
    Rate = case process_info(whereis(dqs_load), dictionary) of
               {dictionary, D} -> proplists:get_value(rate, D, 0);
               _ -> 0
           end,
    #{t => (Now - persistent_term:get(dqs_t0)) / 1000, rate => Rate, node => node(),
      time_offset_ns => erlang:time_offset(nanosecond),
      started => counters:get(C, ?C_STARTED), ok => counters:get(C, ?C_OK),
      failed => counters:get(C, ?C_FAILED), rejected => counters:get(C, ?C_REJECTED),
      skipped => counters:get(C, ?C_SKIPPED),
      first_loss_t => FirstLoss, pools => Pools, cpus => Cpus,
      wrapper => wrapper_stats()}.

wrapper_stats() ->
    try dqd_wrapper:stats() of
        M when is_map(M) -> maps:filter(fun(_, V) -> is_number(V) end, M);
        _ -> #{}
    catch
        _:_ -> #{}
    end.

%% A flat-enough JSON encoder for the stats map (no json module in OTP 25).
json(M) when is_map(M) ->
    ["{", lists:join(",", [[json(to_bin(K)), ":", json(V)] || {K, V} <- maps:to_list(M)]),
     "}"];
json(B) when is_binary(B) -> [$", B, $"];
json(null) -> "null";
json(true) -> "true";
json(false) -> "false";
json(A) when is_atom(A) -> json(atom_to_binary(A, utf8));
json(I) when is_integer(I) -> integer_to_list(I);
json(F) when is_float(F) -> io_lib:format("~.6f", [F]);
json(_) -> "null".

%%% load: Poisson arrivals ----------------------------------------------------------

%% Arrival times are drawn on an absolute clock and the generator sleeps to the next
%% one, so the average rate is exact despite the millisecond granularity of timers
%% (arrivals due in the same millisecond start together).
%%
%% An arrival overdue by more than ?CATCH_UP_US when the generator runs is skipped and
%% counted (stats: skipped), not launched: after a stall of the VM (a machine busy with
%% other work did not run it for a second, say) the arrivals of the whole stall would
%% otherwise start at once, a burst the scenario does not describe. The clients are
%% inside the stalled VM: they did not exist while it was stopped. In a docs_tutorial
%% failure of a stress test, bursts of 260-350 requests after stalls piled onto the
%% diagram's first steps (windows at 80 ms against 21, timeouts), and the diagnosis
%% descended there.
-define(CATCH_UP_US, 100000).
load_init(Rate) ->
    put(rate, Rate),
    load_loop(Rate, erlang:monotonic_time(microsecond)).

load_loop(Rate, _Next) when Rate =< 0 ->
    receive
        {rate, R} ->
            put(rate, R),
            load_loop(R, erlang:monotonic_time(microsecond) + gap(R))
    end;
load_loop(Rate, Next) ->
    Now = erlang:monotonic_time(microsecond),
    Wait = max(0, (Next - Now) div 1000),
    receive
        {rate, R} ->
            put(rate, R),
            load_loop(R, erlang:monotonic_time(microsecond) + gap(R))
    after Wait ->
        Next1 = launch(Rate, Next, erlang:monotonic_time(microsecond)),
        load_loop(Rate, Next1)
    end.

launch(Rate, Next, Now) when Next < Now - ?CATCH_UP_US ->
    counters:add(persistent_term:get(dqs_counters), ?C_SKIPPED, 1),
    launch(Rate, Next + gap(Rate), Now);
launch(Rate, Next, Now) when Next =< Now ->
    spawn(fun request/0),
    launch(Rate, Next + gap(Rate), Now);
launch(_, Next, _) -> Next.

gap(Rate) when Rate > 0 -> round(-math:log(1.0 - rand:uniform()) / Rate * 1.0e6);
gap(_) -> 1000000.

%%% requests -----------------------------------------------------------------------

request() ->
    C = persistent_term:get(dqs_counters),
    counters:add(C, ?C_STARTED, 1),
    Run = case persistent_term:get(dqs_entry) of
              {entry, M, F} -> fun() -> M:F() end;
              none -> fun() -> run_def(persistent_term:get(dqs_root)) end
          end,
    try Run() of
        _ -> counters:add(C, ?C_OK, 1)
    catch
        _:_ ->
            counters:add(C, ?C_FAILED, 1),
            ets:insert_new(dqs_first_loss, {loss, erlang:monotonic_time(millisecond)})
    end.

run_def(Name) ->
    Chain = maps:get(Name, persistent_term:get(dqs_defs)),
    dqd_wrapper:with_span(Name, fun() -> run_chain(Chain) end).

run_chain(Chain) -> lists:foreach(fun run/1, Chain).

run({ref, Name}) -> run_def(Name);
run({outcome, Name}) -> dqd_wrapper:with_span(Name, fun() -> leaf(Name) end);
run({all, Name, Branches}) -> dqd_wrapper:with_span(Name, fun() -> all(Branches) end);
run({first, Name, Branches}) -> dqd_wrapper:with_span(Name, fun() -> first(Branches) end);
run({choice, Name, Ws, Branches}) ->
    dqd_wrapper:with_span(Name, fun() -> run_chain(pick(rand:uniform(), Ws, Branches)) end).

pick(_, [_], [B]) -> B;
pick(U, [W | _], [B | _]) when U =< W -> B;
pick(U, [W | Ws], [_ | Bs]) -> pick(U - W, Ws, Bs).

%% Runs each branch in its own process; answers {Ref, I, ok | failed} to the caller.
spawn_branches(Branches) ->
    Self = self(),
    Ref = make_ref(),
    lists:foreach(fun({I, B}) ->
                          spawn(fun() ->
                                        R = try run_chain(B) of _ -> ok catch _:_ -> failed end,
                                        Self ! {Ref, I, R}
                                end)
                  end, lists:zip(lists:seq(1, length(Branches)), Branches)),
    Ref.

all(Branches) ->
    Ref = spawn_branches(Branches),
    Results = [receive {Ref, I, R} -> R end || I <- lists:seq(1, length(Branches))],
    case lists:member(failed, Results) of
        true -> error(branch_failed);
        false -> ok
    end.

first(Branches) ->
    Ref = spawn_branches(Branches),
    first_wait(Ref, length(Branches)).

first_wait(_, 0) -> error(all_branches_failed);
first_wait(Ref, Left) ->
    receive
        {Ref, _, ok} -> ok;
        {Ref, _, failed} -> first_wait(Ref, Left - 1)
    end.

%%% leaves ----------------------------------------------------------------------------

leaf(Name) ->
    {Leaves, Default} = persistent_term:get(dqs_leaves),
    Work = maps:get(Name, Leaves, Default),
    Fault = case ets:lookup(dqs_faults, Name) of
                [{_, F}] -> F;
                [] ->
                    case ets:lookup(dqs_faults, all) of
                        [{_, F}] -> F;
                        [] -> none
                    end
            end,
    Extra = case Fault of
                {slow, Ms} -> Ms;
                {erratic, P, Ms} ->
                    case rand:uniform() < P of
                        true -> sample({exp, Ms});
                        false -> 0.0
                    end;
                _ -> 0.0
            end,
    work(Work, Extra),
    background(Name),
    case Fault of
        {fail, Pf} ->
            case rand:uniform() < Pf of
                true -> error(injected_failure);
                false -> ok
            end;
        _ -> ok
    end.

work({delay, Dist}, Extra) ->
    sleep_ms(sample(Dist) + Extra);
work({pool, Pool, Dist}, Extra) ->
    P = pool_name(Pool),
    case dqs_pool:acquire(P) of
        ok ->
            try
                sleep_ms(sample(Dist) + Extra)
            after
                dqs_pool:release(P)
            end;
        rejected ->
            counters:add(persistent_term:get(dqs_counters), ?C_REJECTED, 1),
            error(queue_full)
    end;
work({cpu, Cpu, Dist}, Extra) ->
    {A, Cores} = maps:get(to_bin(Cpu), persistent_term:get(dqs_cpus)),
    Running = atomics:add_get(A, 1, 1),
    Slowdown = max(1.0, Running / Cores),
    try
        sleep_ms(sample(Dist) * Slowdown + Extra)
    after
        atomics:sub(A, 1, 1),
        atomics:add(A, 2, 1),
        atomics:add(A, 3, round(Slowdown * 1000))
    end.

%% Counts completions of Leaf and starts the background task of every Every-th.
background(Leaf) ->
    case persistent_term:get(dqs_background) of
        #{Leaf := {Cpu, Every, Jobs, Ms}} ->
            {A, _} = maps:get(Cpu, persistent_term:get(dqs_cpus)),
            Count = ets:update_counter(dqs_counts, Leaf, 1, {Leaf, 0}),
            %% one background task at a time per processor, like a single compactor
            case Count rem Every =:= 0 andalso ets:insert_new(dqs_counts, {{busy, Cpu}}) of
                true ->
                    spawn(fun() ->
                                  atomics:add(A, 1, Jobs),
                                  sleep_ms(Ms),
                                  atomics:sub(A, 1, Jobs),
                                  ets:delete(dqs_counts, {busy, Cpu})
                          end),
                    ok;
                false -> ok
            end;
        _ -> ok
    end.

sample({const, Ms}) -> float(Ms);
sample({exp, Mean}) -> -Mean * math:log(1.0 - rand:uniform());
sample({shifted_exp, Min, Mean}) -> Min + sample({exp, Mean});
sample({uniform, Lo, Hi}) -> Lo + (Hi - Lo) * rand:uniform().

%% Timers have millisecond granularity: sleep floor(Ms) or floor(Ms)+1 milliseconds with
%% the probabilities that keep the mean at Ms.
sleep_ms(Ms) when Ms =< 0 -> ok;
sleep_ms(Ms) ->
    Whole = trunc(Ms),
    N = case rand:uniform() < Ms - Whole of
            true -> Whole + 1;
            false -> Whole
        end,
    receive after N -> ok end.
