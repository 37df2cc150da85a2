%% A limited resource shared by the leaves of a scenario: Servers tokens and a waiting
%% line of at most Queue requests. A leaf that uses a pool takes a token (waiting in
%% line, first come first served), holds it for its service time and gives it back.
%% With one token and exponential service times this is an M/M/1/K station (K = Queue
%% + 1); shared by several leaves it couples them (contention).
%% The pool also keeps cumulative counters (tokens granted, requests turned away, busy
%% token-time) that the runner turns into utilisation figures.
-module(dqs_pool).

-export([start/3, acquire/1, release/1, stats/1]).

-record(p, {servers, limit, free, waiting, wlen = 0, served = 0, rejected = 0,
            busy_ns = 0, last_ns}).

%% Starts pool Name (an atom) with Servers tokens and at most Queue waiting requests.
-spec start(atom(), pos_integer(), non_neg_integer()) -> pid().
start(Name, Servers, Queue) ->
    Pid = spawn(fun() ->
                        loop(#p{servers = Servers, limit = Queue, free = Servers,
                                waiting = queue:new(), last_ns = now_ns()})
                end),
    register(Name, Pid),
    Pid.

%% Takes a token, waiting for one; `rejected` when the waiting line is full.
-spec acquire(atom()) -> ok | rejected.
acquire(Name) ->
    Ref = make_ref(),
    Name ! {acquire, self(), Ref},
    receive
        {Ref, Answer} -> Answer
    end.

%% Gives back the token taken by this process.
-spec release(atom()) -> ok.
release(Name) ->
    Name ! {release, self()},
    ok.

%% #{served, rejected, busy_ns, waiting, in_use, servers, now_ns}; counters are cumulative,
%% busy_ns is the token-time held up to now_ns (the pool's erlang:monotonic_time).
-spec stats(atom()) -> map().
stats(Name) ->
    Ref = make_ref(),
    Name ! {stats, self(), Ref},
    receive
        {Ref, S} -> S
    after 5000 -> #{}
    end.

now_ns() -> erlang:monotonic_time(nanosecond).

%% Accumulates the busy token-time up to now: (tokens in use) x (time since last event).
tick(#p{servers = S, free = F, last_ns = L, busy_ns = B} = P) ->
    N = now_ns(),
    P#p{busy_ns = B + (S - F) * (N - L), last_ns = N}.

loop(P0) ->
    receive
        {acquire, From, Ref} ->
            P = tick(P0),
            if
                P#p.free > 0 ->
                    loop(grant(P, From, Ref));
                P#p.wlen < P#p.limit ->
                    loop(P#p{waiting = queue:in({From, Ref}, P#p.waiting),
                             wlen = P#p.wlen + 1});
                true ->
                    From ! {Ref, rejected},
                    loop(P#p{rejected = P#p.rejected + 1})
            end;
        {release, _From} ->
            P = tick(P0),
            P1 = P#p{free = P#p.free + 1},
            case queue:out(P1#p.waiting) of
                {{value, {Next, Ref}}, Q} ->
                    loop(grant(P1#p{waiting = Q, wlen = P1#p.wlen - 1}, Next, Ref));
                {empty, _} ->
                    loop(P1)
            end;
        {stats, From, Ref} ->
            P = tick(P0),
            From ! {Ref, #{served => P#p.served, rejected => P#p.rejected,
                           busy_ns => P#p.busy_ns, waiting => P#p.wlen,
                           in_use => P#p.servers - P#p.free, servers => P#p.servers,
                           now_ns => P#p.last_ns}},
            loop(P)
    end.

grant(P, From, Ref) ->
    From ! {Ref, ok},
    P#p{free = P#p.free - 1, served = P#p.served + 1}.
