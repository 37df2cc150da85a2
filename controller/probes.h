/*
 * probes.h: dqd's probe table and window builder.
 *
 * Every outcome instance that ingest accepts lands here: its probe is found by name in
 * an open-addressing hash table (registered on first sight, the only allocation), its
 * duration is binned in place into the histogram of the window its END falls in, and the
 * exact moments of that window (count per status, Σd, Σd², min, max) are updated. Nothing
 * on this path allocates or calls into the engine.
 *
 * Windows are aligned to the wall clock: window w holds instances whose END lies in
 * [w·P, (w+1)·P). A window is closed L after its end (the lag), so up to
 * ceil(L/P) + 2 windows are open at once; each probe has that many histogram slots,
 * reused round-robin. At close, each probe's slot becomes an observed ΔQ (engine) that
 * joins the probe's ring of the last W closed windows; the slot is cleared.
 *
 * One table per daemon, used from the loop thread only.
 */
#ifndef DQ_PROBES_H
#define DQ_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "dq.h"

#define PROBES_NAME_MAX 255
#define PROBES_MAX_SLOTS 64 /* open windows per probe: lag ≤ 62 windows */
/* Prometheus buckets: le = 2^j ms for j = −6 … 12 (15.625 µs … 4.096 s), the widths a
 * probe's grid can have, fixed so that a dMax change never relabels counts. */
#define PROBES_HIST_BUCKETS 19

enum probe_status { PROBE_OK = 0, PROBE_FA = 1, PROBE_TO = 2 };

/* One closed window of a probe, as kept in its ring. */
struct probe_window {
    int64_t wid;           /* window index: [wid·P, (wid+1)·P) */
    uint64_t ok, fa, to;   /* instances by status */
    uint64_t out;          /* ok instances past the horizon (counted as lost) */
    double mean, variance; /* exact, over ok instances within the horizon, seconds */
    double min, max;       /* seconds; 0 when ok == 0 */
    struct dq *observed;   /* owned; NULL when the window had no instance */
    struct dq *calculated; /* owned; set by the caller after the diagram ran, or NULL */
};

/* An open window's histogram (internal to the table, exposed for the struct layout). */
struct probe_slot {
    int64_t wid; /* −1 when empty */
    uint64_t ok, fa, to, out;
    double sum, sumsq, min, max;
    uint32_t *counts; /* n entries */
};

struct probe {
    char name[PROBES_NAME_MAX + 1];
    size_t name_len;
    uint32_t hash;
    int index; /* position in the table, stable for the table's life */

    /* settings */
    int enabled;    /* dqd wants instances (a dMax was pushed) */
    int always_on;  /* enabled at start and never disabled by the adaptive loop */
    double dmax_ms; /* deadline pushed to wrappers */
    int dmax_set;   /* 1 once a dMax was configured or set (not the table default) */
    int k, n;       /* grid of the histograms: width 2^k ms, n bins, n·width ≥ dMax */
    double inv_width_ns;
    int has_qta;
    struct dq_qta qta;
    int in_diagram; /* a node of the loaded diagram carries this probe */

    /* open windows */
    struct probe_slot *slots; /* table->nslots entries */

    /* closed windows, newest at ring[(head + len − 1) % cap] */
    struct probe_window *ring;
    int ring_head, ring_len, ring_cap;

    /* totals since start, for /metrics */
    uint64_t total_ok, total_fa, total_to, late, total_out;
    double total_sum;                   /* seconds, ok instances */
    uint64_t hist[PROBES_HIST_BUCKETS]; /* per bucket (not cumulative) */
};

struct probe_table {
    struct probe **probes; /* count entries */
    size_t count, cap;     /* cap = the maximum number of probes */
    int32_t *index;        /* open addressing: probe index or −1; index_size slots */
    size_t index_size;
    int64_t window_ns, lag_ns;
    int nslots;   /* open windows per probe */
    int ring_cap; /* closed windows per probe (W) */
    int default_k, default_n;
    double default_dmax_ms;
    int64_t next_close; /* the oldest window not yet closed */
    /* the window of the last recorded END, so binning needs no division while END stays
     * in it: [cur_lo, cur_lo + window_ns) is window cur_wid, in slot cur_slot. The
     * zeroed table holds window 0 in slot 0, which is correct too. */
    int64_t cur_lo, cur_wid;
    int cur_slot;
    /* the probe last seen per low bits of the name hash: a hit saves the index probe
     * (probes are never removed, so an entry never dangles) */
    struct probe *recent[64];
    uint64_t scratch[DQ_MAX_BINS]; /* counts widened for the engine at close */
    /* rejected instances */
    uint64_t late;   /* END in a window already closed */
    uint64_t future; /* END too far ahead to have an open window */
    uint64_t full;   /* a new name but the table is full */
};

/*
 * Initialises a table for at most `max_probes` probes with windows of window_ns, closed
 * lag_ns after their end, rings of ring_cap closed windows, and the default grid for
 * probes that get no dMax of their own. `now_ns` sets the first window to close.
 * DQ_EINVAL / DQ_ERANGE on bad sizes, DQ_ENOMEM.
 */
int probes_init(struct probe_table *t, size_t max_probes, int64_t window_ns, int64_t lag_ns,
                int ring_cap, double default_dmax_ms, int default_bins, int64_t now_ns);

/* Releases every probe and ΔQ of the table. Safe on a zeroed or failed table. */
void probes_release(struct probe_table *t);

/* The probe called name, or NULL. */
struct probe *probes_find(struct probe_table *t, const char *name, size_t len);

/*
 * The probe called name, registered with the default settings when new. DQ_EINVAL for an
 * invalid name, DQ_EFULL when the table is full (counted in t->full), DQ_ENOMEM.
 */
int probes_get(struct probe_table *t, const char *name, size_t len, struct probe **out);

/*
 * Records one instance. Finds or registers the probe, bins the duration end − start
 * into the window of end_ns (a timeout with end_ns 0, as old oscilloscope wrappers send
 * it, ends at start + the probe's dMax). Returns 0, or a negative code when the instance was not
 * recorded: DQ_ESTATE for a late or too-future window (counted in t->late / t->future and
 * per probe), DQ_EFULL / DQ_EINVAL from probes_get. Does not allocate unless the probe
 * is new.
 */
int probes_record(struct probe_table *t, const char *name, size_t len, int64_t start_ns,
                  int64_t end_ns, enum probe_status status);

/* probes_record() for a caller that has the name's hash already: hash must be
 * proto_name_hash(name, len) (the parser returns it as msg->name_hash). */
int probes_record_hashed(struct probe_table *t, const char *name, size_t len, uint64_t hash,
                         int64_t start_ns, int64_t end_ns, enum probe_status status);

/*
 * Changes a probe's deadline and bins (bins 0 keeps the current count). The grid is
 * the finest power-of-two width whose `bins` bins cover dmax_ms (at most DQ_MAX_BINS).
 * Open windows are cleared (their instances were binned on the old grid). DQ_ERANGE for
 * a dMax the grid cannot hold.
 */
int probes_set_dmax(struct probe_table *t, struct probe *p, double dmax_ms, int bins);

/* The grid for a deadline and a bin count (see probes_set_dmax). */
int probes_grid(double dmax_ms, int bins, int *k, int *n);

/* The window index of a time and its bounds. */
int64_t probes_window_of(const struct probe_table *t, int64_t ns);

/*
 * Closes window `wid` for every probe (wid must be t->next_close): each probe with
 * instances in it gets a new ring entry with its observed ΔQ; then t->next_close
 * advances. Returns 0 or DQ_ENOMEM (the window is closed anyway; the ΔQs that could not
 * be built are missing).
 */
int probes_close_window(struct probe_table *t, int64_t wid);

/* The ring entry `back` windows before the newest (0 = newest) of p, or NULL. */
struct probe_window *probes_ring_get(struct probe *p, int back);

/* 1 when p's newest ring entry is for window wid. */
int probes_has_window(struct probe *p, int64_t wid);

/* Upper edge in seconds of Prometheus bucket j (0 … PROBES_HIST_BUCKETS − 1). */
double probes_bucket_le(int j);

#endif /* DQ_PROBES_H */
