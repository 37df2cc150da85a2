%% PropEr properties of the wire format (kept apart from the EUnit modules because
%% proper.hrl and eunit.hrl define clashing macros). Run from dqd_wrapper_line_tests.
-module(dqd_wrapper_line_props).

-include_lib("proper/include/proper.hrl").

-export([prop_mono_encoding/0, prop_instance_roundtrip/0, prop_legacy_roundtrip/0, prop_ms_roundtrip/0,
         prop_command_roundtrip/0, prop_split_any_chunks/0, prop_mfa_roundtrip/0]).

name_first() -> oneof([range($a, $z), range($A, $Z), $_]).
name_rest() -> oneof([range($a, $z), range($A, $Z), range($0, $9), $_]).

%% Valid probe names, including the 255-byte maximum.
name() ->
    oneof([?LET({F, R}, {name_first(), list(name_rest())},
                list_to_binary(lists:sublist([F | R], 255))),
           ?LET({F, C}, {name_first(), name_rest()},
                list_to_binary([F | lists:duplicate(254, C)]))]).

%% Epoch-ns timestamps from 1 ns up to the 64-bit range, and durations from 0 up.
start_ns() -> oneof([range(1, 1000), range(1600000000000000000, 1900000000000000000),
                     range(1, (1 bsl 63) - 1)]).
duration() -> oneof([0, range(1, 1000000), range(1, 100000000000)]).
status() -> oneof([ok, fa, to]).

key_char() -> oneof([range($a, $z), range($A, $Z), range($0, $9), $_, $.]).
value_char() -> oneof([key_char(), $:, $-]).
attr() -> {?LET(K, non_empty(list(key_char())), list_to_binary(K)),
           ?LET(V, non_empty(list(value_char())), list_to_binary(V))}.
id() -> oneof([undefined, range(1, (1 bsl 64) - 1), range(1, (1 bsl 128) - 1)]).

%% Any instance the wrapper can produce encodes to one legal line of at most 1024
%% bytes that parses back to the same values; attributes that did not fit are left
%% off from the end, never garbled.
prop_instance_roundtrip() ->
    ?FORALL({N, B, D, S, Id, Tr, As},
            {name(), start_ns(), duration(), status(), id(), id(), list(attr())},
            begin
                Meta = dqd_wrapper_line:encode_meta(Id, Tr, As),
                Line = dqd_wrapper_line:encode(N, B, B + D, S, Meta),
                {ok, M} = dqd_wrapper_line:decode_instance(Line),
                Got = maps:get(attrs, M, []),
                byte_size(Line) =< 1024
                    andalso binary:last(Line) =:= $\n
                    andalso binary:match(Line, <<"\n">>) =:= {byte_size(Line) - 1, 1}
                    andalso maps:get(name, M) =:= N
                    andalso maps:get(start, M) =:= B
                    andalso maps:get('end', M) =:= B + D
                    andalso maps:get(status, M) =:= S
                    andalso hex_ok(Id, maps:get(id, M, undefined))
                    andalso hex_ok(Tr, maps:get(trace, M, undefined))
                    andalso lists:prefix(Got, As)
                    %% An attribute is left off only when it would not fit.
                    andalso (Got =:= As orelse no_room(Meta, Got, lists:nth(length(Got) + 1, As)))
            end).

no_room(Meta, Got, {K, V}) ->
    Sep = case Got of [] -> 3; _ -> 1 end,
    byte_size(Meta) + Sep + byte_size(K) + 1 + byte_size(V) > dqd_wrapper_line:max_meta().

hex_ok(undefined, undefined) -> true;
hex_ok(I, H) when is_integer(I), is_binary(H) -> binary_to_integer(H, 16) =:= I;
hex_ok(_, _) -> false.

%% The cached-second encoder gives exactly the line of the epoch timestamps
%% Mono + Offset, through a sequence of instances crossing second boundaries in
%% both directions (the clock is threaded through, as the connection does).
prop_mono_encoding() ->
    Mono = oneof([range(-(1 bsl 59), (1 bsl 59) - 1), range(-3000000000, 3000000000)]),
    ?FORALL({Off, Insts},
            {range(1 bsl 60, 1 bsl 62),
             list({name(), Mono, oneof([0, range(1, 2000000000)]), status()})},
            begin
                {_, Ok} = lists:foldl(
                            fun({N, B, D, S}, {C, Acc}) ->
                                    {L, C1} = dqd_wrapper_line:encode_mono(N, B, B + D, S,
                                                                           <<";a:x=1">>, C),
                                    Want = dqd_wrapper_line:encode(N, B + Off, B + D + Off, S,
                                                                   <<";a:x=1">>),
                                    {C1, Acc andalso L =:= Want}
                            end, {dqd_wrapper_line:clock_new(Off), true}, Insts),
                Ok
            end).

%% Without v2 fields the line is exactly dqsd_otel's format.
prop_legacy_roundtrip() ->
    ?FORALL({N, B, D, S}, {name(), start_ns(), duration(), status()},
            begin
                Line = dqd_wrapper_line:encode(N, B, B + D, S, <<>>),
                Want = iolist_to_binary(io_lib:format("n:~s;b:~p;e:~p;s:~s~n",
                                                      [N, B, B + D, S])),
                Line =:= Want
            end).

%% dMax in ns -> decimal ms -> ns is the identity.
prop_ms_roundtrip() ->
    ?FORALL(Ns, oneof([range(1, 1000000), range(1, 10000000000000)]),
            dqd_wrapper_line:parse_ms(dqd_wrapper_line:format_ms(Ns)) =:= {ok, Ns}).

%% Every command dqd can send is parsed back to what was meant.
prop_command_roundtrip() ->
    ?FORALL({N, Ns}, {name(), range(1, 10000000000000)},
            begin
                Ms = dqd_wrapper_line:format_ms(Ns),
                dqd_wrapper_line:parse_command(<<"set_timeout;", N/binary, ";", Ms/binary>>)
                    =:= {ok, {set_timeout, N, Ns}}
                    andalso dqd_wrapper_line:parse_command(<<"clear_timeout;", N/binary>>)
                    =:= {ok, {clear_timeout, N}}
            end).

%% Characters of atoms: plain ones, the protocol's separators and quote characters,
%% letters beyond ASCII, and now and then a control character (C0, DEL, C1).
atom_char() ->
    frequency([{10, oneof([range($a, $z), range($A, $Z), range($0, $9), $_, $@, $., $?, $!])},
               {3, oneof([$', $\\, $;, $,, $=, $:, $/, $\s, $", $-])},
               {2, oneof([range(16#A0, 16#2FF), range(16#4E00, 16#4E20), 16#1F600])},
               {1, oneof([range(0, 31), 16#7F, range(16#80, 16#9F)])}]).

atom_text() ->
    ?LET(Cs, frequency([{3, list(atom_char())}, {1, vector(100, atom_char())}]),
         unicode:characters_to_binary(Cs)).

%% Any function of any atoms: written on the wire when it can be (printable, at most 255
%% bytes, arity 0 ... 255), and then read back as the same atoms; refused otherwise.
prop_mfa_roundtrip() ->
    ?FORALL({M, F, A}, {atom_text(), atom_text(), oneof([range(0, 255), range(256, 300)])},
            begin
                Printable = fun(B) -> lists:all(fun(C) -> C >= 16#20 andalso
                                                              (C < 16#7F orelse C >= 16#A0)
                                                end, unicode:characters_to_list(B))
                            end,
                Writable = Printable(M) andalso Printable(F) andalso A =< 255
                    andalso byte_size(dqd_wrapper_line:format_mfa({M, F, A})) =< 255,
                case dqd_wrapper_line:mfa_text({M, F, A}) of
                    {ok, T} ->
                        Writable andalso dqd_wrapper_line:parse_mfa(T) =:= {ok, {M, F, A}};
                    error ->
                        not Writable
                end
            end).

%% However a byte stream of short lines is cut into reads, the same lines come out.
prop_split_any_chunks() ->
    ?FORALL({Lines, Cuts},
            {list(?LET(L, list(oneof([range($a, $z), $;])), list_to_binary(L))),
             list(range(1, 50))},
            begin
                Stream = iolist_to_binary([[L, "\n"] || L <- Lines]),
                Chunks = chunks(Stream, Cuts),
                {Out, _} = lists:foldl(fun(C, {Acc, St}) ->
                                               {Ls, St1} = dqd_wrapper_line:split(C, St),
                                               {Acc ++ Ls, St1}
                                       end, {[], dqd_wrapper_line:split_init()}, Chunks),
                Out =:= Lines
            end).

chunks(<<>>, _) -> [];
chunks(B, []) -> [B];
chunks(B, [C | _]) when C >= byte_size(B) -> [B];
chunks(B, [C | Cs]) ->
    <<H:C/binary, T/binary>> = B,
    [H | chunks(T, Cs)].
