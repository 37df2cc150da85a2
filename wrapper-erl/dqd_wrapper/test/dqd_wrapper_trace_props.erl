%% PropEr properties of the function tracer (apart from the EUnit module: proper.hrl
%% and eunit.hrl define clashing macros). Run from dqd_wrapper_trace_tests, which binds
%% the probe `tree` to dqd_trace_target:run/1 against a fake dqd first.
-module(dqd_wrapper_trace_props).

-include_lib("proper/include/proper.hrl").

-export([prop_pairing/1, insts/2, wait_insts/3]).

-define(T, dqd_trace_target).

%% The instances of Name dqd_fake F received so far.
insts(F, Name) ->
    dqd_wrapper:flush(),
    [M || L <- dqd_fake:lines(F), {ok, #{name := N} = M} <- [dqd_wrapper_line:decode_instance(L)],
          N =:= Name].

%% Waits until Name has at least N instances; returns them all.
wait_insts(F, Name, N) -> wait_insts(F, Name, N, 100).
wait_insts(F, Name, _N, 0) -> insts(F, Name);
wait_insts(F, Name, N, Tries) ->
    case insts(F, Name) of
        L when length(L) >= N -> L;
        _ -> timer:sleep(30), wait_insts(F, Name, N, Tries - 1)
    end.

%% A call tree of run/1: {Raise, Children}, up to ~30 nodes.
tree() -> ?SIZED(S, tree(min(S, 12))).
tree(0) -> {boolean(), []};
tree(S) -> {boolean(), ?LAZY(resize(S div 2, list(tree(S div 2))))}.

count({Raise, Cs}) ->
    lists:foldl(fun(C, {O, Fa}) -> {O1, Fa1} = count(C), {O + O1, Fa + Fa1} end,
                case Raise of true -> {0, 1}; false -> {1, 0} end, Cs).

prop_pairing(F) ->
    ?FORALL({Trees, Procs}, {non_empty(list(tree())), range(1, 4)},
            begin
                Before = length(insts(F, <<"tree">>)),
                Self = self(),
                %% the same trees run concurrently in Procs processes
                [spawn(fun() -> [catch ?T:run(T) || T <- Trees], Self ! ran end)
                 || _ <- lists:seq(1, Procs)],
                [receive ran -> ok end || _ <- lists:seq(1, Procs)],
                {Ok, Fa} = lists:foldl(fun(T, {A, B}) -> {A1, B1} = count(T), {A + A1, B + B1} end,
                                       {0, 0}, Trees),
                Want = Procs * (Ok + Fa),
                All = lists:nthtail(Before, wait_insts(F, <<"tree">>, Before + Want)),
                Got = {length([x || #{status := ok} <- All]),
                       length([x || #{status := fa} <- All])},
                ?WHENFAIL(io:format("trees ~p procs ~p: want ~p got ~p~n",
                                    [Trees, Procs, {Procs * Ok, Procs * Fa}, Got]),
                          Got =:= {Procs * Ok, Procs * Fa}
                          andalso maps:get(open, dqd_wrapper_trace:info()) =:= 0
                          andalso maps:get(unmatched, dqd_wrapper_trace:info()) =:= 0)
            end).

