%% Optional legacy command listener: the ΔQ Oscilloscope's wrapper listened for
%% commands on its own port (historically 127.0.0.1:8081) and dqd can still drive a
%% wrapper that way (docs/protocol.md, "Where commands go", 2). Commands received here are applied
%% like those on the main connection; their acks go out on the main connection,
%% since a legacy sender never reads its socket.
-module(dqd_wrapper_legacy).
-behaviour(gen_server).

-export([start_link/1, port/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-record(l, {lsock :: gen_tcp:socket(), acceptor :: pid()}).

%% At most this many command connections at a time; more are closed at once.
-define(MAX_CLIENTS, 16).

-spec start_link({string(), inet:port_number()}) -> {ok, pid()} | {error, term()}.
start_link(Addr) ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, Addr, []).

%% The port actually listened on.
-spec port() -> {ok, inet:port_number()} | {error, term()}.
port() -> gen_server:call(?MODULE, port).

init({Host, Port}) ->
    process_flag(trap_exit, true),
    {ok, Ip} = inet:getaddr(Host, inet),
    case gen_tcp:listen(Port, [binary, {active, false}, {reuseaddr, true}, {ip, Ip}]) of
        {ok, LSock} ->
            Self = self(),
            Acceptor = spawn_link(fun() -> accept_loop(LSock, Self) end),
            {ok, #l{lsock = LSock, acceptor = Acceptor}};
        {error, Reason} ->
            {stop, {listen_failed, Host, Port, Reason}}
    end.

handle_call(port, _From, #l{lsock = L} = S) ->
    {reply, inet:port(L), S};
handle_call(_, _From, S) ->
    {reply, {error, unknown_call}, S}.

handle_cast(_, S) -> {noreply, S}.

handle_info({'EXIT', _Pid, _Reason}, S) ->
    %% A client process ended (normal), nothing to do; a dead acceptor is fatal.
    case is_process_alive(S#l.acceptor) of
        true -> {noreply, S};
        false -> {stop, acceptor_died, S}
    end;
handle_info(_, S) ->
    {noreply, S}.

terminate(_Reason, #l{lsock = L}) ->
    gen_tcp:close(L).

accept_loop(LSock, Owner) ->
    case gen_tcp:accept(LSock) of
        {ok, Sock} ->
            {links, Links} = process_info(self(), links),
            case length(Links) > ?MAX_CLIENTS + 1 of
                true -> gen_tcp:close(Sock);
                false ->
                    Pid = spawn_link(fun() ->
                                             receive go -> ok end,
                                             client(Sock, dqd_wrapper_line:split_init())
                                     end),
                    ok = gen_tcp:controlling_process(Sock, Pid),
                    Pid ! go
            end,
            accept_loop(LSock, Owner);
        {error, closed} ->
            ok;
        {error, _} ->
            accept_loop(LSock, Owner)
    end.

client(Sock, Rx) ->
    case gen_tcp:recv(Sock, 0) of
        {ok, Data} ->
            {Lines, Rx1} = dqd_wrapper_line:split(Data, Rx),
            lists:foreach(fun command/1, Lines),
            client(Sock, Rx1);
        {error, _} ->
            gen_tcp:close(Sock)
    end.

command(Line) ->
    case dqd_wrapper_line:parse_command(Line) of
        {ok, sync} -> dqd_wrapper_conn:state_changed();
        {ok, Cmd} ->
            case dqd_wrapper_trace:apply([Cmd]) of
                [] -> dqd_wrapper_conn:ack(Line);
                _ -> dqd_wrapper_conn:state_changed()
            end;
        {error, _} -> ok
    end.
