%% Drop-in replacement for the ΔQ Oscilloscope's wrapper module dqsd_otel: the same
%% functions with the same arities and return shapes, implemented by dqd_wrapper.
%% Code instrumented for dqsd_otel works unchanged; only the application to start
%% is dqd_wrapper (dqsd_otel:start/0 does that).
-module(dqsd_otel).

-export([start/0, start_span/1, start_span/2, end_span/2, fail_span/1, with_span/2,
         with_span/3, set_stub_running/1, handle_c_message/1]).

-spec start() -> {ok, [atom()]} | {error, term()}.
start() -> dqd_wrapper:start().

-spec start_span(binary()) -> {term(), dqd_wrapper:handle()}.
start_span(Name) -> dqd_wrapper:start_span(Name).

-spec start_span(binary(), map()) -> {term(), dqd_wrapper:handle()}.
start_span(Name, Attrs) -> dqd_wrapper:start_span(Name, Attrs).

-spec end_span(term(), dqd_wrapper:handle()) -> ok.
end_span(Ctx, Handle) -> dqd_wrapper:end_span(Ctx, Handle).

-spec fail_span(dqd_wrapper:handle()) -> ok.
fail_span(Handle) -> dqd_wrapper:fail_span(Handle).

-spec with_span(binary(), fun(() -> Result)) -> Result.
with_span(Name, Fun) -> dqd_wrapper:with_span(Name, Fun).

-spec with_span(binary(), fun(() -> Result), map()) -> Result.
with_span(Name, Fun, Attrs) -> dqd_wrapper:with_span(Name, Fun, Attrs).

%% dqsd_otel's test hook: same as dqd_wrapper:set_running/1.
-spec set_stub_running(boolean()) -> ok | {error, term()}.
set_stub_running(Bool) -> dqd_wrapper:set_running(Bool).

%% Applies one command line as dqsd_otel did (no acknowledgement on this path).
-spec handle_c_message(binary()) -> ok | {error, term()}.
handle_c_message(Bin) when is_binary(Bin) ->
    case dqd_wrapper_line:parse_command(string:trim(Bin, trailing, "\r\n")) of
        {ok, sync} -> ok;
        {ok, Cmd} -> dqd_wrapper_core:local(Cmd);
        {error, _} = E -> E
    end.
