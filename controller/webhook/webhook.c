/*
 * webhook.c: libcurl multi on libuv (see webhook.h). curl tells us which sockets to
 * watch (CURLMOPT_SOCKETFUNCTION) and when to call it back (CURLMOPT_TIMERFUNCTION); we
 * map those onto uv_poll_t handles and one uv_timer_t, and a second timer wakes queued
 * retries. Every handle is freed in its close callback.
 */
#include "webhook.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dq_error.h"
#include "log.h"

#define WEBHOOK_MAX_INFLIGHT 4
#define WEBHOOK_BACKOFF_MS 250
#define WEBHOOK_BACKOFF_MAX_MS 30000

struct job {
    struct job *next;
    int hook;            /* index into hooks */
    char *body;          /* JSON text */
    int attempts;        /* made so far */
    uint64_t not_before; /* uv_now() of the next attempt */
    CURL *easy;          /* while in flight */
    struct curl_slist *headers;
};

struct poll_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    struct webhooks *w;
};

struct webhooks {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t curl_timer;  /* curl's own timeouts */
    uv_timer_t retry_timer; /* the next queued attempt */
    struct dqd_webhook_config *hooks;
    int n_hooks;
    int queue_cap, retries;
    long timeout_ms;
    struct job *head, *tail; /* FIFO: waiting and in-flight jobs */
    int queued_now, inflight;
    struct webhook_stats st;
    int closing, open_handles;
    void (*done)(void *);
    void *done_arg;
};

static void job_free(struct job *j) {
    if (!j) {
        return;
    }
    curl_slist_free_all(j->headers);
    free(j->body);
    free(j);
}

static void maybe_finish(struct webhooks *w) {
    if (!w->closing || w->open_handles > 0) {
        return;
    }
    curl_multi_cleanup(w->multi);
    void (*done)(void *) = w->done;
    void *arg = w->done_arg;
    free(w->hooks);
    free(w);
    if (done) {
        done(arg);
    }
}

static void on_handle_closed(uv_handle_t *h) {
    struct webhooks *w = h->data;
    if (h->type == UV_POLL) {
        free(h);
    }
    w->open_handles--;
    maybe_finish(w);
}

static void on_poll_closed(uv_handle_t *h) {
    struct poll_ctx *pc = h->data;
    struct webhooks *w = pc->w;
    free(pc);
    w->open_handles--;
    maybe_finish(w);
}

static void kick(struct webhooks *w);

/* Removes a finished job from the queue. */
static void unlink_job(struct webhooks *w, struct job *j) {
    struct job **pp = &w->head;
    struct job *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = j->next;
        if (w->tail == j) {
            w->tail = prev;
        }
        w->queued_now--;
    }
}

static void check_done(struct webhooks *w) {
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(w->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        CURL *easy = msg->easy_handle;
        struct job *j = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&j);
        long code = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        CURLcode result = msg->data.result; /* msg goes with the easy handle below */
        int ok = result == CURLE_OK && code >= 200 && code < 300;
        curl_multi_remove_handle(w->multi, easy);
        curl_easy_cleanup(easy);
        w->inflight--;
        if (!j) {
            continue;
        }
        j->easy = NULL;
        curl_slist_free_all(j->headers);
        j->headers = NULL;
        j->attempts++;
        if (ok) {
            w->st.delivered++;
            unlink_job(w, j);
            job_free(j);
        } else if (j->attempts > w->retries) {
            w->st.failed++;
            /* the hook by its place in the config: a URL may carry credentials */
            LOG(LOG_WARN, "webhook %d: an event given up after %d attempts (last: %s, HTTP %ld)",
                j->hook + 1, j->attempts,
                result == CURLE_OK ? "answered" : curl_easy_strerror(result), code);
            unlink_job(w, j);
            job_free(j);
        } else {
            w->st.retried++;
            int shift = j->attempts - 1 < 16 ? j->attempts - 1 : 16; /* past the cap anyway */
            uint64_t backoff = (uint64_t)WEBHOOK_BACKOFF_MS << shift;
            j->not_before = uv_now(w->loop) +
                            (backoff > WEBHOOK_BACKOFF_MAX_MS ? WEBHOOK_BACKOFF_MAX_MS : backoff);
        }
    }
    kick(w);
}

static void on_poll(uv_poll_t *h, int status, int events) {
    struct poll_ctx *pc = h->data;
    int flags = 0;
    if (status < 0) {
        flags = CURL_CSELECT_ERR;
    }
    if (events & UV_READABLE) {
        flags |= CURL_CSELECT_IN;
    }
    if (events & UV_WRITABLE) {
        flags |= CURL_CSELECT_OUT;
    }
    int running;
    curl_multi_socket_action(pc->w->multi, pc->fd, flags, &running);
    check_done(pc->w);
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
    (void)easy;
    struct webhooks *w = userp;
    struct poll_ctx *pc = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (pc) {
            uv_poll_stop(&pc->poll);
            curl_multi_assign(w->multi, fd, NULL);
            uv_close((uv_handle_t *)&pc->poll, on_poll_closed);
        }
        return 0;
    }
    if (!pc) {
        pc = calloc(1, sizeof *pc);
        if (!pc) {
            return -1;
        }
        pc->fd = fd;
        pc->w = w;
        if (uv_poll_init_socket(w->loop, &pc->poll, fd) != 0) {
            free(pc);
            return -1;
        }
        pc->poll.data = pc;
        w->open_handles++;
        curl_multi_assign(w->multi, fd, pc);
    }
    int events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) {
        events |= UV_READABLE;
    }
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) {
        events |= UV_WRITABLE;
    }
    uv_poll_start(&pc->poll, events, on_poll);
    return 0;
}

static void on_curl_timer(uv_timer_t *t) {
    struct webhooks *w = t->data;
    int running;
    curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(w);
}

static int on_timer_request(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    struct webhooks *w = userp;
    if (w->closing) {
        return 0;
    }
    if (timeout_ms < 0) {
        uv_timer_stop(&w->curl_timer);
    } else {
        uv_timer_start(&w->curl_timer, on_curl_timer, (uint64_t)timeout_ms, 0);
    }
    return 0;
}

static void on_retry_timer(uv_timer_t *t) {
    kick(t->data);
}

/* Starts due jobs (oldest first, one per hook at a time) and arms the retry timer. */
static void kick(struct webhooks *w) {
    if (w->closing) {
        return;
    }
    uint64_t now = uv_now(w->loop), next = UINT64_MAX;
    unsigned char busy[DQD_MAX_WEBHOOKS] = {0};
    for (struct job *j = w->head; j; j = j->next) {
        if (j->easy) {
            busy[j->hook] = 1;
        }
    }
    for (struct job *j = w->head; j && w->inflight < WEBHOOK_MAX_INFLIGHT; j = j->next) {
        if (j->easy || busy[j->hook]) {
            continue;
        }
        busy[j->hook] = 1; /* later events to the same URL wait for this one */
        if (j->not_before > now) {
            next = j->not_before < next ? j->not_before : next;
            continue;
        }
        CURL *easy = curl_easy_init();
        if (!easy) {
            break;
        }
        j->headers = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(easy, CURLOPT_URL, w->hooks[j->hook].url);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, j->body);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(j->body));
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, j->headers);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, w->timeout_ms);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *)j);
        curl_easy_setopt(easy, CURLOPT_USERAGENT, "dqd-webhook/0.1");
        curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
        if (curl_multi_add_handle(w->multi, easy) != CURLM_OK) {
            curl_easy_cleanup(easy);
            break;
        }
        j->easy = easy;
        w->inflight++;
    }
    if (next != UINT64_MAX) {
        uv_timer_start(&w->retry_timer, on_retry_timer, next - now, 0);
    }
}

int webhooks_create(uv_loop_t *loop, const struct dqd_webhook_config *hooks, int n, int queue_cap,
                    int retries, int64_t timeout_ms, struct webhooks **out) {
    if (!loop || !out || n < 0 || n > DQD_MAX_WEBHOOKS || queue_cap < 1 || retries < 0 ||
        timeout_ms < 1) {
        return dq_fail(DQ_EINVAL, "webhooks: bad sizes");
    }
    static int curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            return dq_fail(DQ_ENET, "libcurl cannot be initialised");
        }
        curl_ready = 1;
    }
    struct webhooks *w = calloc(1, sizeof *w);
    if (!w) {
        return dq_fail(DQ_ENOMEM, "no memory for webhooks");
    }
    w->hooks = calloc((size_t)(n ? n : 1), sizeof *w->hooks);
    w->multi = curl_multi_init();
    if (!w->hooks || !w->multi) {
        curl_multi_cleanup(w->multi);
        free(w->hooks);
        free(w);
        return dq_fail(DQ_ENOMEM, "no memory for webhooks");
    }
    memcpy(w->hooks, hooks, sizeof *w->hooks * (size_t)n);
    w->n_hooks = n;
    w->loop = loop;
    w->queue_cap = queue_cap;
    w->retries = retries;
    w->timeout_ms = (long)timeout_ms;
    uv_timer_init(loop, &w->curl_timer);
    uv_timer_init(loop, &w->retry_timer);
    w->curl_timer.data = w->retry_timer.data = w;
    w->open_handles = 2;
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_timer_request);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
    *out = w;
    return DQ_OK;
}

void webhooks_emit(struct webhooks *w, unsigned event_bit, const char *event, json_t *payload) {
    if (!w || w->closing) {
        json_decref(payload);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    json_t *doc = json_pack("{s:s,s:f,s:o}", "event", event, "time", now, "data",
                            payload ? payload : json_null());
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!body) {
        return;
    }
    for (int i = 0; i < w->n_hooks; i++) {
        if (w->hooks[i].events && !(w->hooks[i].events & event_bit)) {
            continue;
        }
        if (w->queued_now >= w->queue_cap) {
            /* drop the oldest job that is not in flight */
            struct job *victim = NULL;
            for (struct job *j = w->head; j && !victim; j = j->next) {
                victim = j->easy ? NULL : j;
            }
            if (!victim) {
                w->st.dropped++;
                LOG(LOG_WARN, "webhook %d: queue full (%d events): the new %s event is dropped",
                    i + 1, w->queue_cap, event);
                continue;
            }
            unlink_job(w, victim);
            job_free(victim);
            w->st.dropped++;
            LOG(LOG_WARN, "webhook queue full (%d events): the oldest event is dropped",
                w->queue_cap);
        }
        struct job *j = calloc(1, sizeof *j);
        char *copy = j ? strdup(body) : NULL;
        if (!copy) {
            free(j);
            w->st.dropped++;
            continue;
        }
        j->hook = i;
        j->body = copy;
        if (w->tail) {
            w->tail->next = j;
        } else {
            w->head = j;
        }
        w->tail = j;
        w->queued_now++;
        w->st.queued++;
    }
    free(body);
    kick(w);
}

void webhooks_get_stats(const struct webhooks *w, struct webhook_stats *st) {
    memset(st, 0, sizeof *st);
    if (w) {
        *st = w->st;
        st->pending = (uint64_t)w->queued_now;
    }
}

void webhooks_close(struct webhooks *w, void (*done)(void *arg), void *arg) {
    if (!w) {
        if (done) {
            done(arg);
        }
        return;
    }
    if (w->closing) {
        return;
    }
    while (w->head) {
        struct job *j = w->head;
        w->head = j->next;
        if (j->easy) {
            curl_multi_remove_handle(w->multi, j->easy); /* CURL_POLL_REMOVE closes polls */
            curl_easy_cleanup(j->easy);
        }
        job_free(j);
    }
    w->tail = NULL;
    w->queued_now = 0;
    w->closing = 1;
    w->done = done;
    w->done_arg = arg;
    uv_timer_stop(&w->curl_timer);
    uv_timer_stop(&w->retry_timer);
    uv_close((uv_handle_t *)&w->curl_timer, on_handle_closed);
    uv_close((uv_handle_t *)&w->retry_timer, on_handle_closed);
}
