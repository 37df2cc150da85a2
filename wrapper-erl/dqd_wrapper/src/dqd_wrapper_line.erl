%% Wire format of the wrapper <-> dqd protocol (docs/protocol.md, v2 and legacy).
%% Encoding is on the probe's hot path, so it builds one flat binary with no
%% io_lib formatting. Decoding of instance lines exists for the tests and for tools
%% that want to check what the wrapper sends; commands are parsed here too.
-module(dqd_wrapper_line).

-include("dqd_wrapper_int.hrl").

-export([encode/5, encode_meta/3, clock_new/1, encode_mono/6, append_mono/7, hello/2, state/2, state/3, drop/1, ack/1]).
-export([decode_instance/1, parse_command/1]).
-export([max_meta/0, format_ms/1, parse_ms/1, ms_to_ns/1, valid_name/1, attr_value/1]).
-export([parse_mfa/1, format_mfa/1, mfa_text/1]).
-export([split_init/0, split/2]).

-export_type([status/0, command/0, instance/0, split_state/0]).

-type split_state() :: {binary(), boolean()}.

%% See encode_mono/6: the time offset, and the monotonic ns at which the cached
%% second starts, with that second printed.
-record(clock, {off :: integer(), base = 0 :: integer(), prefix = <<>> :: binary()}).
-opaque clock() :: #clock{}.
-export_type([clock/0]).

-type status() :: ok | fa | to.
-type command() :: start | stop | sync
                 | {set_timeout, binary(), pos_integer()}
                 | {clear_timeout, binary()}
                 | {trace, binary(), pos_integer(), mfa_bin()}.
%% A function named on the wire, MOD:FUN/ARITY, before any atom exists for it.
-type mfa_bin() :: {binary(), binary(), 0..255}.
-export_type([mfa_bin/0]).
-type instance() :: #{name := binary(), start := pos_integer(), 'end' := pos_integer(),
                      status := status(), id => binary(), trace => binary(),
                      parent => binary(), attrs => [{binary(), binary()}]}.

%% Room left for the optional v2 fields: a full line is at most ?MAX_LINE bytes and
%% the fixed part is at most 2+255+3+20+3+20+3+2+1 = 309 bytes.
-define(MAX_META, (?MAX_LINE - 309)).
-define(MAX_MS_DIGITS, 10).
%% Bytes of a function MOD:FUN/ARITY as written, quotes included (dqd's WIRE_MAX_MFA).
-define(MAX_MFA, 255).

%%% Encoding ------------------------------------------------------------------

%% Bytes available to encode_meta/3's output, whatever the name and times.
-spec max_meta() -> pos_integer().
max_meta() -> ?MAX_META.

%% One outcome instance line, newline included. Meta is the pre-encoded v2 tail
%% (from encode_meta/3), or <<>> for a line a legacy reader also understands.
-spec encode(binary() | atom(), integer(), integer(), status(), binary()) -> binary().
encode(Name, Start, End, Status, Meta) when is_binary(Name) ->
    <<"n:", Name/binary, ";b:", (integer_to_binary(Start))/binary,
      ";e:", (integer_to_binary(End))/binary, ";s:", (status_bin(Status))/binary,
      Meta/binary, "\n">>;
encode(Name, Start, End, Status, Meta) when is_atom(Name) ->
    encode(atom_to_binary(Name, utf8), Start, End, Status, Meta).

%% Encoding of instances timed on the monotonic clock. Epoch ns exceed Erlang's
%% small integers (2^59): adding the offset and printing a bignum per timestamp is
%% the largest part of encoding. The clock caches the ten leading digits (whole
%% seconds) of the current second, so a timestamp in that second is printed as the
%% cached prefix and nine zero-padded digits of a small integer.

%% A clock for time offset Off (erlang:time_offset(nanosecond)).
-spec clock_new(integer()) -> clock().
clock_new(Off) -> clock_at(Off, 0).

%% Re-centres the cache on the second holding monotonic time Mono.
clock_at(Off, Mono) ->
    Sys = Mono + Off,
    Sec = Sys div 1000000000,
    #clock{off = Off, base = Sec * 1000000000 - Off, prefix = integer_to_binary(Sec)}.

%% As encode/5 for monotonic ns Start and End; returns the line and the clock to use
%% next time (the same one, except when a second boundary was crossed).
-spec encode_mono(binary() | atom(), integer(), integer(), status(), binary(), clock()) ->
          {binary(), clock()}.
encode_mono(Name, Start, End, Status, Meta, Clock) ->
    append_mono(<<>>, Name, Start, End, Status, Meta, Clock).

%% encode_mono/6 appending the line to Acc (the connection's batch), with no
%% intermediate binary per line or per timestamp.
-spec append_mono(binary(), binary() | atom(), integer(), integer(), status(), binary(),
                  clock()) -> {binary(), clock()}.
append_mono(Acc, Name, Start, End, Status, Meta, Clock0) when is_binary(Name) ->
    {BP, BD, Clock1} = ts(Start, Clock0),
    {EP, ED, Clock2} = ts(End, Clock1),
    {<<Acc/binary, "n:", Name/binary, ";b:", BP/binary, BD/binary, ";e:", EP/binary,
       ED/binary, ";s:", (status_bin(Status))/binary, Meta/binary, "\n">>, Clock2};
append_mono(Acc, Name, Start, End, Status, Meta, Clock) when is_atom(Name) ->
    append_mono(Acc, atom_to_binary(Name, utf8), Start, End, Status, Meta, Clock).

%% {Prefix, Digits, Clock}: the timestamp is Prefix followed by Digits.
ts(Mono, #clock{base = Base, prefix = P} = C) when Mono >= Base, Mono - Base < 1000000000,
                                                   P =/= <<>> ->
    <<_, Digits/binary>> = integer_to_binary(Mono - Base + 1000000000),
    {P, Digits, C};
ts(Mono, #clock{off = Off} = C) ->
    case Mono + Off >= 1000000000 of
        true -> ts(Mono, clock_at(Off, Mono));
        %% Before 1970-01-01T00:00:01: never a real instance, printed plainly.
        false -> {integer_to_binary(Mono + Off), <<>>, C}
    end.

status_bin(ok) -> <<"ok">>;
status_bin(fa) -> <<"fa">>;
status_bin(to) -> <<"to">>.

%% The v2 tail: instance id and trace id (integers, sent as lowercase hex, or
%% undefined) and attributes. Attributes whose key or value falls outside the
%% protocol's character sets are skipped rather than mangled; attributes that would
%% push the line over ?MAX_LINE are left off, so every encoded line stays legal.
-spec encode_meta(undefined | non_neg_integer(), undefined | non_neg_integer(),
                  [{term(), term()}] | map()) -> binary().
encode_meta(Id, Trace, Attrs) when is_map(Attrs) ->
    encode_meta(Id, Trace, maps:to_list(Attrs));
encode_meta(Id, Trace, Attrs) when is_list(Attrs) ->
    Head = <<(hex_field(<<";i:">>, Id))/binary, (hex_field(<<";t:">>, Trace))/binary>>,
    case attrs_field(Attrs, ?MAX_META - byte_size(Head) - 3, []) of
        <<>> -> Head;
        A -> <<Head/binary, ";a:", A/binary>>
    end;
encode_meta(Id, Trace, _) ->
    encode_meta(Id, Trace, []).

hex_field(_, undefined) -> <<>>;
hex_field(Tag, N) when is_integer(N), N >= 0, N < (1 bsl 128) ->
    <<Tag/binary, (string:lowercase(integer_to_binary(N, 16)))/binary>>;
hex_field(_, _) -> <<>>.

attrs_field([], _Room, Acc) ->
    iolist_to_binary(lists:join(<<",">>, lists:reverse(Acc)));
attrs_field([{K, V} | Rest], Room, Acc) ->
    case {attr_key(K), attr_value(V)} of
        {{ok, KB}, {ok, VB}} ->
            Pair = <<KB/binary, "=", VB/binary>>,
            %% One comma between pairs.
            Need = byte_size(Pair) + min(1, length(Acc)),
            case Need =< Room of
                true -> attrs_field(Rest, Room - Need, [Pair | Acc]);
                false -> attrs_field([], Room, Acc)
            end;
        _ ->
            attrs_field(Rest, Room, Acc)
    end;
attrs_field([_ | Rest], Room, Acc) ->
    attrs_field(Rest, Room, Acc).

attr_key(K) ->
    case to_bin(K) of
        {ok, B} when B =/= <<>> ->
            case all_chars(B, fun key_char/1) of
                true -> {ok, B};
                false -> error
            end;
        _ -> error
    end.

%% Converts an attribute value to its wire form when it fits the value character set.
-spec attr_value(term()) -> {ok, binary()} | error.
attr_value(V) ->
    case to_bin(V) of
        {ok, B} when B =/= <<>> ->
            case all_chars(B, fun value_char/1) of
                true -> {ok, B};
                false -> error
            end;
        _ -> error
    end.

to_bin(B) when is_binary(B) -> {ok, B};
to_bin(A) when is_atom(A) -> {ok, atom_to_binary(A, utf8)};
to_bin(I) when is_integer(I) -> {ok, integer_to_binary(I)};
to_bin(F) when is_float(F) -> {ok, float_to_binary(F, [short])};
to_bin(L) when is_list(L) ->
    try {ok, unicode:characters_to_binary(L)} catch _:_ -> error end;
to_bin(_) -> error.

all_chars(<<>>, _) -> true;
all_chars(<<C, Rest/binary>>, F) -> F(C) andalso all_chars(Rest, F).

key_char(C) -> alnum(C) orelse C =:= $_ orelse C =:= $..
value_char(C) -> key_char(C) orelse C =:= $: orelse C =:= $-.
alnum(C) -> (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z)
    orelse (C >= $0 andalso C =< $9).

%% The v2 hello. Node and application names are sanitised: the separators of the
%% protocol (';' and line ends) must not appear inside a field.
-spec hello(atom() | binary(), atom() | binary()) -> binary().
hello(Node, App) ->
    <<"h:2;node:", (field(Node))/binary, ";app:", (field(App))/binary, "\n">>.

field(A) when is_atom(A) -> field(atom_to_binary(A, utf8));
field(B) when is_binary(B) ->
    Clean = << <<(clean_char(C))>> || <<C>> <= B >>,
    binary:part(Clean, 0, min(byte_size(Clean), 255)).

clean_char($;) -> $_;
clean_char($\n) -> $_;
clean_char($\r) -> $_;
clean_char($,) -> $_;
clean_char(C) -> C.

%% `state;running:0|1;probes:NAME=MS,...` from the running flag and Name => ns.
-spec state(boolean(), #{binary() | atom() => pos_integer()}) -> binary().
state(Running, Probes) -> state(Running, Probes, []).

%% The same with the function tracer's fields appended (dqd_wrapper_trace:fields/0:
%% ";traced:NAME=MOD:FUN/ARITY,..." and the like; [] when nothing is traced). They are
%% left out when they would make the line longer than the protocol allows.
-spec state(boolean(), #{binary() | atom() => pos_integer()}, iodata()) -> binary().
state(Running, Probes, Extra) ->
    Pairs = lists:sort([<<N/binary, "=", (format_ms(Ns))/binary>>
                        || {N, Ns} <- maps:to_list(Probes), is_binary(N)]),
    R = case Running of true -> <<"1">>; false -> <<"0">> end,
    Base = iolist_to_binary([<<"state;running:">>, R, <<";probes:">>,
                             lists:join(<<",">>, Pairs)]),
    case byte_size(Base) + iolist_size(Extra) < ?MAX_LINE of
        true -> iolist_to_binary([Base, Extra, <<"\n">>]);
        false -> <<Base/binary, "\n">>
    end.

-spec drop(pos_integer()) -> binary().
drop(N) -> <<"drop;", (integer_to_binary(N))/binary, "\n">>.

-spec ack(binary()) -> binary().
ack(Command) -> <<"ack;", Command/binary, "\n">>.

%%% Milliseconds --------------------------------------------------------------

%% dMax in ns to the protocol's decimal milliseconds ("200", "0.25").
-spec format_ms(pos_integer()) -> binary().
format_ms(Ns) ->
    Int = integer_to_binary(Ns div 1000000),
    case Ns rem 1000000 of
        0 -> Int;
        Frac ->
            Digits = string:trim(iolist_to_binary(io_lib:format("~6..0B", [Frac])),
                                 trailing, "0"),
            <<Int/binary, ".", Digits/binary>>
    end.

%% Decimal milliseconds (digits, optionally '.' and digits) to ns, truncating below
%% one ns. Zero, signs, exponents and absurdly large values are rejected.
-spec parse_ms(binary()) -> {ok, pos_integer()} | error.
parse_ms(Bin) ->
    {IntPart, FracPart} = case binary:split(Bin, <<".">>) of
                              [I] -> {I, <<"0">>};
                              [I, F] -> {I, F}
                          end,
    case digits(IntPart) andalso digits(FracPart)
        andalso byte_size(IntPart) =< ?MAX_MS_DIGITS of
        true ->
            Frac6 = binary:part(<<FracPart/binary, "000000">>, 0, 6),
            Ns = binary_to_integer(IntPart) * 1000000 + binary_to_integer(Frac6),
            case Ns > 0 of
                true -> {ok, Ns};
                false -> error
            end;
        false -> error
    end.

digits(<<>>) -> false;
digits(B) -> all_chars(B, fun(C) -> C >= $0 andalso C =< $9 end).

%% A user-supplied dMax in ms (integer or float) to ns.
-spec ms_to_ns(number()) -> {ok, pos_integer()} | error.
ms_to_ns(Ms) when is_integer(Ms), Ms > 0 -> {ok, Ms * 1000000};
ms_to_ns(Ms) when is_float(Ms), Ms > 0 ->
    case trunc(Ms * 1000000) of
        Ns when Ns > 0 -> {ok, Ns};
        _ -> error
    end;
ms_to_ns(_) -> error.

-spec valid_name(term()) -> boolean().
valid_name(<<C, Rest/binary>> = B) when byte_size(B) =< 255 ->
    (C =:= $_ orelse (C >= $a andalso C =< $z) orelse (C >= $A andalso C =< $Z))
        andalso all_chars(Rest, fun(X) -> alnum(X) orelse X =:= $_ end);
valid_name(_) -> false.

%%% Commands ------------------------------------------------------------------

%% One command line from dqd (without its line end).
-spec parse_command(binary()) -> {ok, command()} | {error, term()}.
parse_command(<<"start_stub">>) -> {ok, start};
parse_command(<<"stop_stub">>) -> {ok, stop};
parse_command(<<"sync">>) -> {ok, sync};
parse_command(<<"set_timeout;", Rest/binary>>) ->
    case binary:split(Rest, <<";">>, [global]) of
        [Name, Ms] ->
            case {valid_name(Name), parse_ms(Ms)} of
                {true, {ok, Ns}} -> {ok, {set_timeout, Name, Ns}};
                {false, _} -> {error, bad_name};
                {_, error} -> {error, bad_timeout}
            end;
        _ -> {error, bad_arity}
    end;
parse_command(<<"trace;", Rest/binary>>) ->
    %% the function is the last field: a quoted atom in it may hold ';'
    case binary:split(Rest, <<";">>) of
        [Name, Rest1] ->
            case binary:split(Rest1, <<";">>) of
                [Ms, Mfa] ->
                    case {valid_name(Name), parse_ms(Ms), parse_mfa(Mfa)} of
                        {true, {ok, Ns}, {ok, F}} -> {ok, {trace, Name, Ns, F}};
                        {false, _, _} -> {error, bad_name};
                        {_, error, _} -> {error, bad_timeout};
                        {_, _, error} -> {error, bad_function}
                    end;
                _ -> {error, bad_arity}
            end;
        _ -> {error, bad_arity}
    end;
parse_command(<<"clear_timeout;", Name/binary>>) ->
    case valid_name(Name) of
        true -> {ok, {clear_timeout, Name}};
        false -> {error, bad_name}
    end;
parse_command(_) -> {error, unknown_command}.

%% MOD:FUN/ARITY as the protocol writes a function (docs/protocol.md, "Functions"), at
%% most ?MAX_MFA bytes: MOD and FUN are Erlang atoms, unquoted (MOD [a-z][A-Za-z0-9_@.]*
%% or an Elixir module Elixir.Alias(.Alias)*, Alias [A-Z][A-Za-z0-9_]*; FUN
%% [a-z_][A-Za-z0-9_@]*, optionally ending in ? or !) or quoted ('...': UTF-8 characters
%% from U+0020 up but DEL and the C1 controls, \\ and \' the only escapes); ARITY 0 ...
%% 255 without leading zeros. Gives the atoms' texts, not atoms: dqd's input creates none.
-spec parse_mfa(binary()) -> {ok, mfa_bin()} | error.
parse_mfa(Bin) when byte_size(Bin) >= 1, byte_size(Bin) =< ?MAX_MFA ->
    case atom_field(Bin, $:, fun unquoted_module/1) of
        {ok, M, FA} ->
            case atom_field(FA, $/, fun unquoted_function/1) of
                {ok, F, A} ->
                    case digits(A) andalso byte_size(A) =< 3
                        andalso (byte_size(A) =:= 1 orelse binary:first(A) =/= $0)
                        andalso binary_to_integer(A) =< 255 of
                        true -> {ok, {M, F, binary_to_integer(A)}};
                        false -> error
                    end;
                error -> error
            end;
        error -> error
    end;
parse_mfa(_) -> error.

%% A function as the protocol writes it: each atom unquoted where parse_mfa/1 allows it,
%% else quoted. Not checked: see mfa_text/1.
-spec format_mfa(mfa_bin() | mfa()) -> binary().
format_mfa({M, F, A}) when is_atom(M), is_atom(F) ->
    format_mfa({atom_to_binary(M, utf8), atom_to_binary(F, utf8), A});
format_mfa({M, F, A}) ->
    <<(atom_out(M, unquoted_module(M)))/binary, ":", (atom_out(F, unquoted_function(F)))/binary,
      "/", (integer_to_binary(A))/binary>>.

%% The function as the protocol writes it, when it can be written: error for an atom
%% holding a control character, an arity over 255 or more than ?MAX_MFA bytes in all.
-spec mfa_text(mfa_bin() | mfa()) -> {ok, binary()} | error.
mfa_text({_, _, A} = Mfa) when is_integer(A), A >= 0, A =< 255 ->
    Text = format_mfa(Mfa),
    case parse_mfa(Text) of
        {ok, _} -> {ok, Text};
        error -> error
    end;
mfa_text(_) -> error.

%% The atom at the start of Bin, up to Sep: {ok, Text, AfterSep} or error.
atom_field(<<$', Rest/binary>>, Sep, _) ->
    quoted(Rest, Sep, <<>>);
atom_field(Bin, Sep, Unquoted) ->
    case binary:split(Bin, <<Sep>>) of
        [T, After] ->
            case Unquoted(T) of
                true -> {ok, T, After};
                false -> error
            end;
        _ -> error
    end.

quoted(<<$\\, C, Rest/binary>>, Sep, Acc) when C =:= $\\; C =:= $' ->
    quoted(Rest, Sep, <<Acc/binary, C>>);
quoted(<<$', Sep, Rest/binary>>, Sep, Acc) -> {ok, Acc, Rest};
quoted(<<C/utf8, Rest/binary>>, Sep, Acc)
  when C =/= $\\, C =/= $', (C >= 16#20 andalso C < 16#7F) orelse C >= 16#A0 ->
    quoted(Rest, Sep, <<Acc/binary, C/utf8>>);
quoted(_, _, _) -> error.

atom_out(T, true) -> T;
atom_out(T, false) ->
    <<$', (binary:replace(binary:replace(T, <<"\\">>, <<"\\\\">>, [global]),
                          <<"'">>, <<"\\'">>, [global]))/binary, $'>>.

unquoted_module(<<"Elixir.", Aliases/binary>>) ->
    lists:all(fun(<<C, R/binary>>) when C >= $A, C =< $Z ->
                      all_chars(R, fun(X) -> alnum(X) orelse X =:= $_ end);
                 (_) -> false
              end, binary:split(Aliases, <<".">>, [global]));
unquoted_module(<<C, Rest/binary>>) when C >= $a, C =< $z ->
    all_chars(Rest, fun(X) -> alnum(X) orelse X =:= $_ orelse X =:= $@ orelse X =:= $. end);
unquoted_module(_) -> false.

unquoted_function(<<C, _/binary>> = T) when C >= $a, C =< $z; C =:= $_ ->
    Body = case binary:last(T) of
               L when L =:= $?; L =:= $! -> binary:part(T, 0, byte_size(T) - 1);
               _ -> T
           end,
    all_chars(Body, fun(X) -> alnum(X) orelse X =:= $_ orelse X =:= $@ end);
unquoted_function(_) -> false.

%%% Decoding instance lines ---------------------------------------------------

%% Parses one instance line (with or without its line end) under docs/protocol.md's rules,
%% except the clock-distance check, which needs dqd's clock.
-spec decode_instance(binary()) -> {ok, instance()} | {error, term()}.
decode_instance(Line0) ->
    Line = strip_eol(Line0),
    case byte_size(Line) < ?MAX_LINE of
        false -> {error, too_long};
        true ->
            case binary:split(Line, <<";">>, [global]) of
                [<<"n:", N/binary>>, <<"b:", B/binary>>, <<"e:", E/binary>>,
                 <<"s:", S/binary>> | Tail] ->
                    decode_fields(N, B, E, S, Tail);
                _ -> {error, bad_fields}
            end
    end.

strip_eol(L) ->
    L1 = case L of
             <<P:(byte_size(L) - 1)/binary, "\n">> -> P;
             _ -> L
         end,
    case L1 of
        <<Q:(byte_size(L1) - 1)/binary, "\r">> -> Q;
        _ -> L1
    end.

decode_fields(N, B, E, S, Tail) ->
    case {valid_name(N), int(B), int(E), status(S)} of
        {false, _, _, _} -> {error, bad_name};
        {_, {ok, Bi}, {ok, Ei}, {ok, St}} when Bi > 0, Ei >= Bi ->
            decode_tail(Tail, #{name => N, start => Bi, 'end' => Ei, status => St});
        {_, {ok, _}, {ok, _}, {ok, _}} -> {error, bad_times};
        {_, _, _, error} -> {error, bad_status};
        _ -> {error, bad_integer}
    end.

int(B) ->
    case digits(B) andalso byte_size(B) =< 20 of
        true -> {ok, binary_to_integer(B)};
        false -> error
    end.

status(<<"ok">>) -> {ok, ok};
status(<<"fa">>) -> {ok, fa};
status(<<"to">>) -> {ok, to};
status(_) -> error.

decode_tail([], M) -> {ok, M};
decode_tail([<<"i:", V/binary>> | T], M) -> hex(V, id, T, M);
decode_tail([<<"t:", V/binary>> | T], M) -> hex(V, trace, T, M);
decode_tail([<<"p:", V/binary>> | T], M) -> hex(V, parent, T, M);
decode_tail([<<"a:", V/binary>> | T], M) ->
    Pairs = [binary:split(P, <<"=">>) || P <- binary:split(V, <<",">>, [global])],
    case lists:all(fun([K, X]) -> attr_key(K) =:= {ok, K} andalso
                                      attr_value(X) =:= {ok, X};
                      (_) -> false
                   end, Pairs) of
        true -> decode_tail(T, M#{attrs => [{K, X} || [K, X] <- Pairs]});
        false -> {error, bad_attrs}
    end;
%% Unknown trailing fields are ignored, as the protocol requires.
decode_tail([_ | T], M) -> decode_tail(T, M).

hex(V, Key, T, M) ->
    case V =/= <<>> andalso all_chars(V, fun(C) -> (C >= $0 andalso C =< $9)
                                                   orelse (C >= $a andalso C =< $f)
                                                   orelse (C >= $A andalso C =< $F)
                                         end) of
        true -> decode_tail(T, M#{Key => V});
        false -> {error, {bad_hex, Key}}
    end.

%%% Line splitting of received bytes ------------------------------------------

%% Splits a byte stream into lines, capping the partial line held between reads
%% at ?MAX_LINE bytes: a longer line is discarded up to its next newline.

-spec split_init() -> split_state().
split_init() -> {<<>>, false}.

-spec split(binary(), split_state()) -> {[binary()], split_state()}.
split(Data, {Acc, Discard}) ->
    split_lines(<<Acc/binary, Data/binary>>, Discard, []).

split_lines(Bin, Discard, Out) ->
    case binary:split(Bin, <<"\n">>) of
        [Line, Rest] when Discard ->
            _ = Line,
            split_lines(Rest, false, Out);
        [Line, Rest] ->
            L = strip_eol(Line),
            case byte_size(L) < ?MAX_LINE of
                true -> split_lines(Rest, false, [L | Out]);
                false -> split_lines(Rest, false, Out)
            end;
        [Partial] when byte_size(Partial) >= ?MAX_LINE ->
            {lists:reverse(Out), {<<>>, true}};
        [Partial] ->
            {lists:reverse(Out), {Partial, Discard}}
    end.
