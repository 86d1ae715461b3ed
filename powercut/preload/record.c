/*
 * The recording layer of powercut: a shared library loaded with LD_PRELOAD into a
 * child engine process. It interposes the C library's file calls and appends, in
 * one global order, a record of every operation that changes a file or a name
 * under one directory (the recorded root), with the bytes of every write, and of
 * every write to one marker descriptor (the child's protocol lines). The format is
 * described in powercut/src/recording.rs, the module that reads it.
 *
 * Environment (the layer does nothing without POWERCUT_ROOT):
 *   POWERCUT_ROOT     the directory whose files and names are recorded
 *   POWERCUT_LOG      the recording, created
 *   POWERCUT_MARK_FD  a descriptor whose writes are recorded as markers (optional)
 *   POWERCUT_CONTROL  a directory: when the file `freeze` appears in it the layer
 *                     lets the calls in flight finish, blocks every later one,
 *                     appends FROZEN and creates `frozen` (optional)
 *
 * Order. Every record takes its sequence number from one counter, under the lock
 * that appends it, after the call it describes returned: record order is a
 * linearisation of the calls that respects their causal order (a call that began
 * after another returned comes after it). A sync also takes a number before its
 * call ("start"): it covers exactly the records numbered below its start.
 *
 * The layer's own I/O (the recording, its stat calls) goes through the real
 * syscall function, never through a wrapper; errno is saved after each real call
 * and restored before returning.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef RWF_DSYNC
#define RWF_DSYNC 0x02
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x04
#endif
#ifndef RWF_APPEND
#define RWF_APPEND 0x10
#endif

/* record kinds: keep in step with powercut/src/recording.rs */
enum {
    K_ROOT = 1,
    K_BASE = 2,
    K_OPEN = 3,
    K_WRITE = 4,
    K_TRUNCATE = 5,
    K_FALLOCATE = 6,
    K_FSYNC = 7,
    K_SYNC_RANGE = 8,
    K_SYNC_ALL = 9,
    K_MKDIR = 10,
    K_RMDIR = 11,
    K_UNLINK = 12,
    K_RENAME = 13,
    K_LINK = 14,
    K_MARK = 15,
    K_STDIO = 16,
    K_UNSUPPORTED = 17,
    K_FROZEN = 18,
    K_MSYNC = 19,
};
/* flags */
#define F_DIR 0x1        /* BASE, OPEN, FSYNC: a directory */
#define F_CREATED 0x2    /* OPEN: the call created the file */
#define F_DATASYNC 0x4   /* FSYNC: fdatasync */
#define F_SYNCWRITE 0x8  /* WRITE: O_SYNC, O_DSYNC, RWF_DSYNC or RWF_SYNC */
#define F_FATAL 0x10     /* UNSUPPORTED: the recording cannot stand for the run */
#define F_SYNCFS 0x20    /* SYNC_ALL: syncfs rather than sync */

#define HEADER 56
#define MAGIC "PWRCUT01"

typedef long (*syscall_fn)(long, ...);

static syscall_fn real_syscall;
static int active;
static int log_fd = -1;
static int mark_fd = -1;
static char root_real[PATH_MAX];
static size_t root_real_len;
static char root_given[PATH_MAX];
static size_t root_given_len;
static dev_t root_dev;
static char control[PATH_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;
static int frozen;
static int in_flight;

/* ---- the real functions ---- */

#define REAL(ret, name, ...)                                                   \
    static ret (*real_##name)(__VA_ARGS__);                                    \
    static void resolve_##name(void) {                                         \
        if (!real_##name)                                                      \
            real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);        \
    }

REAL(int, open, const char *, int, ...)
REAL(int, open64, const char *, int, ...)
REAL(int, openat, int, const char *, int, ...)
REAL(int, openat64, int, const char *, int, ...)
REAL(int, __open_2, const char *, int)
REAL(int, __open64_2, const char *, int)
REAL(int, __openat_2, int, const char *, int)
REAL(int, __openat64_2, int, const char *, int)
REAL(int, creat, const char *, mode_t)
REAL(int, creat64, const char *, mode_t)
REAL(FILE *, fopen, const char *, const char *)
REAL(FILE *, fopen64, const char *, const char *)
REAL(FILE *, fdopen, int, const char *)
REAL(ssize_t, write, int, const void *, size_t)
REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t)
REAL(ssize_t, writev, int, const struct iovec *, int)
REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t)
REAL(ssize_t, pwritev64, int, const struct iovec *, int, off64_t)
REAL(ssize_t, pwritev2, int, const struct iovec *, int, off_t, int)
REAL(ssize_t, pwritev64v2, int, const struct iovec *, int, off64_t, int)
REAL(int, ftruncate, int, off_t)
REAL(int, ftruncate64, int, off64_t)
REAL(int, truncate, const char *, off_t)
REAL(int, truncate64, const char *, off64_t)
REAL(int, fallocate, int, int, off_t, off_t)
REAL(int, fallocate64, int, int, off64_t, off64_t)
REAL(int, posix_fallocate, int, off_t, off_t)
REAL(int, posix_fallocate64, int, off64_t, off64_t)
REAL(int, fsync, int)
REAL(int, fdatasync, int)
REAL(int, sync_file_range, int, off64_t, off64_t, unsigned int)
REAL(void, sync, void)
REAL(int, syncfs, int)
REAL(int, msync, void *, size_t, int)
REAL(int, rename, const char *, const char *)
REAL(int, renameat, int, const char *, int, const char *)
REAL(int, renameat2, int, const char *, int, const char *, unsigned int)
REAL(int, link, const char *, const char *)
REAL(int, linkat, int, const char *, int, const char *, int)
REAL(int, unlink, const char *)
REAL(int, unlinkat, int, const char *, int)
REAL(int, remove, const char *)
REAL(int, rmdir, const char *)
REAL(int, mkdir, const char *, mode_t)
REAL(int, mkdirat, int, const char *, mode_t)
REAL(int, symlink, const char *, const char *)
REAL(int, symlinkat, const char *, int, const char *)
REAL(void *, mmap, void *, size_t, int, int, int, off_t)
REAL(void *, mmap64, void *, size_t, int, int, int, off64_t)
REAL(ssize_t, copy_file_range, int, off64_t *, int, off64_t *, size_t, unsigned int)
REAL(ssize_t, sendfile, int, int, off_t *, size_t)
REAL(ssize_t, sendfile64, int, int, off64_t *, size_t)

static void resolve_syscall(void) {
    if (!real_syscall)
        real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
}

/* ---- small helpers on raw syscalls ---- */

static int raw_fstat(int fd, struct stat *st) {
    resolve_syscall();
    return (int)real_syscall(SYS_fstat, fd, st);
}

static int raw_lstat(const char *p, struct stat *st) {
    resolve_syscall();
    return (int)real_syscall(SYS_newfstatat, AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW);
}

static int raw_stat(const char *p, struct stat *st) {
    resolve_syscall();
    return (int)real_syscall(SYS_newfstatat, AT_FDCWD, p, st, 0);
}

static void raw_sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    resolve_syscall();
    real_syscall(SYS_nanosleep, &t, NULL);
}

static void write_all(int fd, const struct iovec *iov, int n) {
    struct iovec v[8];
    int i, k = 0;
    for (i = 0; i < n && k < 8; i++)
        if (iov[i].iov_len > 0)
            v[k++] = iov[i];
    i = 0;
    while (i < k) {
        long r = real_syscall(SYS_writev, fd, v + i, k - i);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return; /* the recording is broken: the reader sees it cut short */
        }
        while (i < k && (size_t)r >= v[i].iov_len) {
            r -= (long)v[i].iov_len;
            i++;
        }
        if (i < k) {
            v[i].iov_base = (char *)v[i].iov_base + r;
            v[i].iov_len -= (size_t)r;
        }
    }
}

/* ---- the set of recorded inodes: (device, inode) -> flags ---- */

#define SLOTS (1 << 17)
static struct {
    uint64_t dev, ino;
} slots[SLOTS];
static int slots_full;

static uint64_t slot_of(uint64_t dev, uint64_t ino) {
    uint64_t h = (ino * 0x9E3779B97F4A7C15ull) ^ dev;
    return (h >> 15) & (SLOTS - 1);
}

/* under the lock */
static void track_locked(uint64_t dev, uint64_t ino) {
    uint64_t i = slot_of(dev, ino), n;
    for (n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
        if (slots[i].ino == ino && slots[i].dev == dev)
            return;
        if (slots[i].ino == 0) {
            slots[i].dev = dev;
            slots[i].ino = ino;
            return;
        }
    }
    slots_full = 1;
}

static int tracked_locked(uint64_t dev, uint64_t ino) {
    uint64_t i = slot_of(dev, ino), n;
    if (dev != (uint64_t)root_dev)
        return 0;
    for (n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
        if (slots[i].ino == 0)
            return 0;
        if (slots[i].ino == ino && slots[i].dev == dev)
            return 1;
    }
    return 0;
}

/* Whether fd is a recorded file; fills st. */
static int tracked_fd(int fd, struct stat *st) {
    int t;
    if (fd < 0 || fd == log_fd || raw_fstat(fd, st) != 0)
        return 0;
    if (st->st_dev != root_dev)
        return 0;
    pthread_mutex_lock(&lock);
    t = tracked_locked(st->st_dev, st->st_ino);
    pthread_mutex_unlock(&lock);
    return t;
}

/* ---- records ---- */

struct rec {
    uint16_t kind, flags;
    uint64_t start, ino, a, b;
    const char *p1, *p2;
    const void *data;
    size_t len;
    const struct iovec *iov; /* data as an iovec array instead of data/len */
    int iovcnt;
};

static void put32(unsigned char *p, uint32_t v) {
    int i;
    for (i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Appends r; the caller holds the lock. */
static void append_locked(const struct rec *r) {
    unsigned char h[HEADER];
    struct iovec v[8];
    size_t l1 = r->p1 ? strlen(r->p1) : 0, l2 = r->p2 ? strlen(r->p2) : 0;
    size_t data = 0;
    int i, n = 0;
    if (log_fd < 0)
        return;
    if (r->iov) {
        for (i = 0; i < r->iovcnt; i++)
            data += r->iov[i].iov_len;
    } else {
        data = r->len;
    }
    seq++;
    put32(h, (uint32_t)(HEADER + l1 + l2 + data));
    h[4] = (unsigned char)r->kind;
    h[5] = (unsigned char)(r->kind >> 8);
    h[6] = (unsigned char)r->flags;
    h[7] = (unsigned char)(r->flags >> 8);
    put64(h + 8, seq);
    put64(h + 16, r->start);
    put64(h + 24, r->ino);
    put64(h + 32, r->a);
    put64(h + 40, r->b);
    put32(h + 48, (uint32_t)l1);
    put32(h + 52, (uint32_t)l2);
    v[n].iov_base = h;
    v[n++].iov_len = HEADER;
    if (l1) {
        v[n].iov_base = (void *)r->p1;
        v[n++].iov_len = l1;
    }
    if (l2) {
        v[n].iov_base = (void *)r->p2;
        v[n++].iov_len = l2;
    }
    if (r->iov) {
        /* a gathered write: one record, its buffers in order */
        write_all(log_fd, v, n);
        for (i = 0; i < r->iovcnt; i += 8) {
            int k = r->iovcnt - i < 8 ? r->iovcnt - i : 8;
            write_all(log_fd, r->iov + i, k);
        }
        return;
    }
    if (data) {
        v[n].iov_base = (void *)r->data;
        v[n++].iov_len = data;
    }
    write_all(log_fd, v, n);
}

static void append(const struct rec *r) {
    pthread_mutex_lock(&lock);
    append_locked(r);
    pthread_mutex_unlock(&lock);
}

/* A number between the records appended before and those appended after. */
static uint64_t reserve(void) {
    uint64_t s;
    pthread_mutex_lock(&lock);
    s = ++seq;
    pthread_mutex_unlock(&lock);
    return s;
}

static void unsupported(int fatal, const char *what, const char *p) {
    char msg[PATH_MAX + 256];
    struct rec r = {0};
    snprintf(msg, sizeof msg, "%s%s%s", what, p ? ": " : "", p ? p : "");
    r.kind = K_UNSUPPORTED;
    r.flags = fatal ? F_FATAL : 0;
    r.data = msg;
    r.len = strlen(msg);
    append(&r);
}

/* ---- entering and leaving a recorded call (the freeze) ---- */

static void block_forever(void) {
    for (;;)
        raw_sleep_us(100000);
}

static int enter(void) {
    if (!active)
        return 0;
    if (__atomic_load_n(&frozen, __ATOMIC_SEQ_CST))
        block_forever();
    __atomic_add_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&frozen, __ATOMIC_SEQ_CST)) {
        __atomic_sub_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
        block_forever();
    }
    return 1;
}

static void leave(void) {
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
}

static void *freezer(void *arg) {
    char want[PATH_MAX + 16], done[PATH_MAX + 16];
    struct stat st;
    struct rec r = {0};
    (void)arg;
    snprintf(want, sizeof want, "%s/freeze", control);
    snprintf(done, sizeof done, "%s/frozen", control);
    while (raw_lstat(want, &st) != 0)
        raw_sleep_us(1000);
    __atomic_store_n(&frozen, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&in_flight, __ATOMIC_SEQ_CST) > 0)
        raw_sleep_us(100);
    r.kind = K_FROZEN;
    append(&r);
    {
        long fd = real_syscall(SYS_openat, AT_FDCWD, done, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
            real_syscall(SYS_close, fd);
    }
    block_forever();
    return NULL;
}

/* ---- paths ---- */

/* Lexically normalises the absolute path p into out ("." and ".." and "//"). */
static void normalise(const char *p, char *out) {
    size_t o = 0;
    const char *s = p;
    out[0] = '\0';
    while (*s) {
        const char *e;
        size_t n;
        while (*s == '/')
            s++;
        if (!*s)
            break;
        e = strchr(s, '/');
        n = e ? (size_t)(e - s) : strlen(s);
        if (n == 1 && s[0] == '.') {
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
            out[o] = '\0';
        } else if (o + 1 + n < PATH_MAX) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
            out[o] = '\0';
        }
        s += n;
    }
    if (o == 0) {
        out[0] = '/';
        out[1] = '\0';
    }
}

/* The absolute, normalised form of path as seen from dirfd. */
static int absolute(int dirfd, const char *path, char *out) {
    char buf[PATH_MAX * 2];
    if (!path)
        return -1;
    if (path[0] == '/') {
        snprintf(buf, sizeof buf, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base))
                return -1;
        } else {
            char link[64];
            long n;
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            n = real_syscall(SYS_readlinkat, AT_FDCWD, link, base, sizeof base - 1);
            if (n <= 0)
                return -1;
            base[n] = '\0';
        }
        snprintf(buf, sizeof buf, "%s/%s", base, path);
    }
    normalise(buf, out);
    return 0;
}

static const char *under(const char *abs, const char *root, size_t len) {
    if (strncmp(abs, root, len) != 0)
        return NULL;
    if (abs[len] == '\0')
        return abs + len;
    if (abs[len] == '/')
        return abs + len + 1;
    return NULL;
}

/* The path of (dirfd, path) relative to the root, in rel; 0 when it is under it. */
static int relative(int dirfd, const char *path, char *rel) {
    char abs[PATH_MAX];
    const char *r;
    if (!active || absolute(dirfd, path, abs) != 0)
        return -1;
    r = under(abs, root_real, root_real_len);
    if (!r)
        r = under(abs, root_given, root_given_len);
    if (!r)
        return -1;
    snprintf(rel, PATH_MAX, "%s", r);
    return 0;
}

/* ---- opening ---- */

static int open_flags_write(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
}

struct opening {
    int on;
    int existed;
    off_t old_size;
    char rel[PATH_MAX];
    char abs[PATH_MAX];
};

static void before_open(struct opening *o, int dirfd, const char *path, int flags) {
    struct stat st;
    o->on = 0;
    if (relative(dirfd, path, o->rel) != 0)
        return;
    if (absolute(dirfd, path, o->abs) != 0)
        return;
    o->on = enter();
    if (!o->on)
        return;
    if ((flags & __O_TMPFILE) == __O_TMPFILE)
        unsupported(1, "O_TMPFILE in the recorded directory (an unnamed file)", o->rel);
    o->existed = raw_lstat(o->abs, &st) == 0;
    o->old_size = o->existed ? st.st_size : 0;
}

static void after_open(struct opening *o, int fd, int flags) {
    struct stat st;
    struct rec r = {0};
    if (!o->on)
        return;
    if (fd >= 0 && raw_fstat(fd, &st) == 0) {
        pthread_mutex_lock(&lock);
        track_locked(st.st_dev, st.st_ino);
        r.kind = K_OPEN;
        r.flags = (S_ISDIR(st.st_mode) ? F_DIR : 0) | (o->existed ? 0 : F_CREATED);
        r.ino = st.st_ino;
        r.a = (uint64_t)(unsigned)flags;
        r.p1 = o->rel;
        append_locked(&r);
        if ((flags & O_TRUNC) && o->existed && o->old_size > 0 && S_ISREG(st.st_mode) &&
            open_flags_write(flags)) {
            struct rec t = {0};
            t.kind = K_TRUNCATE;
            t.ino = st.st_ino;
            t.a = 0;
            append_locked(&t);
        }
        if (slots_full)
            unsupported(1, "too many files for the layer's table", o->rel);
        pthread_mutex_unlock(&lock);
    }
    leave();
}

static int needs_mode(int flags) {
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE;
}

#define OPEN_BODY(call, dirfd)                                                 \
    struct opening o;                                                          \
    int fd, e;                                                                 \
    before_open(&o, dirfd, path, flags);                                       \
    fd = call;                                                                 \
    e = errno;                                                                 \
    after_open(&o, fd, flags);                                                 \
    errno = e;                                                                 \
    return fd;

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    resolve_open();
    OPEN_BODY(real_open(path, flags, mode), AT_FDCWD)
}

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    resolve_open64();
    OPEN_BODY(real_open64(path, flags, mode), AT_FDCWD)
}

int openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    if (needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    resolve_openat();
    OPEN_BODY(real_openat(dirfd, path, flags, mode), dirfd)
}

int openat64(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    if (needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    resolve_openat64();
    OPEN_BODY(real_openat64(dirfd, path, flags, mode), dirfd)
}

int __open_2(const char *path, int flags) {
    resolve___open_2();
    OPEN_BODY(real___open_2(path, flags), AT_FDCWD)
}

int __open64_2(const char *path, int flags) {
    resolve___open64_2();
    OPEN_BODY(real___open64_2(path, flags), AT_FDCWD)
}

int __openat_2(int dirfd, const char *path, int flags) {
    resolve___openat_2();
    OPEN_BODY(real___openat_2(dirfd, path, flags), dirfd)
}

int __openat64_2(int dirfd, const char *path, int flags) {
    resolve___openat64_2();
    OPEN_BODY(real___openat64_2(dirfd, path, flags), dirfd)
}

int creat(const char *path, mode_t mode) {
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    resolve_creat();
    OPEN_BODY(real_creat(path, mode), AT_FDCWD)
}

int creat64(const char *path, mode_t mode) {
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    resolve_creat64();
    OPEN_BODY(real_creat64(path, mode), AT_FDCWD)
}

/* A stream on a recorded file: its writes go through the C library's own calls,
 * which the layer does not see. Recorded so that the reader can say which files
 * it cannot follow. */
static void stdio_on(int fd) {
    struct stat st;
    struct rec r = {0};
    if (!tracked_fd(fd, &st))
        return;
    r.kind = K_STDIO;
    r.ino = st.st_ino;
    append(&r);
}

static int mode_flags(const char *m) {
    int f = 0;
    if (!m)
        return 0;
    if (m[0] == 'w')
        f = O_WRONLY | O_CREAT | O_TRUNC;
    else if (m[0] == 'a')
        f = O_WRONLY | O_CREAT | O_APPEND;
    if (strchr(m, '+'))
        f = (f & ~O_ACCMODE) | O_RDWR;
    return f;
}

static FILE *fopen_common(FILE *(*real)(const char *, const char *), const char *path,
                          const char *mode) {
    struct opening o;
    int flags = mode_flags(mode), e;
    FILE *f;
    before_open(&o, AT_FDCWD, path, flags);
    f = real(path, mode);
    e = errno;
    after_open(&o, f ? fileno(f) : -1, flags);
    if (f && o.on && open_flags_write(flags))
        stdio_on(fileno(f));
    errno = e;
    return f;
}

FILE *fopen(const char *path, const char *mode) {
    resolve_fopen();
    return fopen_common(real_fopen, path, mode);
}

FILE *fopen64(const char *path, const char *mode) {
    resolve_fopen64();
    return fopen_common(real_fopen64, path, mode);
}

FILE *fdopen(int fd, const char *mode) {
    FILE *f;
    int e;
    resolve_fdopen();
    f = real_fdopen(fd, mode);
    e = errno;
    if (f && active && mode && (mode[0] == 'w' || mode[0] == 'a' || strchr(mode, '+')))
        stdio_on(fd);
    errno = e;
    return f;
}

/* ---- writing ---- */

/* Records a write of r bytes (from buf or iov) to fd at off (-1: where the file
 * position was), after the call returned r. */
static void after_write(int fd, const void *buf, const struct iovec *iov, int iovcnt,
                        ssize_t r, off64_t off, int sync_flag, int append_flag) {
    struct stat st;
    struct rec rec = {0};
    struct iovec cut[64];
    if (r <= 0)
        return;
    if (fd == mark_fd) {
        rec.kind = K_MARK;
        rec.flags = 0;
    } else if (tracked_fd(fd, &st)) {
        int fl = (int)real_syscall(SYS_fcntl, fd, F_GETFL);
        rec.kind = K_WRITE;
        rec.ino = st.st_ino;
        if (off >= 0 && (append_flag || (fl >= 0 && (fl & O_APPEND)))) {
            /* a positional write to an O_APPEND file lands at its end (Linux) */
            off = st.st_size - r;
        } else if (off < 0) {
            long pos = real_syscall(SYS_lseek, fd, 0L, SEEK_CUR);
            off = pos - r;
        }
        rec.a = (uint64_t)off;
        if (sync_flag || (fl >= 0 && (fl & (O_SYNC | O_DSYNC))))
            rec.flags |= F_SYNCWRITE;
    } else {
        return;
    }
    if (iov) {
        /* only the bytes written: the first r bytes of the buffers */
        size_t left = (size_t)r;
        int i, n = 0;
        for (i = 0; i < iovcnt && left > 0; i++) {
            size_t l = iov[i].iov_len < left ? iov[i].iov_len : left;
            if (n == 64) {
                unsupported(1, "a gathered write of more than 64 buffers", NULL);
                return;
            }
            cut[n].iov_base = iov[i].iov_base;
            cut[n++].iov_len = l;
            left -= l;
        }
        rec.iov = cut;
        rec.iovcnt = n;
    } else {
        rec.data = buf;
        rec.len = (size_t)r;
    }
    append(&rec);
}

#define WRITE_BODY(call, buf, iov, iovcnt, off, syncf, appendf)               \
    ssize_t r;                                                                 \
    int e, on = enter();                                                       \
    r = call;                                                                  \
    e = errno;                                                                 \
    if (on) {                                                                  \
        after_write(fd, buf, iov, iovcnt, r, off, syncf, appendf);             \
        leave();                                                               \
    }                                                                          \
    errno = e;                                                                 \
    return r;

ssize_t write(int fd, const void *buf, size_t n) {
    resolve_write();
    WRITE_BODY(real_write(fd, buf, n), buf, NULL, 0, -1, 0, 0)
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    resolve_pwrite();
    WRITE_BODY(real_pwrite(fd, buf, n, off), buf, NULL, 0, off, 0, 0)
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    resolve_pwrite64();
    WRITE_BODY(real_pwrite64(fd, buf, n, off), buf, NULL, 0, off, 0, 0)
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    resolve_writev();
    WRITE_BODY(real_writev(fd, iov, cnt), NULL, iov, cnt, -1, 0, 0)
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    resolve_pwritev();
    WRITE_BODY(real_pwritev(fd, iov, cnt, off), NULL, iov, cnt, off, 0, 0)
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    resolve_pwritev64();
    WRITE_BODY(real_pwritev64(fd, iov, cnt, off), NULL, iov, cnt, off, 0, 0)
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    resolve_pwritev2();
    WRITE_BODY(real_pwritev2(fd, iov, cnt, off, flags), NULL, iov, cnt, off,
               flags & (RWF_DSYNC | RWF_SYNC), flags & RWF_APPEND)
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    resolve_pwritev64v2();
    WRITE_BODY(real_pwritev64v2(fd, iov, cnt, off, flags), NULL, iov, cnt, off,
               flags & (RWF_DSYNC | RWF_SYNC), flags & RWF_APPEND)
}

/* ---- sizes ---- */

static void after_truncate(int fd, int r, off64_t len) {
    struct stat st;
    struct rec rec = {0};
    if (r != 0 || !tracked_fd(fd, &st))
        return;
    rec.kind = K_TRUNCATE;
    rec.ino = st.st_ino;
    rec.a = (uint64_t)len;
    append(&rec);
}

#define FD_BODY(call, after)                                                   \
    int r, e, on = enter();                                                    \
    r = call;                                                                  \
    e = errno;                                                                 \
    if (on) {                                                                  \
        after;                                                                 \
        leave();                                                               \
    }                                                                          \
    errno = e;                                                                 \
    return r;

int ftruncate(int fd, off_t len) {
    resolve_ftruncate();
    FD_BODY(real_ftruncate(fd, len), after_truncate(fd, r, len))
}

int ftruncate64(int fd, off64_t len) {
    resolve_ftruncate64();
    FD_BODY(real_ftruncate64(fd, len), after_truncate(fd, r, len))
}

static void after_path_truncate(const char *path, int r, off64_t len) {
    char rel[PATH_MAX], abs[PATH_MAX];
    struct stat st;
    struct rec rec = {0};
    if (r != 0 || relative(AT_FDCWD, path, rel) != 0 || absolute(AT_FDCWD, path, abs) != 0 ||
        raw_stat(abs, &st) != 0)
        return;
    rec.kind = K_TRUNCATE;
    rec.ino = st.st_ino;
    rec.a = (uint64_t)len;
    append(&rec);
}

int truncate(const char *path, off_t len) {
    resolve_truncate();
    FD_BODY(real_truncate(path, len), after_path_truncate(path, r, len))
}

int truncate64(const char *path, off64_t len) {
    resolve_truncate64();
    FD_BODY(real_truncate64(path, len), after_path_truncate(path, r, len))
}

static void after_fallocate(int fd, int ok, int mode, off64_t off, off64_t len) {
    struct stat st;
    struct rec rec = {0};
    if (!ok || !tracked_fd(fd, &st))
        return;
    rec.kind = K_FALLOCATE;
    rec.flags = (uint16_t)mode;
    rec.ino = st.st_ino;
    rec.a = (uint64_t)off;
    rec.b = (uint64_t)len;
    append(&rec);
}

int fallocate(int fd, int mode, off_t off, off_t len) {
    resolve_fallocate();
    FD_BODY(real_fallocate(fd, mode, off, len), after_fallocate(fd, r == 0, mode, off, len))
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
    resolve_fallocate64();
    FD_BODY(real_fallocate64(fd, mode, off, len), after_fallocate(fd, r == 0, mode, off, len))
}

/* posix_fallocate returns the error number, errno untouched */
int posix_fallocate(int fd, off_t off, off_t len) {
    resolve_posix_fallocate();
    FD_BODY(real_posix_fallocate(fd, off, len), after_fallocate(fd, r == 0, 0, off, len))
}

int posix_fallocate64(int fd, off64_t off, off64_t len) {
    resolve_posix_fallocate64();
    FD_BODY(real_posix_fallocate64(fd, off, len), after_fallocate(fd, r == 0, 0, off, len))
}

/* ---- syncs ---- */

static int do_fsync(int fd, int data) {
    struct stat st;
    struct rec rec = {0};
    uint64_t start = 0;
    int r, e, on = enter();
    if (on)
        start = reserve();
    r = data ? real_fdatasync(fd) : real_fsync(fd);
    e = errno;
    if (on) {
        if (r == 0 && tracked_fd(fd, &st)) {
            rec.kind = K_FSYNC;
            rec.flags = (S_ISDIR(st.st_mode) ? F_DIR : 0) | (data ? F_DATASYNC : 0);
            rec.start = start;
            rec.ino = st.st_ino;
            append(&rec);
        }
        leave();
    }
    errno = e;
    return r;
}

int fsync(int fd) {
    resolve_fsync();
    return do_fsync(fd, 0);
}

int fdatasync(int fd) {
    resolve_fdatasync();
    return do_fsync(fd, 1);
}

static void after_sync_range(int fd, int r, off64_t off, off64_t n, unsigned flags) {
    struct stat st;
    struct rec rec = {0};
    if (r != 0 || !tracked_fd(fd, &st))
        return;
    rec.kind = K_SYNC_RANGE;
    rec.flags = (uint16_t)flags;
    rec.ino = st.st_ino;
    rec.a = (uint64_t)off;
    rec.b = (uint64_t)n;
    append(&rec);
}

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
    resolve_sync_file_range();
    FD_BODY(real_sync_file_range(fd, off, n, flags), after_sync_range(fd, r, off, n, flags))
}

static void after_sync_all(uint64_t start, int r, int fs) {
    struct rec rec = {0};
    if (r != 0)
        return;
    rec.kind = K_SYNC_ALL;
    rec.flags = fs ? F_SYNCFS : 0;
    rec.start = start;
    append(&rec);
}

void sync(void) {
    int on = enter();
    uint64_t start = on ? reserve() : 0;
    resolve_sync();
    real_sync();
    if (on) {
        after_sync_all(start, 0, 0);
        leave();
    }
}

int syncfs(int fd) {
    struct stat st;
    int on = enter(), r, e;
    uint64_t start = on ? reserve() : 0;
    resolve_syncfs();
    r = real_syncfs(fd);
    e = errno;
    if (on) {
        if (raw_fstat(fd, &st) == 0 && st.st_dev == root_dev)
            after_sync_all(start, r, 1);
        leave();
    }
    errno = e;
    return r;
}

int msync(void *addr, size_t len, int flags) {
    int r, e, on = enter();
    resolve_msync();
    r = real_msync(addr, len, flags);
    e = errno;
    if (on) {
        struct rec rec = {0};
        rec.kind = K_MSYNC;
        rec.a = (uint64_t)(uintptr_t)addr;
        rec.b = len;
        if (r == 0)
            append(&rec);
        leave();
    }
    errno = e;
    return r;
}

/* ---- names ---- */

struct naming {
    int on;
    int in1, in2;
    char rel1[PATH_MAX], rel2[PATH_MAX];
    char abs1[PATH_MAX];
};

static void before_name(struct naming *n, int d1, const char *p1, int d2, const char *p2) {
    n->on = 0;
    n->in1 = relative(d1, p1, n->rel1) == 0;
    n->in2 = p2 ? relative(d2, p2, n->rel2) == 0 : 0;
    if (!n->in1 && !n->in2)
        return;
    if (absolute(d1, p1, n->abs1) != 0)
        n->abs1[0] = '\0';
    n->on = enter();
}

static void after_name(struct naming *n, int r, int kind, unsigned flags) {
    struct rec rec = {0};
    if (!n->on)
        return;
    if (r == 0) {
        if (kind == K_RENAME || kind == K_LINK) {
            if (n->in1 && n->in2) {
                rec.kind = (uint16_t)kind;
                rec.flags = (uint16_t)flags;
                rec.p1 = n->rel1;
                rec.p2 = n->rel2;
                append(&rec);
            } else {
                unsupported(1, kind == K_RENAME
                                   ? "a rename across the edge of the recorded directory"
                                   : "a link across the edge of the recorded directory",
                            n->in1 ? n->rel1 : n->rel2);
            }
        } else {
            rec.kind = (uint16_t)kind;
            rec.p1 = n->rel1;
            append(&rec);
        }
    }
    leave();
}

#define NAME_BODY(d1, p1, d2, p2, call, kind, flags)                           \
    struct naming n;                                                           \
    int r, e;                                                                  \
    before_name(&n, d1, p1, d2, p2);                                           \
    r = call;                                                                  \
    e = errno;                                                                 \
    after_name(&n, r, kind, flags);                                            \
    errno = e;                                                                 \
    return r;

int rename(const char *a, const char *b) {
    resolve_rename();
    NAME_BODY(AT_FDCWD, a, AT_FDCWD, b, real_rename(a, b), K_RENAME, 0)
}

int renameat(int da, const char *a, int db, const char *b) {
    resolve_renameat();
    NAME_BODY(da, a, db, b, real_renameat(da, a, db, b), K_RENAME, 0)
}

int renameat2(int da, const char *a, int db, const char *b, unsigned int flags) {
    resolve_renameat2();
    NAME_BODY(da, a, db, b, real_renameat2(da, a, db, b, flags), K_RENAME, flags)
}

int link(const char *a, const char *b) {
    resolve_link();
    NAME_BODY(AT_FDCWD, a, AT_FDCWD, b, real_link(a, b), K_LINK, 0)
}

int linkat(int da, const char *a, int db, const char *b, int flags) {
    resolve_linkat();
    if (flags & AT_EMPTY_PATH) {
        char rel[PATH_MAX];
        if (relative(db, b, rel) == 0)
            unsupported(1, "linkat with AT_EMPTY_PATH into the recorded directory", rel);
    }
    NAME_BODY(da, a, db, b, real_linkat(da, a, db, b, flags), K_LINK, 0)
}

int unlink(const char *p) {
    resolve_unlink();
    NAME_BODY(AT_FDCWD, p, AT_FDCWD, NULL, real_unlink(p), K_UNLINK, 0)
}

int unlinkat(int d, const char *p, int flags) {
    resolve_unlinkat();
    NAME_BODY(d, p, AT_FDCWD, NULL, real_unlinkat(d, p, flags),
              (flags & AT_REMOVEDIR) ? K_RMDIR : K_UNLINK, 0)
}

int rmdir(const char *p) {
    resolve_rmdir();
    NAME_BODY(AT_FDCWD, p, AT_FDCWD, NULL, real_rmdir(p), K_RMDIR, 0)
}

int remove(const char *p) {
    struct naming n;
    struct stat st;
    int r, e, dir;
    resolve_remove();
    before_name(&n, AT_FDCWD, p, AT_FDCWD, NULL);
    dir = n.on && n.abs1[0] && raw_lstat(n.abs1, &st) == 0 && S_ISDIR(st.st_mode);
    r = real_remove(p);
    e = errno;
    after_name(&n, r, dir ? K_RMDIR : K_UNLINK, 0);
    errno = e;
    return r;
}

static int do_mkdir(int d, const char *p, int r) {
    char rel[PATH_MAX], abs[PATH_MAX];
    struct stat st;
    struct rec rec = {0};
    if (r != 0 || relative(d, p, rel) != 0 || absolute(d, p, abs) != 0 || raw_lstat(abs, &st) != 0)
        return r;
    pthread_mutex_lock(&lock);
    track_locked(st.st_dev, st.st_ino);
    rec.kind = K_MKDIR;
    rec.flags = F_DIR;
    rec.ino = st.st_ino;
    rec.p1 = rel;
    append_locked(&rec);
    pthread_mutex_unlock(&lock);
    return r;
}

int mkdir(const char *p, mode_t mode) {
    int r, e, on = enter();
    resolve_mkdir();
    r = real_mkdir(p, mode);
    e = errno;
    if (on) {
        do_mkdir(AT_FDCWD, p, r);
        leave();
    }
    errno = e;
    return r;
}

int mkdirat(int d, const char *p, mode_t mode) {
    int r, e, on = enter();
    resolve_mkdirat();
    r = real_mkdirat(d, p, mode);
    e = errno;
    if (on) {
        do_mkdir(d, p, r);
        leave();
    }
    errno = e;
    return r;
}

int symlink(const char *target, const char *p) {
    char rel[PATH_MAX];
    resolve_symlink();
    if (relative(AT_FDCWD, p, rel) == 0)
        unsupported(1, "a symbolic link made in the recorded directory", rel);
    return real_symlink(target, p);
}

int symlinkat(const char *target, int d, const char *p) {
    char rel[PATH_MAX];
    resolve_symlinkat();
    if (relative(d, p, rel) == 0)
        unsupported(1, "a symbolic link made in the recorded directory", rel);
    return real_symlinkat(target, d, p);
}

/* ---- what the layer cannot follow ---- */

static void check_mapping(void *m, int prot, int flags, int fd) {
    struct stat st;
    if (m == MAP_FAILED || fd < 0 || !(prot & PROT_WRITE) || !(flags & MAP_SHARED))
        return;
    if (tracked_fd(fd, &st))
        unsupported(1, "a shared writable mapping of a recorded file (stores through it are not seen)",
                    NULL);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *m;
    int e;
    resolve_mmap();
    m = real_mmap(addr, len, prot, flags, fd, off);
    e = errno;
    if (active)
        check_mapping(m, prot, flags, fd);
    errno = e;
    return m;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    void *m;
    int e;
    resolve_mmap64();
    m = real_mmap64(addr, len, prot, flags, fd, off);
    e = errno;
    if (active)
        check_mapping(m, prot, flags, fd);
    errno = e;
    return m;
}

static void copy_into(int fd, ssize_t r, const char *how) {
    struct stat st;
    if (active && r > 0 && tracked_fd(fd, &st))
        unsupported(1, how, NULL);
}

ssize_t copy_file_range(int in, off64_t *oi, int out, off64_t *oo, size_t n, unsigned f) {
    ssize_t r;
    int e;
    resolve_copy_file_range();
    r = real_copy_file_range(in, oi, out, oo, n, f);
    e = errno;
    copy_into(out, r, "copy_file_range into a recorded file (its bytes are not seen)");
    errno = e;
    return r;
}

ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    ssize_t r;
    int e;
    resolve_sendfile();
    r = real_sendfile(out, in, off, n);
    e = errno;
    copy_into(out, r, "sendfile into a recorded file (its bytes are not seen)");
    errno = e;
    return r;
}

ssize_t sendfile64(int out, int in, off64_t *off, size_t n) {
    ssize_t r;
    int e;
    resolve_sendfile64();
    r = real_sendfile64(out, in, off, n);
    e = errno;
    copy_into(out, r, "sendfile into a recorded file (its bytes are not seen)");
    errno = e;
    return r;
}

/* The C library's syscall(): WiredTiger calls fallocate through it, Rust's standard
 * library copy_file_range. Every other number passes straight through. */
long syscall(long number, ...) {
    va_list ap;
    long a1, a2, a3, a4, a5, a6, r;
    int e;
    va_start(ap, number);
    a1 = va_arg(ap, long);
    a2 = va_arg(ap, long);
    a3 = va_arg(ap, long);
    a4 = va_arg(ap, long);
    a5 = va_arg(ap, long);
    a6 = va_arg(ap, long);
    va_end(ap);
    resolve_syscall();
    switch (number) {
    case SYS_fallocate: {
        int on = enter();
        r = real_syscall(number, a1, a2, a3, a4, a5, a6);
        e = errno;
        if (on) {
            after_fallocate((int)a1, r == 0, (int)a2, (off64_t)a3, (off64_t)a4);
            leave();
        }
        errno = e;
        return r;
    }
    case SYS_copy_file_range:
        r = real_syscall(number, a1, a2, a3, a4, a5, a6);
        e = errno;
        copy_into((int)a3, r, "copy_file_range into a recorded file (its bytes are not seen)");
        errno = e;
        return r;
    case SYS_renameat2: {
        struct naming n;
        before_name(&n, (int)a1, (const char *)a2, (int)a3, (const char *)a4);
        r = real_syscall(number, a1, a2, a3, a4, a5, a6);
        e = errno;
        after_name(&n, (int)r, K_RENAME, (unsigned)a5);
        errno = e;
        return r;
    }
    case SYS_io_uring_setup:
        r = real_syscall(number, a1, a2, a3, a4, a5, a6);
        e = errno;
        if (active && r >= 0)
            unsupported(0, "io_uring set up: writes through it are not seen (the final check catches any)",
                        NULL);
        errno = e;
        return r;
    default:
        return real_syscall(number, a1, a2, a3, a4, a5, a6);
    }
}

/* ---- start ---- */

static void base_scan(const char *abs, const char *rel, int depth) {
    DIR *d;
    struct dirent *e;
    if (depth > 32 || !(d = opendir(abs)))
        return;
    while ((e = readdir(d))) {
        char a[PATH_MAX], r[PATH_MAX];
        struct stat st;
        struct rec rec = {0};
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(a, sizeof a, "%s/%s", abs, e->d_name);
        snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        if (raw_lstat(a, &st) != 0)
            continue;
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
            unsupported(0, "neither a file nor a directory (left out)", r);
            continue;
        }
        pthread_mutex_lock(&lock);
        track_locked(st.st_dev, st.st_ino);
        rec.kind = K_BASE;
        rec.flags = S_ISDIR(st.st_mode) ? F_DIR : 0;
        rec.ino = st.st_ino;
        rec.a = (uint64_t)st.st_size;
        rec.p1 = r;
        append_locked(&rec);
        pthread_mutex_unlock(&lock);
        if (S_ISDIR(st.st_mode))
            base_scan(a, r, depth + 1);
    }
    closedir(d);
}

__attribute__((constructor)) static void powercut_start(void) {
    const char *root = getenv("POWERCUT_ROOT");
    const char *log = getenv("POWERCUT_LOG");
    const char *mark = getenv("POWERCUT_MARK_FD");
    const char *ctl = getenv("POWERCUT_CONTROL");
    struct stat st;
    struct rec rec = {0};
    char magic[] = MAGIC;
    struct iovec v = {magic, 8};
    resolve_syscall();
    resolve_fsync();
    resolve_fdatasync();
    if (!root || !log || !realpath(root, root_real))
        return;
    if (absolute(AT_FDCWD, root, root_given) != 0)
        return;
    root_real_len = strlen(root_real);
    root_given_len = strlen(root_given);
    if (raw_stat(root_real, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    root_dev = st.st_dev;
    log_fd = (int)real_syscall(SYS_openat, AT_FDCWD, log,
                               O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return;
    write_all(log_fd, &v, 1);
    if (mark && *mark)
        mark_fd = atoi(mark);
    pthread_mutex_lock(&lock);
    track_locked(st.st_dev, st.st_ino);
    rec.kind = K_ROOT;
    rec.flags = F_DIR;
    rec.ino = st.st_ino;
    rec.p1 = root_real;
    append_locked(&rec);
    pthread_mutex_unlock(&lock);
    base_scan(root_real, "", 0);
    /* a process this one starts is not recorded (and does not start a recording of
     * its own over this one): what it changes shows in the final check */
    unsetenv("POWERCUT_ROOT");
    if (ctl && *ctl) {
        pthread_t t;
        pthread_attr_t at;
        snprintf(control, sizeof control, "%s", ctl);
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_create(&t, &at, freezer, NULL);
        pthread_attr_destroy(&at);
    }
    active = 1;
}
