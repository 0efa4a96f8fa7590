/* ptrace_out.c: the trace file's life: .part while written, renamed when complete.
 * Written for a writer thread that appends ~64 KiB chunks of whole lines and ends a block
 * every flush (500 ms by default): one deflate stream, Z_FULL_FLUSH per block, so a file
 * cut by SIGKILL decompresses up to its last block (zlib's own guarantee for full flush). */
#include "ptrace_out.h"
#include "ptrace_write.h"
#include "ofile.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define PO_ZOUT_BYTES ((size_t)256 << 10)   /* compressed bytes gathered before a write(2) */

typedef struct { z_stream s; unsigned char out[PO_ZOUT_BYTES]; } po_z;

int ptrace_out_mkdirs(const char *dir, char *err, size_t errlen) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {   /* the reason first: dir may fill err */
        snprintf(err, errlen, "path too long (%zu bytes, at most %zu): %.200s...", strlen(dir), sizeof path - 1, dir);
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

static int po_raw_write(ptrace_out *o, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        p += w; n -= (size_t)w; o->bytes += w;
    }
    return 0;
}

/* Runs deflate with flush mode until it has taken all input (and, for a flush, emptied
 * itself), writing full output buffers as it goes. */
static int po_deflate(ptrace_out *o, int flush) {
    po_z *z = o->z;
    for (;;) {
        z->s.next_out = z->out;
        z->s.avail_out = (uInt)sizeof z->out;
        int r = deflate(&z->s, flush);
        if (r == Z_STREAM_ERROR) { errno = EIO; return -1; }
        size_t have = sizeof z->out - z->s.avail_out;
        if (have && po_raw_write(o, z->out, have)) return -1;
        if (flush == Z_NO_FLUSH ? z->s.avail_in == 0 : (r == Z_STREAM_END || (flush != Z_FINISH && z->s.avail_out != 0)))
            return 0;
    }
}

int ptrace_out_open_path_gz(ptrace_out *o, const char *final_path, int gz_level, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    int n1 = snprintf(o->path_final, sizeof o->path_final, "%s", final_path);
    int n2 = snprintf(o->path_part, sizeof o->path_part, "%s.part", final_path);
    if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof o->path_part) {
        snprintf(err, errlen, "%s: path too long", final_path);
        return -1;
    }
    if (gz_level > 0) {
        po_z *z = calloc(1, sizeof *z);
        /* windowBits 15 + 16: a gzip (RFC 1952) wrapper, so gzip -dc and zcat read it */
        if (!z || deflateInit2(&z->s, gz_level > 9 ? 9 : gz_level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            free(z);
            snprintf(err, errlen, "%s: cannot start the compressor (zlib)", final_path);
            return -1;
        }
        o->z = z;
        o->gz_level = gz_level;
    }
    /* a device or FIFO given as the final name is written in place, never replaced (ofile.h) */
    o->in_place = ofile_in_place(final_path);
    if (o->in_place) snprintf(o->path_part, sizeof o->path_part, "%s", final_path);
    o->fd = o->in_place ? open(o->path_part, O_WRONLY | O_CLOEXEC)
                        : open(o->path_part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", o->path_part, strerror(errno));
        ptrace_out_abandon(o);
        return -1;
    }
    char head[8];
    int n = ptrace_write_open(head, sizeof head);
    if (ptrace_out_write(o, head, (size_t)n)) {
        snprintf(err, errlen, "%s: write failed: %s", o->path_part, strerror(errno));
        ptrace_out_abandon(o);
        return -1;
    }
    return 0;
}

int ptrace_out_open_path(ptrace_out *o, const char *final_path, char *err, size_t errlen) {
    size_t n = strlen(final_path);
    return ptrace_out_open_path_gz(o, final_path, n > 3 && !strcmp(final_path + n - 3, ".gz") ? 6 : 0, err, errlen);
}

int ptrace_out_open_gz(ptrace_out *o, const char *dir, int rank, long pid, int gz_level, char *err, size_t errlen) {
    char path[PTRACE_OUT_PATH_BUF];
    o->fd = -1;
    o->z = NULL;
    if (ptrace_out_mkdirs(dir, err, errlen)) return -1;
    /* a file of this pid already there (an image before an exec in the same process, whose
     * .part was left when exec ran no exit handler; a pid reused by a later run into the same
     * directory) is never written over: this one gets -2, -3, ... */
    for (int k = 1; k <= 1000; k++) {
        char tag[16] = "";
        if (k > 1) snprintf(tag, sizeof tag, "-%d", k);
        if (snprintf(path, sizeof path, "%s/specprof.rank%d.pid%ld%s.json%s", dir, rank, pid, tag,
                     gz_level > 0 ? ".gz" : "") >= (int)sizeof path - 6) {
            snprintf(err, errlen, "path too long (at most %zu bytes): %.200s...", sizeof path - 7, dir);
            return -1;
        }
        char part[1100];
        snprintf(part, sizeof part, "%s.part", path);
        struct stat st;
        if (lstat(path, &st) && lstat(part, &st)) return ptrace_out_open_path_gz(o, path, gz_level, err, errlen);
    }
    snprintf(err, errlen, "%s: 1000 trace files of rank %d pid %ld there already", dir, rank, pid);
    return -1;
}

int ptrace_out_open(ptrace_out *o, const char *dir, int rank, long pid, char *err, size_t errlen) {
    return ptrace_out_open_gz(o, dir, rank, pid, 0, err, errlen);
}

int ptrace_out_write(ptrace_out *o, const char *buf, size_t n) {
    if (o->fd < 0) { errno = EBADF; return -1; }
    o->bytes_in += (int64_t)n;
    if (!o->z) return po_raw_write(o, buf, n);
    po_z *z = o->z;
    while (n) {
        /* avail_in is 32 bits */
        size_t take = n > (1u << 30) ? (1u << 30) : n;
        z->s.next_in = (Bytef *)(uintptr_t)buf;
        z->s.avail_in = (uInt)take;
        /* no flush here: a flush per call resets the compressor's state, and callers that
         * hand over a line at a time (specprof merge) then compress ~2x worse; the bytes
         * reach the file at the next block end (ptrace_out_block) or at the finish */
        if (po_deflate(o, Z_NO_FLUSH)) return -1;
        buf += take; n -= take;
    }
    return 0;
}

int ptrace_out_block(ptrace_out *o) {
    if (o->fd < 0) { errno = EBADF; return -1; }
    if (!o->z) return 0;
    po_z *z = o->z;
    z->s.next_in = NULL;
    z->s.avail_in = 0;
    if (po_deflate(o, Z_FULL_FLUSH)) return -1;
    o->blocks++;
    return 0;
}

int ptrace_out_finish(ptrace_out *o, char *err, size_t errlen) {
    if (o->fd < 0) { snprintf(err, errlen, "%s: not open", o->path_part); return -1; }
    int rc = 0;
    if (o->z) {
        po_z *z = o->z;
        z->s.next_in = NULL;
        z->s.avail_in = 0;
        if (po_deflate(o, Z_FINISH)) { snprintf(err, errlen, "%s: write failed: %s", o->path_part, strerror(errno)); rc = -1; }
        deflateEnd(&z->s);
        free(z);
        o->z = NULL;
    }
    if (close(o->fd) && !rc) { snprintf(err, errlen, "%s: close failed: %s", o->path_part, strerror(errno)); rc = -1; }
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
    if (o->z) {
        deflateEnd(&((po_z *)o->z)->s);
        free(o->z);
        o->z = NULL;
    }
}

void ptrace_out_discard(ptrace_out *o) {
    ptrace_out_abandon(o);
    if (!o->in_place && o->path_part[0]) unlink(o->path_part);
}
