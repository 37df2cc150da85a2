%% A stand-in for dqd in the tests: a loopback TCP listener that accepts the
%% wrapper's connection, records every line it receives, and can send commands or
%% drop the connection. Real sockets, so the tests exercise the real wire path.
-module(dqd_fake).

-export([start/0, start/1, stop/1, port/1, lines/1, connections/1, send/2,
         close_client/1, wait_line/3, wait_lines/4, free_port/0]).

-record(f, {lsock, port, client, lines = [], conns = 0, rx = <<>>, waiters = []}).

%% Listens on an ephemeral port (start/0) or the given one.
start() -> start(0).

start(Port) ->
    Self = self(),
    Pid = spawn(fun() -> init(Self, Port) end),
    receive
        {Pid, started, P} -> {ok, Pid, P};
        {Pid, failed, Why} -> {error, Why}
    after 5000 -> {error, timeout}
    end.

stop(Pid) -> call(Pid, stop).
port(Pid) -> call(Pid, port).
lines(Pid) -> call(Pid, lines).
connections(Pid) -> call(Pid, conns).
send(Pid, Line) -> call(Pid, {send, Line}).
close_client(Pid) -> call(Pid, close_client).

%% The first received line (in arrival order) satisfying Pred, waiting up to Ms.
wait_line(Pid, Pred, Ms) ->
    case wait_lines(Pid, Pred, 1, Ms) of
        {ok, [L]} -> {ok, L};
        Other -> Other
    end.

%% The first N received lines satisfying Pred, waiting up to Ms for them;
%% {timeout, FoundSoFar} otherwise.
wait_lines(Pid, Pred, N, Ms) ->
    Deadline = erlang:monotonic_time(millisecond) + Ms,
    wait_loop(Pid, Pred, N, Deadline).

wait_loop(Pid, Pred, N, Deadline) ->
    Found = [L || L <- lines(Pid), Pred(L)],
    case length(Found) >= N of
        true -> {ok, lists:sublist(Found, N)};
        false ->
            case erlang:monotonic_time(millisecond) >= Deadline of
                true -> {timeout, Found};
                false ->
                    timer:sleep(5),
                    wait_loop(Pid, Pred, N, Deadline)
            end
    end.

%% A port nothing listens on right now (for "dqd is down" tests).
free_port() ->
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}, {reuseaddr, true}]),
    {ok, P} = inet:port(L),
    gen_tcp:close(L),
    P.

call(Pid, Msg) ->
    Ref = monitor(process, Pid),
    Pid ! {call, self(), Ref, Msg},
    receive
        {Ref, Reply} -> demonitor(Ref, [flush]), Reply;
        {'DOWN', Ref, _, _, R} -> {error, R}
    after 5000 -> demonitor(Ref, [flush]), {error, timeout}
    end.

init(Parent, Port) ->
    case gen_tcp:listen(Port, [binary, {active, false}, {reuseaddr, true},
                               {ip, {127, 0, 0, 1}}]) of
        {ok, L} ->
            {ok, P} = inet:port(L),
            Self = self(),
            spawn_link(fun() -> acceptor(L, Self) end),
            Parent ! {self(), started, P},
            loop(#f{lsock = L, port = P});
        {error, Why} ->
            Parent ! {self(), failed, Why}
    end.

acceptor(L, Owner) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            ok = gen_tcp:controlling_process(S, Owner),
            Owner ! {accepted, S},
            acceptor(L, Owner);
        {error, _} ->
            ok
    end.

loop(F) ->
    receive
        {accepted, S} ->
            case F#f.client of
                undefined -> ok;
                Old -> gen_tcp:close(Old)
            end,
            ok = inet:setopts(S, [{active, true}]),
            loop(F#f{client = S, conns = F#f.conns + 1, rx = <<>>});
        {tcp, S, Data} when S =:= F#f.client ->
            {Lines, Rest} = split(<<(F#f.rx)/binary, Data/binary>>, []),
            loop(F#f{lines = lists:reverse(Lines, F#f.lines), rx = Rest});
        {tcp, _, _} ->
            loop(F);
        {tcp_closed, S} when S =:= F#f.client ->
            loop(F#f{client = undefined});
        {tcp_closed, _} ->
            loop(F);
        {call, From, Ref, stop} ->
            gen_tcp:close(F#f.lsock),
            case F#f.client of undefined -> ok; C -> gen_tcp:close(C) end,
            From ! {Ref, ok};
        {call, From, Ref, Msg} ->
            {Reply, F1} = handle(Msg, F),
            From ! {Ref, Reply},
            loop(F1)
    end.

handle(port, F) -> {F#f.port, F};
handle(lines, F) -> {lists:reverse(F#f.lines), F};
handle(conns, F) -> {F#f.conns, F};
handle({send, _}, #f{client = undefined} = F) -> {{error, no_client}, F};
handle({send, Line}, #f{client = C} = F) -> {gen_tcp:send(C, [Line, "\n"]), F};
handle(close_client, #f{client = undefined} = F) -> {ok, F};
handle(close_client, #f{client = C} = F) ->
    gen_tcp:close(C),
    {ok, F#f{client = undefined}}.

split(Bin, Acc) ->
    case binary:split(Bin, <<"\n">>) of
        [Line, Rest] -> split(Rest, [Line | Acc]);
        [Rest] -> {lists:reverse(Acc), Rest}
    end.
