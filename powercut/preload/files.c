/*
 * The recording layer: opening (and C stdio streams), writing, sizes and syncs.
 */
#include "record.h"

/* ---- opening ---- */

static int open_flags_write(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
}

struct opening {
    int on;
    int excl;
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
    /* an open that truncates changes a size: exclusive (see record.c, Order) */
    o->excl = (flags & O_TRUNC) != 0;
    if (o->excl)
        order_lock(1);
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
    if (o->excl)
        order_unlock();
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

/* A write whose offset is read back after the call (at the file position, or
 * appending) is exclusive under the order lock; one at a given offset is shared
 * (see record.c, Order). */
static int write_exclusive(int fd, off64_t off, int append_flag) {
    int fl;
    if (off < 0 || append_flag)
        return 1;
    fl = (int)real_syscall(SYS_fcntl, fd, F_GETFL);
    return fl >= 0 && (fl & O_APPEND);
}

#define WRITE_BODY(call, buf, iov, iovcnt, off, syncf, appendf)               \
    ssize_t r;                                                                 \
    int e, on = enter();                                                       \
    if (on)                                                                    \
        order_lock(write_exclusive(fd, off, appendf));                         \
    r = call;                                                                  \
    e = errno;                                                                 \
    if (on) {                                                                  \
        after_write(fd, buf, iov, iovcnt, r, off, syncf, appendf);             \
        order_unlock();                                                        \
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
    test_size_delay();
    append(&rec);
}

/* a call on a descriptor or path; excl: it holds the order lock exclusively, else
 * it takes none (see record.c, Order) */
#define FD_BODY(call, after, excl)                                             \
    int r, e, on = enter();                                                    \
    if (on && (excl))                                                          \
        order_lock(1);                                                         \
    r = call;                                                                  \
    e = errno;                                                                 \
    if (on) {                                                                  \
        after;                                                                 \
        if (excl)                                                              \
            order_unlock();                                                    \
        leave();                                                               \
    }                                                                          \
    errno = e;                                                                 \
    return r;

int ftruncate(int fd, off_t len) {
    resolve_ftruncate();
    FD_BODY(real_ftruncate(fd, len), after_truncate(fd, r, len), 1)
}

int ftruncate64(int fd, off64_t len) {
    resolve_ftruncate64();
    FD_BODY(real_ftruncate64(fd, len), after_truncate(fd, r, len), 1)
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
    FD_BODY(real_truncate(path, len), after_path_truncate(path, r, len), 1)
}

int truncate64(const char *path, off64_t len) {
    resolve_truncate64();
    FD_BODY(real_truncate64(path, len), after_path_truncate(path, r, len), 1)
}

HIDDEN void after_fallocate(int fd, int ok, int mode, off64_t off, off64_t len) {
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
    FD_BODY(real_fallocate(fd, mode, off, len), after_fallocate(fd, r == 0, mode, off, len), 1)
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
    resolve_fallocate64();
    FD_BODY(real_fallocate64(fd, mode, off, len), after_fallocate(fd, r == 0, mode, off, len), 1)
}

/* posix_fallocate returns the error number, errno untouched */
int posix_fallocate(int fd, off_t off, off_t len) {
    resolve_posix_fallocate();
    FD_BODY(real_posix_fallocate(fd, off, len), after_fallocate(fd, r == 0, 0, off, len), 1)
}

int posix_fallocate64(int fd, off64_t off, off64_t len) {
    resolve_posix_fallocate64();
    FD_BODY(real_posix_fallocate64(fd, off, len), after_fallocate(fd, r == 0, 0, off, len), 1)
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
    FD_BODY(real_sync_file_range(fd, off, n, flags), after_sync_range(fd, r, off, n, flags), 0)
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

/* resolved before any call needs them (a sync inside a signal handler, say) */
__attribute__((constructor)) static void files_start(void) {
    resolve_fsync();
    resolve_fdatasync();
}
