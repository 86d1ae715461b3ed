/*
 * The recording layer: changes of names, what the layer cannot follow (shared
 * writable mappings, copies into recorded files), and the C library's syscall().
 */
#include "record.h"

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
        if (on)
            order_lock(1); /* a size changes: exclusive (record.c, Order) */
        r = real_syscall(number, a1, a2, a3, a4, a5, a6);
        e = errno;
        if (on) {
            after_fallocate((int)a1, r == 0, (int)a2, (off64_t)a3, (off64_t)a4);
            order_unlock();
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
