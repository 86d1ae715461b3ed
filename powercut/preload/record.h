/*
 * What the files of the recording layer share: the record kinds and flags (keep
 * in step with powercut/src/recording.rs), the record, the state and helpers of
 * record.c, the real functions. See record.c for what the layer is.
 */
#ifndef POWERCUT_RECORD_H
#define POWERCUT_RECORD_H

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

/* what the files of the layer share (hidden: not part of the library's interface) */
#define HIDDEN __attribute__((visibility("hidden")))

typedef long (*syscall_fn)(long, ...);

struct rec {
    uint16_t kind, flags;
    uint64_t start, ino, a, b;
    const char *p1, *p2;
    const void *data;
    size_t len;
    const struct iovec *iov; /* data as an iovec array instead of data/len */
    int iovcnt;
};

/* record.c: the state */
extern HIDDEN syscall_fn real_syscall;
extern HIDDEN int active;
extern HIDDEN int log_fd;
extern HIDDEN int mark_fd;
extern HIDDEN dev_t root_dev;
extern HIDDEN pthread_mutex_t lock;
extern HIDDEN int slots_full;

/* record.c: raw calls, the recorded inodes, records, the freeze, paths */
HIDDEN void resolve_syscall(void);
HIDDEN int raw_fstat(int fd, struct stat *st);
HIDDEN int raw_lstat(const char *p, struct stat *st);
HIDDEN int raw_stat(const char *p, struct stat *st);
HIDDEN void raw_sleep_us(long us);
HIDDEN void write_all(int fd, const struct iovec *iov, int n);
HIDDEN void track_locked(uint64_t dev, uint64_t ino);
HIDDEN int tracked_fd(int fd, struct stat *st);
HIDDEN void append_locked(const struct rec *r);
HIDDEN void append(const struct rec *r);
HIDDEN uint64_t reserve(void);
HIDDEN void unsupported(int fatal, const char *what, const char *p);
HIDDEN int enter(void);
HIDDEN void leave(void);
HIDDEN void order_lock(int exclusive);
HIDDEN void order_unlock(void);
HIDDEN void test_size_delay(void);
HIDDEN int absolute(int dirfd, const char *path, char *out);
HIDDEN int relative(int dirfd, const char *path, char *rel);

/* files.c */
HIDDEN void after_fallocate(int fd, int ok, int mode, off64_t off, off64_t len);

/* The real function behind each interposed one, looked up on first use (one
 * pointer per file of the layer). */

#define REAL(ret, name, ...)                                                   \
    __attribute__((unused)) static ret (*real_##name)(__VA_ARGS__);            \
    __attribute__((unused)) static void resolve_##name(void) {                 \
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

#endif
