/*
 * store_lock.c: the files around the database: the lock that keeps a second dqd off a
 * database in use, and the removal of a database that a failed start created.
 *
 * The lock is flock(2) on `DB.lock`: an exclusive lock on an open file description, so it
 * conflicts with any other opener (another process, or another store_lock call in this
 * one) and the kernel drops it when the process ends, even when killed. The file holds the
 * holder's pid for the refusal message and for people. store_unlock removes the file;
 * since an opener may have opened the file just before it was removed, a new holder checks
 * after locking that the path still names the file it locked, and starts again otherwise.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_SUFFIX ".lock"
#define LOCK_ATTEMPTS 8

struct store_lock {
    int fd;
    char *path; /* the lock file */
};

/* The pid the lock file names, or 0 when it names none (yet). */
static long read_pid(int fd) {
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    char *end = NULL;
    long pid = strtol(buf, &end, 10);
    return end != buf && pid > 0 ? pid : 0;
}

static int write_pid(int fd) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
        return -1;
    }
    return 0;
}

/* 1 when path still names the file open as fd. */
static int same_file(int fd, const char *path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int store_lock(const char *db_path, struct store_lock **out) {
    if (!db_path || !out || !db_path[0]) {
        return dq_fail(DQ_EINVAL, "store_lock: no database path");
    }
    size_t len = strlen(db_path);
    char *path = malloc(len + sizeof LOCK_SUFFIX);
    struct store_lock *lk = malloc(sizeof *lk);
    if (!path || !lk) {
        free(path);
        free(lk);
        return dq_fail(DQ_ENOMEM, "store_lock: out of memory");
    }
    memcpy(path, db_path, len);
    memcpy(path + len, LOCK_SUFFIX, sizeof LOCK_SUFFIX);
    int rc = DQ_OK;
    for (int attempt = 0;; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = dq_fail(DQ_EIO, "cannot create the lock file %s: %s", path, strerror(errno));
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            if (e == EWOULDBLOCK) {
                long pid = read_pid(fd);
                char who[48] = "pid unknown: it is starting";
                if (pid > 0) {
                    snprintf(who, sizeof who, "pid %ld", pid);
                }
                rc = dq_fail(DQ_EBUSY, "%s is in use by another dqd (%s, lock file %s)", db_path,
                             who, path);
            } else {
                rc = dq_fail(DQ_EIO, "cannot lock %s: %s", path, strerror(e));
            }
            close(fd);
            break;
        }
        if (!same_file(fd, path)) {
            close(fd); /* its holder removed it as we opened it: take the new one */
            if (attempt + 1 < LOCK_ATTEMPTS) {
                continue;
            }
            rc = dq_fail(DQ_EIO, "the lock file %s keeps being replaced", path);
            break;
        }
        if (write_pid(fd) != 0) {
            rc = dq_fail(DQ_EIO, "cannot write the lock file %s: %s", path, strerror(errno));
            unlink(path);
            close(fd);
            break;
        }
        lk->fd = fd;
        lk->path = path;
        *out = lk;
        return DQ_OK;
    }
    free(path);
    free(lk);
    return rc;
}

void store_unlock(struct store_lock *lk) {
    if (!lk) {
        return;
    }
    unlink(lk->path); /* while still locked: an opener from now on gets a new file */
    close(lk->fd);
    free(lk->path);
    free(lk);
}

int store_file_exists(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0;
}

int store_remove_files(const char *path) {
    static const char *const suffixes[] = {"-wal", "-shm", "-journal", ""};
    if (!path) {
        return dq_fail(DQ_EINVAL, "store_remove_files: NULL path");
    }
    int rc = DQ_OK;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char name[4096];
        int n = snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
        if (n < 0 || (size_t)n >= sizeof name) {
            return dq_fail(DQ_EINVAL, "store_remove_files: path too long");
        }
        if (unlink(name) != 0 && errno != ENOENT && rc == DQ_OK) {
            rc = dq_fail(DQ_EIO, "cannot remove %s: %s", name, strerror(errno));
        }
    }
    return rc;
}
