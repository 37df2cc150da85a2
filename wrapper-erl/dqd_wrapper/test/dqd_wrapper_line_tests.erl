%% EUnit tests of the wire format, and the PropEr properties run from EUnit
%% (rebar3 plugins cannot be fetched offline, so PropEr is driven from here).
-module(dqd_wrapper_line_tests).

-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 1000).

prop(P) ->
    {timeout, 60,
     ?_assert(proper:quickcheck(dqd_wrapper_line_props:P(),
                                [{numtests, ?NUMTESTS}, quiet, {to_file, user}]))}.

properties_test_() ->
    [prop(prop_mono_encoding), prop(prop_instance_roundtrip), prop(prop_legacy_roundtrip), prop(prop_ms_roundtrip),
     prop(prop_command_roundtrip), prop(prop_split_any_chunks), prop(prop_mfa_roundtrip)].

encode_test() ->
    ?assertEqual(<<"n:checkout;b:1716300000123456789;e:1716300000173456789;s:ok\n">>,
                 dqd_wrapper_line:encode(<<"checkout">>, 1716300000123456789,
                                         1716300000173456789, ok, <<>>)),
    ?assertEqual(<<"n:a;b:1;e:2;s:to;i:9f2c;t:5b8aa5a2d2c872e8;a:k=v,n=-3\n">>,
                 dqd_wrapper_line:encode(a, 1, 2, to,
                                         dqd_wrapper_line:encode_meta(
                                           16#9f2c, 16#5b8aa5a2d2c872e8,
                                           [{k, v}, {<<"n">>, -3}, {"bad key", 1},
                                            {ok, <<"bad value;">>}, {x, {tuple}}]))).

encode_meta_cap_test() ->
    Big = [{list_to_binary("k" ++ integer_to_list(I)), binary:copy(<<"v">>, 100)}
           || I <- lists:seq(1, 20)],
    Name = binary:copy(<<"n">>, 255),
    Max = (1 bsl 63) - 1,
    Line = dqd_wrapper_line:encode(Name, Max, Max, fa,
                                   dqd_wrapper_line:encode_meta((1 bsl 128) - 1,
                                                                (1 bsl 128) - 1, Big)),
    ?assert(byte_size(Line) =< 1024),
    {ok, M} = dqd_wrapper_line:decode_instance(Line),
    ?assert(length(maps:get(attrs, M)) >= 5).

decode_errors_test() ->
    D = fun dqd_wrapper_line:decode_instance/1,
    ?assertMatch({ok, #{name := <<"a">>, start := 1, 'end' := 1, status := ok}},
                 D(<<"n:a;b:1;e:1;s:ok\r\n">>)),
    ?assertMatch({ok, #{parent := <<"ab">>}}, D(<<"n:a;b:1;e:2;s:fa;p:ab;zz:unknown">>)),
    ?assertEqual({error, bad_times}, D(<<"n:a;b:5;e:4;s:ok">>)),
    ?assertEqual({error, bad_times}, D(<<"n:a;b:0;e:4;s:ok">>)),
    ?assertEqual({error, bad_status}, D(<<"n:a;b:1;e:4;s:xx">>)),
    ?assertEqual({error, bad_name}, D(<<"n:1a;b:1;e:4;s:ok">>)),
    ?assertEqual({error, bad_fields}, D(<<"b:1;n:a;e:4;s:ok">>)),
    ?assertEqual({error, bad_integer}, D(<<"n:a;b:-1;e:4;s:ok">>)),
    ?assertEqual({error, bad_attrs}, D(<<"n:a;b:1;e:4;s:ok;a:k=v,w">>)),
    ?assertEqual({error, too_long}, D(<<"n:a;b:1;e:4;s:ok;x:", (binary:copy(<<"x">>, 1100))/binary>>)).

commands_test() ->
    P = fun dqd_wrapper_line:parse_command/1,
    ?assertEqual({ok, start}, P(<<"start_stub">>)),
    ?assertEqual({ok, stop}, P(<<"stop_stub">>)),
    ?assertEqual({ok, sync}, P(<<"sync">>)),
    ?assertEqual({ok, {set_timeout, <<"checkout">>, 200000000}},
                 P(<<"set_timeout;checkout;200">>)),
    ?assertEqual({ok, {set_timeout, <<"p">>, 250000}}, P(<<"set_timeout;p;0.25">>)),
    ?assertEqual({ok, {set_timeout, <<"p">>, 1}}, P(<<"set_timeout;p;0.0000019">>)),
    ?assertEqual({ok, {clear_timeout, <<"p">>}}, P(<<"clear_timeout;p">>)),
    ?assertEqual({error, bad_timeout}, P(<<"set_timeout;p;0">>)),
    ?assertEqual({error, bad_timeout}, P(<<"set_timeout;p;-5">>)),
    ?assertEqual({error, bad_timeout}, P(<<"set_timeout;p;1e3">>)),
    ?assertEqual({error, bad_timeout}, P(<<"set_timeout;p;.5">>)),
    ?assertEqual({error, bad_name}, P(<<"set_timeout;a-b;5">>)),
    ?assertEqual({error, bad_arity}, P(<<"set_timeout;a;5;6">>)),
    ?assertEqual({error, bad_name}, P(<<"clear_timeout;">>)),
    ?assertEqual({error, unknown_command}, P(<<"start_stub ">>)).

%%% Functions (MOD:FUN/ARITY) ---------------------------------------------------

%% The cases of mfa_cases.txt, which dqd's C tests (tests/wire) read too: the same verdict
%% on each, the atoms' texts, how the wrapper writes the function back, the trace command.
mfa_cases_test() ->
    Cases = mfa_cases(),
    ?assert(length([C || [<<"ok">> | _] = C <- Cases]) >= 20),
    ?assert(length([C || [<<"bad">> | _] = C <- Cases]) >= 40),
    lists:foreach(fun mfa_case/1, Cases).

mfa_case([<<"ok">>, Mfa0, M0, F0, A0, Canon0] = Case) ->
    [Mfa, M, F, Canon] = [unpct(X) || X <- [Mfa0, M0, F0, Canon0]],
    A = binary_to_integer(A0),
    ?assertEqual({Case, {ok, {M, F, A}}}, {Case, dqd_wrapper_line:parse_mfa(Mfa)}),
    ?assertEqual({Case, Canon}, {Case, dqd_wrapper_line:format_mfa({M, F, A})}),
    Atoms = {binary_to_atom(M, utf8), binary_to_atom(F, utf8), A},
    ?assertEqual({Case, {ok, Canon}}, {Case, dqd_wrapper_line:mfa_text(Atoms)}),
    ?assertEqual({Case, {ok, {M, F, A}}}, {Case, dqd_wrapper_line:parse_mfa(Canon)}),
    ?assertEqual({Case, {ok, {trace, <<"p">>, 2000000, {M, F, A}}}},
                 {Case, dqd_wrapper_line:parse_command(<<"trace;p;2;", Mfa/binary>>)});
mfa_case([<<"bad">>, Mfa0] = Case) ->
    Mfa = unpct(Mfa0),
    ?assertEqual({Case, error}, {Case, dqd_wrapper_line:parse_mfa(Mfa)}),
    ?assertEqual({Case, {error, bad_function}},
                 {Case, dqd_wrapper_line:parse_command(<<"trace;p;2;", Mfa/binary>>)}).

mfa_cases() ->
    Here = filename:dirname(?FILE),
    Paths = [filename:join(Here, "mfa_cases.txt"),
             filename:join([code:lib_dir(dqd_wrapper), "test", "mfa_cases.txt"])],
    [Bin | _] = [B || P <- Paths, {ok, B} <- [file:read_file(P)]],
    [binary:split(L, <<"\t">>, [global])
     || L <- binary:split(Bin, <<"\n">>, [global]), L =/= <<>>, binary:first(L) =/= $#].

%% A byte may be written %NN in the cases file.
unpct(<<$%, H:2/binary, Rest/binary>>) -> <<(binary_to_integer(H, 16)), (unpct(Rest))/binary>>;
unpct(<<C, Rest/binary>>) -> <<C, (unpct(Rest))/binary>>;
unpct(<<>>) -> <<>>.

%% The limit counts bytes as written: 255 pass, 256 do not, whatever the characters.
mfa_length_test() ->
    E = binary:copy(<<"é"/utf8>>, 124),
    Ok = <<"'x", E/binary, "':f/1">>,
    ?assertEqual(255, byte_size(Ok)),
    ?assertMatch({ok, _}, dqd_wrapper_line:parse_mfa(Ok)),
    ?assertEqual(error, dqd_wrapper_line:parse_mfa(<<"'xx", E/binary, "':f/1">>)),
    Long = binary_to_atom(binary:copy(<<"é"/utf8>>, 200), utf8),
    ?assertEqual(error, dqd_wrapper_line:mfa_text({Long, f, 1})),
    ?assertEqual(error, dqd_wrapper_line:mfa_text({m, f, 256})),
    ?assertEqual({ok, <<"Elixir.Shop.Orders:place/1">>},
                 dqd_wrapper_line:mfa_text({'Elixir.Shop.Orders', place, 1})).

%% A function the state line could not carry on one line is refused when bound by hand,
%% before anything is enabled.
bind_unwritable_test() ->
    [?assertEqual({error, bad_function}, dqd_wrapper_trace:bind(<<"p">>, 10, Mfa))
     || Mfa <- [{'a\nb', f, 1}, {m, 'f\r', 0}, {m, f, 300}, {m, '\x{85}', 0},
                {binary_to_atom(binary:copy(<<"m">>, 252), utf8), f, 1}]].

ms_test() ->
    ?assertEqual(<<"200">>, dqd_wrapper_line:format_ms(200000000)),
    ?assertEqual(<<"0.25">>, dqd_wrapper_line:format_ms(250000)),
    ?assertEqual(<<"0.000001">>, dqd_wrapper_line:format_ms(1)),
    ?assertEqual({ok, 1500000}, dqd_wrapper_line:ms_to_ns(1.5)),
    ?assertEqual(error, dqd_wrapper_line:ms_to_ns(0.0000001)).

state_hello_test() ->
    ?assertEqual(<<"state;running:1;probes:a=1,b=0.5\n">>,
                 dqd_wrapper_line:state(true, #{<<"b">> => 500000, <<"a">> => 1000000,
                                                a => 1000000})),
    ?assertEqual(<<"h:2;node:x@y;app:a_b\n">>, dqd_wrapper_line:hello('x@y', <<"a;b">>)),
    ?assertEqual(<<"drop;3\n">>, dqd_wrapper_line:drop(3)),
    ?assertEqual(<<"ack;sync\n">>, dqd_wrapper_line:ack(<<"sync">>)).

split_test() ->
    S0 = dqd_wrapper_line:split_init(),
    {L1, S1} = dqd_wrapper_line:split(<<"start_stub\r\nsto">>, S0),
    ?assertEqual([<<"start_stub">>], L1),
    {L2, S2} = dqd_wrapper_line:split(<<"p_stub\n", (binary:copy(<<"x">>, 1500))/binary>>, S1),
    ?assertEqual([<<"stop_stub">>], L2),
    %% The rest of the over-long line is skipped, the line after it is kept.
    {L3, _} = dqd_wrapper_line:split(<<"xxxx\nsync\n">>, S2),
    ?assertEqual([<<"sync">>], L3).
