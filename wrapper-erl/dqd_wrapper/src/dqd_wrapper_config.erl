%% Configuration of the wrapper: the application environment of dqd_wrapper, with the
%% OS environment variables taking precedence (operators change a deployed node
%% without rebuilding its release). Read once at start; see README for the table.
-module(dqd_wrapper_config).

-export([load/0, keys/0, parse_addr/1, parse_probes/1]).

-type addr() :: undefined | {string(), inet:port_number()}.
-type config() :: #{atom() => term()}.
-export_type([addr/0, config/0]).

%% {Key, OS variable, type}
-spec keys() -> [{atom(), string(), atom()}].
keys() ->
    [{dqd_address, "DQD_ADDRESS", addr},
     {reconnect_min_ms, "DQD_RECONNECT_MIN_MS", pos_int},
     {reconnect_max_ms, "DQD_RECONNECT_MAX_MS", pos_int},
     {connect_timeout_ms, "DQD_CONNECT_TIMEOUT_MS", pos_int},
     {buffer_size, "DQD_BUFFER_SIZE", pos_int},
     {batch_bytes, "DQD_BATCH_BYTES", pos_int},
     {flush_interval_ms, "DQD_FLUSH_INTERVAL_MS", pos_int},
     {sweep_interval_ms, "DQD_SWEEP_INTERVAL_MS", pos_int},
     {keepalive_ms, "DQD_KEEPALIVE_MS", pos_int},
     {legacy_listen, "DQD_LEGACY_LISTEN", addr},
     {app_name, "DQD_APP_NAME", name},
     {running, "DQD_RUNNING", bool},
     {probes, "DQD_PROBES", probes},
     {otel, "DQD_OTEL", mode},
     {telemetry, "DQD_TELEMETRY", mode},
     {trace_probe_rate, "DQD_TRACE_PROBE_RATE", pos_int},
     {trace_node_rate, "DQD_TRACE_NODE_RATE", pos_int},
     {trace_max_depth, "DQD_TRACE_MAX_DEPTH", pos_int},
     {trace_slot_ms, "DQD_TRACE_SLOT_MS", pos_int},
     {trace_check_ms, "DQD_TRACE_CHECK_MS", pos_int}].

-spec defaults() -> config().
defaults() ->
    #{dqd_address => {"127.0.0.1", 7400}, reconnect_min_ms => 100,
      reconnect_max_ms => 5000, connect_timeout_ms => 2000, buffer_size => 10000,
      batch_bytes => 16384, flush_interval_ms => 100, sweep_interval_ms => 10,
      keepalive_ms => 30000, legacy_listen => undefined, app_name => undefined,
      running => false, probes => [], otel => auto, telemetry => auto,
      trace_probe_rate => 2000, trace_node_rate => 10000, trace_max_depth => 32,
      trace_slot_ms => 200, trace_check_ms => 1000}.

%% The effective configuration. A value that does not parse is reported with
%% logger and replaced by the default: a typo must not stop the host application.
-spec load() -> config().
load() ->
    lists:foldl(fun({Key, Var, Type}, Acc) ->
                        Default = maps:get(Key, Acc),
                        V1 = case application:get_env(dqd_wrapper, Key) of
                                 {ok, V} -> convert(Key, Type, V, Default);
                                 undefined -> Default
                             end,
                        V2 = case os:getenv(Var) of
                                 false -> V1;
                                 S -> convert(Var, Type, S, V1)
                             end,
                        Acc#{Key => V2}
                end, defaults(), keys()).

convert(What, Type, Value, Fallback) ->
    case parse(Type, Value) of
        {ok, V} -> V;
        error ->
            logger:warning("dqd_wrapper: ignoring bad ~p value ~tp", [What, Value]),
            Fallback
    end.

parse(pos_int, V) when is_integer(V), V > 0 -> {ok, V};
parse(pos_int, V) when is_list(V) ->
    case string:to_integer(string:trim(V)) of
        {I, []} when I > 0 -> {ok, I};
        _ -> error
    end;
parse(bool, V) when is_boolean(V) -> {ok, V};
parse(bool, V) when is_list(V) ->
    case string:lowercase(string:trim(V)) of
        T when T =:= "1"; T =:= "true"; T =:= "yes" -> {ok, true};
        F when F =:= "0"; F =:= "false"; F =:= "no"; F =:= "" -> {ok, false};
        _ -> error
    end;
parse(mode, V) when V =:= auto; V =:= false -> {ok, V};
parse(mode, V) when is_list(V) ->
    case string:lowercase(string:trim(V)) of
        "auto" -> {ok, auto};
        "true" -> {ok, auto};
        "1" -> {ok, auto};
        _ -> {ok, false}
    end;
parse(name, undefined) -> {ok, undefined};
parse(name, V) when is_atom(V) -> {ok, atom_to_binary(V, utf8)};
parse(name, V) when is_binary(V) -> {ok, V};
parse(name, V) when is_list(V) ->
    try {ok, unicode:characters_to_binary(V)} catch _:_ -> error end;
parse(addr, V) -> parse_addr(V);
parse(probes, V) -> parse_probes(V);
parse(_, _) -> error.

%% "host:port", "[v6]:port", {Host, Port}; undefined, "" or "none" for no address.
-spec parse_addr(term()) -> {ok, addr()} | error.
parse_addr(undefined) -> {ok, undefined};
parse_addr(none) -> {ok, undefined};
parse_addr({Host, Port}) when is_integer(Port), Port > 0, Port < 65536 ->
    case Host of
        H when is_list(H) -> {ok, {H, Port}};
        H when is_binary(H) -> {ok, {binary_to_list(H), Port}};
        H when is_tuple(H) -> {ok, {inet:ntoa(H), Port}};
        H when is_atom(H) -> {ok, {atom_to_list(H), Port}};
        _ -> error
    end;
parse_addr(B) when is_binary(B) -> parse_addr(binary_to_list(B));
parse_addr(S) when is_list(S) ->
    case string:trim(S) of
        "" -> {ok, undefined};
        "none" -> {ok, undefined};
        "[" ++ Rest ->
            case string:split(Rest, "]:") of
                [H, P] -> host_port(H, P);
                _ -> error
            end;
        T ->
            case string:split(T, ":", trailing) of
                [H, P] when H =/= "" -> host_port(H, P);
                _ -> error
            end
    end;
parse_addr(_) -> error.

host_port(H, P) ->
    case string:to_integer(P) of
        {Port, []} when Port > 0, Port < 65536 -> {ok, {H, Port}};
        _ -> error
    end.

%% Initial probes: [{Name, Ms}] or "name=ms,name=ms", to [{NameBin, Ns}].
-spec parse_probes(term()) -> {ok, [{binary(), pos_integer()}]} | error.
parse_probes(L) when is_list(L), L =/= [], is_integer(hd(L)) ->
    Pairs = [string:split(P, "=") || P <- string:lexemes(L, ", ")],
    parse_probes([{N, M} || [N, M] <- Pairs] ++ [bad || P <- Pairs, length(P) =/= 2]);
parse_probes(L) when is_list(L) ->
    try
        {ok, [probe(P) || P <- L]}
    catch
        throw:bad -> error
    end;
parse_probes(_) -> error.

probe({N, Ms}) ->
    Name = case N of
               A when is_atom(A) -> atom_to_binary(A, utf8);
               B when is_binary(B) -> B;
               S when is_list(S) -> unicode:characters_to_binary(S);
               _ -> throw(bad)
           end,
    Parsed = case Ms of
                 M when is_number(M) -> dqd_wrapper_line:ms_to_ns(M);
                 M when is_list(M) -> dqd_wrapper_line:parse_ms(list_to_binary(M));
                 M when is_binary(M) -> dqd_wrapper_line:parse_ms(M);
                 _ -> error
             end,
    case {dqd_wrapper_line:valid_name(Name), Parsed} of
        {true, {ok, Ns}} -> {Name, Ns};
        _ -> throw(bad)
    end;
probe(_) -> throw(bad).
