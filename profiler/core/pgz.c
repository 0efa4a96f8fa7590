/* pgz.c: plain or gzip file source (pgz.h). Input is read in 256 KiB blocks and inflated
 * into the caller's buffer, so memory is two blocks and zlib's window, whatever the size. */
#include "pgz.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PGZ_IN_BYTES ((size_t)256 << 10)   /* one fread of compressed input */

struct pgz {
    psrc base;
    FILE *fp;
    int gz, zinit, zend;        /* gzip input; inflate initialised; at a member's end */
    int to_cut, cut;            /* pgz_read_to_cut set; the stream ended without its trailer */
    z_stream z;
    unsigned char in[PGZ_IN_BYTES];
    char label[512];
};

static ssize_t pgz_plain_read(psrc *s, char *buf, size_t cap, char *err, size_t errlen)
{
    pgz *g = (pgz *)s;
    size_t n = fread(buf, 1, cap, g->fp);
    if (n == 0 && ferror(g->fp)) {
        snprintf(err, errlen, "%s: read error: %s", g->label, strerror(errno));
        return -1;
    }
    s->bytes_in += n;
    return (ssize_t)n;
}

static ssize_t pgz_gz_read(psrc *s, char *buf, size_t cap, char *err, size_t errlen)
{
    pgz *g = (pgz *)s;
    g->z.next_out = (unsigned char *)buf;
    g->z.avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
    uInt want = g->z.avail_out;
    while (g->z.avail_out == want) {
        if (g->z.avail_in == 0) {
            size_t n = fread(g->in, 1, sizeof g->in, g->fp);
            if (n == 0) {
                if (ferror(g->fp)) {
                    snprintf(err, errlen, "%s: read error: %s", g->label, strerror(errno));
                    return -1;
                }
                if (!g->zend && g->to_cut) {
                    g->cut = 1;      /* what inflated up to the cut is handed out, then the end */
                    break;
                }
                if (!g->zend) {
                    snprintf(err, errlen, "%s: gzip stream cut off (the file ends inside "
                             "compressed data: an incomplete copy?)", g->label);
                    return -1;
                }
                break;   /* end of the file after a whole member */
            }
            s->bytes_in += n;
            g->z.next_in = g->in;
            g->z.avail_in = (uInt)n;
        }
        if (g->zend && g->z.next_in[0] != 0x1f) {
            g->z.avail_in = 0;   /* bytes after the last member (padding): ignored, as gzip -dc does */
            fseek(g->fp, 0, SEEK_END);
            break;
        }
        if (g->zend) {   /* another member follows (gzip -dc reads them all) */
            if (inflateReset(&g->z) != Z_OK) {
                snprintf(err, errlen, "%s: gzip: %s", g->label, g->z.msg ? g->z.msg : "reset failed");
                return -1;
            }
            g->zend = 0;
        }
        int rc = inflate(&g->z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            g->zend = 1;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(err, errlen, "%s: gzip data corrupt near compressed byte %llu: %s", g->label,
                     (unsigned long long)(s->bytes_in - g->z.avail_in),
                     g->z.msg ? g->z.msg : "inflate failed");
            return -1;
        }
    }
    return (ssize_t)(want - g->z.avail_out);
}

int pgz_open(const char *path, pgz **out, char *err, size_t errlen)
{
    *out = NULL;
    pgz *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(g->label, sizeof g->label, "%s", path);
    g->base.label = g->label;
    g->fp = fopen(path, "rb");
    if (!g->fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        free(g);
        return -1;
    }
    int c0 = getc(g->fp), c1 = c0 == EOF ? EOF : getc(g->fp);
    g->gz = c0 == 0x1f && c1 == 0x8b;
    rewind(g->fp);
    if (g->gz) {
        if (inflateInit2(&g->z, 15 + 16) != Z_OK) {   /* 15-bit window, gzip wrapper */
            snprintf(err, errlen, "%s: gzip: cannot initialise zlib", path);
            fclose(g->fp);
            free(g);
            return -1;
        }
        g->zinit = 1;
        g->base.read = pgz_gz_read;
    } else {
        g->base.read = pgz_plain_read;
    }
    *out = g;
    return 0;
}

psrc *pgz_src(pgz *g) { return &g->base; }
int pgz_compressed(const pgz *g) { return g->gz; }
void pgz_read_to_cut(pgz *g) { g->to_cut = 1; }
int pgz_cut(const pgz *g) { return g->cut; }

void pgz_close(pgz *g)
{
    if (!g)
        return;
    if (g->zinit)
        inflateEnd(&g->z);
    if (g->fp)
        fclose(g->fp);
    free(g);
}

int pgz_slurp(const char *path, size_t max_bytes, char **text, size_t *len, char *err,
              size_t errlen)
{
    pgz *g;
    *text = NULL;
    *len = 0;
    if (pgz_open(path, &g, err, errlen))
        return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int rc = -1;
    while (buf) {
        if (n == cap) {
            if (cap >= max_bytes) {
                snprintf(err, errlen, "%s: larger than %zu bytes: not the small file expected",
                         path, max_bytes);
                goto out;
            }
            size_t nc = cap * 2 > max_bytes ? max_bytes : cap * 2;
            char *nb = realloc(buf, nc + 1);
            if (!nb)
                break;
            buf = nb;
            cap = nc;
        }
        ssize_t r = g->base.read(&g->base, buf + n, cap - n, err, errlen);
        if (r < 0)
            goto out;
        if (r == 0) {
            buf[n] = 0;
            *text = buf;
            *len = n;
            buf = NULL;
            rc = 0;
            goto out;
        }
        n += (size_t)r;
    }
    snprintf(err, errlen, "%s: out of memory", path);
out:
    free(buf);
    pgz_close(g);
    return rc;
}
