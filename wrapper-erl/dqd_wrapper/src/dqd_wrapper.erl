%% The probe API, called from inside the observed application. Same names, arities
%% and return shapes as dqsd_otel (the ΔQ Oscilloscope's wrapper), so code written for
%% it works unchanged (see also the dqsd_otel module).
%%
%% Cost model: a probe first reads the probe table from persistent_term (no copy, no
%% message). Stopped wrapper or probe without a dMax: that read and a map lookup, then
%% return. Enabled probe: two monotonic clock reads, one ETS insert at start, one ETS
%% take at end, and one small message to the connection process, which encodes it.
%% Timeouts need no process or timer per instance: dqd_wrapper_core sweeps the tables
%% of open instances.
-module(dqd_wrapper).

-include("dqd_wrapper_int.hrl").

-export([start/0, stop/0]).
-export([start_span/1, start_span/2, end_span/2, fail_span/1, with_span/2, with_span/3]).
-export([set_running/1, set_timeout/2, clear_timeout/1, state/0, flush/0, connect/2,
         stats/0]).

-type ctx() :: term().
-type handle() :: #dqd_span{} | ignore.
-export_type([ctx/0, handle/0]).

%% Starts the wrapper application (and opentelemetry_api/telemetry if present).
-spec start() -> {ok, [atom()]} | {error, term()}.
start() -> application:ensure_all_started(dqd_wrapper).

-spec stop() -> ok | {error, term()}.
stop() -> application:stop(dqd_wrapper).

%%% Probes --------------------------------------------------------------------

%% Starts an instance of probe Name. Returns {Ctx, Handle}: Ctx is the OpenTelemetry
%% span context when opentelemetry_api is present (else undefined); Handle is ignore
%% unless the wrapper is running and Name has a dMax.
-spec start_span(binary() | atom()) -> {ctx(), handle()}.
start_span(Name) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{running = true, probes = #{Name := Dmax}, otel = false} = S ->
            {undefined, begin_instance(S, Name, Dmax, <<>>)};
        #st{otel = false} ->
            {undefined, ignore};
        S ->
            otel_start(S, Name, #{})
    end.

%% As start_span/1, with OpenTelemetry start options (e.g. #{attributes => [...]}).
%% Attributes whose key and value fit the protocol are also sent to dqd (v2 a: field).
-spec start_span(binary() | atom(), map()) -> {ctx(), handle()}.
start_span(Name, Opts) when is_map(Opts) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{running = true, probes = #{Name := Dmax}, otel = false} = S ->
            {undefined, begin_instance(S, Name, Dmax, meta(undefined, Opts))};
        #st{otel = false} ->
            {undefined, ignore};
        S ->
            otel_start(S, Name, Opts)
    end.

otel_start(S, Name, Opts) ->
    Ctx = dqd_wrapper_otel:start_span(Name, Opts),
    case S of
        #st{running = true, probes = #{Name := Dmax}} ->
            {Ctx, begin_instance(S, Name, Dmax, meta(Ctx, Opts))};
        _ ->
            {Ctx, ignore}
    end.

meta(Ctx, Opts) ->
    {Id, Trace} = dqd_wrapper_otel:ids(Ctx),
    case maps:get(attributes, Opts, []) of
        [] when Id =:= undefined -> <<>>;
        Attrs -> dqd_wrapper_line:encode_meta(Id, Trace, Attrs)
    end.

begin_instance(#st{tabs = Tabs} = S, Name, Dmax, Meta) ->
    Start = erlang:monotonic_time(nanosecond),
    U = erlang:unique_integer(),
    Key = {Start + Dmax, U},
    try ets:insert(?TAB(Tabs, U), {Key, Name, Start, Meta}) of
        true -> #dqd_span{key = Key, name = Name, start = Start, meta = Meta, st = S}
    catch
        error:badarg -> ignore
    end.

%% Ends the instance (status ok) and the OpenTelemetry span. An instance that already
%% timed out was reported as `to` and this late end is dropped, as in dqsd_otel.
-spec end_span(ctx(), handle()) -> ok.
end_span(undefined, ignore) -> ok;
end_span(undefined, Handle) -> finish(Handle, ok);
end_span(Ctx, Handle) ->
    dqd_wrapper_otel:end_span(Ctx),
    finish(Handle, ok).

%% Reports the instance as failed (status fa). Like dqsd_otel it leaves the
%% OpenTelemetry span alone: the caller decides how to record the error there.
-spec fail_span(handle()) -> ok.
fail_span(ignore) -> ok;
fail_span(Handle) -> finish(Handle, fa).

%% Runs Fun inside a probe. fa is reported when Fun raises (error, exit or throw),
%% and the exception is re-raised unchanged.
-spec with_span(binary() | atom(), fun(() -> Result)) -> Result.
with_span(Name, Fun) when is_function(Fun, 0) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{running = true, probes = #{Name := Dmax}, otel = false} = S ->
            run(begin_instance(S, Name, Dmax, <<>>), Fun);
        #st{otel = false} ->
            Fun();
        S ->
            dqd_wrapper_otel:with_span(Name, #{}, fun() -> run_otel(S, Name, #{}, Fun) end)
    end.

%% As with_span/2 with OpenTelemetry start options (argument order of dqsd_otel).
-spec with_span(binary() | atom(), fun(() -> Result), map()) -> Result.
with_span(Name, Fun, Opts) when is_function(Fun, 0), is_map(Opts) ->
    case persistent_term:get(?STATE_KEY, ?OFF) of
        #st{running = true, probes = #{Name := Dmax}, otel = false} = S ->
            run(begin_instance(S, Name, Dmax, meta(undefined, Opts)), Fun);
        #st{otel = false} ->
            Fun();
        S ->
            dqd_wrapper_otel:with_span(Name, Opts, fun() -> run_otel(S, Name, Opts, Fun) end)
    end.

run_otel(S, Name, Opts, Fun) ->
    case S of
        #st{running = true, probes = #{Name := Dmax}} ->
            run(begin_instance(S, Name, Dmax, meta(undefined, Opts)), Fun);
        _ ->
            Fun()
    end.

run(ignore, Fun) ->
    Fun();
run(Handle, Fun) ->
    try Fun() of
        Result ->
            finish(Handle, ok),
            Result
    catch
        Class:Reason:Stack ->
            finish(Handle, fa),
            erlang:raise(Class, Reason, Stack)
    end.

finish(#dqd_span{key = {Deadline, U} = Key, name = Name, start = Start, meta = Meta,
                 st = #st{tabs = Tabs} = S}, Status) ->
    End = erlang:monotonic_time(nanosecond),
    case take(?TAB(Tabs, U), Key) of
        true when End > Deadline ->
            %% Ended after its dMax but before the sweeper reached it: it is a
            %% timeout all the same, reported exactly as the sweeper would.
            report(S, Name, Start, Deadline, to, Meta);
        true ->
            report(S, Name, Start, End, Status, Meta);
        false ->
            ok
    end;
finish(_, _) ->
    %% ignore, or a handle from something else (a dqsd_otel pid): nothing to report.
    ok.

take(Tab, Key) ->
    try ets:take(Tab, Key) of
        [_] -> true;
        [] -> false
    catch
        error:badarg -> false
    end.

report(#st{tel = false} = S, Name, Start, End, Status, Meta) ->
    dqd_wrapper_core:push(S, {dqd_inst, Name, Start, End, Status, Meta});
report(S, Name, Start, End, Status, Meta) ->
    dqd_wrapper_core:push(S, {dqd_inst, Name, Start, End, Status, Meta}),
    Off = erlang:time_offset(nanosecond),
    dqd_wrapper_otel:instance_event(Name, Start + Off, End + Off, Status, true).

%%% Local control -------------------------------------------------------------

%% Starts or stops reporting (what dqd's start_stub/stop_stub do).
-spec set_running(boolean()) -> ok | {error, term()}.
set_running(Bool) when is_boolean(Bool) ->
    dqd_wrapper_core:local(case Bool of true -> start; false -> stop end).

%% Enables probe Name with dMax Ms milliseconds (integer or float, > 0).
-spec set_timeout(binary() | atom() | string(), number()) -> ok | {error, term()}.
set_timeout(Name, Ms) ->
    case {name(Name), dqd_wrapper_line:ms_to_ns(Ms)} of
        {{ok, N}, {ok, Ns}} -> dqd_wrapper_core:local({set_timeout, N, Ns});
        {error, _} -> {error, bad_name};
        {_, error} -> {error, bad_timeout}
    end.

%% Disables probe Name: its probes cost nothing again.
-spec clear_timeout(binary() | atom() | string()) -> ok | {error, term()}.
clear_timeout(Name) ->
    case name(Name) of
        {ok, N} -> dqd_wrapper_core:local({clear_timeout, N});
        error -> {error, bad_name}
    end.

name(N) when is_atom(N) -> name(atom_to_binary(N, utf8));
name(N) when is_list(N) ->
    try name(unicode:characters_to_binary(N)) catch _:_ -> error end;
name(N) ->
    case dqd_wrapper_line:valid_name(N) of
        true -> {ok, N};
        false -> error
    end.

%% #{running => boolean(), probes => #{Name => Ms}}.
-spec state() -> #{running := boolean(), probes := #{binary() => number()}}.
state() ->
    #st{running = R, probes = P} = persistent_term:get(?STATE_KEY, ?OFF),
    #{running => R,
      probes => maps:from_list([{N, ns_to_ms(Ns)} || {N, Ns} <- maps:to_list(P),
                                                    is_binary(N)])}.

ns_to_ms(Ns) when Ns rem 1000000 =:= 0 -> Ns div 1000000;
ns_to_ms(Ns) -> Ns / 1000000.

%% Writes buffered instance lines now (when connected). For tests and clean hand-offs.
-spec flush() -> ok | {error, term()}.
flush() -> dqd_wrapper_conn:flush().

%% Points the wrapper at another dqd at run time (reconnects).
-spec connect(string() | binary() | inet:ip_address(), inet:port_number()) -> ok.
connect(Host, Port) -> dqd_wrapper_conn:connect({Host, Port}).

%% Counters of the connection: sent, dropped, connects, commands, bad_commands.
-spec stats() -> map().
stats() -> dqd_wrapper_conn:stats().
