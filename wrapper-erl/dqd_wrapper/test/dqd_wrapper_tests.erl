%% EUnit tests of the wrapper as a whole: the probe API, timeouts, commands and the
%% TCP link, against dqd_fake (a real loopback listener standing in for dqd).
-module(dqd_wrapper_tests).

-include_lib("eunit/include/eunit.hrl").

%% Every test gets a fresh wrapper and a fresh fake dqd.
-define(WITH(Env, Body),
        {foreach, fun() -> setup(Env) end, fun cleanup/1,
         [fun(WITH_Arg__) -> {timeout, 30, fun() -> (Body)(WITH_Arg__) end} end]}).

%%% Fixture -------------------------------------------------------------------

base_env(Port) ->
    [{dqd_address, {"127.0.0.1", Port}}, {flush_interval_ms, 20}, {sweep_interval_ms, 5},
     {reconnect_min_ms, 20}, {reconnect_max_ms, 80}, {buffer_size, 10000},
     {running, false}, {probes, []}, {otel, false}, {telemetry, false}].

setup(Env) ->
    {ok, F, Port} = dqd_fake:start(),
    start_wrapper(base_env(Port) ++ Env),
    {ok, _} = dqd_fake:wait_line(F, fun(L) -> prefix(<<"state;">>, L) end, 5000),
    F.

cleanup(F) ->
    _ = application:stop(dqd_wrapper),
    dqd_fake:stop(F).

start_wrapper(Env) ->
    _ = application:stop(dqd_wrapper),
    clear_os_env(),
    ok = case application:load(dqd_wrapper) of
             ok -> ok;
             {error, {already_loaded, _}} -> ok
         end,
    [application:unset_env(dqd_wrapper, K) || {K, _, _} <- dqd_wrapper_config:keys()],
    %% Later entries win, so tests can override the base environment.
    [application:set_env(dqd_wrapper, K, V) || {K, V} <- Env],
    {ok, _} = application:ensure_all_started(dqd_wrapper),
    ok.

clear_os_env() ->
    [os:unsetenv(Var) || {_, Var, _} <- dqd_wrapper_config:keys()].

prefix(P, L) -> binary:longest_common_prefix([P, L]) =:= byte_size(P).

inst(L) ->
    {ok, M} = dqd_wrapper_line:decode_instance(L),
    M.

is_inst(Name) ->
    fun(L) ->
            case dqd_wrapper_line:decode_instance(L) of
                {ok, #{name := Name}} -> true;
                _ -> false
            end
    end.

wait_inst(F, Name) ->
    {ok, L} = dqd_fake:wait_line(F, is_inst(Name), 3000),
    inst(L).

now_ns() -> erlang:system_time(nanosecond).

%%% Tests ---------------------------------------------------------------------

hello_test_() ->
    ?WITH([{app_name, <<"shop">>}],
          fun(F) ->
                  [Hello, State | _] = dqd_fake:lines(F),
                  Node = atom_to_binary(node(), utf8),
                  ?assertEqual(<<"h:2;node:", Node/binary, ";app:shop">>, Hello),
                  ?assertEqual(<<"state;running:0;probes:">>, State)
          end).

initial_state_test_() ->
    ?WITH([{running, true}, {probes, [{<<"checkout">>, 200}, {pay, 0.5}]}],
          fun(F) ->
                  ?assertEqual([<<"state;running:1;probes:checkout=200,pay=0.5">>],
                               [L || L <- dqd_fake:lines(F), prefix(<<"state;">>, L)]),
                  ?assertEqual(#{running => true,
                                 probes => #{<<"checkout">> => 200, <<"pay">> => 0.5}},
                               dqd_wrapper:state())
          end).

disabled_probe_test_() ->
    ?WITH([],
          fun(F) ->
                  %% Stopped wrapper: nothing is measured or sent.
                  ok = dqd_wrapper:set_timeout(<<"p">>, 100),
                  ?assertEqual({undefined, ignore}, dqd_wrapper:start_span(<<"p">>)),
                  ?assertEqual({undefined, ignore}, dqd_wrapper:start_span(<<"p">>, #{})),
                  ?assertEqual(ok, dqd_wrapper:end_span(undefined, ignore)),
                  ?assertEqual(ok, dqd_wrapper:fail_span(ignore)),
                  ?assertEqual(42, dqd_wrapper:with_span(<<"p">>, fun() -> 42 end)),
                  ?assertEqual(43, dqd_wrapper:with_span(<<"p">>, fun() -> 43 end, #{})),
                  %% Running, but a probe without a dMax: same.
                  ok = dqd_wrapper:set_running(true),
                  ?assertEqual({undefined, ignore}, dqd_wrapper:start_span(<<"other">>)),
                  ?assertEqual(7, dqd_wrapper:with_span(<<"other">>, fun() -> 7 end)),
                  ok = dqd_wrapper:flush(),
                  timer:sleep(60),
                  ?assertEqual([], [L || L <- dqd_fake:lines(F), prefix(<<"n:">>, L)])
          end).

end_span_test_() ->
    ?WITH([{running, true}, {probes, [{<<"p">>, 1000}]}],
          fun(F) ->
                  T0 = now_ns(),
                  {Ctx, H} = dqd_wrapper:start_span(<<"p">>),
                  ?assertEqual(undefined, Ctx),
                  ?assertNotEqual(ignore, H),
                  timer:sleep(3),
                  ?assertEqual(ok, dqd_wrapper:end_span(Ctx, H)),
                  T1 = now_ns(),
                  #{start := B, 'end' := E, status := S} = wait_inst(F, <<"p">>),
                  ?assertEqual(ok, S),
                  ?assert(B >= T0 andalso E =< T1),
                  ?assert(E - B >= 3000000),
                  %% A second end of the same handle reports nothing more.
                  ok = dqd_wrapper:end_span(Ctx, H),
                  ok = dqd_wrapper:flush(),
                  timer:sleep(50),
                  ?assertEqual(1, length([L || L <- dqd_fake:lines(F), prefix(<<"n:p;">>, L)]))
          end).

attributes_test_() ->
    ?WITH([{running, true}, {probes, [{<<"p">>, 1000}]}],
          fun(F) ->
                  {Ctx, H} = dqd_wrapper:start_span(
                               <<"p">>, #{attributes => [{user, <<"u1">>}, {size, 12},
                                                         {<<"bad key">>, 1}]}),
                  ok = dqd_wrapper:end_span(Ctx, H),
                  ?assertMatch(#{status := ok, attrs := [{<<"user">>, <<"u1">>},
                                                         {<<"size">>, <<"12">>}]},
                               wait_inst(F, <<"p">>))
          end).

atom_name_test_() ->
    ?WITH([{running, true}],
          fun(F) ->
                  ok = dqd_wrapper:set_timeout(atom_probe, 1000),
                  {Ctx, H} = dqd_wrapper:start_span(atom_probe),
                  ?assertNotEqual(ignore, H),
                  ok = dqd_wrapper:end_span(Ctx, H),
                  ?assertMatch(#{status := ok}, wait_inst(F, <<"atom_probe">>)),
                  ok = dqd_wrapper:clear_timeout(atom_probe),
                  ?assertEqual({undefined, ignore}, dqd_wrapper:start_span(atom_probe)),
                  ?assertEqual({error, bad_name}, dqd_wrapper:set_timeout(<<"9x">>, 5)),
                  ?assertEqual({error, bad_timeout}, dqd_wrapper:set_timeout(<<"x">>, 0))
          end).

fail_span_test_() ->
    ?WITH([{running, true}, {probes, [{<<"p">>, 1000}]}],
          fun(F) ->
                  {_Ctx, H} = dqd_wrapper:start_span(<<"p">>),
                  ?assertEqual(ok, dqd_wrapper:fail_span(H)),
                  #{status := S, start := B, 'end' := E} = wait_inst(F, <<"p">>),
                  ?assertEqual(fa, S),
                  ?assert(E >= B)
          end).

with_span_test_() ->
    ?WITH([{running, true}, {probes, [{<<"w">>, 1000}]}],
          fun(F) ->
                  ?assertEqual(result, dqd_wrapper:with_span(<<"w">>, fun() -> result end)),
                  ?assertMatch(#{status := ok}, wait_inst(F, <<"w">>)),
                  ?assertEqual(r3, dqd_wrapper:with_span(<<"w">>, fun() -> r3 end,
                                                         #{attributes => [{k, v}]})),
                  %% Each kind of exception: fa, then the same exception re-raised.
                  ?assertError(boom, dqd_wrapper:with_span(<<"w">>, fun() -> error(boom) end)),
                  ?assertThrow(t, dqd_wrapper:with_span(<<"w">>, fun() -> throw(t) end)),
                  ?assertExit(x, dqd_wrapper:with_span(<<"w">>, fun() -> exit(x) end, #{})),
                  {ok, Ls} = dqd_fake:wait_lines(F, is_inst(<<"w">>), 5, 3000),
                  ?assertEqual([ok, ok, fa, fa, fa], [maps:get(status, inst(L)) || L <- Ls]),
                  ?assertMatch(#{attrs := [{<<"k">>, <<"v">>}]}, inst(lists:nth(2, Ls)))
          end).

timeout_test_() ->
    ?WITH([{running, true}, {probes, [{<<"slow">>, 30}]}],
          fun(F) ->
                  T0 = erlang:monotonic_time(millisecond),
                  {Ctx, H} = dqd_wrapper:start_span(<<"slow">>),
                  #{status := S, start := B, 'end' := E} = wait_inst(F, <<"slow">>),
                  Elapsed = erlang:monotonic_time(millisecond) - T0,
                  ?assertEqual(to, S),
                  ?assertEqual(B + 30000000, E),
                  %% Reported at dMax, give or take a sweep and a flush.
                  ?assert(Elapsed >= 30 andalso Elapsed < 1000),
                  %% The late end is dropped, as with dqsd_otel.
                  ok = dqd_wrapper:end_span(Ctx, H),
                  ok = dqd_wrapper:fail_span(H),
                  ok = dqd_wrapper:flush(),
                  timer:sleep(60),
                  ?assertEqual(1, length([L || L <- dqd_fake:lines(F), (is_inst(<<"slow">>))(L)]))
          end).

timeout_many_test_() ->
    %% Instances ending before and after their dMax, interleaved: each is reported
    %% exactly once, as ok before dMax and as to (END = START + dMax) after it.
    ?WITH([{running, true}, {probes, [{<<"m">>, 20}]}],
          fun(F) ->
                  Fast = [dqd_wrapper:start_span(<<"m">>) || _ <- lists:seq(1, 50)],
                  Slow = [dqd_wrapper:start_span(<<"m">>) || _ <- lists:seq(1, 50)],
                  [ok = dqd_wrapper:end_span(C, H) || {C, H} <- Fast],
                  timer:sleep(40),
                  [ok = dqd_wrapper:end_span(C, H) || {C, H} <- Slow],
                  {ok, Ls} = dqd_fake:wait_lines(F, is_inst(<<"m">>), 100, 3000),
                  Is = [inst(L) || L <- Ls],
                  ?assertEqual(50, length([I || #{status := ok} = I <- Is])),
                  Tos = [I || #{status := to} = I <- Is],
                  ?assertEqual(50, length(Tos)),
                  ?assert(lists:all(fun(#{start := B, 'end' := E}) -> E =:= B + 20000000 end,
                                    Tos)),
                  ok = dqd_wrapper:flush(),
                  timer:sleep(50),
                  ?assertEqual(100, length([L || L <- dqd_fake:lines(F),
                                                 (is_inst(<<"m">>))(L)]))
          end).

late_end_before_sweep_test_() ->
    %% A sweep interval far beyond dMax: the end arrives after the deadline but before
    %% any sweep, and must still be reported as to with END = START + dMax.
    ?WITH([{running, true}, {probes, [{<<"l">>, 5}]}, {sweep_interval_ms, 60000}],
          fun(F) ->
                  {C, H} = dqd_wrapper:start_span(<<"l">>),
                  timer:sleep(20),
                  ok = dqd_wrapper:end_span(C, H),
                  #{status := S, start := B, 'end' := E} = wait_inst(F, <<"l">>),
                  ?assertEqual({to, B + 5000000}, {S, E})
          end).

commands_test_() ->
    ?WITH([],
          fun(F) ->
                  Ack = fun(Cmd) ->
                                ok = dqd_fake:send(F, Cmd),
                                Want = <<"ack;", Cmd/binary>>,
                                ?assertEqual({ok, Want},
                                             dqd_fake:wait_line(F, fun(L) -> L =:= Want end,
                                                                3000))
                        end,
                  Ack(<<"set_timeout;cmd_p;12.5">>),
                  ?assertEqual(#{<<"cmd_p">> => 12.5}, maps:get(probes, dqd_wrapper:state())),
                  Ack(<<"start_stub">>),
                  ?assertEqual(true, maps:get(running, dqd_wrapper:state())),
                  {C, H} = dqd_wrapper:start_span(<<"cmd_p">>),
                  ok = dqd_wrapper:end_span(C, H),
                  ?assertMatch(#{status := ok}, wait_inst(F, <<"cmd_p">>)),
                  ok = dqd_fake:send(F, <<"sync">>),
                  ?assertMatch({ok, _},
                               dqd_fake:wait_line(
                                 F, fun(L) ->
                                            L =:= <<"state;running:1;probes:cmd_p=12.5">>
                                    end, 3000)),
                  Ack(<<"stop_stub">>),
                  ?assertEqual({undefined, ignore}, dqd_wrapper:start_span(<<"cmd_p">>)),
                  Ack(<<"clear_timeout;cmd_p">>),
                  ?assertEqual(#{}, maps:get(probes, dqd_wrapper:state())),
                  %% Legacy dqd sends integers; a CR before the newline is ignored.
                  ok = dqd_fake:send(F, <<"set_timeout;legacy_p;200\r">>),
                  ?assertMatch({ok, _}, dqd_fake:wait_line(
                                          F, fun(L) -> L =:= <<"ack;set_timeout;legacy_p;200">>
                                             end, 3000)),
                  %% Bad commands are neither applied nor acknowledged.
                  Before = maps:get(bad_commands, dqd_wrapper:stats()),
                  ok = dqd_fake:send(F, <<"set_timeout;bad-name;5">>),
                  ok = dqd_fake:send(F, <<"set_timeout;x;0">>),
                  ok = dqd_fake:send(F, <<"launch_missiles">>),
                  ok = dqd_fake:send(F, <<"sync">>),
                  {ok, _} = dqd_fake:wait_lines(F, fun(L) -> prefix(<<"state;">>, L) end, 3,
                                                3000),
                  ?assertEqual(Before + 3, maps:get(bad_commands, dqd_wrapper:stats())),
                  ?assertEqual(#{<<"legacy_p">> => 200}, maps:get(probes, dqd_wrapper:state())),
                  ?assertEqual([], [L || L <- dqd_fake:lines(F),
                                         prefix(<<"ack;set_timeout;bad">>, L)
                                             orelse prefix(<<"ack;set_timeout;x;">>, L)
                                             orelse prefix(<<"ack;launch">>, L)])
          end).

command_burst_test_() ->
    %% Twenty commands in one read: all applied and acknowledged in order, with far
    %% fewer probe-table updates (each one is a global scan of the processes).
    ?WITH([],
          fun(F) ->
                  Cmds = [<<"set_timeout;b", (integer_to_binary(I))/binary, ";",
                            (integer_to_binary(I))/binary>> || I <- lists:seq(1, 20)],
                  Core = whereis(dqd_wrapper_core),
                  1 = erlang:trace_pattern({persistent_term, put, 2}, true, [global]),
                  1 = erlang:trace(Core, true, [call]),
                  ok = dqd_fake:send(F, lists:join(<<"\n">>, Cmds)),
                  {ok, Acks} = dqd_fake:wait_lines(F, fun(L) -> prefix(<<"ack;">>, L) end, 20,
                                                   3000),
                  erlang:trace(Core, false, [call]),
                  erlang:trace_pattern({persistent_term, put, 2}, false, [global]),
                  Puts = length([x || {trace, _, call, {persistent_term, put, _}}
                                          <- collect()]),
                  ?assertEqual([<<"ack;", C/binary>> || C <- Cmds], Acks),
                  ?assertEqual(20, map_size(maps:get(probes, dqd_wrapper:state()))),
                  ?assert(Puts >= 1 andalso Puts =< 3)
          end).

long_command_line_test_() ->
    ?WITH([],
          fun(F) ->
                  %% A line over 1024 bytes is discarded; the next one still works.
                  Long = <<"set_timeout;", (binary:copy(<<"a">>, 2000))/binary, ";5">>,
                  ok = dqd_fake:send(F, Long),
                  ok = dqd_fake:send(F, <<"set_timeout;after_long;5">>),
                  ?assertMatch({ok, _}, dqd_fake:wait_line(
                                          F, fun(L) -> L =:= <<"ack;set_timeout;after_long;5">>
                                             end, 3000)),
                  ?assertEqual(#{<<"after_long">> => 5}, maps:get(probes, dqd_wrapper:state()))
          end).

reconnect_test_() ->
    ?WITH([{running, true}, {probes, [{<<"r">>, 5000}]}],
          fun(F) ->
                  ?assertEqual(1, dqd_fake:connections(F)),
                  ok = dqd_fake:close_client(F),
                  %% Instances finished while the link is down wait in the buffer.
                  [dqd_wrapper:with_span(<<"r">>, fun() -> ok end) || _ <- lists:seq(1, 10)],
                  {ok, _} = dqd_fake:wait_lines(F, fun(L) -> prefix(<<"h:2;">>, L) end, 2,
                                                3000),
                  ?assertEqual(2, dqd_fake:connections(F)),
                  {ok, Ls} = dqd_fake:wait_lines(F, is_inst(<<"r">>), 10, 3000),
                  ?assertEqual(10, length(Ls)),
                  ?assertEqual([], [L || L <- dqd_fake:lines(F), prefix(<<"drop;">>, L)])
          end).

server_restart_test_() ->
    %% dqd goes away entirely (connection refused for a while), then comes back on
    %% the same port: the wrapper keeps retrying with backoff and reconnects.
    ?WITH([{running, true}, {probes, [{<<"r">>, 5000}]}],
          fun(F) ->
                  Port = dqd_fake:port(F),
                  ok = dqd_fake:stop(F),
                  timer:sleep(200),
                  [dqd_wrapper:with_span(<<"r">>, fun() -> ok end) || _ <- lists:seq(1, 3)],
                  {ok, F2, Port} = dqd_fake:start(Port),
                  try
                      {ok, _} = dqd_fake:wait_line(F2, fun(L) -> prefix(<<"h:2;">>, L) end,
                                                   3000),
                      {ok, _} = dqd_fake:wait_lines(F2, is_inst(<<"r">>), 3, 3000)
                  after
                      dqd_fake:stop(F2)
                  end
          end).

overflow_test_() ->
    {foreach,
     fun() ->
             %% dqd is down at first, so finished instances pile up in a 5-line buffer.
             Port = dqd_fake:free_port(),
             start_wrapper(base_env(Port) ++ [{running, true}, {probes, [{<<"o">>, 5000}]},
                                              {buffer_size, 5}]),
             Port
     end,
     fun(_) -> application:stop(dqd_wrapper) end,
     [fun(Port) ->
              {timeout, 30,
               fun() ->
                       [dqd_wrapper:with_span(<<"o">>, fun() -> ok end)
                        || _ <- lists:seq(1, 20)],
                       {ok, F, Port} = dqd_fake:start(Port),
                       try
                           {ok, [Drop]} = dqd_fake:wait_lines(
                                            F, fun(L) -> prefix(<<"drop;">>, L) end, 1, 5000),
                           ?assertEqual(<<"drop;15">>, Drop),
                           ok = dqd_wrapper:flush(),
                           timer:sleep(50),
                           ?assertEqual(5, length([L || L <- dqd_fake:lines(F),
                                                        (is_inst(<<"o">>))(L)])),
                           %% With the link up and the buffer drained, nothing is lost.
                           [dqd_wrapper:with_span(<<"o">>, fun() -> ok end)
                            || _ <- lists:seq(1, 3)],
                           {ok, _} = dqd_fake:wait_lines(F, is_inst(<<"o">>), 8, 3000)
                       after
                           dqd_fake:stop(F)
                       end
               end}
      end]}.

clean_stop_flushes_test_() ->
    %% Flush interval and batch size far away: only the stop itself can send them.
    ?WITH([{running, true}, {probes, [{<<"s">>, 60000}, {<<"t">>, 1}]},
           {flush_interval_ms, 600000}, {batch_bytes, 100000000},
           {sweep_interval_ms, 600000}],
          fun(F) ->
                  N = 500,
                  [dqd_wrapper:with_span(<<"s">>, fun() -> ok end) || _ <- lists:seq(1, N)],
                  %% Overdue at stop time: reported as to by the final sweep.
                  _ = dqd_wrapper:start_span(<<"t">>),
                  timer:sleep(5),
                  ?assertEqual([], [L || L <- dqd_fake:lines(F), prefix(<<"n:">>, L)]),
                  ok = application:stop(dqd_wrapper),
                  {ok, Ls} = dqd_fake:wait_lines(F, is_inst(<<"s">>), N, 5000),
                  ?assertEqual(N, length(Ls)),
                  ?assertMatch({ok, _}, dqd_fake:wait_line(F, is_inst(<<"t">>), 2000)),
                  %% After the stop, the API is inert and does not crash.
                  ?assertEqual({undefined, ignore}, dqd_wrapper:start_span(<<"s">>)),
                  ?assertEqual(1, dqd_wrapper:with_span(<<"s">>, fun() -> 1 end)),
                  ?assertEqual({error, not_started}, dqd_wrapper:set_running(true))
          end).

legacy_listener_test_() ->
    LPort = dqd_fake:free_port(),
    ?WITH([{legacy_listen, "127.0.0.1:" ++ integer_to_list(LPort)}],
          fun(F) ->
                  {ok, S} = gen_tcp:connect("127.0.0.1", LPort, [binary, {active, false}]),
                  ok = gen_tcp:send(S, <<"set_timeout;leg;40\nstart_stub\n">>),
                  {ok, _} = dqd_fake:wait_line(F, fun(L) -> L =:= <<"ack;start_stub">> end,
                                               3000),
                  ?assertEqual(#{running => true, probes => #{<<"leg">> => 40}},
                               dqd_wrapper:state()),
                  ?assert(lists:member(<<"ack;set_timeout;leg;40">>, dqd_fake:lines(F))),
                  gen_tcp:close(S)
          end).

dqsd_otel_compat_test_() ->
    ?WITH([],
          fun(F) ->
                  ok = dqsd_otel:handle_c_message(<<"set_timeout;legacy;100\n">>),
                  ok = dqsd_otel:set_stub_running(true),
                  {Ctx, H} = dqsd_otel:start_span(<<"legacy">>),
                  ?assertNotEqual(ignore, H),
                  ok = dqsd_otel:end_span(Ctx, H),
                  {_, H2} = dqsd_otel:start_span(<<"legacy">>, #{attributes => []}),
                  ok = dqsd_otel:fail_span(H2),
                  ?assertEqual(1, dqsd_otel:with_span(<<"legacy">>, fun() -> 1 end)),
                  ?assertEqual(2, dqsd_otel:with_span(<<"legacy">>, fun() -> 2 end, #{})),
                  {ok, Ls} = dqd_fake:wait_lines(F, is_inst(<<"legacy">>), 4, 3000),
                  ?assertEqual([ok, fa, ok, ok], [maps:get(status, inst(L)) || L <- Ls]),
                  %% The legacy line format: exactly the four fields, as dqsd_otel sent.
                  [?assertMatch([<<"n:legacy">>, <<"b:", _/binary>>, <<"e:", _/binary>>,
                                 <<"s:", _/binary>>], binary:split(L, <<";">>, [global]))
                   || L <- Ls]
          end).

concurrent_test_() ->
    %% Many processes on all schedulers start and end instances at once, half of them
    %% after their dMax, racing the sweeper: every instance is reported exactly once,
    %% with the right status.
    ?WITH([{running, true}, {probes, [{<<"c">>, 15}]}, {sweep_interval_ms, 1}],
          fun(F) ->
                  Procs = 16,
                  Each = 40,
                  Self = self(),
                  [spawn_link(fun() ->
                                      [begin
                                           {C, H} = dqd_wrapper:start_span(<<"c">>),
                                           case I rem 2 of
                                               0 -> ok;
                                               1 -> timer:sleep(20)
                                           end,
                                           ok = dqd_wrapper:end_span(C, H)
                                       end || I <- lists:seq(1, Each)],
                                      Self ! done
                              end) || _ <- lists:seq(1, Procs)],
                  [receive done -> ok end || _ <- lists:seq(1, Procs)],
                  Total = Procs * Each,
                  {ok, Ls} = dqd_fake:wait_lines(F, is_inst(<<"c">>), Total, 10000),
                  ok = dqd_wrapper:flush(),
                  timer:sleep(100),
                  All = [inst(L) || L <- dqd_fake:lines(F), (is_inst(<<"c">>))(L)],
                  ?assertEqual(Total, length(All)),
                  ?assertEqual(Total, length(Ls)),
                  Tos = [I || #{status := to} = I <- All],
                  %% the half that sleeps 20 ms all time out; one of the others can too when
                  %% its process waits past 15 ms for a scheduler (a stress run: 321 of 640)
                  ?assert(length(Tos) >= Total div 2),
                  ?assert(lists:all(fun(#{status := ok, start := B, 'end' := E}) ->
                                            E - B < 15000000;
                                       (_) -> true
                                    end, All)),
                  ?assert(lists:all(fun(#{start := B, 'end' := E}) -> E =:= B + 15000000 end,
                                    Tos)),
                  %% No instance is reported twice.
                  ?assertEqual(Total, length(lists:usort([{B, E} || #{start := B, 'end' := E}
                                                                        <- All])))
          end).

keepalive_test_() ->
    ?WITH([{keepalive_ms, 30}],
          fun(F) ->
                  ?assertMatch({ok, _}, dqd_fake:wait_line(F, fun(L) -> L =:= <<"ping">> end,
                                                           3000))
          end).

conn_restart_test_() ->
    %% Lines waiting in the connection process when it dies are lost with it; they
    %% are reported as dropped by the restarted connection.
    ?WITH([{running, true}, {probes, [{<<"k">>, 5000}]}],
          fun(F) ->
                  Conn = whereis(dqd_wrapper_conn),
                  true = erlang:suspend_process(Conn),
                  [dqd_wrapper:with_span(<<"k">>, fun() -> ok end) || _ <- lists:seq(1, 7)],
                  exit(Conn, kill),
                  ?assertMatch({ok, _}, dqd_fake:wait_line(F, fun(L) -> L =:= <<"drop;7">> end,
                                                           5000)),
                  ?assertEqual(2, dqd_fake:connections(F)),
                  %% And the new connection works.
                  dqd_wrapper:with_span(<<"k">>, fun() -> ok end),
                  ?assertMatch(#{status := ok}, wait_inst(F, <<"k">>))
          end).

runtime_connect_test_() ->
    %% dqsd_otel's start-up calls: point the wrapper at another dqd, start a listener.
    ?WITH([],
          fun(F) ->
                  {ok, F2, Port2} = dqd_fake:start(),
                  try
                      ok = dqsd_otel_tcp_client:try_connect("127.0.0.1", Port2),
                      {ok, _} = dqd_fake:wait_line(F2, fun(L) -> prefix(<<"h:2;">>, L) end,
                                                   3000),
                      LPort = dqd_fake:free_port(),
                      ok = dqsd_otel_tcp_server:start_server("127.0.0.1", LPort),
                      {ok, S} = gen_tcp:connect("127.0.0.1", LPort, [binary, {active, false}]),
                      ok = gen_tcp:send(S, <<"set_timeout;rt;5\n">>),
                      ?assertMatch({ok, _}, dqd_fake:wait_line(
                                              F2, fun(L) -> L =:= <<"ack;set_timeout;rt;5">> end,
                                              3000)),
                      gen_tcp:close(S),
                      ok = dqsd_otel_tcp_server:stop_server(),
                      ?assertEqual({error, not_running}, dqsd_otel_tcp_server:stop_server()),
                      ok = dqsd_otel_tcp_client:disconnect(),
                      timer:sleep(50),
                      ?assertEqual(false, maps:get(connected, dqd_wrapper:stats())),
                      %% The first fake saw its connection end, and nothing after it.
                      ?assertEqual([], [L || L <- dqd_fake:lines(F), prefix(<<"ack;">>, L)])
                  after
                      dqd_fake:stop(F2)
                  end
          end).

config_test_() ->
    {setup, fun clear_os_env/0, fun(_) -> clear_os_env() end,
     fun(_) ->
             [?_test(begin
                         application:load(dqd_wrapper),
                         [application:unset_env(dqd_wrapper, K)
                          || {K, _, _} <- dqd_wrapper_config:keys()],
                         application:set_env(dqd_wrapper, buffer_size, 77),
                         application:set_env(dqd_wrapper, dqd_address, "10.0.0.1:99"),
                         os:putenv("DQD_BUFFER_SIZE", "123"),
                         os:putenv("DQD_PROBES", "a=5,b=0.25"),
                         os:putenv("DQD_RUNNING", "true"),
                         os:putenv("DQD_LEGACY_LISTEN", "[::1]:8081"),
                         os:putenv("DQD_FLUSH_INTERVAL_MS", "not a number"),
                         C = dqd_wrapper_config:load(),
                         ?assertEqual(123, maps:get(buffer_size, C)),
                         ?assertEqual({"10.0.0.1", 99}, maps:get(dqd_address, C)),
                         ?assertEqual([{<<"a">>, 5000000}, {<<"b">>, 250000}],
                                      maps:get(probes, C)),
                         ?assertEqual(true, maps:get(running, C)),
                         ?assertEqual({"::1", 8081}, maps:get(legacy_listen, C)),
                         ?assertEqual(100, maps:get(flush_interval_ms, C)),
                         os:putenv("DQD_ADDRESS", "none"),
                         ?assertEqual(undefined, maps:get(dqd_address, dqd_wrapper_config:load())),
                         application:unset_env(dqd_wrapper, buffer_size),
                         application:unset_env(dqd_wrapper, dqd_address),
                         clear_os_env()
                     end)]
     end}.

%% opentelemetry_api and telemetry stand-ins, compiled and loaded only for this test,
%% record the calls the wrapper forwards to them.
-define(FAKE_OTEL,
        "-module(otel_tracer).\n"
        "-export([start_span/3, with_span/4]).\n"
        "start_span(_T, Name, _O) -> dqd_test_log ! {otel_start, Name},\n"
        "    {span_ctx, 16#5b8aa5a2d2c872e8, 16#9f2c, 1, [], true, false, true, undefined}.\n"
        "with_span(_T, Name, _O, Fun) -> dqd_test_log ! {otel_with, Name},\n"
        "    try Fun(ctx) after dqd_test_log ! {otel_with_end, Name} end.\n").
-define(FAKE_SPAN,
        "-module(otel_span).\n-export([end_span/1]).\n"
        "end_span(Ctx) -> dqd_test_log ! {otel_end, Ctx}, Ctx.\n").
-define(FAKE_OT,
        "-module(opentelemetry).\n-export([get_application_tracer/1]).\n"
        "get_application_tracer(M) -> {tracer, M}.\n").
-define(FAKE_TEL,
        "-module(telemetry).\n-export([execute/3]).\n"
        "execute(E, M, Meta) -> dqd_test_log ! {telemetry, E, M, Meta}, ok.\n").

load_fake(Src) ->
    {ok, Toks, _} = erl_scan:string(Src),
    Forms = split_forms(Toks, [], []),
    {ok, Mod, Bin} = compile:forms([begin {ok, F} = erl_parse:parse_form(T), F end
                                    || T <- Forms]),
    {module, Mod} = code:load_binary(Mod, "fake", Bin),
    Mod.

split_forms([], [], Acc) -> lists:reverse(Acc);
split_forms([{dot, _} = D | Rest], Cur, Acc) -> split_forms(Rest, [], [lists:reverse([D | Cur]) | Acc]);
split_forms([T | Rest], Cur, Acc) -> split_forms(Rest, [T | Cur], Acc).

collect() ->
    receive M -> [M | collect()] after 100 -> [] end.

otel_forwarding_test_() ->
    {foreach,
     fun() ->
             Mods = [load_fake(S) || S <- [?FAKE_OTEL, ?FAKE_SPAN, ?FAKE_OT, ?FAKE_TEL]],
             {ok, F, Port} = dqd_fake:start(),
             start_wrapper(base_env(Port) ++ [{otel, auto}, {telemetry, auto},
                                              {running, true}, {probes, [{<<"o">>, 1000}]}]),
             {F, Mods}
     end,
     fun({F, Mods}) ->
             _ = application:stop(dqd_wrapper),
             dqd_fake:stop(F),
             [begin code:purge(M), code:delete(M), code:purge(M) end || M <- Mods]
     end,
     [fun({F, _}) ->
              ?_test(begin
                         register(dqd_test_log, self()),
                         {Ctx, H} = dqd_wrapper:start_span(<<"o">>),
                         ?assertMatch({span_ctx, _, _, _, _, _, _, _, _}, Ctx),
                         ok = dqd_wrapper:end_span(Ctx, H),
                         %% Spans are forwarded even for probes without a dMax.
                         {Ctx2, ignore} = dqd_wrapper:start_span(<<"none">>),
                         ok = dqd_wrapper:end_span(Ctx2, ignore),
                         ?assertEqual(5, dqd_wrapper:with_span(<<"o">>, fun() -> 5 end)),
                         Log = collect(),
                         ?assertEqual([{otel_start, <<"o">>}, {otel_end, Ctx},
                                       {otel_start, <<"none">>}, {otel_end, Ctx2},
                                       {otel_with, <<"o">>}, {otel_with_end, <<"o">>}],
                                      [M || M <- Log, element(1, M) =/= telemetry]),
                         ?assertMatch([{telemetry, [dqd_wrapper, instance], #{duration := _},
                                        #{name := <<"o">>, status := ok}},
                                       {telemetry, [dqd_wrapper, instance], _,
                                        #{status := ok}}],
                                      [M || M <- Log, element(1, M) =:= telemetry]),
                         %% The v2 line carries the span and trace ids in hex.
                         {ok, L} = dqd_fake:wait_line(F, is_inst(<<"o">>), 3000),
                         ?assertMatch(#{id := <<"9f2c">>, trace := <<"5b8aa5a2d2c872e8">>},
                                      inst(L)),
                         unregister(dqd_test_log)
                     end)
      end]}.
