%% Optional forwarding to opentelemetry_api and telemetry. Neither is a dependency:
%% whether they are present is decided once when the wrapper starts (detect/1), and
%% every call into them is guarded so a missing or misbehaving library never breaks a
%% probe. The calls are the ones the opentelemetry_api macros expand to, so spans look
%% exactly as they did with dqsd_otel.
-module(dqd_wrapper_otel).

-export([detect/1, start_span/2, end_span/1, with_span/3, ids/1, instance_event/5]).

%% {OtelOn, TelemetryOn} for the configured modes (auto | false).
-spec detect(#{otel := auto | false, telemetry := auto | false, atom() => term()}) ->
          {boolean(), boolean()}.
detect(#{otel := O, telemetry := T}) ->
    {O =:= auto andalso available([otel_tracer, otel_span, opentelemetry]),
     T =:= auto andalso available([telemetry])}.

available(Mods) ->
    lists:all(fun(M) -> element(1, code:ensure_loaded(M)) =:= module end, Mods).

tracer() ->
    try
        opentelemetry:get_application_tracer(dqd_wrapper)
    catch
        error:undef -> opentelemetry:get_tracer()
    end.

%% Starts an OpenTelemetry span as ?start_span(Name, Opts) would; undefined on failure.
-spec start_span(term(), map()) -> term().
start_span(Name, Opts) ->
    try
        otel_tracer:start_span(tracer(), Name, Opts)
    catch
        _:_ -> undefined
    end.

-spec end_span(term()) -> ok.
end_span(undefined) -> ok;
end_span(Ctx) ->
    try otel_span:end_span(Ctx) catch _:_ -> ok end,
    ok.

%% Runs Fun (arity 0) inside ?with_span(Name, Opts, ...). Exceptions of Fun propagate.
-spec with_span(term(), map(), fun(() -> term())) -> term().
with_span(Name, Opts, Fun) ->
    Tracer = try tracer() catch _:_ -> undefined end,
    case Tracer of
        undefined -> Fun();
        _ -> otel_tracer:with_span(Tracer, Name, Opts, fun(_Ctx) -> Fun() end)
    end.

%% {SpanId, TraceId} of an opentelemetry span_ctx record, for the v2 i: and t:
%% fields; undefined when the context is not one.
-spec ids(term()) -> {undefined | non_neg_integer(), undefined | non_neg_integer()}.
ids(Ctx) when is_tuple(Ctx), tuple_size(Ctx) >= 3, element(1, Ctx) =:= span_ctx ->
    case {element(3, Ctx), element(2, Ctx)} of
        {S, T} when is_integer(S), is_integer(T), S > 0, T > 0 -> {S, T};
        _ -> {undefined, undefined}
    end;
ids(_) -> {undefined, undefined}.

%% telemetry event [dqd_wrapper, instance] for one reported outcome instance.
-spec instance_event(term(), integer(), integer(), atom(), boolean()) -> ok.
instance_event(_Name, _Start, _End, _Status, false) -> ok;
instance_event(Name, Start, End, Status, true) ->
    try
        telemetry:execute([dqd_wrapper, instance],
                          #{duration => End - Start, start => Start, 'end' => End},
                          #{name => Name, status => Status})
    catch
        _:_ -> ok
    end,
    ok.
