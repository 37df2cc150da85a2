/*
 * bench_ingest: how fast dqd ingests legacy instance lines, against a plain sink.
 *
 * A load generator thread sends legacy lines (`n:NAME;b:START;e:END;s:STATUS`, a few
 * probe names, timestamps of now) over one loopback TCP connection as fast as the
 * receiver takes them, for N seconds per receiver (argument, default 5), to (a) a plain
 * sink thread that only reads and discards the bytes and (b) a dqd process started from
 * the build tree on ephemeral ports with a temporary store, in three alternating rounds
 * (sink, dqd, sink, dqd, …) so that both see the same moments of a shared machine; each
 * round uses a fresh connection and a short warm-up. Both receivers read 64 KiB at a
 * time, as dqd does. The sink's rate is the bytes it read converted to lines; dqd's is
 * read from its own /metrics (dqd_ingest_instances_total), i.e. what dqd parsed, not what
 * was sent. Rates are totals over the rounds; the per-round ratios are shown too. Prints
 * both rates, their ratio, dqd's peak memory (VmHWM), and PASS/MISS against issue 4's
 * targets (dqd ≥ 50 % of the sink, ≥ 2 million instances per second). Exits 0 unless the
 * benchmark itself could not run.
 *
 * run: build/tests/bench/bench_ingest [SECONDS]   (make bench runs it with no argument)
 */
#define _GNU_SOURCE /* CPU affinity: sched_setaffinity, pthread_setaffinity_np */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef DQD_BINARY
#define DQD_BINARY "controller/dqd"
#endif

#define READ_CHUNK 65536       /* the sink reads as much per call as dqd does */
#define GEN_BUFFER (1u << 20)  /* bytes of lines sent before the next timestamp refresh */
#define REFRESH_NS 200000000LL /* timestamps are refreshed every 200 ms: they stay "now" */
#define WARMUP_NS 500000000LL  /* before the measured interval */
#define TARGET_RATIO 0.5       /* issue 4: dqd at least half of the plain sink */
#define TARGET_RATE 2000000.0  /* issue 4: at least 2 million instances per second */
#define METRICS_MAX (4u << 20) /* bytes of a /metrics answer we accept */
#define ROUNDS 3               /* sink and dqd alternate this many times */

static const char *const probe_names[] = {"checkout", "payment", "search", "login"};
#define N_PROBES (sizeof probe_names / sizeof probe_names[0])

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/*
 * CPU placement, the same for both receivers. By default (with two or more CPUs) the
 * generator runs on CPU 0 and each receiver (the sink thread, the dqd process) on CPU 1,
 * as wrappers and dqd would run on different cores. Left to the scheduler the result
 * depended on where the sink landed: on the generator's CPU it reads the data cache-hot
 * and the loopback TCP work is charged to the generator (6–13 ns a line), on the other
 * CPU it pays for it (20–25 ns). BENCH_INGEST_CPUS=same puts everything on CPU 0,
 * =none leaves placement to the scheduler (the figures of docs/PERFORMANCE.md say which).
 */
enum placement { PLACE_NONE, PLACE_SEPARATE, PLACE_SAME };
static enum placement placement = PLACE_NONE;

static void pin_thread(int role) { /* role 0: generator, 1: receiver */
    if (placement != PLACE_NONE) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(placement == PLACE_SEPARATE ? role : 0, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
}

static const char *placement_name(void) {
    return placement == PLACE_SEPARATE ? "generator on CPU 0, receivers on CPU 1"
           : placement == PLACE_SAME   ? "generator and receivers on CPU 0"
                                       : "placement left to the scheduler";
}

/* ---- line generation ----------------------------------------------------------------- */

/* Writes v in decimal at p; returns the number of digits. */
static size_t put_u64(char *p, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) {
        p[i] = tmp[n - 1 - i];
    }
    return n;
}

static size_t put_str(char *p, const char *s) {
    size_t n = strlen(s);
    memcpy(p, s, n);
    return n;
}

/*
 * Fills buf with whole lines whose END is around `now` (ns) and durations of 1 … 50 ms,
 * statuses 97 % ok, 2 % fa, 1 % to. Returns the bytes written; *lines gets the count.
 */
static size_t fill_lines(char *buf, size_t cap, int64_t now, uint64_t *rng, uint64_t *lines) {
    size_t off = 0;
    uint64_t n = 0;
    while (off + 128 < cap) {
        uint64_t x = *rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *rng = x;
        int64_t end = now - (int64_t)(x % 1000000); /* within the last millisecond */
        int64_t dur = 1000000 + (int64_t)((x >> 20) % 49000000);
        unsigned st = (unsigned)((x >> 48) % 100);
        const char *status = st < 97 ? "ok" : (st < 99 ? "fa" : "to");
        off += put_str(buf + off, "n:");
        off += put_str(buf + off, probe_names[n % N_PROBES]);
        off += put_str(buf + off, ";b:");
        off += put_u64(buf + off, (uint64_t)(end - dur));
        off += put_str(buf + off, ";e:");
        off += put_u64(buf + off, (uint64_t)end);
        off += put_str(buf + off, ";s:");
        off += put_str(buf + off, status);
        buf[off++] = '\n';
        n++;
    }
    *lines = n;
    return off;
}

/* ---- sockets ---------------------------------------------------------------------------- */

static int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int listen_loopback(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- generator and sink threads ----------------------------------------------------------- */

struct generator {
    int port;
    atomic_int stop;
    atomic_uint_fast64_t lines_sent, bytes_sent;
    int error;
};

static void *generator_main(void *arg) {
    struct generator *g = arg;
    pin_thread(0);
    char *buf = malloc(GEN_BUFFER);
    int fd = buf ? connect_loopback(g->port) : -1;
    if (fd < 0) {
        g->error = 1;
        free(buf);
        return NULL;
    }
    uint64_t rng = 0x9e3779b97f4a7c15ULL, lines = 0;
    size_t len = fill_lines(buf, GEN_BUFFER, now_ns(), &rng, &lines);
    int64_t refreshed = mono_ns();
    while (!atomic_load_explicit(&g->stop, memory_order_relaxed)) {
        size_t off = 0;
        while (off < len) {
            ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                g->error = atomic_load(&g->stop) ? 0 : 1;
                goto out;
            }
            off += (size_t)n;
        }
        atomic_fetch_add_explicit(&g->lines_sent, lines, memory_order_relaxed);
        atomic_fetch_add_explicit(&g->bytes_sent, len, memory_order_relaxed);
        if (mono_ns() - refreshed > REFRESH_NS) {
            len = fill_lines(buf, GEN_BUFFER, now_ns(), &rng, &lines);
            refreshed = mono_ns();
        }
    }
out:
    close(fd);
    free(buf);
    return NULL;
}

struct sink {
    int listen_fd;
    atomic_uint_fast64_t bytes;
    atomic_int_fast64_t cpu_ns; /* the sink thread's CPU time so far */
};

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *sink_main(void *arg) {
    struct sink *s = arg;
    pin_thread(1);
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0) {
        return NULL;
    }
    char *buf = malloc(READ_CHUNK);
    for (;;) {
        ssize_t n = buf ? read(fd, buf, READ_CHUNK) : -1;
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        atomic_fetch_add_explicit(&s->bytes, (uint64_t)n, memory_order_relaxed);
        atomic_store_explicit(&s->cpu_ns, thread_cpu_ns(), memory_order_relaxed);
    }
    free(buf);
    close(fd);
    return NULL;
}

/* ---- dqd ---------------------------------------------------------------------------------- */

struct dqd_proc {
    pid_t pid;
    int ingest_port, http_port;
};

static int dqd_start(const char *binary, const char *dir, struct dqd_proc *p) {
    char db[512], log[512];
    snprintf(db, sizeof db, "%s/bench.db", dir);
    snprintf(log, sizeof log, "%s/dqd.log", dir);
    int out[2];
    if (pipe(out) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(out[1], STDOUT_FILENO);
        if (logfd >= 0) {
            dup2(logfd, STDERR_FILENO);
        }
        close(out[0]);
        pin_thread(1); /* the child's only thread: the whole dqd process */
        execl(binary, binary, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--db", db,
              "--log-level", "warn", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[256] = "";
    int ok = f && fgets(line, sizeof line, f) &&
             sscanf(line, "dqd ready ingest=%d http=%d", &p->ingest_port, &p->http_port) == 2;
    if (f) {
        fclose(f);
    }
    p->pid = pid;
    if (!ok) {
        fprintf(stderr, "bench_ingest: dqd did not start (see %s)\n", log);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return 0;
}

/* GET /metrics; returns a malloc'd NUL-terminated body or NULL. */
static char *http_get_metrics(int port) {
    int fd = connect_loopback(port);
    if (fd < 0) {
        return NULL;
    }
    static const char req[] =
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (send(fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return NULL;
    }
    char *buf = malloc(METRICS_MAX + 1);
    size_t len = 0;
    while (buf && len < METRICS_MAX) {
        ssize_t n = read(fd, buf + len, METRICS_MAX - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (buf) {
        buf[len] = '\0';
    }
    return buf;
}

/* Sum of the samples of a metric whose line starts with `prefix` (name plus labels). */
static double metric_sum(const char *text, const char *prefix) {
    double sum = 0.0;
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, prefix, n) == 0) {
            /* the value follows the line's last space */
            const char *eol = strchr(p, '\n');
            const char *v = eol ? eol : p + strlen(p);
            while (v > p && v[-1] != ' ') {
                v--;
            }
            sum += strtod(v, NULL);
        }
    }
    return sum;
}

static double dqd_metric(int port, const char *prefix) {
    char *text = http_get_metrics(port);
    double v = text ? metric_sum(text, prefix) : -1.0;
    free(text);
    return v;
}

/* CPU time (user + system) of a process so far, in seconds, from /proc/PID/stat. */
static double proc_cpu_s(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the command name, fields 3 ... */
    unsigned long long ut = 0, st = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) {
        return -1.0;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long vm_hwm_kib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
        }
    }
    if (f) {
        fclose(f);
    }
    return kib;
}

/* The dqd binary: the build tree's (compile definition), else next to this program's. */
static const char *find_dqd(char *buf, size_t cap) {
    if (access(DQD_BINARY, X_OK) == 0) {
        return DQD_BINARY;
    }
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n > 0) {
        buf[n] = '\0';
        char *slash = strrchr(buf, '/');
        if (slash) {
            snprintf(slash, cap - (size_t)(slash - buf), "/../../controller/dqd");
            if (access(buf, X_OK) == 0) {
                return buf;
            }
        }
    }
    return NULL;
}

/* ---- the two runs -------------------------------------------------------------------------- */

static double run_sink(double seconds, double lines_per_byte, double *mbps, double *cpu_s) {
    struct sink s = {.listen_fd = -1};
    int port = 0;
    s.listen_fd = listen_loopback(&port);
    atomic_init(&s.bytes, 0);
    atomic_init(&s.cpu_ns, 0);
    struct generator g = {.port = port};
    atomic_init(&g.stop, 0);
    atomic_init(&g.lines_sent, 0);
    atomic_init(&g.bytes_sent, 0);
    pthread_t st, gt;
    if (s.listen_fd < 0 || pthread_create(&st, NULL, sink_main, &s) != 0) {
        return -1.0;
    }
    if (pthread_create(&gt, NULL, generator_main, &g) != 0) {
        return -1.0;
    }
    sleep_ns(WARMUP_NS);
    uint64_t b0 = atomic_load(&s.bytes);
    int64_t c0 = atomic_load(&s.cpu_ns);
    int64_t t0 = mono_ns();
    sleep_ns((int64_t)(seconds * 1e9));
    uint64_t b1 = atomic_load(&s.bytes);
    int64_t c1 = atomic_load(&s.cpu_ns);
    int64_t t1 = mono_ns();
    atomic_store(&g.stop, 1);
    pthread_join(gt, NULL);
    pthread_join(st, NULL);
    close(s.listen_fd);
    if (g.error) {
        return -1.0;
    }
    double dt = (double)(t1 - t0) * 1e-9;
    *mbps = (double)(b1 - b0) / dt / 1e6;
    *cpu_s = (double)(c1 - c0) * 1e-9;
    return (double)(b1 - b0) * lines_per_byte / dt;
}

struct dqd_result {
    double rate, accepted, late, future, wire_errors, sent_rate, cpu_s;
    long hwm_kib;
    int exit_status;
};

/* One round against the running dqd p: a fresh generator connection, a warm-up, then
 * `seconds` measured. Adds to r's rate (instances/s of this round) and CPU seconds. */
static int run_dqd_round(const struct dqd_proc *p, double seconds, double *rate, double *sent_rate,
                         double *cpu_s) {
    struct generator g = {.port = p->ingest_port};
    atomic_init(&g.stop, 0);
    atomic_init(&g.lines_sent, 0);
    atomic_init(&g.bytes_sent, 0);
    pthread_t gt;
    if (pthread_create(&gt, NULL, generator_main, &g) != 0) {
        return -1;
    }
    sleep_ns(WARMUP_NS);
    double m0 = dqd_metric(p->http_port, "dqd_ingest_instances_total ");
    double cpu0 = proc_cpu_s(p->pid);
    uint64_t s0 = atomic_load(&g.lines_sent);
    int64_t t0 = mono_ns();
    sleep_ns((int64_t)(seconds * 1e9));
    double m1 = dqd_metric(p->http_port, "dqd_ingest_instances_total ");
    double cpu1 = proc_cpu_s(p->pid);
    uint64_t s1 = atomic_load(&g.lines_sent);
    int64_t t1 = mono_ns();
    atomic_store(&g.stop, 1);
    pthread_join(gt, NULL);
    double dt = (double)(t1 - t0) * 1e-9;
    *rate = m0 >= 0 && m1 >= 0 ? (m1 - m0) / dt : -1.0;
    *sent_rate = (double)(s1 - s0) / dt;
    *cpu_s = cpu1 - cpu0;
    return g.error || *rate < 0 ? -1 : 0;
}

/* Totals after the rounds, peak memory, and dqd's exit status after SIGTERM. */
static void dqd_finish(const struct dqd_proc *p, struct dqd_result *r) {
    sleep_ns(200000000); /* let dqd drain what is in flight before the totals */
    char *text = http_get_metrics(p->http_port);
    if (text) {
        r->accepted = metric_sum(text, "dqd_instances_total{");
        r->late = metric_sum(text, "dqd_ingest_rejected_total{reason=\"late\"}");
        r->future = metric_sum(text, "dqd_ingest_rejected_total{reason=\"future\"}");
        r->wire_errors = metric_sum(text, "dqd_protocol_errors_total{");
        free(text);
    }
    r->hwm_kib = vm_hwm_kib(p->pid);
    kill(p->pid, SIGTERM);
    int status = 0;
    waitpid(p->pid, &status, 0);
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void remove_dir(const char *dir) {
    static const char *const files[] = {"bench.db", "bench.db-wal", "bench.db-shm",
                                        "bench.db-journal", "dqd.log"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(int argc, char **argv) {
    double seconds = 5.0;
    if (argc > 2 || (argc == 2 && ((seconds = strtod(argv[1], NULL)) < 0.5 || seconds > 600))) {
        fprintf(stderr, "usage: bench_ingest [SECONDS]  (0.5 … 600, default 5)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *cpus = getenv("BENCH_INGEST_CPUS");
    if (cpus && strcmp(cpus, "same") == 0) {
        placement = PLACE_SAME;
    } else if (cpus && strcmp(cpus, "none") == 0) {
        placement = PLACE_NONE;
    } else {
        placement = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? PLACE_SEPARATE : PLACE_NONE;
    }
    char exe[4096];
    const char *dqd = find_dqd(exe, sizeof exe);
    if (!dqd) {
        fprintf(stderr, "bench_ingest: cannot find the dqd binary (%s)\n", DQD_BINARY);
        return 1;
    }
    char dir[] = "/tmp/bench_ingest.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_ingest: mkdtemp");
        return 1;
    }
    /* lines per byte of the generator's buffers (fixed-width timestamps: constant) */
    char *sample = malloc(GEN_BUFFER);
    uint64_t rng = 0x9e3779b97f4a7c15ULL, lines = 0;
    size_t bytes = sample ? fill_lines(sample, GEN_BUFFER, now_ns(), &rng, &lines) : 0;
    free(sample);
    if (!bytes) {
        return 1;
    }
    double lpb = (double)lines / (double)bytes;
    printf("bench_ingest: %.1f s per receiver in %d alternating rounds, 1 loopback connection, "
           "legacy lines of %zu probes (%.1f bytes each), %s, dqd %s\n",
           seconds, ROUNDS, N_PROBES, 1.0 / lpb, placement_name(), dqd);
    fflush(stdout);

    /* Rounds alternate sink and dqd so that both see the same machine: on a shared VM
     * the load changes within seconds, and one long run of each would compare two
     * different moments. Rates are totals over all rounds. */
    struct dqd_proc proc;
    if (dqd_start(dqd, dir, &proc) != 0) {
        remove_dir(dir);
        return 1;
    }
    double per = seconds / ROUNDS, sink_lines = 0, sink_bytes = 0, sink_cpu = 0;
    double dqd_lines = 0, dqd_sent = 0, dqd_cpu = 0, rmin = 1e300, rmax = 0;
    struct dqd_result r = {0};
    int failed = 0;
    for (int round = 0; round < ROUNDS && !failed; round++) {
        double mbps = 0, cpu = 0, drate = 0, dsent = 0, dcpu = 0;
        double srate = run_sink(per, lpb, &mbps, &cpu);
        if (srate <= 0 || run_dqd_round(&proc, per, &drate, &dsent, &dcpu) != 0) {
            fprintf(stderr, "bench_ingest: the %s run failed\n", srate <= 0 ? "sink" : "dqd");
            failed = 1;
            break;
        }
        printf("round %d: sink %.1f M/s (%.0f%% of a core), dqd %.1f M/s (%.0f%% of a core), "
               "ratio %.3f\n",
               round + 1, srate / 1e6, 100 * cpu / per, drate / 1e6, 100 * dcpu / per,
               drate / srate);
        fflush(stdout);
        sink_lines += srate * per;
        sink_bytes += mbps * 1e6 * per;
        sink_cpu += cpu;
        dqd_lines += drate * per;
        dqd_sent += dsent * per;
        dqd_cpu += dcpu;
        rmin = drate / srate < rmin ? drate / srate : rmin;
        rmax = drate / srate > rmax ? drate / srate : rmax;
    }
    dqd_finish(&proc, &r);
    remove_dir(dir);
    if (failed) {
        return 1;
    }
    double sink = sink_lines / seconds, mbps = sink_bytes / seconds / 1e6;
    r.rate = dqd_lines / seconds;
    r.sent_rate = dqd_sent / seconds;
    r.cpu_s = dqd_cpu;
    double ratio = r.rate / sink;
    printf("plain sink  %12.0f instances/s  (%.0f MB/s)\n", sink, mbps);
    printf("dqd         %12.0f instances/s  (generator sent %.0f/s; accepted %.0f, late %.0f, "
           "future %.0f, protocol errors %.0f in total)\n",
           r.rate, r.sent_rate, r.accepted, r.late, r.future, r.wire_errors);
    printf("ratio dqd/sink  %.3f  (rounds %.3f … %.3f)\n", ratio, rmin, rmax);
    /* on a shared machine the receivers may not get a whole core: per CPU-second rates */
    double sink_per_cpu = sink_cpu > 0 ? sink * seconds / sink_cpu : 0.0;
    double dqd_per_cpu = r.cpu_s > 0 ? r.rate * seconds / r.cpu_s : 0.0;
    printf("CPU used: sink %.0f%% of a core (%.0f instances per CPU-second), dqd %.0f%% "
           "(%.0f per CPU-second, %.0f ns per instance); per-CPU ratio %.3f\n",
           100 * sink_cpu / seconds, sink_per_cpu, 100 * r.cpu_s / seconds, dqd_per_cpu,
           dqd_per_cpu > 0 ? 1e9 / dqd_per_cpu : 0.0,
           sink_per_cpu > 0 ? dqd_per_cpu / sink_per_cpu : 0.0);
    printf("dqd peak memory (VmHWM)  %.1f MiB; exit status after SIGTERM %d\n",
           (double)r.hwm_kib / 1024.0, r.exit_status);
    printf("%s dqd >= %.0f%% of the plain sink's rate (%.1f%%)\n",
           ratio >= TARGET_RATIO ? "PASS" : "MISS", TARGET_RATIO * 100, ratio * 100);
    printf("%s dqd >= %.0f instances/s (%.0f)\n", r.rate >= TARGET_RATE ? "PASS" : "MISS",
           TARGET_RATE, r.rate);
    return 0;
}
