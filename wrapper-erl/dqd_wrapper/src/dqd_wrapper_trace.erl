%% Probes bound to functions: the wrapper's tracer. dqd sends `trace;NAME;MS;M:F/A`;
%% this process installs a local call trace pattern on M:F/A with exception_trace, and
%% every call -> return (ok), call -> exception (fa), or call open past dMax (to) becomes
%% an instance of NAME, reported like a manual span. clear_timeout;NAME removes the
%% pattern. No code change in the traced application.
%%
%% What OTP's tracing makes us handle (docs/tracing.md has the user's view):
%%   - One tracer per process. Processes get the call flag from erlang:trace(all, ...),
%%     which skips processes another tool already traces (they are counted and reported,
%%     never taken over); when another tool holds the tracer of new processes, only the
%%     existing processes are traced ("existing"), and that is reported too.
%%   - Trace patterns are global: someone's dbg:ctp() removes ours. Every check_ms each
%%     installed pattern is read back with erlang:trace_info/2; a pattern gone or changed
%%     makes the binding `lost` (reported in state, its open calls dropped), not
%%     silently reinstalled against the other tool.
%%   - exception_trace (like return_trace) keeps a frame per traced call on the caller's
%%     stack: a tail-recursive function would grow its stack without bound. Functions
%%     whose code calls themselves in tail position are refused (tail_recursive), and a
%%     process whose traced call depth reaches max_depth stops being traced (its open
%%     calls are dropped and counted): mutual recursion cannot grow it further.
%%   - Cost: every traced call costs the caller two trace messages (~1 us). A budget per
%%     probe and per node, in calls per second: what is reported is capped exactly per
%%     second of monotonic time (admit/3: calls beyond the second's cap are sampled
%%     out); the trace messages are bounded by reading the runtime's call counters over
%%     slots of trace_slot_ms and, once a probe has traced its share of a slot, setting
%%     its bit of the trace control word, which its match spec tests: no more tracing
%%     until the next slot (`sampling:NAME=FRACTION` in state). A slot that overshot is
%%     paid back by the next ones of its second. The calls started while tracing is on
%%     are timed completely.
%%   - Never traced: the modules of dqd_wrapper itself and the module erlang, and never
%%     the wrapper's own processes (this tracer included).
%%
%% Pairing: trace messages of one process arrive in order, so each process has a stack
%% of open frames (the process dictionary, key {f, Pid}); a return or exception pops the
%% top frame when it is of the same function. Recursion and concurrency need nothing
%% more. A frame past its deadline is reported `to` and stays on the stack, marked, so
%% its late return still pairs. Frames of a binding that is removed are marked dropped
%% and counted; a return with no frame to pop is counted as unmatched.
-module(dqd_wrapper_trace).
-behaviour(gen_server).

-include("dqd_wrapper_int.hrl").

-export([start_link/1, apply/1, commands/1, fields/0, info/0, bind/3, unbind/1, check_now/0,
         tail_recursive/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-define(INFO, dqd_wrapper_trace_info).
-define(FLAGS, [call, arity, monotonic_timestamp]).
%% The match spec of a binding with sampling bit Bit: a call is traced (with its return
%% or exception) only while that bit of the trace control word is clear. Setting the
%% bit (erlang:system_flag(trace_control_word, _): one atomic store) stops the tracing
%% of that function at once, where removing the pattern would wait for every scheduler
%% to pass a code barrier (milliseconds under load, while the calls go on being traced).
-define(MS(Bit), [{'_', [{'=:=', {'band', {get_tcw}, 1 bsl Bit}, 0}], [{exception_trace}]}]).
-define(MAX_BINDS, 32).

%% {W, N, P}: the newest admission window W, the calls admitted in it (N) and in W - 1 (P).
-type win() :: {integer(), non_neg_integer(), non_neg_integer()}.

%% One bound probe.
-record(b, {
    name :: binary(),
    mfa :: mfa(),
    ns :: pos_integer(),              % dMax
    status = off :: off | on | {refused, atom()} | {lost, atom()},
    pattern = false :: boolean(),     % our pattern is installed right now
    bit = 0 :: 0..31,                 % its bit of the trace control word
    sampled = false :: boolean(),     % its bit is set: calls are not traced now
    keep = 1.0 :: float(),            % reported / all calls in the last second
    rate = 0.0 :: float(),            % all calls per second in the last slot
    calls = 0 :: non_neg_integer(),   % calls timed (admitted) since bound
    win = none :: none | win(),       % its newest admission window, calls admitted
    skipped = 0 :: non_neg_integer(), % traced calls sampled out by the hard cap (since bound)
    %% keep is measured over seconds: calls admitted, all calls, whether any call went
    %% untimed (switched off, or sampled out) since second acc_sec began
    took = 0 :: non_neg_integer(),
    acc_all = 0 :: non_neg_integer(),
    acc_cut = false :: boolean(),
    acc_sec = 0 :: integer(),
    skip0 = 0 :: non_neg_integer(),   % skipped at the start of this slot
    base = 0 :: non_neg_integer(),    % the VM's call count at the start of the slot
    allowed = 1 :: integer(),         % calls it may trace in this slot (< 1: none)
    last = 0 :: non_neg_integer(),    % calls it traced in the last slot
    burst = 0 :: non_neg_integer(),   % calls it traced in the last slot it was on
    traced = 0 :: non_neg_integer(),  % calls it traced in this slot (the VM's count)
    reported = 0 :: non_neg_integer(),
    dropped = 0 :: non_neg_integer()  % open calls dropped (unbound, lost, too deep)
}).

-record(t, {
    binds = #{} :: #{binary() => #b{}},
    by_mfa = #{} :: #{mfa() => binary()},
    running = false :: boolean(),
    flags = none :: none | all | existing,  % which processes carry our call flag
    others = 0 :: non_neg_integer(),       % processes traced by another tool
    tmo :: ets:tid(),                       % {{Deadline, Seq}, Pid}
    seq = 0 :: non_neg_integer(),
    unmatched = 0 :: non_neg_integer(),
    deep = 0 :: non_neg_integer(),          % processes no longer traced (max_depth)
    overload = 0 :: non_neg_integer(),      % slots skipped: our own mailbox was too long
    excluded = #{} :: #{pid() => true},
    slot_start = 0 :: integer(),
    slot_end = 0 :: integer(),
    node_allowed = 1 :: integer(),          % calls all probes may trace in this slot
    nwin = none :: none | win(),            % the same for all probes together
    gone = #{} :: #{binary() => win()},     % the windows of probes unbound this second
    guard = 0 :: non_neg_integer(),         % call messages since the last budget check
    cfg :: map(),
    last = <<>> :: binary(),                % fields last published
    ever = [] :: [binary()]                 % probes ever bound, newest first (at most 256)
}).

-spec start_link(dqd_wrapper_config:config()) -> {ok, pid()} | {error, term()}.
start_link(Config) ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, Config, []).

%% Applies a batch of dqd's commands, in order: to the probe table (one update), then
%% to the tracer. Returns the trace commands the tracer refused: their probes are not
%% left enabled, and the caller does not acknowledge them (the reason goes out in the
%% state line, trefused:NAME=WHY).
-spec apply([dqd_wrapper_line:command()]) -> [dqd_wrapper_line:command()].
apply(Cmds) ->
    ok = dqd_wrapper_core:apply_commands(Cmds),
    case commands(Cmds) of
        [] -> [];
        Refused ->
            Names = [N || {N, _} <- Refused],
            ok = dqd_wrapper_core:apply_commands([{clear_timeout, N} || N <- Names]),
            [C || {trace, N, _, _} = C <- Cmds, lists:member(N, Names)]
    end.

%% Applies what of a batch of dqd's commands concerns traced probes (start_stub,
%% stop_stub, trace, clear_timeout); the others are ignored. Returns the commands the
%% tracer refused, with the reason.
-spec commands([dqd_wrapper_line:command()]) -> [{binary(), term()}].
commands(Cmds) ->
    case [C || C <- Cmds, relevant(C)] of
        [] -> [];
        Mine ->
            try gen_server:call(?MODULE, {commands, Mine}, 30000)
            catch exit:{noproc, _} -> [{N, not_started} || {trace, N, _, _} <- Mine]
            end
    end.

relevant(start) -> true;
relevant(stop) -> true;
relevant({trace, _, _, _}) -> true;
relevant({clear_timeout, _}) -> true;
relevant(_) -> false.

%% Local API: bind probe Name (dMax Ms) to M:F/A, as dqd's trace command does. Any
%% atoms ('Elixir.Shop.Orders', 'do it'), as long as the state line can name the function
%% on one line: {error, bad_function} for an atom with a control character, an arity over
%% 255 or more than 255 bytes as written.
-spec bind(binary(), number(), mfa()) -> ok | {error, term()}.
bind(Name, Ms, {M, F, A}) when is_atom(M), is_atom(F), is_integer(A) ->
    case {dqd_wrapper_line:ms_to_ns(Ms), dqd_wrapper_line:mfa_text({M, F, A})} of
        {_, error} -> {error, bad_function};
        {{ok, Ns}, {ok, _}} ->
            Mfa = {atom_to_binary(M, utf8), atom_to_binary(F, utf8), A},
            case dqd_wrapper_core:local({set_timeout, Name, Ns}) of
                ok ->
                    case commands([{trace, Name, Ns, Mfa}]) of
                        [] -> ok;
                        [{_, Why}] ->
                            %% Not left enabled; the refusal stays in the state line.
                            ok = dqd_wrapper_core:apply_command({clear_timeout, Name}),
                            dqd_wrapper_conn:state_changed(),
                            {error, Why}
                    end;
                E -> E
            end;
        {error, _} -> {error, bad_timeout}
    end.

-spec unbind(binary()) -> ok | {error, term()}.
unbind(Name) ->
    dqd_wrapper_core:local({clear_timeout, Name}).

%% The state line's trace fields (iodata, [] when nothing is bound). Read from an ETS
%% table the tracer rewrites, so building a state line never waits for the tracer.
-spec fields() -> iodata().
fields() ->
    try ets:lookup(?INFO, fields) of
        [{_, F}] -> F;
        [] -> []
    catch error:badarg -> []
    end.

%% Everything the tracer knows, for tests and operators.
-spec info() -> map().
info() -> gen_server:call(?MODULE, info).

%% Runs the pattern check and the slot accounting now (tests).
-spec check_now() -> ok.
check_now() -> gen_server:call(?MODULE, check_now).

%%% gen_server ----------------------------------------------------------------

init(Config) ->
    process_flag(trap_exit, true),
    %% Trace messages can arrive in bursts: off the heap, a long queue does not make
    %% every garbage collection of this process copy it.
    process_flag(message_queue_data, off_heap),
    process_flag(priority, high),
    _ = ets:new(?INFO, [named_table, protected, {read_concurrency, true}]),
    ets:insert(?INFO, {fields, []}),
    Cfg = maps:with([trace_probe_rate, trace_node_rate, trace_max_depth, trace_slot_ms,
                     trace_check_ms, sweep_interval_ms], Config),
    Now = erlang:monotonic_time(nanosecond),
    SlotMs = maps:get(trace_slot_ms, Cfg),
    erlang:send_after(ms_until(next_boundary(Now, SlotMs), Now), self(), slot),
    erlang:send_after(maps:get(trace_check_ms, Cfg), self(), check),
    erlang:send_after(maps:get(sweep_interval_ms, Cfg), self(), sweep),
    #st{running = R} = persistent_term:get(?STATE_KEY, ?OFF),
    {ok, #t{tmo = ets:new(dqd_wrapper_trace_tmo, [ordered_set, private]), cfg = Cfg,
            running = R, slot_start = Now, slot_end = next_boundary(Now, SlotMs),
            node_allowed = max(1, maps:get(trace_node_rate, Cfg) * SlotMs div 1000)}}.

handle_call({commands, Cmds}, _From, T) ->
    {Refused, T1} = lists:foldl(fun(C, {Acc, TT}) ->
                                        case command(C, TT) of
                                            {ok, TT1} -> {Acc, TT1};
                                            {refused, N, Why, TT1} -> {[{N, Why} | Acc], TT1}
                                        end
                                end, {[], T}, Cmds),
    {reply, lists:reverse(Refused), publish(T1)};
handle_call(info, _From, T) ->
    {reply, info(T), T};
handle_call(check_now, _From, T) ->
    {reply, ok, publish(budget(check(T)))};
handle_call(_, _From, T) ->
    {reply, {error, unknown_call}, T}.

handle_cast(_, T) -> {noreply, T}.

handle_info({trace_ts, Pid, call, Mfa, Ts}, T) ->
    {noreply, call(Pid, Mfa, Ts, T)};
handle_info({trace_ts, Pid, return_from, Mfa, _Value, Ts}, T) ->
    {noreply, done(Pid, Mfa, Ts, ok, T)};
handle_info({trace_ts, Pid, exception_from, Mfa, _Exc, Ts}, T) ->
    {noreply, done(Pid, Mfa, Ts, fa, T)};
handle_info(sweep, #t{cfg = #{sweep_interval_ms := Ms}} = T) ->
    erlang:send_after(Ms, self(), sweep),
    {noreply, sweep(erlang:monotonic_time(nanosecond), T)};
handle_info(slot, T) ->
    %% One timer at a time, firing at the next slot boundary.
    #t{slot_end = End} = T1 = budget(T),
    erlang:send_after(ms_until(End, erlang:monotonic_time(nanosecond)), self(), slot),
    {noreply, T1};
handle_info(check, #t{cfg = #{trace_check_ms := Ms}} = T) ->
    erlang:send_after(Ms, self(), check),
    T1 = publish(check(T)),
    {noreply, T1};
handle_info({'DOWN', _, process, Pid, _}, #t{excluded = Ex} = T) ->
    {noreply, T#t{excluded = maps:remove(Pid, Ex)}};
handle_info(_, T) ->
    %% Other trace messages (none are asked for) and stray messages.
    {noreply, T}.

%% Nothing of ours stays in the node: patterns removed, call flags cleared.
terminate(_Reason, T) ->
    _ = [uninstall(B) || B <- maps:values(T#t.binds)],
    _ = unflag(T),
    ok.

%%% Commands ------------------------------------------------------------------

command(start, T) ->
    {ok, resume(T#t{running = true})};
command(stop, T) ->
    {ok, pause(T#t{running = false})};
command({clear_timeout, Name}, #t{binds = Bs} = T) ->
    case maps:find(Name, Bs) of
        {ok, B} -> {ok, maybe_unflag(remove(B, T))};
        error -> {ok, T}
    end;
command({trace, Name, Ns, MfaBin}, #t{binds = Bs} = T) ->
    case resolve(MfaBin) of
        {ok, Mfa} ->
            case maps:find(Name, Bs) of
                {ok, #b{mfa = Mfa, status = S} = B} when S =:= on; S =:= off ->
                    %% The same binding again: a new dMax for calls from now on.
                    {ok, T#t{binds = Bs#{Name := B#b{ns = Ns}}}};
                {ok, Old} ->
                    command({trace, Name, Ns, MfaBin}, maybe_unflag(remove(Old, T)));
                error ->
                    case maps:find(Mfa, T#t.by_mfa) of
                        {ok, Other} ->
                            {refused, Name, {already_bound_to, Other}, T};
                        error ->
                            add(#b{name = Name, mfa = Mfa, ns = Ns}, T)
                    end
            end;
        {error, Why} ->
            logger:notice("dqd_wrapper: not tracing ~ts as ~ts: ~p",
                          [Name, dqd_wrapper_line:format_mfa(MfaBin), Why]),
            B = #b{name = Name, mfa = {undefined, undefined, 0}, ns = Ns,
                   status = {refused, Why}},
            T1 = case maps:find(Name, T#t.binds) of
                     {ok, Old} -> maybe_unflag(remove(Old, T));
                     error -> T
                 end,
            {refused, Name, Why, T1#t{binds = (T1#t.binds)#{Name => B}}}
    end.

add(#b{name = Name, mfa = Mfa} = B0, #t{binds = Bs, by_mfa = ByMfa} = T) ->
    Used = [Bit || #b{bit = Bit, status = S} <- maps:values(Bs), S =:= on orelse S =:= off],
    case lists:seq(0, ?MAX_BINDS - 1) -- Used of
        [] -> {refused, Name, too_many, T};
        [Free | _] -> add1(B0#b{bit = Free}, T, Bs, ByMfa, Name, Mfa)
    end.

add1(B0, T, Bs, ByMfa, Name, Mfa) ->
    Ever = lists:sublist([Name | lists:delete(Name, T#t.ever)], 256),
    %% Bound again within the same second: what it reported then still counts.
    B = B0#b{win = maps:get(Name, T#t.gone, none)},
    T1 = T#t{binds = Bs#{Name => B}, by_mfa = ByMfa#{Mfa => Name}, ever = Ever,
             gone = maps:remove(Name, T#t.gone)},
    case T1#t.running of
        true -> {ok, resume(T1)};
        false -> {ok, T1}
    end.

%% Removes a binding: its pattern goes, its open calls are dropped and counted.
remove(#b{name = Name, mfa = Mfa} = B, #t{binds = Bs, by_mfa = ByMfa} = T) ->
    uninstall(B),
    T1 = drop_frames(Mfa, T),
    T1#t{binds = maps:remove(Name, Bs),
         gone = case B#b.win of
                    none -> T1#t.gone;
                    Win -> (T1#t.gone)#{Name => Win}
                end,
         by_mfa = case maps:find(Mfa, ByMfa) of
                      {ok, Name} -> maps:remove(Mfa, ByMfa);
                      _ -> ByMfa
                  end}.

%% Which atoms the wire's names are. Atoms are never created from dqd's input: a
%% module whose name is no atom yet is not part of any loaded application, so it is
%% refused as not loaded.
resolve({MB, FB, A}) ->
    try {binary_to_existing_atom(MB, utf8), binary_to_existing_atom(FB, utf8)} of
        {M, F} -> check_mfa({M, F, A})
    catch
        error:badarg -> {error, not_loaded}
    end.

check_mfa({M, F, A} = Mfa) ->
    Own = case application:get_key(dqd_wrapper, modules) of
              {ok, Ms} -> Ms;
              undefined -> []
          end,
    Prefix = fun(P) -> lists:prefix(P, atom_to_list(M)) end,
    if
        M =:= erlang; M =:= erts_internal -> {error, never_traced};
        true ->
            case lists:member(M, Own) orelse Prefix("dqd_wrapper") orelse Prefix("dqsd_otel") of
                true -> {error, never_traced};
                false ->
                    case loaded(M) of
                        false -> {error, not_loaded};
                        true ->
                            case lists:member({F, A}, M:module_info(functions)) of
                                false -> {error, no_such_function};
                                true ->
                                    case tail_recursive(Mfa) of
                                        true -> {error, tail_recursive};
                                        false -> {ok, Mfa}
                                    end
                            end
                    end
            end
    end.

%% True when M is loaded, or is a module of a loaded application and could be loaded
%% now. A release loads every module of its applications at boot; interactive mode
%% (`mix run`, `iex -S mix`, `rebar3 shell`) loads a module at its first call, so a
%% function bound before its module was first called would be refused. The wrapper loads
%% no other code.
loaded(M) ->
    case code:is_loaded(M) of
        {file, _} -> true;
        false ->
            case application:get_application(M) of
                {ok, _} -> code:ensure_loaded(M) =:= {module, M};
                undefined -> false
            end
    end.

%% True when M:F/A calls itself in tail position (call_only / call_last to itself):
%% with a return or exception trace every such call would keep a frame, so a loop
%% would grow its stack for as long as it runs. Modules without a beam file on disk
%% (preloaded, or loaded from a binary) cannot be checked: the depth bound guards them.
-spec tail_recursive(mfa()) -> boolean().
tail_recursive({M, F, A} = Mfa) ->
    case code:which(M) of
        File when is_list(File) ->
            try beam_disasm:file(File) of
                {beam_file, _, _, _, _, Code} ->
                    lists:any(fun({function, F1, A1, _, Is}) when F1 =:= F, A1 =:= A ->
                                      lists:any(fun({call_only, _, X}) -> X =:= Mfa;
                                                   ({call_last, _, X, _}) -> X =:= Mfa;
                                                   (_) -> false
                                                end, Is);
                                 (_) -> false
                              end, Code);
                _ -> false
            catch _:_ -> false
            end;
        _ -> false
    end.

%%% Patterns and process flags ------------------------------------------------

%% Running and bound: flags on the processes, patterns on (as the budget allows).
resume(#t{running = false} = T) -> T;
resume(#t{binds = Bs} = T) ->
    case [B || #b{status = off} = B <- maps:values(Bs)] of
        [] -> T;
        Off ->
            T1 = flag(T),
            lists:foldl(fun(B, TT) ->
                                count(B),
                                #{trace_probe_rate := PCap, trace_slot_ms := SlotMs} = TT#t.cfg,
                                pattern_on(B#b{status = on, base = call_count(B),
                                               allowed = max(1, PCap * SlotMs div 1000)}, TT)
                        end, T1, Off)
    end.

pause(#t{binds = Bs} = T) ->
    T1 = maps:fold(fun(_, #b{status = on} = B, TT) ->
                           unpattern(B),
                           uncount(B),
                           put_bind(B#b{status = off, pattern = false, sampled = false}, TT);
                      (_, _, TT) -> TT
                   end, T, Bs),
    unflag(T1).

%% Gives the call flag to every process no other tool traces. erlang:trace(all, ...)
%% leaves processes with another tracer alone; when another tool is the tracer of new
%% processes we do not take that over either, and trace only those existing now.
flag(#t{flags = none} = T) ->
    Self = self(),
    Which = case erlang:trace_info(new, tracer) of
                {tracer, []} -> all;
                {tracer, Self} -> all;
                _ -> existing
            end,
    _ = erlang:trace(Which, true, [{tracer, Self} | ?FLAGS]),
    %% Never our own processes (this one first: it must not trace itself).
    _ = [catch erlang:trace(P, false, ?FLAGS) || P <- own_processes()],
    Others = length([P || P <- processes(), other_tracer(P, Self)]),
    case Others of
        0 -> ok;
        _ -> logger:notice("dqd_wrapper: ~b processes are traced by another tool; their "
                           "calls are not timed", [Others])
    end,
    T#t{flags = Which, others = Others};
flag(T) -> T.

other_tracer(P, Self) ->
    case erlang:trace_info(P, tracer) of
        {tracer, []} -> false;
        {tracer, Self} -> false;
        {tracer, _} -> true;
        _ -> false
    end.

own_processes() ->
    Named = [whereis(N) || N <- [?MODULE, dqd_wrapper_core, ?CONN, dqd_wrapper_sup,
                                 dqd_wrapper_legacy]],
    [self() | [P || P <- Named, is_pid(P)]] ++ app_master().

%% The application master and its helper (linked to it), when started as an application.
app_master() ->
    case application_controller:get_master(dqd_wrapper) of
        M when is_pid(M) ->
            case process_info(M, links) of
                {links, L} -> [M | [P || P <- L, is_pid(P)]];
                _ -> [M]
            end;
        _ -> []
    end.

maybe_unflag(#t{binds = Bs} = T) ->
    case [B || #b{status = on} = B <- maps:values(Bs)] of
        [] -> unflag(T);
        _ -> T
    end.

%% Clears our flag from the processes we trace (only those: another tool's stay).
unflag(#t{flags = none} = T) -> T;
unflag(#t{flags = Which} = T) ->
    Self = self(),
    case Which of
        all -> _ = (catch erlang:trace(new, false, ?FLAGS)), ok;
        existing -> ok
    end,
    _ = [catch erlang:trace(P, false, ?FLAGS)
         || P <- processes(), erlang:trace_info(P, tracer) =:= {tracer, Self}],
    %% Frames still open can never be paired now: drop them.
    T1 = lists:foldl(fun({{f, _} = K, Frames}, TT) ->
                             erase(K),
                             count_dropped([F || {_, _, _, _, open} = F <- Frames], TT);
                        (_, TT) -> TT
                     end, T, get()),
    ets:delete_all_objects(T1#t.tmo),
    T1#t{flags = none, excluded = #{}}.

pattern_on(#b{mfa = Mfa, bit = Bit} = B, T) ->
    tcw(Bit, false),
    case erlang:trace_pattern(Mfa, ?MS(Bit), [local]) of
        1 ->
            put_bind(B#b{pattern = true}, T);
        _ ->
            logger:notice("dqd_wrapper: could not trace ~p (no such function loaded)", [Mfa]),
            put_bind(B#b{status = {refused, no_such_function}, pattern = false}, T)
    end.

unpattern(#b{pattern = true, mfa = Mfa, bit = Bit}) ->
    _ = erlang:trace_pattern(Mfa, false, [local]),
    tcw(Bit, false);
unpattern(_) -> ok.

%% Sets (Off = true: calls of that binding not traced) or clears bit Bit of the trace
%% control word. Only this process writes it.
tcw(Bit, Off) ->
    W = erlang:system_info(trace_control_word),
    W1 = case Off of
             true -> W bor (1 bsl Bit);
             false -> W band bnot (1 bsl Bit)
         end,
    _ = W1 =:= W orelse erlang:system_flag(trace_control_word, W1),
    ok.

%% Removes everything a binding installed (its pattern and its call counter).
uninstall(B) ->
    unpattern(B),
    uncount(B).

put_bind(#b{name = N} = B, #t{binds = Bs} = T) -> T#t{binds = Bs#{N => B}}.

%% The VM counts every call of a bound function (call_count: an increment, no
%% message), whether its trace pattern is on or not: the budget is decided from these
%% counts in real time, not from the trace messages, which may be queued behind.
count(#b{mfa = Mfa}) ->
    _ = erlang:trace_pattern(Mfa, true, [call_count]),
    ok.

uncount(#b{mfa = {M, _, _} = Mfa}) when M =/= undefined ->
    _ = erlang:trace_pattern(Mfa, false, [call_count]),
    ok;
uncount(_) -> ok.

call_count(#b{mfa = Mfa}) ->
    case erlang:trace_info(Mfa, call_count) of
        {call_count, N} when is_integer(N) -> N;
        _ -> 0
    end.

%%% Trace messages ------------------------------------------------------------

call(Pid, _Mfa, _Ts, #t{excluded = Ex} = T) when is_map_key(Pid, Ex) ->
    %% Queued before the depth bound stopped tracing this process.
    T;
call(Pid, Mfa, Ts, #t{by_mfa = ByMfa} = T) ->
    case ByMfa of
        #{Mfa := Name} ->
            #{Name := B} = T#t.binds,
            K = {f, Pid},
            Frames = case get(K) of undefined -> []; Fs -> Fs end,
            #{trace_max_depth := Max} = T#t.cfg,
            case length(Frames) >= Max of
                true ->
                    too_deep(Pid, Frames, T);
                false ->
                    Start = erlang:convert_time_unit(Ts, native, nanosecond),
                    case admit(Start, B, T) of
                        {true, B1, T1} ->
                            Seq = T1#t.seq + 1,
                            Deadline = Start + B1#b.ns,
                            ets:insert(T1#t.tmo, {{Deadline, Seq}, Pid}),
                            put(K, [{Mfa, Name, Start, Seq, open} | Frames]),
                            guard(put_bind(B1, T1#t{seq = Seq}));
                        {false, B1, T1} ->
                            %% Sampled out: its frame only pairs its return.
                            put(K, [{Mfa, Name, Start, 0, sampled} | Frames]),
                            guard(put_bind(B1, T1))
                    end
            end;
        _ ->
            %% A call of a function no longer bound (its message was on its way).
            T
    end.

%% The depth bound: this process stops being traced and its open calls are dropped.
too_deep(Pid, Frames, T) ->
    _ = (catch erlang:trace(Pid, false, ?FLAGS)),
    erase({f, Pid}),
    logger:notice("dqd_wrapper: stopped tracing ~p: traced call depth reached ~b",
                  [Pid, length(Frames)]),
    T1 = count_dropped([F || {_, _, _, _, open} = F <- Frames], T),
    [ets:delete(T#t.tmo, {D, S}) || {_, Name, St, S, open} <- Frames,
                                    D <- [St + bind_ns(Name, T)]],
    %% Forgotten when it exits (its messages are all in by then).
    _ = erlang:monitor(process, Pid),
    T1#t{deep = T1#t.deep + 1, excluded = (T1#t.excluded)#{Pid => true}}.

bind_ns(Name, #t{binds = Bs}) ->
    case Bs of
        #{Name := #b{ns = Ns}} -> Ns;
        _ -> 0
    end.

done(Pid, _Mfa, _Ts, _Status, #t{excluded = Ex} = T) when is_map_key(Pid, Ex) ->
    T;
done(Pid, Mfa, Ts, Status, T) ->
    K = {f, Pid},
    case get(K) of
        [{Mfa, Name, Start, Seq, State} | Rest] ->
            case Rest of
                [] -> erase(K);
                _ -> put(K, Rest)
            end,
            case State of
                open ->
                    End = erlang:convert_time_unit(Ts, native, nanosecond),
                    case T#t.binds of
                        #{Name := #b{ns = Ns} = B} ->
                            Deadline = Start + Ns,
                            ets:delete(T#t.tmo, {Deadline, Seq}),
                            case End > Deadline of
                                true ->
                                    %% ended after its dMax but before the sweep reached
                                    %% it: a timeout all the same, as the sweep reports it
                                    report(Name, Start, Deadline, to);
                                false ->
                                    report(Name, Start, End, Status)
                            end,
                            put_bind(B#b{reported = B#b.reported + 1}, T);
                        _ ->
                            T
                    end;
                _ ->
                    %% Already reported as timed out, or dropped: its end pairs it.
                    T
            end;
        _ ->
            T#t{unmatched = T#t.unmatched + 1}
    end.

report(Name, Start, End, Status) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{running = true, probes = #{Name := _}} = S ->
            dqd_wrapper_core:push(S, {dqd_inst, Name, Start, End, Status, <<>>});
        _ -> ok
    end.

%% Reports open frames past their deadline as `to` (END = deadline) and marks them.
sweep(Now, #t{tmo = Tab} = T) ->
    case ets:first(Tab) of
        {Deadline, Seq} = Key when Deadline =< Now ->
            [{_, Pid}] = ets:take(Tab, Key),
            T1 = case get({f, Pid}) of
                     undefined -> T;
                     Frames ->
                         {Frames1, Hit} = mark(Frames, Seq, timed_out, []),
                         put({f, Pid}, Frames1),
                         case Hit of
                             {_, Name, Start, _, open} ->
                                 report(Name, Start, Deadline, to),
                                 case T#t.binds of
                                     #{Name := B} ->
                                         put_bind(B#b{reported = B#b.reported + 1}, T);
                                     _ -> T
                                 end;
                             _ -> T
                         end
                 end,
            sweep(Now, T1);
        _ ->
            T
    end.

%% Replaces the state of frame Seq by New; returns the frames and the frame as it was.
mark([], _Seq, _New, Acc) -> {lists:reverse(Acc), none};
mark([{M, N, S, Seq, _} = F | Rest], Seq, New, Acc) ->
    {lists:reverse(Acc, [{M, N, S, Seq, New} | Rest]), F};
mark([F | Rest], Seq, New, Acc) -> mark(Rest, Seq, New, [F | Acc]).

%% Marks every open frame of Mfa dropped (they stay to pair their returns).
drop_frames(Mfa, T) ->
    lists:foldl(
      fun({{f, _} = K, Frames}, TT) ->
              {Frames1, Dropped} =
                  lists:mapfoldl(fun({M, N, S, Seq, open}, D) when M =:= Mfa ->
                                         ets:delete(TT#t.tmo, {S + bind_ns(N, TT), Seq}),
                                         {{M, N, S, Seq, dropped}, D + 1};
                                    (F, D) -> {F, D}
                                 end, 0, Frames),
              put(K, Frames1),
              add_dropped(Mfa, Dropped, TT);
         (_, TT) -> TT
      end, T, get()).

add_dropped(_Mfa, 0, T) -> T;
add_dropped(Mfa, N, #t{by_mfa = ByMfa, binds = Bs} = T) ->
    case ByMfa of
        #{Mfa := Name} ->
            #{Name := B} = Bs,
            put_bind(B#b{dropped = B#b.dropped + N}, T);
        _ -> T
    end.

count_dropped(Frames, T) ->
    lists:foldl(fun({Mfa, _, _, _, _}, TT) -> add_dropped(Mfa, 1, TT) end, T, Frames).

%%% Budget ----------------------------------------------------------------------

%% The hard cap on what is reported. Time is cut into seconds on the grid of monotonic
%% time (window W covers [W, W + 1) s). A traced call is timed (and reported) only
%% when its start falls in the newest window seen (or the one before it) and neither
%% its probe nor the node has used that second's quota (trace_probe_rate,
%% trace_node_rate); otherwise it is sampled out (counted, its return paired and
%% ignored). So the calls reported with their start in any second number at most the
%% cap, and over any run of whole seconds at most the cap per second: no burst. The
%% switch-off below bounds how many trace messages this costs; it cannot be exact,
%% since the tracer only sees a count once the traced process's scheduler lets it run
%% (a tight loop makes a time slice of calls, ~1000, after its pattern goes on): per
%% second, the cap plus one such burst, which slot/1 pays back within the second.
admit(Start, #b{win = PW0} = B, #t{nwin = NW0, cfg = Cfg} = T) ->
    #{trace_probe_rate := PCap, trace_node_rate := NCap} = Cfg,
    X = floor_div(Start, 1000000000),
    PW = win_shift(X, PW0),
    NW = win_shift(X, NW0),
    case win_used(X, PW) < PCap andalso win_used(X, NW) < NCap of
        true ->
            {true, B#b{win = win_add(X, PW), took = B#b.took + 1, calls = B#b.calls + 1},
             T#t{nwin = win_add(X, NW)}};
        false ->
            {false, B#b{win = PW, skipped = B#b.skipped + 1}, T#t{nwin = NW}}
    end.

%% A call of window X moves the newest window on; the one before stays open for the
%% calls of other processes whose messages arrive a little out of order. Older windows
%% are closed (their calls sampled out): no window ever exceeds its quota.
win_shift(X, none) -> {X, 0, 0};
win_shift(X, {W, N, _}) when X =:= W + 1 -> {X, 0, N};
win_shift(X, {W, _, _}) when X > W -> {X, 0, 0};
win_shift(_, Win) -> Win.

win_used(X, {X, N, _}) -> N;
win_used(X, {W, _, P}) when X =:= W - 1 -> P;
win_used(_, _) -> infinity.

%% Calls admitted so far in second Sec (those still queued are not counted yet).
used_now(Sec, {Sec, N, _}) -> N;
used_now(_, _) -> 0.

win_add(X, {X, N, P}) -> {X, N + 1, P};
win_add(_, {W, N, P}) -> {W, N, P + 1}.

floor_div(A, B) when A >= 0 -> A div B;
floor_div(A, B) -> -((-A + B - 1) div B).

%% The end of a slot starting at Now (ns): slots of up to a second follow the grid of
%% SlotMs (so that, when SlotMs divides a second, a slot starts with each second, as
%% the admission's seconds do); longer ones last SlotMs from now.
next_boundary(Now, SlotMs) when SlotMs =< 1000 ->
    Ns = SlotMs * 1000000,
    (floor_div(Now, Ns) + 1) * Ns;
next_boundary(Now, SlotMs) ->
    Now + SlotMs * 1000000.

%% Milliseconds from Now until End (ns), rounded up: a timer set so never fires early.
ms_until(End, Now) -> max(1, (End - Now + 999999) div 1000000).

%% Every 4 call messages: end the slot when it is over, and turn off the pattern of
%% every probe that has traced what it may in this slot. Checked here as well as on
%% the timers because under a flood of calls the timer messages wait behind the trace
%% messages; the VM's call counts and the clock are read now, so the patterns go off
%% in time, whatever the backlog.
guard(#t{guard = G} = T) when G < 3 -> T#t{guard = G + 1};
guard(T) -> budget(T#t{guard = 0}).

budget(#t{slot_end = End} = T) ->
    case erlang:monotonic_time(nanosecond) >= End of
        true -> slot(T);
        false -> enforce(T)
    end.

enforce(#t{binds = Bs, node_allowed = NodeAllowed} = T) ->
    Counted = maps:map(fun(_, #b{status = on, pattern = true, sampled = false} = B) ->
                               B#b{traced = call_count(B) - B#b.base};
                          (_, B) -> B
                       end, Bs),
    NodeTraced = lists:sum([Tr || #b{status = on, traced = Tr} <- maps:values(Counted)]),
    T#t{binds = maps:map(fun(_, #b{status = on, pattern = true, sampled = false, traced = Tr,
                                   allowed = A} = B) when Tr >= A; NodeTraced >= NodeAllowed ->
                                 tcw(B#b.bit, true),
                                 %% Read again now that the bit is set: the calls traced
                                 %% while we were deciding count too (the debt is whole).
                                 B#b{sampled = true, traced = call_count(B) - B#b.base};
                            (_, B) -> B
                         end, Counted)}.

%% The end of a slot. Each probe's rate over the slot is its call count's increase
%% (every call, traced or not); it may trace up to its budget in the next slot, and all
%% of them together up to the node's, shared in proportion to what each asks for.
%% Patterns go on at the start of the slot and off when their share is used.
slot(#t{binds = Bs, cfg = Cfg, slot_start = Start0} = T) ->
    #{trace_probe_rate := PCap, trace_node_rate := NCap, trace_slot_ms := SlotMs} = Cfg,
    Now = erlang:monotonic_time(nanosecond),
    Secs = max(1.0e-3, (Now - Start0) / 1.0e9),
    SlotCap = max(1, PCap * SlotMs div 1000),
    NodeCap = max(1, NCap * SlotMs div 1000),
    Measured = maps:map(fun(_, #b{status = on} = B) ->
                                C = call_count(B),
                                All = max(0, C - B#b.base),
                                Traced = case B#b.sampled of
                                             false -> All;
                                             true -> min(All, B#b.traced)
                                         end,
                                keep(Now, B#b{rate = All / Secs, last = Traced, base = C,
                                              burst = case Traced of
                                                          0 -> B#b.burst;
                                                          _ -> Traced
                                                      end,
                                              traced = 0, skip0 = B#b.skipped,
                                              acc_all = B#b.acc_all + All,
                                              acc_cut = B#b.acc_cut orelse B#b.sampled
                                                  orelse B#b.skipped > B#b.skip0});
                           (_, B) -> B
                        end, Bs),
    %% What each would trace at most in the next slot, at the rate of the last one.
    Want = [{N, min(SlotCap, max(1, round(R * SlotMs / 1000)))}
            || #b{name = N, status = on, rate = R} <- maps:values(Measured)],
    Sum = lists:sum([W || {_, W} <- Want]),
    %% A slot that traced more than it was allowed (the traced process runs on until its
    %% scheduler lets this one see the count) is paid back by the next ones of the same
    %% second; a new second starts afresh (what is reported is capped per second by
    %% admit/3, and beyond it the overshoot is only trace messages): per second and
    %% probe the calls traced stay within the budget plus one overshoot.
    Debt = case floor_div(Now, 1000000000) =:= floor_div(Start0, 1000000000) of
               true -> fun(Allowed, Traced) -> min(0, Allowed - Traced) end;
               false -> fun(_, _) -> 0 end
           end,
    NodeTraced = lists:sum([L || #b{status = on, last = L} <- maps:values(Measured)]),
    NodeAllowed = NodeCap + Debt(T#t.node_allowed, NodeTraced),
    Allowed = maps:from_list(
                [{N, Share + Debt(B#b.allowed, B#b.last)}
                 || {N, W} <- Want,
                    #{N := B} <- [Measured],
                    Share <- [case Sum > NodeCap of
                                  true -> max(1, W * NodeCap div Sum);
                                  false -> SlotCap
                              end]]),
    {_, QLen} = process_info(self(), message_queue_len),
    %% Our own queue holds several slots' worth of messages: skip this slot.
    Overloaded = QLen > 4 * NodeCap,
    %% (the windows of unbound probes matter for a second at most)
    Gone = maps:filter(fun(_, {W, _, _}) -> W >= floor_div(Now, 1000000000) - 1 end,
                       T#t.gone),
    T1 = T#t{slot_start = Now, slot_end = next_boundary(Now, SlotMs), node_allowed = NodeAllowed,
             gone = Gone,
             overload = T#t.overload + case Overloaded of true -> 1; false -> 0 end},
    %% What this second still admits (admit/3): a probe goes on again only when at
    %% least half its last burst would fit in it (a tight loop traces a time slice of
    %% calls, however small its allowance: calls that would only be sampled out).
    Sec = floor_div(Now, 1000000000),
    NodeLeft = NCap - used_now(Sec, T#t.nwin),
    maps:fold(fun(N, #b{status = on} = B, TT) ->
                      Left = min(PCap - used_now(Sec, B#b.win), NodeLeft),
                      Fits = 2 * Left >= max(1, min(B#b.burst, min(PCap, NCap))),
                      B1 = B#b{allowed = case Fits of
                                             true -> min(Left, maps:get(N, Allowed));
                                             false -> 0
                                         end},
                      case Overloaded orelse B1#b.allowed < 1 orelse NodeAllowed < 1 of
                          true ->
                              tcw(B1#b.bit, true),
                              put_bind(B1#b{sampled = true}, TT);
                          false when B1#b.pattern ->
                              tcw(B1#b.bit, false),
                              put_bind(B1#b{sampled = false}, TT);
                          false ->
                              pattern_on(B1, TT)
                      end;
                 (_, _, TT) -> TT
              end, T1, Measured).

%% At the first slot end in a new second: the fraction of the calls reported over the
%% last second (1.0 when every call was timed), and a new second begins.
keep(Now, #b{acc_sec = Sec} = B) ->
    case floor_div(Now, 1000000000) of
        Sec -> B;
        Sec1 ->
            Keep = case B of
                       #b{acc_cut = false} -> 1.0;
                       #b{acc_all = 0} -> 1.0;
                       #b{took = Took, acc_all = All} -> min(1.0, Took / All)
                   end,
            B#b{keep = Keep, acc_sec = Sec1, took = 0, acc_all = 0, acc_cut = false}
    end.

%%% Checks ----------------------------------------------------------------------

%% Our patterns are global: anyone can remove them (dbg:ctp()) or replace them.
check(#t{binds = Bs} = T) ->
    maps:fold(fun(Name, #b{status = on, pattern = true, mfa = Mfa, bit = Bit} = B, TT) ->
                      Ours = ?MS(Bit),
                      case erlang:trace_info(Mfa, match_spec) of
                          {match_spec, Ours} -> TT;
                          {match_spec, Other} ->
                              Why = case Other of
                                        false -> removed_by_other;
                                        _ -> replaced_by_other
                                    end,
                              logger:warning("dqd_wrapper: the trace pattern of ~p (probe ~ts) "
                                             "was ~p; not tracing it any more",
                                             [Mfa, B#b.name, Why]),
                              TT1 = drop_frames(Mfa, TT),
                              #{Name := B1} = TT1#t.binds,
                              uncount(B1),
                              tcw(Bit, false),
                              Lost = B1#b{status = {lost, Why}, pattern = false},
                              maybe_unflag(put_bind(Lost, TT1#t{by_mfa = maps:remove(
                                                                            Mfa, TT1#t.by_mfa)}))
                      end;
                 (_, _, TT) -> TT
              end, T, Bs).

%%% State ---------------------------------------------------------------------

%% The state line's fields; published when they change, and dqd is told.
publish(T) ->
    F = iolist_to_binary(state_fields(T)),
    case F =:= T#t.last of
        true -> T;
        false ->
            ets:insert(?INFO, {fields, F}),
            dqd_wrapper_conn:state_changed(),
            T#t{last = F}
    end.

%% ;traced:NAME=MOD:FUN/ARITY,... the patterns installed (bound and tracing, sampled
%; or not); ;tcalls:NAME=N traced calls since bound; ;sampling:NAME=FRACTION for the
%% probes over budget; ;tdropped:NAME=N open calls dropped; ;trefused:NAME=REASON for
%% the bindings refused or lost; ;tother:N processes traced by another tool.
state_fields(#t{binds = Bs} = T) ->
    L = lists:sort(maps:values(Bs)),
    On = [B || #b{status = on} = B <- L],
    List = fun(_, []) -> [];
              (Tag, Pairs) -> [";", Tag, ":", lists:join(",", Pairs)]
           end,
    [List("traced", [[N, "=", dqd_wrapper_line:format_mfa(M)] || #b{name = N, mfa = M} <- On]),
     List("tcalls", [[N, "=", integer_to_binary(C)] || #b{name = N, calls = C} <- On]),
     List("sampling", [[N, "=", float_to_binary(K, [{decimals, 6}, compact])]
                       || #b{name = N, keep = K} <- On, K < 1.0]),
     List("tdropped", [[N, "=", integer_to_binary(D)] || #b{name = N, dropped = D} <- L,
                                                         D > 0]),
     List("trefused", [[N, "=", atom_to_binary(reason(S), utf8)]
                       || #b{name = N, status = S} <- L, is_tuple(S)]),
     case T#t.others of
         0 -> [];
         O -> [";tother:", integer_to_binary(O)]
     end].

reason({_, {already_bound_to, _}}) -> already_bound;
reason({_, Why}) when is_atom(Why) -> Why;
reason(_) -> refused.

info(T) ->
    #{bindings => maps:map(fun(_, B) ->
                                   #{mfa => B#b.mfa, status => B#b.status,
                                     pattern => B#b.pattern, sampled => B#b.sampled,
                                     keep => B#b.keep,
                                     rate => B#b.rate, calls => B#b.calls,
                                     skipped => B#b.skipped,
                                     reported => B#b.reported, dropped => B#b.dropped}
                           end, T#t.binds),
      flags => T#t.flags, others => T#t.others, unmatched => T#t.unmatched,
      deep => T#t.deep, overload => T#t.overload, ever => T#t.ever,
      open => lists:sum([length(Fs) || {{f, _}, Fs} <- get()])}.
