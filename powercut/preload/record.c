/*
 * The recording layer of powercut: a shared library loaded with LD_PRELOAD into a
 * child engine process. It interposes the C library's file calls and appends, in
 * one global order, a record of every operation that changes a file or a name
 * under one directory (the recorded root), with the bytes of every write, and of
 * every write to one marker descriptor (the child's protocol lines). The format is
 * described in powercut/src/recording.rs, the module that reads it.
 *
 * Files: record.h (what they share), record.c (this one: the state, the raw calls,
 * the set of recorded inodes, appending records, the freeze, paths, the start),
 * files.c (opening, C stdio, writing, sizes, syncs), names.c (changes of names,
 * what the layer refuses, the C library's syscall()).
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
 * Causal order is not enough for calls that overlap in time and do not commute:
 * the kernel applies them in one order, their records may be appended in the
 * other. A truncation and a write past its length are such a pair (sled truncates
 * its file on a thread of its own while its writers append: replayed in the wrong
 * order, the write is cut off, and the check of the recording fails). So each
 * recorded call holds the order lock from before its call until its record is
 * appended: shared for a write at a given offset (two of those commute unless
 * they write the same bytes, which no engine does concurrently), exclusive for a
 * call that changes a size or whose offset is read back after it (truncate,
 * fallocate, an open with O_TRUNC, a write at the file position or appending).
 * Syncs and name changes take no order lock: a sync's start number already says
 * what it covers, and names change only through the one lock that appends them
 * (a rename racing a write through an open descriptor commutes with it).
 *
 * Test hook: POWERCUT_TEST_SIZE_DELAY_US (microseconds) makes a truncation wait
 * that long between its call and its record, under the order lock, so a test can
 * race a write against it deterministically.
 *
 * The layer's own I/O (the recording, its stat calls) goes through the real
 * syscall function, never through a wrapper; errno is saved after each real call
 * and restored before returning.
 */
#include "record.h"

HIDDEN syscall_fn real_syscall;
HIDDEN int active;
HIDDEN int log_fd = -1;
HIDDEN int mark_fd = -1;
static char root_real[PATH_MAX];
static size_t root_real_len;
static char root_given[PATH_MAX];
static size_t root_given_len;
HIDDEN dev_t root_dev;
static char control[PATH_MAX];
HIDDEN pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;
static int frozen;
static int in_flight;
/* writers preferred: a truncation is not starved by a stream of writes */
static pthread_rwlock_t order = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static long size_delay_us;

HIDDEN void resolve_syscall(void) {
    if (!real_syscall)
        real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
}

/* ---- small helpers on raw syscalls ---- */

HIDDEN int raw_fstat(int fd, struct stat *st) {
    resolve_syscall();
    return (int)real_syscall(SYS_fstat, fd, st);
}

HIDDEN int raw_lstat(const char *p, struct stat *st) {
    resolve_syscall();
    return (int)real_syscall(SYS_newfstatat, AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW);
}

HIDDEN int raw_stat(const char *p, struct stat *st) {
    resolve_syscall();
    return (int)real_syscall(SYS_newfstatat, AT_FDCWD, p, st, 0);
}

HIDDEN void raw_sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    resolve_syscall();
    real_syscall(SYS_nanosleep, &t, NULL);
}

HIDDEN void write_all(int fd, const struct iovec *iov, int n) {
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
HIDDEN int slots_full;

static uint64_t slot_of(uint64_t dev, uint64_t ino) {
    uint64_t h = (ino * 0x9E3779B97F4A7C15ull) ^ dev;
    return (h >> 15) & (SLOTS - 1);
}

/* under the lock */
HIDDEN void track_locked(uint64_t dev, uint64_t ino) {
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
HIDDEN int tracked_fd(int fd, struct stat *st) {
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
HIDDEN void append_locked(const struct rec *r) {
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

HIDDEN void append(const struct rec *r) {
    pthread_mutex_lock(&lock);
    append_locked(r);
    pthread_mutex_unlock(&lock);
}

/* A number between the records appended before and those appended after. */
HIDDEN uint64_t reserve(void) {
    uint64_t s;
    pthread_mutex_lock(&lock);
    s = ++seq;
    pthread_mutex_unlock(&lock);
    return s;
}

HIDDEN void unsupported(int fatal, const char *what, const char *p) {
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

HIDDEN int enter(void) {
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

HIDDEN void leave(void) {
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
}

/* The order lock (see Order above): taken after enter(), released before leave(),
 * so a call blocked by the freeze holds none. */
HIDDEN void order_lock(int exclusive) {
    if (exclusive)
        pthread_rwlock_wrlock(&order);
    else
        pthread_rwlock_rdlock(&order);
}

HIDDEN void order_unlock(void) {
    pthread_rwlock_unlock(&order);
}

HIDDEN void test_size_delay(void) {
    if (size_delay_us > 0)
        raw_sleep_us(size_delay_us);
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
HIDDEN int absolute(int dirfd, const char *path, char *out) {
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
HIDDEN int relative(int dirfd, const char *path, char *rel) {
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
    const char *delay = getenv("POWERCUT_TEST_SIZE_DELAY_US");
    struct stat st;
    struct rec rec = {0};
    char magic[] = MAGIC;
    struct iovec v = {magic, 8};
    resolve_syscall();
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
    if (delay && *delay)
        size_delay_us = atol(delay);
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
