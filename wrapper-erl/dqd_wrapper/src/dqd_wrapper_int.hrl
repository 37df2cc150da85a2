%% Shared definitions of the dqd wrapper's modules (internal: not for users).

%% The probe table read by every probe call: one persistent_term, so a read is a
%% pointer fetch with no copy and no process round trip. It changes only when a command
%% arrives (rare); each change costs a global literal-area scan, see README.
-define(STATE_KEY, dqd_wrapper_state).

%% Open (started, not yet ended) instances live in one of several ETS ordered_set
%% tables (#st.tabs, one per scheduler), keyed by {Deadline, Unique} so the sweeper
%% finds expired ones in order from the front of each table. The table of an
%% instance is chosen from Unique, so start and end find it without storing it.
-define(INFLIGHT, dqd_wrapper_inflight).
-define(TAB(Tabs, U), element((U band 16#7fffffff) rem tuple_size(Tabs) + 1, Tabs)).

%% Registered name of the connection process.
-define(CONN, dqd_wrapper_conn).

-record(st, {
    running = false :: boolean(),
    %% Name (binary, and atom when that atom exists) => dMax in ns.
    probes = #{} :: #{binary() | atom() => pos_integer()},
    otel = false :: boolean(),
    tel = false :: boolean(),
    %% atomics: ?PENDING lines handed to the connection and not yet written or
    %% dropped, ?DROPPED instances discarded since the last drop line.
    cnt = undefined :: undefined | atomics:atomics_ref(),
    max = 0 :: non_neg_integer(),
    %% erlang:time_offset(nanosecond). Probes time instances on the monotonic clock:
    %% its ns values are small integers, while epoch ns exceed 2^59 and would make
    %% every operation on them allocate a bignum. The connection adds the offset
    %% when it encodes the line, off the instrumented process.
    off = 0 :: integer(),
    tabs = {} :: tuple()
}).

%% The state when the wrapper is not running: a literal, so the default costs nothing.
-define(OFF, #st{}).

-define(PENDING, 1).
-define(DROPPED, 2).

%% The handle of an enabled instance (what dqsd_otel returned as a pid). Times are
%% erlang:monotonic_time(nanosecond); key = {start + dMax, unique}.
-record(dqd_span, {
    key :: {integer(), integer()},
    name :: binary() | atom(),
    start :: integer(),
    meta = <<>> :: binary(),
    %% The state the instance started under (a reference to the persistent_term
    %% literal, not a copy): end_span needs its counters without a second lookup.
    st :: tuple()
}).

%% Longest line the protocol allows, newline included.
-define(MAX_LINE, 1024).
