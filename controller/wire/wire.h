/*
 * proto.h: the wrapper ⇄ dqd line protocol (docs/protocol.md), both dialects.
 *
 * Three parts, none of which allocates:
 *
 *   - wire_parse() turns one line (without its '\n') into a struct wire_msg whose
 *     strings are (pointer, length) slices into the caller's bytes. It is the only
 *     parser for both the legacy dialect (the ΔQ Oscilloscope's wrapper:
 *     `n:NAME;b:START;e:END;s:STATUS`, `ping`) and v2 (hello, ack, drop, state and the
 *     optional trailing instance fields). A bad line yields one enum wire_err kind so
 *     the daemon can count each kind separately.
 *   - struct wire_splitter cuts a connection's byte stream into lines with a
 *     fixed-capacity buffer; lines over WIRE_MAX_LINE bytes are discarded and reported
 *     once as WIRE_E_TOOLONG.
 *   - wire_format_cmd() writes dqd → wrapper commands into a caller buffer, and
 *     wire_parse_cmd() reads them back (for `ack;COMMAND` and for test clients).
 *
 * The ingest path runs wire_splitter_feed() + wire_parse() for every instance, so
 * both are written for throughput: one pass over the bytes, table-driven character
 * classes, no library calls besides memchr/memcpy.
 */
#ifndef DQ_WIRE_H
#define DQ_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_MAX_LINE 1024   /* bytes of a line, not counting '\n' and a final '\r' */
#define WIRE_MAX_NAME 255    /* bytes of a probe name */
#define WIRE_MAX_ID 64       /* hex digits of an i:, t: or p: value */
#define WIRE_MAX_LABEL 255   /* bytes of a hello's node or app */
#define WIRE_MIN_CMD_MS 1e-6 /* smallest dMax a command may carry (1 ns), in ms */
#define WIRE_MAX_CMD_MS 1e9  /* largest dMax a set_timeout may carry, in ms */
#define WIRE_CLOCK_SLACK_NS 86400000000000LL /* one day: the WIRE_E_CLOCK threshold */
#define WIRE_SPLITTER_MIN_CAP (WIRE_MAX_LINE + 2)
#define WIRE_MAX_MFA 255 /* bytes of a function MOD:FUN/ARITY as written (quotes included) */
#define WIRE_CMD_MAX 600 /* a buffer this large holds any formatted command */

/* A run of bytes inside someone else's buffer; not NUL-terminated. */
struct wire_slice {
    const char *p;
    size_t n;
};

/*
 * Error kinds, one counter each in the daemon. WIRE_OK is 0 and the kinds are
 * 1 … WIRE_E_COUNT−1, so they index an array of counters directly.
 * X(ENUM, "metric label", "human message")
 */
#define WIRE_ERR_MAP(X)                                                                            \
    X(SYNTAX, "syntax", "malformed line")                                                          \
    X(UNKNOWN, "unknown", "unknown message")                                                       \
    X(FIELD, "field", "missing or out-of-order field")                                             \
    X(NAME, "name", "bad probe name")                                                              \
    X(TIME, "time", "bad timestamp (not a positive 64-bit integer)")                               \
    X(ORDER, "order", "END before START")                                                          \
    X(STATUS, "status", "unknown status")                                                          \
    X(CLOCK, "clock", "timestamp more than a day away from dqd's clock")                           \
    X(TOOLONG, "too_long", "line over 1024 bytes")                                                 \
    X(ID, "id", "bad instance, trace or parent id")                                                \
    X(ATTR, "attr", "bad attribute list")

enum wire_err {
    WIRE_OK = 0,
#define WIRE_ERR_ENUM_(name, label, msg) WIRE_E_##name,
    WIRE_ERR_MAP(WIRE_ERR_ENUM_)
#undef WIRE_ERR_ENUM_
        WIRE_E_COUNT
};

/* Metric label of a kind ("too_long"; "ok" for WIRE_OK; "invalid" out of range). */
const char *wire_err_name(int err);

/* One-line human message of a kind ("line over 1024 bytes"). Never NULL. */
const char *wire_err_message(int err);

enum wire_kind {
    WIRE_INSTANCE, /* n:NAME;b:START;e:END;s:STATUS[;i:..;t:..;p:..;a:..] */
    WIRE_PING,     /* ping */
    WIRE_HELLO,    /* h:VERSION;node:NODE;app:APP */
    WIRE_ACK,      /* ack;COMMAND */
    WIRE_DROP,     /* drop;COUNT */
    WIRE_STATE,    /* state;running:0|1;probes:NAME=MS,... */
    WIRE_CLOCK     /* clock;NS: simulated time (dqd --clock sim only) */
};

enum wire_status { WIRE_ST_OK, WIRE_ST_FA, WIRE_ST_TO };

enum wire_dialect { WIRE_LEGACY, WIRE_V2 };

enum wire_cmd_kind {
    WIRE_CMD_START_STUB,
    WIRE_CMD_STOP_STUB,
    WIRE_CMD_SET_TIMEOUT,   /* name, ms */
    WIRE_CMD_CLEAR_TIMEOUT, /* name; v2 only */
    WIRE_CMD_SYNC,          /* v2 only */
    WIRE_CMD_TRACE          /* name, ms, mfa: enable NAME by tracing the function MFA; v2 only */
};

/* A dqd → wrapper command. `name` is used by set_timeout, clear_timeout and trace only. */
struct wire_cmd {
    enum wire_cmd_kind kind;
    struct wire_slice name;
    double ms;             /* set_timeout, trace: dMax in milliseconds */
    struct wire_slice mfa; /* trace: the function, MOD:FUN/ARITY (wire_mfa_valid) */
};

/*
 * A parsed line. Only the fields of `kind` are set; the others hold stale values.
 * Slices point into the line given to wire_parse() and live as long as it does.
 */
struct wire_msg {
    enum wire_kind kind;
    /* WIRE_INSTANCE */
    struct wire_slice name;   /* probe name, valid NAME */
    uint64_t name_hash;       /* wire_name_hash(name) */
    int64_t start_ns;         /* START, > 0 */
    int64_t end_ns;           /* END, ≥ START; or 0 for s:to from an older legacy wrapper
                                 that sends e:0 on timeout (then END = START + dMax) */
    enum wire_status status;  /* ok / fa / to */
    int v2_fields;            /* 1 when any trailing field (known or not) followed s: */
    struct wire_slice id;     /* i: value (hex) or empty */
    struct wire_slice trace;  /* t: value (hex) or empty */
    struct wire_slice parent; /* p: value (hex) or empty */
    struct wire_slice attrs;  /* a: value "K=V,K=V", validated; iterate with wire_kv_next */
    /* WIRE_HELLO */
    int version; /* the N of h:N, ≥ 2 */
    struct wire_slice node;
    struct wire_slice app;
    /* WIRE_ACK */
    struct wire_slice command; /* the echoed command line */
    struct wire_cmd cmd;       /* the echoed command, parsed */
    /* WIRE_DROP */
    uint64_t count;
    /* WIRE_STATE */
    int running;              /* 0 or 1 */
    struct wire_slice probes; /* "NAME=MS,NAME=MS", validated; iterate with wire_kv_next */
    /* The function tracer's fields of a v2 state line (each empty when absent), lists of
     * NAME=VALUE validated like `probes` (NAME a probe name, VALUE as described):
     * traced: the patterns installed now (VALUE MOD:FUN/ARITY); tcalls: calls traced
     * since bound (decimal); sampling: the fraction of calls traced, for probes over
     * budget ("0.25"); tdropped: open calls dropped (decimal); trefused: bindings the
     * wrapper refused or lost (VALUE a reason, [a-z_]+). tother: processes traced by
     * another tool (0 when absent). */
    struct wire_slice traced, tcalls, sampling, tdropped, trefused;
    uint64_t tother;
    /* WIRE_CLOCK */
    int64_t clock_ns; /* the simulated time, ns since the epoch, > 0 */
};

/*
 * Parses one line of wrapper → dqd traffic. `line` excludes the '\n'; one trailing
 * '\r' is ignored. `now_ns` is dqd's clock (ns since the epoch): an instance whose START
 * or END is more than WIRE_CLOCK_SLACK_NS away from it is WIRE_E_CLOCK; now_ns ≤ 0
 * disables that check. Returns WIRE_OK and fills *msg, or an error kind (then *msg
 * is unspecified). Never allocates, never reads outside [line, line + len).
 */
int wire_parse(const char *line, size_t len, int64_t now_ns, struct wire_msg *msg);

/*
 * 1 when s is a valid function for a trace command (docs/protocol.md, "Functions"):
 * MOD:FUN/ARITY, at most WIRE_MAX_MFA bytes; ARITY 0 … 255 in decimal without leading
 * zeros; MOD and FUN Erlang atoms, each either unquoted (MOD [a-z][A-Za-z0-9_@.]* or an
 * Elixir module Elixir.Alias(.Alias)* with Alias [A-Z][A-Za-z0-9_]*; FUN
 * [a-z_][A-Za-z0-9_@]* with an optional final '?' or '!') or quoted: '…' holding any UTF-8
 * character from U+0020 up except DEL and the C1 controls, with `\\` for a backslash and
 * `\'` for a quote. So a function is one line of printable text; ';', ',' and '=' occur only
 * inside quotes, where the parsers of lists skip them.
 */
int wire_mfa_valid(const char *s, size_t n);

/* NULL when s is a valid function (wire_mfa_valid), else why not: a static sentence
 * fragment for an error message ("a quote is not closed"). */
const char *wire_mfa_check(const char *s, size_t n);

/*
 * Writes the n bytes at s into out (cap ≥ 8 bytes, always NUL-terminated) as one line of
 * printable text for a log line or an error message: valid UTF-8 from U+0020 up (except
 * DEL and C1) as it is, `"` and `\` preceded by `\`, `\n` `\r` `\t`, any other byte as
 * `\xNN`; when it does not fit, what fits followed by "...". Returns out.
 */
const char *wire_escape(char *out, size_t cap, const char *s, size_t n);

/* 1 when s is a valid probe NAME: [A-Za-z_][A-Za-z0-9_]*, 1 … 255 bytes. */
int wire_name_valid(const char *s, size_t n);

/*
 * A 64-bit hash of the n bytes at s (any bytes; meant for probe names). wire_parse()
 * returns it with every instance (msg->name_hash) because the fast path computes it
 * while checking the name, so the probe table need not read the name again. The
 * value depends only on the bytes, the same on every platform and run.
 */
uint64_t wire_name_hash(const char *s, size_t n);

/*
 * Iterates the validated lists of a message: msg->attrs (K=V pairs, v2 attributes) and
 * msg->probes (NAME=MS pairs of a state line), and the tracer's lists of a state line
 * (msg->traced: NAME=MOD:FUN/ARITY, where a ',' inside a quoted atom does not end the
 * pair). Start with `struct wire_slice it = msg->attrs;` and call until it returns 0.
 * Each call returns 1 and sets *key and *value for the next pair, 0 at the end, or −1 on
 * a malformed list (never for lists that came out of wire_parse()).
 */
int wire_kv_next(struct wire_slice *it, struct wire_slice *key, struct wire_slice *value);

/*
 * Reads a decimal number of milliseconds ("200", "0.25") as used by set_timeout and
 * state lines: digits, optionally '.' and 1 … 9 more digits, value in [WIRE_MIN_CMD_MS,
 * WIRE_MAX_CMD_MS].
 * Returns 0 and sets *ms, or −1.
 */
int wire_parse_ms(const char *s, size_t n, double *ms);

/* ---- line splitter ---------------------------------------------------------------- */

/*
 * Called once per complete line with err = WIRE_OK (line without '\n'; a '\r' before
 * it is still there, wire_parse() drops it), or once per over-long line with
 * err = WIRE_E_TOOLONG and the line's first bytes (for logging). `line` points into
 * the splitter's buffer or into the chunk passed to wire_splitter_feed(): it is valid
 * only during the call.
 */
typedef void (*wire_line_fn)(void *ctx, const char *line, size_t len, int err);

struct wire_splitter {
    char *buf;         /* partial line carried between chunks */
    size_t cap;        /* capacity of buf, ≥ WIRE_SPLITTER_MIN_CAP */
    size_t len;        /* bytes held in buf */
    int discarding;    /* 1 while skipping the rest of an over-long line */
    wire_line_fn fn;   /* line callback */
    void *ctx;         /* passed to fn */
    uint64_t too_long; /* over-long lines reported so far */
};

/*
 * Sets up a splitter on the caller's buffer `buf` of `cap` bytes (which must outlive
 * it; 4096 is a good size, WIRE_SPLITTER_MIN_CAP is the least). The buffer never grows:
 * it only ever holds the unfinished tail of one line. Returns 0, or DQ_EINVAL when cap
 * is too small or buf/fn is NULL.
 */
int wire_splitter_init(struct wire_splitter *s, char *buf, size_t cap, wire_line_fn fn, void *ctx);

/*
 * Feeds a chunk of any size (a socket read) and calls fn for every line it completes,
 * in order. Lines wholly inside the chunk are passed without copying. fn must not feed
 * the same splitter.
 */
void wire_splitter_feed(struct wire_splitter *s, const char *data, size_t n);

/*
 * Called by wire_splitter_feed_instances() for each instance line it parsed itself;
 * msg is what wire_parse() would have returned for that line (WIRE_OK), valid only
 * during the call.
 */
typedef void (*wire_instance_fn)(void *ctx, const struct wire_msg *msg);

/*
 * Like wire_splitter_feed(), but complete instance lines of the usual shape
 * (`n:NAME;b:START;e:END;s:STATUS`, 19-digit times, optional v2 fields, no '\r') that
 * wire_parse(line, len, now_ns) would accept are parsed in the same pass that finds
 * their end and go to inst(ctx, msg) instead of the line callback; every other line,
 * malformed ones included, goes to the line callback exactly as with
 * wire_splitter_feed(). Lines stay in order. This is the daemon's ingest path: it
 * saves the separate newline search and the second walk over each line.
 */
void wire_splitter_feed_instances(struct wire_splitter *s, const char *data, size_t n,
                                  int64_t now_ns, wire_instance_fn inst);

/* Bytes of an unfinished line waiting for its '\n' (0 at a line boundary). */
size_t wire_splitter_pending(const struct wire_splitter *s);

/* ---- commands ------------------------------------------------------------------------ */

/*
 * Writes one command line, '\n' included, into buf (no NUL is promised past the
 * returned length, though one is written when it fits). For set_timeout a legacy link
 * gets the integer ceil(ms) with a minimum of 1 (its wrapper keeps only the integer
 * part, and a dMax must not shrink to 0); a v2 link gets the decimal value with up to
 * 6 decimals and no trailing zeros ("0.25", "200"). trace is `trace;NAME;MS;MFA` (v2
 * only). Returns the length, or DQ_EINVAL (bad name or function, ms not in
 * [WIRE_MIN_CMD_MS, WIRE_MAX_CMD_MS], clear_timeout/sync/trace on a legacy link),
 * or DQ_EFULL when cap is too small (WIRE_CMD_MAX always suffices).
 */
int wire_format_cmd(char *buf, size_t cap, enum wire_dialect d, const struct wire_cmd *cmd);

/*
 * Simulated time (dqd --clock sim): a simulator sends `clock;NS` (parsed by wire_parse as
 * WIRE_CLOCK) once everything that ended before NS is sent; dqd closes the windows due at
 * NS, sends the commands they caused, then answers `tick;NS`. wire_format_tick writes that
 * answer ('\n' included; WIRE_CMD_MAX suffices) and returns its length or DQ_EFULL;
 * wire_parse_tick reads it back (without '\n'): 0 and *ns, or −1 for another line.
 */
int wire_format_tick(char *buf, size_t cap, int64_t ns);
int wire_parse_tick(const char *line, size_t len, int64_t *ns);

/*
 * Parses a dqd → wrapper command line (without '\n'; a final '\r' is ignored) into *cmd,
 * whose name slice points into `line`. Returns 0, or −1 for anything that
 * wire_format_cmd() could not have produced for some dialect.
 */
int wire_parse_cmd(const char *line, size_t len, struct wire_cmd *cmd);

#endif /* DQ_WIRE_H */
