/*
 * store_test_util.h: helpers shared by the store tests: a private temporary directory,
 * byte-level file patching (to forge headers without calling SQLite), the sqlite3 shell (to
 * write rows as an older dqd did), a fake clock.
 */
#ifndef DQ_STORE_TEST_UTIL_H
#define DQ_STORE_TEST_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The test's temporary directory (mkdtemp), created by tmp_setup. */
static char tmp_dir[256];

static inline int tmp_setup(const char *tag) {
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/dqd-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

/* tmp_dir/name in buf. */
static inline const char *tmp_path(char *buf, size_t size, const char *name) {
    int n = snprintf(buf, size, "%s/%s", tmp_dir, name);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "tmp_path: %s/%s too long\n", tmp_dir, name);
        exit(1);
    }
    return buf;
}

/* Removes every file of tmp_dir (one level: the tests create no subdirectories except
   the ones they remove themselves), then the directory. */
static inline void tmp_cleanup(void) {
    DIR *d = opendir(tmp_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            char p[512];
            snprintf(p, sizeof p, "%s/%s", tmp_dir, e->d_name);
            if (unlink(p) != 0) {
                rmdir(p);
            }
        }
        closedir(d);
    }
    rmdir(tmp_dir);
}

static inline int file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static inline int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

/* Reads up to cap bytes of path into buf; returns the length or -1. */
static inline long read_file(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return -1;
    }
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (long)n;
}

/* Writes a big-endian 32-bit value at offset (SQLite header fields are big-endian). */
static inline int patch_be32(const char *path, long offset, uint32_t v) {
    FILE *f = fopen(path, "r+b");
    if (!f) {
        return -1;
    }
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    int ok = fseek(f, offset, SEEK_SET) == 0 && fwrite(b, 1, 4, f) == 4;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* A clock the test moves by hand. */
struct fake_clock {
    int64_t now;
};

/* Runs one statement with the sqlite3 shell on path (what an older dqd, or a person,
 * would have written); its first output line goes to out (cap bytes, may be NULL). Returns
 * the shell's exit status, −1 when it could not run. */
static inline int sqlite3_cli(const char *path, const char *sql, char *out, size_t cap) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"%s\"", path, sql);
    FILE *p = popen(cmd, "r");
    if (!p) {
        return -1;
    }
    if (out && cap > 0) {
        out[0] = '\0';
        if (fgets(out, (int)cap, p)) {
            out[strcspn(out, "\n")] = '\0';
        }
    }
    char sink[256];
    while (fgets(sink, sizeof sink, p)) {
    }
    int st = pclose(p);
    return st == -1 ? -1 : WEXITSTATUS(st);
}

static inline int64_t fake_now(void *ctx) {
    return ((struct fake_clock *)ctx)->now;
}

#endif /* DQ_STORE_TEST_UTIL_H */
