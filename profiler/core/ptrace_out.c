/* ptrace_out.c: the trace file's life: .part while written, renamed when complete.
 * Written for a writer thread that appends ~64 KiB chunks of whole lines every flush. */
#include "ptrace_out.h"
#include "ptrace_write.h"
#include "ofile.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ptrace_out_mkdirs(const char *dir, char *err, size_t errlen) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p; *p = 0;
            if (mkdir(path, 0777) && errno != EEXIST) {
                snprintf(err, errlen, "%s: cannot create directory %s: %s", dir, path, strerror(errno));
                return -1;
            }
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", dir);
        return -1;
    }
    return 0;
}

int ptrace_out_open_path(ptrace_out *o, const char *final_path, char *err, size_t errlen) {
    o->fd = -1;
    o->bytes = 0;
    o->in_place = 0;
    int n1 = snprintf(o->path_final, sizeof o->path_final, "%s", final_path);
    int n2 = snprintf(o->path_part, sizeof o->path_part, "%s.part", final_path);
    if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof o->path_part) {
        snprintf(err, errlen, "%s: path too long", final_path);
        return -1;
    }
    o->in_place = ofile_in_place(final_path);
    if (o->in_place) snprintf(o->path_part, sizeof o->path_part, "%s", final_path);
    o->fd = o->in_place ? open(o->path_part, O_WRONLY | O_CLOEXEC)
                        : open(o->path_part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", o->path_part, strerror(errno));
        return -1;
    }
    char head[8];
    int n = ptrace_write_open(head, sizeof head);
    if (ptrace_out_write(o, head, (size_t)n)) {
        snprintf(err, errlen, "%s: write failed: %s", o->path_part, strerror(errno));
        close(o->fd); o->fd = -1;
        return -1;
    }
    return 0;
}

int ptrace_out_open(ptrace_out *o, const char *dir, int rank, long pid, char *err, size_t errlen) {
    char path[1024];
    o->fd = -1;
    if (ptrace_out_mkdirs(dir, err, errlen)) return -1;
    if (snprintf(path, sizeof path, "%s/specprof.rank%d.pid%ld.json", dir, rank, pid) >= (int)sizeof path - 6) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    return ptrace_out_open_path(o, path, err, errlen);
}

int ptrace_out_write(ptrace_out *o, const char *buf, size_t n) {
    if (o->fd < 0) { errno = EBADF; return -1; }
    while (n) {
        ssize_t w = write(o->fd, buf, n);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        buf += w; n -= (size_t)w; o->bytes += w;
    }
    return 0;
}

int ptrace_out_finish(ptrace_out *o, char *err, size_t errlen) {
    if (o->fd < 0) { snprintf(err, errlen, "%s: not open", o->path_part); return -1; }
    int rc = 0;
    if (close(o->fd)) { snprintf(err, errlen, "%s: close failed: %s", o->path_part, strerror(errno)); rc = -1; }
    o->fd = -1;
    if (!rc && !o->in_place && rename(o->path_part, o->path_final)) {
        snprintf(err, errlen, "%s: rename to %s failed: %s", o->path_part, o->path_final, strerror(errno));
        rc = -1;
    }
    return rc;
}

void ptrace_out_abandon(ptrace_out *o) {
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
}

void ptrace_out_discard(ptrace_out *o) {
    ptrace_out_abandon(o);
    if (!o->in_place && o->path_part[0]) unlink(o->path_part);
}
