%% Owner of the wrapper's shared state: the probe table published in persistent_term,
%% the ETS tables of open instances, and the sweeper that reports instances not ended
%% by start + dMax as timed out (one process for all instances instead of a process
%% and a timer per instance). Commands, from dqd or local, are applied here so that
%% updates of the probe table are serialised.
-module(dqd_wrapper_core).
-behaviour(gen_server).

-include("dqd_wrapper_int.hrl").

-export([start_link/1, apply_command/1, apply_commands/1, local/1, quiesce/0, report/5, push/2, emit/1,
         sweep_now/0, pending/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-record(core, {sweep_ms :: pos_integer()}).

-spec start_link(dqd_wrapper_config:config()) -> {ok, pid()} | {error, term()}.
start_link(Config) ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, Config, []).

%% Applies a command from dqd; sync changes nothing here.
-spec apply_command(dqd_wrapper_line:command()) -> ok.
apply_command(Cmd) -> apply_commands([Cmd]).

%% Applies commands in order with a single update of the probe table.
-spec apply_commands([dqd_wrapper_line:command()]) -> ok.
apply_commands(Cmds) -> gen_server:call(?MODULE, {apply, Cmds}).

%% Applies a command given through the local API and tells dqd the new state.
-spec local(dqd_wrapper_line:command()) -> ok | {error, not_started}.
local(Cmd) ->
    try gen_server:call(?MODULE, {apply, [Cmd]}) of
        ok ->
            %% start/stop and clear_timeout concern probes bound to functions too.
            _ = dqd_wrapper_trace:commands([Cmd]),
            dqd_wrapper_conn:state_changed()
    catch
        exit:{noproc, _} -> {error, not_started}
    end.

%% Before the application stops: no new instances, and every instance already past
%% its deadline is reported now, while the connection can still send it.
-spec quiesce() -> ok.
quiesce() -> gen_server:call(?MODULE, quiesce).

%% Instances handed to the connection and not yet written or dropped.
-spec pending() -> non_neg_integer().
pending() ->
    case current() of
        #st{cnt = undefined} -> 0;
        #st{cnt = Cnt} -> atomics:get(Cnt, ?PENDING)
    end.

-spec sweep_now() -> ok.
sweep_now() -> gen_server:call(?MODULE, sweep_now).

%% Hands one finished instance (times on the monotonic clock, ns) to the connection
%% process, which encodes it: the caller pays for a small message, not for
%% printing integers, and encoding happens off the instrumented process.
-spec report(binary() | atom(), integer(), integer(), dqd_wrapper_line:status(),
             binary()) -> ok.
report(Name, Start, End, Status, Meta) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{cnt = undefined} ->
            ok;
        St ->
            push(St, {dqd_inst, Name, Start, End, Status, Meta})
    end.

%% Hands one encoded line to the connection process. Both report/5 and emit/1 count
%% the message as dropped instead when the bounded buffer (mailbox + unsent lines) is
%% full, so they never block the caller.
-spec emit(binary()) -> ok.
emit(Line) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{cnt = undefined} ->
            ok;
        St ->
            push(St, {dqd_line, Line})
    end.

-spec push(#st{}, tuple()) -> ok.
push(#st{cnt = undefined}, _Msg) ->
    ok;
push(#st{cnt = Cnt, max = Max}, Msg) ->
    case atomics:add_get(Cnt, ?PENDING, 1) of
        N when N > Max ->
            atomics:sub(Cnt, ?PENDING, 1),
            atomics:add(Cnt, ?DROPPED, 1);
        _ ->
            try
                ?CONN ! Msg,
                ok
            catch
                error:badarg ->
                    atomics:sub(Cnt, ?PENDING, 1),
                    atomics:add(Cnt, ?DROPPED, 1)
            end
    end.

%%% gen_server ----------------------------------------------------------------

init(Config) ->
    process_flag(trap_exit, true),
    %% One plain ordered_set per scheduler rather than one table with
    %% write_concurrency: uncontended operations on a plain table are cheaper (the
    %% CA tree costs ~1.5x per insert+take here), and spreading instances over as
    %% many tables as schedulers keeps lock contention low.
    Tabs = list_to_tuple([ets:new(?INFLIGHT, [public, ordered_set])
                          || _ <- lists:seq(1, erlang:system_info(schedulers))]),
    {Otel, Tel} = dqd_wrapper_otel:detect(Config),
    Probes = lists:foldl(fun({N, Ns}, Acc) -> put_probe(N, Ns, Acc) end, #{},
                         maps:get(probes, Config)),
    %% The time offset is cached in the state; the runtime tells us if it changes
    %% (only possible in the time warp modes).
    _ = erlang:monitor(time_offset, clock_service),
    publish(#st{running = maps:get(running, Config), probes = Probes, otel = Otel,
                tel = Tel, cnt = maps:get(counters, Config),
                max = maps:get(buffer_size, Config),
                off = erlang:time_offset(nanosecond), tabs = Tabs}),
    SweepMs = maps:get(sweep_interval_ms, Config),
    erlang:send_after(SweepMs, self(), sweep),
    {ok, #core{sweep_ms = SweepMs}}.

handle_call({apply, Cmds}, _From, State) ->
    publish(lists:foldl(fun apply_to/2, current(), Cmds)),
    {reply, ok, State};
handle_call(quiesce, _From, State) ->
    publish((current())#st{running = false}),
    sweep(erlang:monotonic_time(nanosecond)),
    {reply, ok, State};
handle_call(sweep_now, _From, State) ->
    sweep(erlang:monotonic_time(nanosecond)),
    {reply, ok, State};
handle_call(_, _From, State) ->
    {reply, {error, unknown_call}, State}.

handle_cast(_, State) -> {noreply, State}.

handle_info(sweep, #core{sweep_ms = Ms} = State) ->
    sweep(erlang:monotonic_time(nanosecond)),
    erlang:send_after(Ms, self(), sweep),
    {noreply, State};
handle_info({'CHANGE', _, time_offset, clock_service, Off}, State) ->
    publish((current())#st{off = erlang:convert_time_unit(Off, native, nanosecond)}),
    {noreply, State};
handle_info(_, State) ->
    {noreply, State}.

terminate(_Reason, _State) ->
    _ = persistent_term:erase(?STATE_KEY),
    ok.

%%% Internals -----------------------------------------------------------------

current() -> persistent_term:get(?STATE_KEY, ?OFF).

%% Skips the write when nothing changed: each persistent_term update makes the
%% runtime scan every process for references to the old term.
publish(St) ->
    case persistent_term:get(?STATE_KEY, undefined) of
        St -> ok;
        _ -> persistent_term:put(?STATE_KEY, St)
    end.

apply_to(start, St) -> St#st{running = true};
apply_to(stop, St) -> St#st{running = false};
apply_to(sync, St) -> St;
apply_to({set_timeout, Name, Ns}, #st{probes = P} = St) ->
    St#st{probes = put_probe(Name, Ns, P)};
apply_to({trace, Name, Ns, _Mfa}, #st{probes = P} = St) ->
    %% A probe bound to a function: enabled like any other; dqd_wrapper_trace times it.
    St#st{probes = put_probe(Name, Ns, P)};
apply_to({clear_timeout, Name}, #st{probes = P} = St) ->
    P1 = maps:remove(Name, P),
    P2 = case existing_atom(Name) of
             {ok, A} -> maps:remove(A, P1);
             error -> P1
         end,
    St#st{probes = P2}.

%% Probes are keyed by their binary name, and by the atom of the same name when that
%% atom exists, so start_span(checkout) and start_span(<<"checkout">>) both match
%% without a conversion on the hot path. No atom is ever created from dqd's input.
put_probe(Name, Ns, P) ->
    P1 = P#{Name => Ns},
    case existing_atom(Name) of
        {ok, A} -> P1#{A => Ns};
        error -> P1
    end.

existing_atom(Name) ->
    try {ok, binary_to_existing_atom(Name, utf8)} catch error:badarg -> error end.

%% Reports every open instance whose deadline is at or before Now as `to`, with END
%% = its deadline. ets:take decides the race with a concurrent end_span: whoever
%% takes the row reports the instance, the other does nothing.
sweep(Now) ->
    #st{tabs = Tabs} = current(),
    lists:foreach(fun(Tab) -> sweep(Tab, ets:first(Tab), Now) end, tuple_to_list(Tabs)).

sweep(Tab, {Deadline, _} = Key, Now) when Deadline =< Now ->
    Next = ets:next(Tab, Key),
    case ets:take(Tab, Key) of
        [{_, Name, Start, Meta}] ->
            report(Name, Start, Deadline, to, Meta),
            #st{tel = Tel} = current(),
            Off = erlang:time_offset(nanosecond),
            dqd_wrapper_otel:instance_event(Name, Start + Off, Deadline + Off, to, Tel);
        [] ->
            ok
    end,
    sweep(Tab, Next, Now);
sweep(_, _, _) ->
    ok.
