%% dqsd_otel's legacy command listener API, backed by dqd_wrapper_legacy (started
%% under the wrapper's supervisor).
-module(dqsd_otel_tcp_server).

-export([start_server/2, stop_server/0]).

-spec start_server(string() | binary() | inet:ip_address(), inet:port_number()) ->
          ok | {error, term()}.
start_server(IP, Port) ->
    case dqd_wrapper_config:parse_addr({IP, Port}) of
        {ok, Addr} ->
            Spec = #{id => legacy, start => {dqd_wrapper_legacy, start_link, [Addr]},
                     shutdown => 2000},
            case supervisor:start_child(dqd_wrapper_sup, Spec) of
                {ok, _} -> ok;
                {error, {already_started, _}} -> ok;
                {error, already_present} ->
                    _ = supervisor:delete_child(dqd_wrapper_sup, legacy),
                    start_server(IP, Port);
                {error, _} = E -> E
            end;
        error -> {error, bad_address}
    end.

-spec stop_server() -> ok | {error, term()}.
stop_server() ->
    case supervisor:terminate_child(dqd_wrapper_sup, legacy) of
        ok -> _ = supervisor:delete_child(dqd_wrapper_sup, legacy), ok;
        {error, not_found} -> {error, not_running}
    end.
