%% Supervisor of the wrapper: the core (probe table, open instances, sweeper) first,
%% then the function tracer, then the connection, then the optional legacy listener. Children stop in reverse
%% order, so the connection flushes while the core still exists.
-module(dqd_wrapper_sup).
-behaviour(supervisor).

-export([start_link/1, init/1]).

-spec start_link(dqd_wrapper_config:config()) -> {ok, pid()} | {error, term()}.
start_link(Config) ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, Config).

init(Config0) ->
    %% Counters shared by the callers and the connection (pending lines, drops). They
    %% live as long as the supervisor so restarts of a child keep them consistent.
    Config = Config0#{counters => atomics:new(2, [{signed, true}])},
    Core = #{id => core, start => {dqd_wrapper_core, start_link, [Config]},
             shutdown => 5000},
    Trace = #{id => trace, start => {dqd_wrapper_trace, start_link, [Config]},
              shutdown => 5000},
    Conn = #{id => conn, start => {dqd_wrapper_conn, start_link, [Config]},
             shutdown => 10000},
    Legacy = case maps:get(legacy_listen, Config) of
                 undefined -> [];
                 Addr -> [#{id => legacy, start => {dqd_wrapper_legacy, start_link, [Addr]},
                            shutdown => 2000}]
             end,
    %% rest_for_one: if the core restarts, the connection restarts after it and
    %% re-sends hello and state.
    {ok, {#{strategy => rest_for_one, intensity => 10, period => 10}, [Core, Trace, Conn | Legacy]}}.
