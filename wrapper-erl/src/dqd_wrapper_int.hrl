%% Shared definitions of the dqd wrapper's modules (internal: not for users).

%% The probe table read by every probe call: one persistent_term, so a read is a
%% pointer fetch with no copy and no process round trip. It changes only when a command
%% arrives (rare); each change costs a global literal-area scan, see README.
-define(STATE_KEY, dqd_wrapper_state).

%% Open (started, not yet ended) instances, keyed by {Deadline, Unique} so the sweeper
%% finds expired ones in order from the front of the table.
-define(INFLIGHT, dqd_wrapper_inflight).

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
    max = 0 :: non_neg_integer()
}).

%% The state when the wrapper is not running: a literal, so the default costs nothing.
-define(OFF, #st{}).

-define(PENDING, 1).
-define(DROPPED, 2).

%% The handle of an enabled instance (what dqsd_otel returned as a pid).
-record(dqd_span, {
    key :: {integer(), integer()},
    name :: binary() | atom(),
    start :: integer(),
    meta = <<>> :: binary(),
    tel = false :: boolean()
}).

%% Longest line the protocol allows, newline included.
-define(MAX_LINE, 1024).
