%% The one outbound TCP connection to dqd (protocol v2). Sends the hello and state,
%% batches instance lines (written when the batch reaches batch_bytes or every
%% flush_interval_ms), reports drops, reads commands from the same socket, applies
%% and acknowledges them, and reconnects with exponential backoff. Lines wait in a
%% bounded buffer while the link is down; the bound is enforced by the callers
%% (dqd_wrapper_core:push/2) through a shared atomics counter, so a slow or absent
%% dqd turns into `drop` counts, never into a growing mailbox or a blocked caller.
-module(dqd_wrapper_conn).
-behaviour(gen_server).

-include("dqd_wrapper_int.hrl").

-export([start_link/1, flush/0, connect/1, state_changed/0, ack/1, stats/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

%% Queued lines taken per pass (see more/2).
-define(MORE, 256).

-record(c, {
    addr :: dqd_wrapper_config:addr(),
    sock = undefined :: undefined | gen_tcp:socket(),
    connector = undefined :: undefined | {pid(), reference()},
    backoff :: pos_integer(),
    retry = undefined :: undefined | reference(),
    %% The batch: encoded lines appended to one binary (appending in place is cheap,
    %% and the socket gets one buffer instead of a list of small ones).
    buf = <<>> :: binary(),
    nbuf = 0 :: non_neg_integer(),
    rx :: dqd_wrapper_line:split_state(),
    last_tx = 0 :: integer(),
    cnt :: atomics:atomics_ref(),
    cfg :: map(),
    stats = #{} :: map(),
    clock = undefined :: undefined | {integer(), dqd_wrapper_line:clock()}
}).

-spec start_link(dqd_wrapper_config:config()) -> {ok, pid()} | {error, term()}.
start_link(Config) ->
    gen_server:start_link({local, ?CONN}, ?MODULE, Config, []).

-spec flush() -> ok | {error, term()}.
flush() -> call(flush).

%% Addr as dqd_wrapper_config:parse_addr/1 takes it; none disconnects.
-spec connect(term()) -> ok | {error, term()}.
connect(Addr) ->
    case dqd_wrapper_config:parse_addr(Addr) of
        {ok, A} -> call({connect, A});
        error -> {error, bad_address}
    end.

-spec stats() -> map().
stats() ->
    case call(stats) of
        {error, _} -> #{};
        S -> S
    end.

%% The local API changed the state: tell dqd.
-spec state_changed() -> ok.
state_changed() -> gen_server:cast(?CONN, state_changed).

%% A command arrived by another path (the legacy listener): acknowledge it here.
-spec ack(binary()) -> ok.
ack(Line) -> gen_server:cast(?CONN, {ack, Line}).

call(Msg) ->
    try gen_server:call(?CONN, Msg, 10000) catch exit:{noproc, _} -> {error, not_started} end.

%%% gen_server ----------------------------------------------------------------

init(Config) ->
    %% Trap exits so terminate/2 runs on application stop and flushes the buffer.
    process_flag(trap_exit, true),
    %% Bursts of instances can queue many messages here; keeping them off the heap
    %% stops each garbage collection from copying the whole queue, and lets senders
    %% on other schedulers enqueue without contending for this process's heap.
    process_flag(message_queue_data, off_heap),
    S = #c{addr = maps:get(dqd_address, Config), backoff = maps:get(reconnect_min_ms, Config),
           rx = dqd_wrapper_line:split_init(), cnt = maps:get(counters, Config),
           cfg = Config,
           stats = #{sent => 0, dropped => 0, connects => 0, commands => 0,
                     bad_commands => 0}},
    %% After a restart of this process, lines counted as pending were lost with the
    %% old mailbox: count them as dropped so the bound and dqd's figures stay right.
    Cnt = maps:get(counters, Config),
    atomics:add(Cnt, ?DROPPED, max(0, atomics:exchange(Cnt, ?PENDING, 0))),
    erlang:send_after(maps:get(flush_interval_ms, Config), self(), tick),
    {ok, start_connect(S)}.

handle_call(flush, _From, S) ->
    {reply, ok, send_buffer(S)};
handle_call({connect, Addr}, _From, S) ->
    S1 = disconnect(cancel_connect(S#c{addr = Addr}), no_retry),
    {reply, ok, start_connect(S1#c{backoff = cfg(reconnect_min_ms, S1)})};
handle_call(stats, _From, #c{stats = St, nbuf = N} = S) ->
    {reply, St#{buffered => N, connected => S#c.sock =/= undefined,
                pending => atomics:get(S#c.cnt, ?PENDING),
                unreported_drops => atomics:get(S#c.cnt, ?DROPPED)}, S};
handle_call(_, _From, S) ->
    {reply, {error, unknown_call}, S}.

handle_cast(state_changed, S) ->
    {noreply, send_now(S, state_line())};
handle_cast({ack, Line}, S) ->
    {noreply, send_now(S, dqd_wrapper_line:ack(Line))};
handle_cast(_, S) ->
    {noreply, S}.

handle_info({dqd_inst, _, _, _, _, _} = I, S) ->
    batch_check(more(?MORE, inst(I, S)));
handle_info({dqd_line, Line}, S) ->
    batch_check(more(?MORE, buffer(Line, S)));
handle_info(tick, S) ->
    erlang:send_after(cfg(flush_interval_ms, S), self(), tick),
    S1 = send_buffer(S),
    {noreply, keepalive(S1)};
handle_info({connected, Pid, Sock}, #c{connector = {Pid, Ref}} = S) ->
    erlang:demonitor(Ref, [flush]),
    {noreply, on_connected(S#c{connector = undefined}, Sock)};
handle_info({connect_failed, Pid, _Reason}, #c{connector = {Pid, Ref}} = S) ->
    erlang:demonitor(Ref, [flush]),
    {noreply, schedule_retry(S#c{connector = undefined})};
handle_info({'DOWN', Ref, process, Pid, _}, #c{connector = {Pid, Ref}} = S) ->
    {noreply, schedule_retry(S#c{connector = undefined})};
handle_info(retry, S) ->
    {noreply, start_connect(S#c{retry = undefined})};
handle_info({tcp, Sock, Data}, #c{sock = Sock, rx = Rx} = S) ->
    {Lines, Rx1} = dqd_wrapper_line:split(Data, Rx),
    S1 = commands(Lines, [], S#c{rx = Rx1}),
    case S1#c.sock of
        Sock -> _ = inet:setopts(Sock, [{active, once}]);
        _ -> ok
    end,
    {noreply, S1};
handle_info({tcp_closed, Sock}, #c{sock = Sock} = S) ->
    {noreply, disconnect(S, retry)};
handle_info({tcp_error, Sock, _}, #c{sock = Sock} = S) ->
    {noreply, disconnect(S, retry)};
handle_info({connected, _OldPid, Sock}, S) ->
    %% A connector we no longer wait for (address changed): close its socket.
    gen_tcp:close(Sock),
    {noreply, S};
handle_info(_, S) ->
    {noreply, S}.

%% Clean stop: take every line still in the mailbox, write everything, then close
%% gracefully, so no finished instance is lost: shutdown(write) sends FIN after the
%% queued data, and reading until dqd closes its side (bounded) avoids closing with
%% unread commands in the receive buffer, which would reset the connection and
%% could discard our last lines at dqd.
terminate(_Reason, S) ->
    S1 = drain(S),
    S2 = send_buffer(S1),
    _ = cancel_connect(S2),
    case S2#c.sock of
        undefined -> ok;
        Sock ->
            _ = gen_tcp:shutdown(Sock, write),
            _ = inet:setopts(Sock, [{active, false}]),
            linger(Sock, erlang:monotonic_time(millisecond) + 2000),
            gen_tcp:close(Sock)
    end.

linger(Sock, Until) ->
    Left = Until - erlang:monotonic_time(millisecond),
    case Left > 0 andalso gen_tcp:recv(Sock, 0, Left) of
        {ok, _} -> linger(Sock, Until);
        _ -> ok
    end.

drain(S) ->
    receive
        {dqd_line, Line} -> drain(buffer(Line, S));
        {dqd_inst, _, _, _, _, _} = I -> drain(inst(I, S))
    after 0 -> S
    end.

%% Takes up to N more queued lines in a tight loop: under load this costs one
%% receive per line instead of a pass through gen_server for each.
more(0, S) -> S;
more(N, S) ->
    receive
        {dqd_inst, _, _, _, _, _} = I -> more(N - 1, inst(I, S));
        {dqd_line, Line} -> more(N - 1, buffer(Line, S))
    after 0 -> S
    end.

batch_check(S) ->
    case byte_size(S#c.buf) >= cfg(batch_bytes, S) of
        true -> {noreply, send_buffer(S)};
        false -> {noreply, S}
    end.

%% Instance times are monotonic ns; the clock turns them into epoch ns. It is
%% rebuilt when the runtime's time offset changed (time warp modes only).
inst({dqd_inst, Name, Start, End, Status, Meta}, #c{clock = Clock0} = S) ->
    #st{off = Off} = persistent_term:get(?STATE_KEY, ?OFF),
    Clock = case Clock0 of
                {Off, C} -> C;
                _ -> dqd_wrapper_line:clock_new(Off)
            end,
    {Buf, Clock1} = dqd_wrapper_line:append_mono(S#c.buf, Name, Start, End, Status, Meta,
                                                 Clock),
    S#c{buf = Buf, nbuf = S#c.nbuf + 1, clock = {Off, Clock1}}.

%%% Buffer --------------------------------------------------------------------

buffer(Line, #c{buf = B, nbuf = N} = S) ->
    S#c{buf = <<B/binary, Line/binary>>, nbuf = N + 1}.

%% Writes the buffered lines and a drop line if anything was dropped. Nothing is
%% written while disconnected: the lines wait (bounded) for the next connection.
send_buffer(#c{sock = undefined} = S) ->
    S;
send_buffer(#c{sock = Sock, buf = B, nbuf = N, cnt = Cnt, stats = St} = S) ->
    Dropped = atomics:exchange(Cnt, ?DROPPED, 0),
    DropLine = case Dropped of
                   0 -> [];
                   _ -> [dqd_wrapper_line:drop(Dropped)]
               end,
    case B =:= <<>> andalso DropLine =:= [] of
        true -> S;
        false ->
            case gen_tcp:send(Sock, [B | DropLine]) of
                ok ->
                    atomics:sub(Cnt, ?PENDING, N),
                    S#c{buf = <<>>, nbuf = 0, last_tx = now_ms(),
                        stats = St#{sent := maps:get(sent, St) + N,
                                    dropped := maps:get(dropped, St) + Dropped}};
                {error, _} ->
                    %% Keep the lines for the next connection; the drop count too.
                    atomics:add(Cnt, ?DROPPED, Dropped),
                    disconnect(S, retry)
            end
    end.

%% Control lines (hello, state, ack) go out at once, after what is buffered.
send_now(#c{sock = undefined} = S, _Line) ->
    S;
send_now(S, []) ->
    S;
send_now(S, Line) ->
    S1 = send_buffer(S),
    case S1#c.sock of
        undefined -> S1;
        Sock ->
            case gen_tcp:send(Sock, Line) of
                ok -> S1#c{last_tx = now_ms()};
                {error, _} -> disconnect(S1, retry)
            end
    end.

keepalive(#c{sock = undefined} = S) -> S;
keepalive(#c{last_tx = T} = S) ->
    case now_ms() - T >= cfg(keepalive_ms, S) of
        true -> send_now(S, <<"ping\n">>);
        false -> S
    end.

%%% Commands ------------------------------------------------------------------

%% Applies the commands of one read together, so a burst (dqd enabling several
%% probes at once) costs one update of the probe table, hence one global scan of the
%% processes, not one per command. Answers go out in order; a sync sees every
%% command before it.
commands([], Batch, S) ->
    apply_batch(Batch, S);
commands([Line | Rest], Batch, #c{stats = St} = S) ->
    case dqd_wrapper_line:parse_command(Line) of
        {ok, sync} ->
            S1 = apply_batch(Batch, S#c{stats = bump(commands, St)}),
            commands(Rest, [], send_now(S1, state_line()));
        {ok, Cmd} ->
            commands(Rest, [{Cmd, Line} | Batch], S#c{stats = bump(commands, St)});
        {error, Why} ->
            %% Not applied, so not acknowledged: dqd sees the missing ack.
            case maps:get(bad_commands, St) < 10 of
                true ->
                    logger:notice("dqd_wrapper: ignoring command ~0p (~p)",
                                  [binary:part(Line, 0, min(64, byte_size(Line))), Why]);
                false -> ok
            end,
            commands(Rest, Batch, S#c{stats = bump(bad_commands, St)})
    end.

apply_batch([], S) ->
    S;
apply_batch(Batch, S) ->
    InOrder = lists:reverse(Batch),
    %% Probes bound to functions: the tracer installs or removes their patterns. A
    %% trace it refuses is not acknowledged (dqd_wrapper_trace:apply/1).
    Refused = dqd_wrapper_trace:apply([Cmd || {Cmd, _} <- InOrder]),
    Acked = [Line || {Cmd, Line} <- InOrder, not lists:member(Cmd, Refused)],
    S1 = send_now(S, [dqd_wrapper_line:ack(Line) || Line <- Acked]),
    case Refused of
        [] -> S1;
        _ -> send_now(S1, state_line())
    end.

bump(K, St) -> St#{K := maps:get(K, St) + 1}.

state_line() ->
    #st{running = R, probes = P} = persistent_term:get(?STATE_KEY, ?OFF),
    dqd_wrapper_line:state(R, P, dqd_wrapper_trace:fields()).

%%% Connection ----------------------------------------------------------------

%% Connecting happens in a helper process so that an unreachable dqd never blocks
%% this process (which must keep draining the callers' lines).
start_connect(#c{addr = undefined} = S) ->
    S;
start_connect(#c{connector = undefined, sock = undefined, addr = {Host, Port}} = S) ->
    Self = self(),
    Timeout = cfg(connect_timeout_ms, S),
    Conn = spawn_monitor(
             fun() ->
                     Opts = [binary, {active, false}, {nodelay, true}, {keepalive, true},
                             {send_timeout, 5000}, {send_timeout_close, true}],
                     case gen_tcp:connect(Host, Port, Opts, Timeout) of
                         {ok, Sock} ->
                             ok = gen_tcp:controlling_process(Sock, Self),
                             Self ! {connected, self(), Sock};
                         {error, Reason} ->
                             Self ! {connect_failed, self(), Reason}
                     end
             end),
    S#c{connector = Conn};
start_connect(S) ->
    S.

cancel_connect(#c{connector = undefined} = S) -> S;
cancel_connect(#c{connector = {Pid, Ref}} = S) ->
    erlang:demonitor(Ref, [flush]),
    exit(Pid, kill),
    S#c{connector = undefined}.

on_connected(#c{stats = St} = S, Sock) ->
    App = case cfg(app_name, S) of
              undefined -> default_app();
              A -> A
          end,
    Hello = [dqd_wrapper_line:hello(node(), App), state_line()],
    case gen_tcp:send(Sock, Hello) of
        ok ->
            ok = inet:setopts(Sock, [{active, once}]),
            S1 = S#c{sock = Sock, rx = dqd_wrapper_line:split_init(),
                     backoff = cfg(reconnect_min_ms, S), last_tx = now_ms(),
                     stats = bump(connects, St)},
            send_buffer(S1);
        {error, _} ->
            gen_tcp:close(Sock),
            schedule_retry(S)
    end.

disconnect(#c{sock = undefined} = S, Retry) ->
    maybe_retry(S, Retry);
disconnect(#c{sock = Sock} = S, Retry) ->
    gen_tcp:close(Sock),
    maybe_retry(S#c{sock = undefined}, Retry).

maybe_retry(S, retry) -> schedule_retry(S);
maybe_retry(#c{retry = undefined} = S, no_retry) -> S;
maybe_retry(#c{retry = T} = S, no_retry) ->
    _ = erlang:cancel_timer(T),
    S#c{retry = undefined}.

%% Exponential backoff with jitter (so many nodes do not reconnect in step).
schedule_retry(#c{retry = undefined, backoff = B} = S) ->
    Delay = B div 2 + rand:uniform(max(1, B div 2)),
    T = erlang:send_after(Delay, self(), retry),
    S#c{retry = T, backoff = min(B * 2, cfg(reconnect_max_ms, S))};
schedule_retry(S) ->
    S.

default_app() ->
    case string:split(atom_to_list(node()), "@") of
        ["nonode", _] -> <<"erlang">>;
        [Name | _] -> list_to_binary(Name)
    end.

cfg(K, #c{cfg = C}) -> maps:get(K, C).

now_ms() -> erlang:monotonic_time(millisecond).
