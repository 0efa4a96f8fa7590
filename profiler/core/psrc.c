/* psrc.c: the memory source and the line splitter over any source (psrc.h). Lines are
 * handed out in place from one buffer that slides over the input: memory is one chunk plus
 * the longest line, whatever the size of the input. */
#include "psrc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PSRC_CHUNK_BYTES ((size_t)1 << 20)   /* one read: large enough that reads cost nothing */

static ssize_t psrc_mem_read(psrc *s, char *buf, size_t cap, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    psrc_mem *m = (psrc_mem *)s;
    size_t n = m->len - m->pos < cap ? m->len - m->pos : cap;
    memcpy(buf, m->text + m->pos, n);
    m->pos += n;
    s->bytes_in += n;
    return (ssize_t)n;
}

void psrc_mem_init(psrc_mem *m, const char *text, size_t len, const char *label)
{
    memset(m, 0, sizeof *m);
    m->base.read = psrc_mem_read;
    m->base.label = label ? label : "(memory)";
    m->text = text;
    m->len = len;
}

ssize_t psrc_read_full(psrc *s, char *buf, size_t cap, char *err, size_t errlen)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t r = s->read(s, buf + n, cap - n, err, errlen);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

int psrc_lines_init(psrc_lines *l, psrc *src, size_t max_line)
{
    memset(l, 0, sizeof *l);
    l->src = src;
    l->max_line = max_line;
    l->cap = PSRC_CHUNK_BYTES;
    l->buf = malloc(l->cap + 1);
    return l->buf ? 0 : -1;
}

int psrc_lines_next(psrc_lines *l, const char **line, size_t *len, char *err, size_t errlen)
{
    size_t scanned = l->start;
    l->cut = l->unterminated = 0;
    for (;;) {
        if (l->cut_long && !l->skipping) {   /* a run of NULs before a line is no part of it */
            size_t z = l->start;
            while (z < l->end && l->buf[z] == 0)
                z++;
            l->nul_bytes += z - l->start;
            l->start = z;
            if (scanned < z)
                scanned = z;
        }
        char *nl = memchr(l->buf + scanned, '\n', l->end - scanned);
        if (nl && l->skipping) {            /* the end of a cut line: drop it */
            l->skipping = 0;
            l->start = scanned = (size_t)(nl - l->buf) + 1;
            continue;
        }
        if (nl) {
            *line = l->buf + l->start;
            *len = (size_t)(nl - *line);
            l->start = (size_t)(nl - l->buf) + 1;
            return 1;
        }
        if (l->eof) {
            if (l->start == l->end || l->skipping) {
                l->start = l->end;
                return 0;
            }
            *line = l->buf + l->start;
            *len = l->end - l->start;
            l->start = l->end;
            l->unterminated = 1;
            return 1;
        }
        /* the partial line moves to the front, then more input after it */
        size_t keep = l->end - l->start;
        if (l->skipping)
            keep = 0;
        else if (keep > l->max_line) {
            if (!l->cut_long) {
                snprintf(err, errlen, "%s: a line longer than %zu bytes", l->src->label, l->max_line);
                return -1;
            }
            /* no '\n' in buf[start..end): all of it is this line; the rest is dropped later */
            *line = l->buf + l->start;
            *len = l->max_line;
            l->start = l->end;
            l->skipping = l->cut = 1;
            l->cut_lines++;
            return 1;
        }
        memmove(l->buf, l->buf + l->end - keep, keep);
        l->start = 0;
        l->end = keep;
        scanned = keep;
        if (l->cap - l->end < PSRC_CHUNK_BYTES / 2) {
            size_t nc = l->cap * 2;
            char *nb = realloc(l->buf, nc + 1);
            if (!nb) {
                snprintf(err, errlen, "%s: out of memory for a line of %zu bytes", l->src->label, keep);
                return -1;
            }
            l->buf = nb;
            l->cap = nc;
        }
        ssize_t r = l->src->read(l->src, l->buf + l->end, l->cap - l->end, err, errlen);
        if (r < 0)
            return -1;
        if (r == 0)
            l->eof = 1;
        l->end += (size_t)r;
    }
}

void psrc_lines_free(psrc_lines *l)
{
    if (!l)
        return;
    free(l->buf);
    memset(l, 0, sizeof *l);
}
