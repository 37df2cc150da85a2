/*
 * core_change.c: every change to a probe (see core.h, "changes to probes"): recorded in the
 * store first, then applied in memory and handed to the sources; the tracer's state lines;
 * a person's update of a probe's settings as one change; deleting a probe.
 */
#include "core_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dq_error.h"
#include "log.h"

/* ---- changes ------------------------------------------------------------------------------ */

static const char *cmd_name(enum wire_cmd_kind k) {
    switch (k) {
    case WIRE_CMD_START_STUB:
        return "start_stub";
    case WIRE_CMD_STOP_STUB:
        return "stop_stub";
    case WIRE_CMD_SET_TIMEOUT:
        return "set_timeout";
    case WIRE_CMD_CLEAR_TIMEOUT:
        return "clear_timeout";
    case WIRE_CMD_TRACE:
        return "trace";
    default:
        return "sync";
    }
}

/* The dMax and bin count the probe has once the change is applied. */
static void change_grid(const struct core_change *ch, double *dmax_ms, int *n) {
    const struct probe *p = ch->probe;
    *dmax_ms = p->dmax_ms;
    *n = p->n;
    if (ch->kind == CORE_RANGE) {
        *dmax_ms = ldexp(1.0, ch->range_k) * p->n;
    } else if (ch->kind == CORE_ENABLE && ch->dmax_ms > 0) {
        int k, nn;
        if (probes_grid(ch->dmax_ms, ch->bins > 0 ? ch->bins : p->n, &k, &nn) == DQ_OK) {
            *dmax_ms = ch->dmax_ms;
            *n = nn;
        }
    }
}

struct wire_cmd core_enable_cmd(const struct probe *p, double ms) {
    struct wire_cmd cmd = {.kind = WIRE_CMD_SET_TIMEOUT, .name = {p->name, p->name_len}, .ms = ms};
    if (p->mfa[0]) {
        cmd.kind = WIRE_CMD_TRACE;
        cmd.mfa.p = p->mfa;
        cmd.mfa.n = strlen(p->mfa);
    }
    return cmd;
}

int core_bind_probe(struct core *c, struct probe *p, const char *mfa) {
    (void)c;
    size_t n = mfa ? strlen(mfa) : 0;
    const char *why = n > 0 ? wire_mfa_check(mfa, n) : NULL;
    if (why) {
        char shown[160];
        return dq_fail(DQ_EINVAL, "probe %s: \"%s\" is not a function MOD:FUN/ARITY: %s", p->name,
                       wire_escape(shown, sizeof shown, mfa, n), why);
    }
    memcpy(p->mfa, mfa ? mfa : "", n + 1);
    return DQ_OK;
}

/* The value of NAME in a validated tracer list of a state line ("" slice: absent). */
static struct wire_slice trace_value(struct wire_slice list, const struct probe *p) {
    struct wire_slice it = list, k, v;
    while (wire_kv_next(&it, &k, &v) == 1) {
        if (k.n == p->name_len && memcmp(k.p, p->name, k.n) == 0) {
            return v;
        }
    }
    return (struct wire_slice){0};
}

static uint64_t slice_u64(struct wire_slice v) {
    uint64_t x = 0;
    for (size_t i = 0; i < v.n; i++) {
        x = x * 10 + (uint64_t)(v.p[i] - '0');
    }
    return x;
}

void core_trace_state(struct core *c, uint64_t link, const struct wire_msg *m) {
    struct probe_table *t = &c->probes;
    for (size_t i = 0; i < t->count; i++) {
        struct probe *p = t->probes[i];
        struct wire_slice installed = trace_value(m->traced, p);
        struct wire_slice refused = trace_value(m->trefused, p);
        if (!p->mfa[0] && !installed.n && !refused.n) {
            continue;
        }
        struct probe_trace *tr = &p->trace;
        int j = 0;
        while (j < tr->n_per && tr->per[j].link != link) {
            j++;
        }
        if (j == tr->n_per) {
            if (!installed.n && !refused.n) {
                continue; /* nothing to say for this connection */
            }
            if (tr->n_per < PROBES_TRACE_LINKS) {
                tr->n_per++;
            } else {
                j = PROBES_TRACE_LINKS - 1; /* the last slot is shared by the rest */
            }
            memset(&tr->per[j], 0, sizeof tr->per[j]);
            tr->per[j].link = link;
        }
        struct probe_trace_link *pl = &tr->per[j];
        if (installed.n && !pl->installed) {
            LOG(LOG_INFO, "probe %s: the wrapper on link %" PRIu64 " traces %.*s", p->name, link,
                (int)installed.n, installed.p);
        }
        pl->installed = installed.n > 0;
        struct wire_slice v = trace_value(m->tcalls, p);
        if (v.n || !pl->installed) {
            pl->calls = v.n ? slice_u64(v) : pl->calls;
        }
        v = trace_value(m->tdropped, p);
        pl->dropped = v.n ? slice_u64(v) : pl->dropped;
        v = trace_value(m->sampling, p);
        pl->keep = 1.0;
        if (v.n) { /* validated by the parser: 0 … 1 with at most 9 decimals */
            char num[16];
            size_t n = v.n < sizeof num - 1 ? v.n : sizeof num - 1;
            memcpy(num, v.p, n);
            num[n] = '\0';
            pl->keep = strtod(num, NULL);
        }
        if (refused.n) {
            char why[sizeof tr->refused];
            size_t n = refused.n < sizeof why - 1 ? refused.n : sizeof why - 1;
            memcpy(why, refused.p, n);
            why[n] = '\0';
            if (strcmp(why, tr->refused) != 0) {
                LOG(LOG_WARN,
                    "probe %s: the wrapper on link %" PRIu64 " does not trace %s: %s (see "
                    "docs/tracing.md)",
                    p->name, link, p->mfa[0] ? p->mfa : "its function", why);
                memcpy(tr->refused, why, n + 1);
            }
        }
    }
}

void core_trace_sum(const struct probe *p, struct core_trace_sum *out) {
    memset(out, 0, sizeof *out);
    out->keep = 1.0;
    for (int j = 0; j < p->trace.n_per; j++) {
        const struct probe_trace_link *pl = &p->trace.per[j];
        out->installed += pl->installed;
        out->calls += pl->calls;
        out->dropped += pl->dropped;
        if (pl->installed && pl->keep < out->keep) {
            out->keep = pl->keep;
        }
    }
}

/* The command a change sends (name and dMax point into the probe / the arguments). */
static struct wire_cmd change_cmd(const struct core_change *ch) {
    struct wire_cmd cmd = {0};
    switch (ch->kind) {
    case CORE_START:
        cmd.kind = WIRE_CMD_START_STUB;
        break;
    case CORE_STOP:
        cmd.kind = WIRE_CMD_STOP_STUB;
        break;
    case CORE_DISABLE:
        cmd.kind = WIRE_CMD_CLEAR_TIMEOUT;
        break;
    default:
        cmd.kind = WIRE_CMD_SET_TIMEOUT;
        break;
    }
    if (ch->probe) {
        cmd.name.p = ch->probe->name;
        cmd.name.n = ch->probe->name_len;
        int n;
        change_grid(ch, &cmd.ms, &n);
        if (cmd.kind == WIRE_CMD_SET_TIMEOUT) {
            cmd = core_enable_cmd(ch->probe, cmd.ms);
        }
    }
    return cmd;
}

int core_change_needed(const struct core_change *ch) {
    if (ch->kind == CORE_ENABLE) {
        return ch->probe && !ch->probe->enabled;
    }
    if (ch->kind == CORE_DISABLE) {
        return ch->probe && ch->probe->enabled;
    }
    return 1;
}

/* A destination's commands-row status and detail (NULL: none). */
static const char *sent_status(const struct core_sent *s) {
    return s->applicable == CORE_DEST_SEND          ? "sent"
           : s->applicable == CORE_DEST_NOT_APPLIED ? "not_applied"
           : s->applicable == CORE_DEST_AMBIGUOUS   ? "ambiguous"
                                                    : "failed";
}

static const char *sent_detail(const struct core_sent *s) {
    if (s->applicable < 0) {
        return "the wrapper link is not writable (closed, or not reading)";
    }
    if (s->detail[0]) {
        return s->detail;
    }
    if (s->applicable == CORE_DEST_NOT_APPLIED) {
        return s->reason ? s->reason : "this wrapper link cannot carry the command";
    }
    return NULL;
}

/* Lists every destination of every source into ch->sent. */
static int list_destinations(struct core *c, struct core_change *ch, const struct wire_cmd *cmd) {
    size_t total = 0;
    struct core_dest one;
    for (int i = 0; i < c->n_sources; i++) {
        if (c->sources[i].ops->destinations) {
            total += c->sources[i].ops->destinations(c->sources[i].src, cmd, &one, 0);
        }
    }
    free(ch->sent);
    ch->sent = NULL;
    ch->n_sent = 0;
    ch->n_not_applied = 0;
    ch->n_ambiguous = 0;
    if (total == 0) {
        return DQ_OK;
    }
    struct core_dest *dests = calloc(total, sizeof *dests);
    ch->sent = calloc(total, sizeof *ch->sent);
    if (!dests || !ch->sent) {
        free(dests);
        free(ch->sent);
        ch->sent = NULL;
        return dq_fail(DQ_ENOMEM, "no memory to list %zu wrapper links", total);
    }
    for (int i = 0; i < c->n_sources && ch->n_sent < total; i++) {
        if (!c->sources[i].ops->destinations) {
            continue;
        }
        size_t n =
            c->sources[i].ops->destinations(c->sources[i].src, cmd, dests, total - ch->n_sent);
        for (size_t j = 0; j < n && ch->n_sent < total; j++) {
            struct core_sent *s = &ch->sent[ch->n_sent++];
            s->source = i;
            s->dest = dests[j].id;
            s->applicable = dests[j].applicable;
            s->reason = dests[j].reason;
            ch->n_not_applied += s->applicable == CORE_DEST_NOT_APPLIED;
            ch->n_ambiguous += s->applicable == CORE_DEST_AMBIGUOUS;
            memcpy(s->label, dests[j].label, sizeof s->label);
            s->label[sizeof s->label - 1] = '\0';
            memcpy(s->detail, dests[j].detail, sizeof s->detail);
            s->detail[sizeof s->detail - 1] = '\0';
        }
    }
    free(dests);
    return DQ_OK;
}

/* An event of the store's log that marks a change to a probe on the dashboard's time
 * charts ("probe_enabled", "probe_disabled", "probe_dmax"); a failure is counted. */
static int probe_event(struct core *c, const char *kind, const struct probe *p,
                       const char *detail) {
    struct store_event ev = {.kind = kind, .probe = p->name, .detail_json = detail};
    int rc = store_event_add(c->store, &ev, NULL);
    if (rc) {
        c->store_errors++;
    }
    return rc;
}

int core_change_record(struct core *c, struct core_change *ch) {
    if (ch->kind != CORE_START && ch->kind != CORE_STOP && !ch->probe) {
        return dq_fail(DQ_EINVAL, "a probe change needs a probe");
    }
    struct wire_cmd cmd = change_cmd(ch);
    int rc = list_destinations(c, ch, &cmd);
    ch->recorded = 1;
    if (rc) {
        return rc;
    }
    int result = DQ_OK;
    if (ch->probe) {
        double dmax;
        int n;
        change_grid(ch, &dmax, &n);
        int enabled = ch->kind == CORE_ENABLE    ? 1
                      : ch->kind == CORE_DISABLE ? 0
                                                 : ch->probe->enabled;
        int chosen = ch->probe->chosen; /* as core_change_apply will make it, for the row */
        ch->probe->chosen = ch->kind == CORE_ENABLE || (chosen && ch->kind != CORE_DISABLE);
        result = core__save_row(c, ch->probe, enabled, dmax, n);
        ch->probe->chosen = chosen;
        if (enabled != ch->probe->enabled) {
            char detail[96];
            snprintf(detail, sizeof detail, "{\"dmax_ms\":%.9g,\"hypothesis\":%" PRId64 "}", dmax,
                     ch->hypothesis);
            int ev =
                probe_event(c, enabled ? "probe_enabled" : "probe_disabled", ch->probe, detail);
            result = result ? result : ev;
        }
    }
    char args[64 + 2 * WIRE_MAX_MFA] = "";
    if (cmd.kind == WIRE_CMD_SET_TIMEOUT) {
        snprintf(args, sizeof args, "{\"dmax_ms\":%.9g}", cmd.ms);
    } else if (cmd.kind == WIRE_CMD_TRACE) {
        /* a valid function is printable UTF-8: only a quoted atom's '"' and '\' need the
         * escape of a JSON string, and wire_escape gives them that */
        char f[2 * WIRE_MAX_MFA + 8];
        snprintf(args, sizeof args, "{\"dmax_ms\":%.9g,\"mfa\":\"%s\"}", cmd.ms,
                 wire_escape(f, sizeof f, cmd.mfa.p, cmd.mfa.n));
    }
    for (size_t i = 0; i < ch->n_sent; i++) {
        struct core_sent *s = &ch->sent[i];
        struct store_command row = {
            .wrapper = s->label,
            .command = cmd_name(cmd.kind),
            .probe = ch->probe ? ch->probe->name : NULL,
            .args_json = args[0] ? args : NULL,
            .hypothesis = ch->hypothesis,
            .status = sent_status(s),
            .detail = sent_detail(s),
        };
        rc = store_command_insert(c->store, &row, &s->row);
        if (rc) {
            c->store_errors++;
            s->row = 0;
            result = result ? result : rc;
        }
    }
    return result;
}

int core_change_apply(struct core *c, struct core_change *ch) {
    if (ch->probe && ch->kind == CORE_ENABLE && ch->dmax_ms > 0) {
        /* a dMax inherited by the adaptive loop: a start, not a pin */
        if (core__set_dmax(c, ch->probe, ch->dmax_ms, ch->bins, 0) != DQ_OK) {
            LOG(LOG_ERROR, "probe %s: dMax %g ms: %s", ch->probe->name, ch->dmax_ms,
                dq_last_error());
        }
    }
    if (ch->probe && ch->kind == CORE_RANGE) {
        if (probes_set_range(&c->probes, ch->probe, ch->range_k) != DQ_OK) {
            LOG(LOG_ERROR, "probe %s: auto-range to 2^%d ms: %s", ch->probe->name, ch->range_k,
                dq_last_error());
        } else {
            core__sync_node_grid(c, ch->probe);
        }
    }
    if (ch->kind == CORE_ENABLE || ch->kind == CORE_DISABLE) {
        ch->probe->enabled = ch->kind == CORE_ENABLE;
        ch->probe->chosen = ch->kind == CORE_ENABLE;
    } else if (ch->kind == CORE_START || ch->kind == CORE_STOP) {
        c->running = ch->kind == CORE_START;
    }
    struct wire_cmd cmd = {0};
    cmd = change_cmd(ch);
    if (ch->probe) {
        cmd.ms = ch->probe->dmax_ms; /* what the probe has now, after core_set_dmax */
    }
    int sent = 0;
    for (size_t i = 0; i < ch->n_sent; i++) {
        struct core_sent *s = &ch->sent[i];
        if (s->applicable != CORE_DEST_SEND || s->source >= c->n_sources) {
            continue;
        }
        const struct source *src = &c->sources[s->source];
        if (src->ops->send(src->src, s->dest, &cmd, s->row) == DQ_OK) {
            sent++;
        } else {
            s->applicable = -1; /* failed: the report says so */
            if (s->row > 0 &&
                store_command_set_status(c->store, s->row, "failed",
                                         "the wrapper link is not writable (closed, or not "
                                         "reading)") != DQ_OK) {
                c->store_errors++;
            }
        }
    }
    if (ch->report) {
        for (size_t i = 0; i < ch->n_sent; i++) {
            const struct core_sent *s = &ch->sent[i];
            json_array_append_new(ch->report,
                                  json_pack("{s:s,s:s,s:s,s:o,s:s?}", "link", s->label, "command",
                                            cmd_name(cmd.kind), "status", sent_status(s), "row",
                                            s->row > 0 ? json_integer(s->row) : json_null(),
                                            "detail", sent_detail(s)));
        }
    }
    if (ch->probe && (ch->kind == CORE_ENABLE || ch->kind == CORE_DISABLE)) {
        LOG(LOG_INFO, "probe %s %s (dMax %g ms), sent to %d wrapper(s)", ch->probe->name,
            ch->kind == CORE_ENABLE ? "enabled" : "disabled", ch->probe->dmax_ms, sent);
    }
    if (ch->probe) {
        core__tell(c, ch->probe,
                   ch->kind == CORE_ENABLE    ? "enable"
                   : ch->kind == CORE_DISABLE ? "disable"
                                              : "dmax");
    }
    return sent;
}

void core_change_release(struct core_change *ch) {
    free(ch->sent);
    ch->sent = NULL;
    ch->n_sent = 0;
    ch->recorded = 0;
}

int core_change_now(struct core *c, struct core_change *ch) {
    if (!core_change_needed(ch)) {
        return 0;
    }
    int own = !store_in_transaction(c->store);
    if (own && store_begin(c->store) != DQ_OK) {
        c->store_errors++;
        LOG(LOG_ERROR, "store: %s; the change is not made", dq_last_error());
        return dq_fail(DQ_ESTORE, "the store cannot record the change (%s): it is not made",
                       dq_last_error());
    }
    int rc = core_change_record(c, ch);
    if (rc != DQ_OK && own) {
        /* a change the store did not take would be gone after a restart: not made */
        char why[256];
        snprintf(why, sizeof why, "%s", dq_last_error());
        store_rollback(c->store);
        core_change_release(ch);
        LOG(LOG_ERROR, "store: %s; the change is not made", why);
        return dq_fail(rc == DQ_ENOMEM ? DQ_ENOMEM : DQ_ESTORE,
                       "the store cannot record the change (%s): it is not made", why);
    }
    if (rc == DQ_ENOMEM) {
        core_change_release(ch);
        return rc;
    }
    if (own && store_commit(c->store) != DQ_OK) {
        c->store_errors++;
        char why[256];
        snprintf(why, sizeof why, "%s", dq_last_error());
        core_change_release(ch); /* store_commit rolled back */
        LOG(LOG_ERROR, "store: %s; the change is not made", why);
        return dq_fail(DQ_ESTORE, "the store cannot record the change (%s): it is not made", why);
    }
    int sent = core_change_apply(c, ch);
    core_change_release(ch);
    return sent;
}

/* ---- a person's update of a probe ------------------------------------------------------- */

/* What an update may change, as it was before. */
struct probe_before {
    double dmax_ms;
    int n, dmax_set, auto_range;
    int has_qta;
    struct dq_qta qta;
    int servers;
};

/* Records an update whose settings are in memory already, in one transaction (unless the
 * caller has one open): the probe's row (or the set_timeout that writes it), its servers,
 * the enable or disable. *step names the setting whose write failed. */
static int record_update(struct core *c, struct probe *p, const struct core_probe_update *u,
                         const struct probe_before *was, struct core_change *resend,
                         struct core_change *onoff, const char **step) {
    int own = !store_in_transaction(c->store);
    *step = "the store";
    if (own && store_begin(c->store) != DQ_OK) {
        c->store_errors++;
        return DQ_ESTORE;
    }
    *step = u->has_grid ? "dMax" : u->has_qta ? "QTA" : "the probe";
    int rc =
        resend ? core_change_record(c, resend) : core__save_row(c, p, p->enabled, p->dmax_ms, p->n);
    if (!rc && u->has_grid && (was->dmax_ms != p->dmax_ms || was->n != p->n)) {
        char detail[128];
        snprintf(detail, sizeof detail, "{\"old_dmax_ms\":%.9g,\"dmax_ms\":%.9g,\"bins\":%d}",
                 was->dmax_ms, p->dmax_ms, p->n);
        rc = probe_event(c, "probe_dmax", p, detail);
    }
    if (!rc && u->has_servers) {
        *step = "servers";
        rc = store_probe_set_servers(c->store, p->name, p->servers);
        if (rc) {
            c->store_errors++;
        }
    }
    if (!rc && onoff) {
        *step = "enabled";
        rc = core_change_record(c, onoff);
    }
    if (own && rc) {
        char why[256];
        snprintf(why, sizeof why, "%s", dq_last_error());
        store_rollback(c->store);
        dq_fail(rc, "%s", why); /* the rollback's own message would hide why */
    } else if (own && store_commit(c->store) != DQ_OK) {
        c->store_errors++;
        *step = "the commit";
        rc = DQ_ESTORE;
    }
    return rc;
}

/* Puts back what an update changed in memory. */
static void update_undo(struct core *c, struct probe *p, const struct probe_before *was,
                        const struct core_probe_update *u) {
    if (u->has_grid && core__set_dmax(c, p, was->dmax_ms, was->n, 0) != DQ_OK) {
        LOG(LOG_ERROR, "probe %s: the grid could not go back to dMax %g ms: %s", p->name,
            was->dmax_ms, dq_last_error());
    }
    p->dmax_set = was->dmax_set;
    p->auto_range = was->auto_range;
    p->has_qta = was->has_qta;
    p->qta = was->qta;
    p->servers = was->servers;
}

int core_update_probe(struct core *c, struct probe *p, const struct core_probe_update *u,
                      int *commanded) {
    struct probe_before was = {p->dmax_ms, p->n,   p->dmax_set, p->auto_range,
                               p->has_qta, p->qta, p->servers};
    if (commanded) {
        *commanded = 0;
    }
    if (u->has_grid) {
        int rc = core__set_dmax(c, p, u->dmax_ms > 0 ? u->dmax_ms : p->dmax_ms, u->bins, 0);
        if (rc) {
            return rc; /* probes_set_dmax left the grid as it was */
        }
        p->auto_range = 0; /* a person's dMax pins the probe */
    }
    if (u->has_qta) {
        p->has_qta = u->qta_set;
        p->qta = u->qta_set ? u->qta : p->qta;
    }
    if (u->has_servers) {
        p->servers = u->servers;
    }
    struct core_change resend = {.kind = CORE_RESEND, .probe = p, .report = u->report};
    struct core_change onoff = {
        .kind = u->enabled ? CORE_ENABLE : CORE_DISABLE, .probe = p, .report = u->report};
    int do_resend = u->has_grid && p->enabled;
    int do_onoff = u->has_enabled && core_change_needed(&onoff);
    const char *step = "";
    int rc =
        record_update(c, p, u, &was, do_resend ? &resend : NULL, do_onoff ? &onoff : NULL, &step);
    if (rc) {
        char why[256];
        snprintf(why, sizeof why, "%s", dq_last_error());
        update_undo(c, p, &was, u);
        core_change_release(&resend);
        core_change_release(&onoff);
        LOG(LOG_ERROR, "store: probe %s: %s: %s; the change is not made", p->name, step, why);
        return dq_fail(rc == DQ_ENOMEM ? DQ_ENOMEM : DQ_ESTORE, "%s: %s", step, why);
    }
    if (do_resend) {
        core_change_apply(c, &resend); /* tells "dmax" */
    } else if (u->has_grid) {
        core__tell(c, p, "dmax");
    }
    if (u->has_qta) {
        core__tell(c, p, "qta");
    }
    if (do_onoff) {
        core_change_apply(c, &onoff);
    }
    core_change_release(&resend);
    core_change_release(&onoff);
    if (commanded) {
        *commanded = do_resend || do_onoff;
    }
    return DQ_OK;
}

/* ---- deleting a probe ---------------------------------------------------------------------- */

int core_delete_probe(struct core *c, struct probe *p, json_t *report) {
    if (p->in_diagram) {
        return dq_fail(DQ_ESTATE,
                       "%s is a node of the loaded diagram: it would be registered again at the "
                       "next diagram load; remove it from the diagram first",
                       p->name);
    }
    if (p->enabled) {
        struct core_change ch = {.kind = CORE_DISABLE, .probe = p, .report = report};
        int rc = core_change_now(c, &ch);
        if (rc < 0) {
            return rc;
        }
    }
    int rc = store_probe_delete(c->store, p->name);
    if (rc != DQ_OK && rc != DQ_ENOTFOUND) {
        c->store_errors++;
        return dq_fail(DQ_ESTORE, "store: deleting probe %s: %s", p->name, dq_last_error());
    }
    LOG(LOG_INFO, "probe %s deleted", p->name);
    core__tell(c, p, "delete");
    return probes_remove(&c->probes, p);
}
