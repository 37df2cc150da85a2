%% Functions the tracer tests bind probes to (no span in them: the tracer times them).
-module(dqd_trace_target).

-export([work/1, hold/1, nest/1, fail/1, loop/1, deep/1, run/1, hot/0, hot2/0, spin/2]).

%% Sleeps Ms milliseconds, returns Ms.
work(Ms) ->
    receive after Ms -> Ms end.

%% Waits for `go`, returns ok: a call that stays open for as long as a test needs, however
%% slowly the machine runs the test (a sleep of 300 ms ended before the test looked, once).
hold(Go) -> receive Go -> ok end.

%% Non-tail recursion: nest(N) calls nest(N - 1) and sleeps 1 ms at the bottom.
nest(0) -> work(1), 0;
nest(N) -> 1 + nest(N - 1).

%% Raises error(Why).
fail(Why) -> erlang:error(Why).

%% Tail recursion: refused by the tracer.
loop(0) -> done;
loop(N) -> loop(N - 1).

%% Recursion deeper than any sane depth bound (not in tail position).
deep(0) -> receive after 50 -> 0 end;
deep(N) -> 1 + deep(N - 1).

%% A call tree: {Raise, Children}. Runs the children (catching their failures), then
%% raises when Raise is true.
run({Raise, Children}) ->
    _ = [catch run(C) || C <- Children],
    case Raise of
        true -> erlang:error(boom);
        false -> ok
    end.

%% Cheap functions for the budget tests.
hot() -> ok.
hot2() -> ok.

%% Calls F (hot or hot2) for Ms milliseconds in a loop; returns the number of calls.
spin(F, Ms) ->
    Until = erlang:monotonic_time(millisecond) + Ms,
    spin(F, Until, 0).

spin(F, Until, N) ->
    case N rem 64 =:= 0 andalso erlang:monotonic_time(millisecond) >= Until of
        true -> N;
        false -> ?MODULE:F(), spin(F, Until, N + 1)
    end.
