%% A reader of the .dq outcome-diagram language (docs/outcome-diagrams.md) for the
%% scenario systems: the same file that dqd loads also decides what each request of the
%% system does, so the instrumented code and dqd's model cannot drift apart.
%% Only what execution needs is kept: definitions, sequences, a:/f:/p: operators, s:
%% references and outcomes. Errors are reported with the line number; dqd itself is the
%% authority on the language and rejects what this reader might let through.
-module(dqs_dq).

-export([parse/1, parse_file/1]).

%% A chain is a list of components run one after the other:
%%   {outcome, Name} | {ref, Name} | {all, Name, [Chain]} | {first, Name, [Chain]}
%%   | {choice, Name, [Weight], [Chain]}
%% Result: {ok, Root, #{Name => Chain}} with Root the definition named system, else the
%% first definition that no s: reference points at.
-type name() :: binary().
-type component() :: {outcome, name()} | {ref, name()} | {all | first, name(), [chain()]}
                   | {choice, name(), [float()], [chain()]}.
-type chain() :: [component()].
-export_type([chain/0, component/0]).

-spec parse_file(file:filename()) -> {ok, name(), #{name() => chain()}} | {error, string()}.
parse_file(Path) ->
    case file:read_file(Path) of
        {ok, Bin} -> parse(Bin);
        {error, R} -> {error, lists:flatten(io_lib:format("~ts: ~p", [Path, R]))}
    end.

-spec parse(binary()) -> {ok, name(), #{name() => chain()}} | {error, string()}.
parse(Bin) ->
    try
        Toks = tokens(binary_to_list(Bin), 1, []),
        Defs = defs(Toks, []),
        Map = maps:from_list(Defs),
        Refs = lists:usort(lists:append([refs(C) || {_, C} <- Defs])),
        Root = case maps:is_key(<<"system">>, Map) of
                   true -> <<"system">>;
                   false ->
                       case [N || {N, _} <- Defs, not lists:member(N, Refs)] of
                           [R | _] -> R;
                           [] -> throw({0, "no root definition"})
                       end
               end,
        {ok, Root, Map}
    catch
        throw:{Line, Msg} -> {error, lists:flatten(io_lib:format("line ~b: ~s", [Line, Msg]))}
    end.

%%% tokens: {Kind, Line, Value}

tokens([], _, Acc) -> lists:reverse(Acc);
tokens([$\n | T], L, Acc) -> tokens(T, L + 1, Acc);
tokens([C | T], L, Acc) when C =:= $\s; C =:= $\t; C =:= $\r -> tokens(T, L, Acc);
tokens([$# | T], L, Acc) -> tokens(lists:dropwhile(fun(C) -> C =/= $\n end, T), L, Acc);
tokens([$-, $> | T], L, Acc) -> tokens(T, L, [{arrow, L, '->'} | Acc]);
tokens([C | T], L, Acc) when C =:= $=; C =:= $;; C =:= $:; C =:= $(; C =:= $);
                             C =:= $,; C =:= $[; C =:= $] ->
    tokens(T, L, [{list_to_atom([C]), L, C} | Acc]);
tokens([C | _] = S, L, Acc) when C >= $0, C =< $9 ->
    {Num, Rest} = lists:splitwith(fun(X) -> (X >= $0 andalso X =< $9) orelse X =:= $. end, S),
    V = case string:to_float(Num) of
            {F, []} -> F;
            _ -> float(list_to_integer(Num))
        end,
    tokens(Rest, L, [{num, L, V} | Acc]);
tokens([C | _] = S, L, Acc) when C =:= $_; (C >= $a andalso C =< $z); (C >= $A andalso C =< $Z) ->
    {Id, Rest} = lists:splitwith(fun(X) -> X =:= $_ orelse (X >= $a andalso X =< $z) orelse
                                               (X >= $A andalso X =< $Z) orelse
                                               (X >= $0 andalso X =< $9) end, S),
    tokens(Rest, L, [{id, L, list_to_binary(Id)} | Acc]);
tokens([C | _], L, _) -> throw({L, io_lib:format("unexpected character ~tc", [C])}).

%%% grammar

defs([], Acc) -> lists:reverse(Acc);
defs([{id, _, Name}, {'=', _, _} | T], Acc) ->
    {Chain, T1} = chain(T),
    case T1 of
        [{';', _, _} | T2] -> defs(T2, [{Name, Chain} | Acc]);
        [] when Name =:= <<"system">> -> defs([], [{Name, Chain} | Acc]);
        [{_, L, _} | _] -> throw({L, "expected ';'"});
        [] -> throw({0, "expected ';' at the end"})
    end;
defs([{_, L, _} | _], _) -> throw({L, "expected NAME = ..."}).

chain(T) ->
    {C, T1} = component(T),
    case T1 of
        [{arrow, _, _} | T2] ->
            {Rest, T3} = chain(T2),
            {[C | Rest], T3};
        _ -> {[C], T1}
    end.

component([{id, _, <<"s">>}, {':', _, _}, {id, _, Name} | T]) -> {{ref, Name}, T};
component([{id, _, Op}, {':', _, _}, {id, _, Name}, {'(', _, _} | T])
  when Op =:= <<"a">>; Op =:= <<"f">> ->
    {Branches, T1} = branches(T, []),
    {{case Op of <<"a">> -> all; <<"f">> -> first end, Name, Branches}, T1};
component([{id, _, <<"p">>}, {':', _, _}, {id, _, Name}, {'[', _, _} | T]) ->
    {Ws, T1} = numbers(T, []),
    case T1 of
        [{'(', _, _} | T2] ->
            {Branches, T3} = branches(T2, []),
            {{choice, Name, Ws, Branches}, T3};
        [{_, L, _} | _] -> throw({L, "expected '(' after the probabilities"})
    end;
component([{id, _, Name} | T]) -> {{outcome, Name}, T};
component([{_, L, _} | _]) -> throw({L, "expected a component"});
component([]) -> throw({0, "unexpected end of file"}).

branches(T, Acc) ->
    {C, T1} = chain(T),
    case T1 of
        [{',', _, _} | T2] -> branches(T2, [C | Acc]);
        [{')', _, _} | T2] -> {lists:reverse([C | Acc]), T2};
        [{_, L, _} | _] -> throw({L, "expected ',' or ')'"});
        [] -> throw({0, "unexpected end of file"})
    end.

numbers([{num, _, V}, {',', _, _} | T], Acc) -> numbers(T, [V | Acc]);
numbers([{num, _, V}, {']', _, _} | T], Acc) -> {lists:reverse([V | Acc]), T};
numbers([{_, L, _} | _], _) -> throw({L, "expected a probability"}).

refs(Chain) -> lists:append([comp_refs(C) || C <- Chain]).

comp_refs({ref, N}) -> [N];
comp_refs({outcome, _}) -> [];
comp_refs({_, _, Bs}) -> lists:append([refs(B) || B <- Bs]);
comp_refs({choice, _, _, Bs}) -> lists:append([refs(B) || B <- Bs]).
