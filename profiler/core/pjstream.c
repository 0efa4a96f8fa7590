/* pjstream.c: the streaming splitter of pjstream.h. One buffer slides over the input: the
 * grammar is walked one token at a time (a key, a ':', a whole value, a ',' or a bracket);
 * when a token runs past the buffered bytes, what is left moves to the front, more is read
 * and the token is scanned again from its start (so a value crossing a chunk boundary is
 * scanned twice, every other byte once). */
#include "pjstream.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PJS_CHUNK_BYTES ((size_t)1 << 20)   /* one read (1 MiB: reads cost nothing) */
#define PJS_KEY_MAX 256
#define PJS_NAME_MAX ((size_t)1 << 16)   /* how far a name with an unescaped quote is followed */

enum { PJS_START, PJS_KEY, PJS_COLON, PJS_VALUE, PJS_OBJ_NEXT, PJS_ELEM, PJS_ELEM_NEXT, PJS_DONE };

typedef struct {
    psrc  *src;
    char  *buf;
    size_t cap, pos, end;        /* unread input is buf[pos..end) */
    unsigned long long base;     /* input offset of buf[0] */
    int    eof;
    size_t max_value;
} pjs;

/* Scans a string starting at p (the opening quote). Returns the position after the closing
 * quote, or NULL when the buffer ends first. */
static const char *pjs_string_end(const char *p, const char *end)
{
    p++;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return NULL;
        const char *b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0)
            return q + 1;
        p = q + 1;
    }
}

static const char *pjs_blank(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* What follows a quote at p (just after it), as the end of an event's "name": 1 when it is
 * blank, then ',' and another member of a trace event ("pid", "ph", ...), or '}' and then ',',
 * ']' or '}' (the event's end); with any_comma, a ',' followed by anything is enough. 0: the
 * buffer ends before that is decided; -1: something else (the quote is inside the name). */
static int pjs_name_follow(const char *p, const char *end, int any_comma)
{
    static const char *const keys[] = {"\"ph\"", "\"cat\"", "\"name\"", "\"pid\"", "\"tid\"", "\"ts\"",
                                       "\"dur\"", "\"args\"", "\"id\"", "\"bp\"", "\"s\"", "\"tts\"",
                                       "\"cname\""};
    p = pjs_blank(p, end);
    if (p == end)
        return 0;
    if (*p == '}') {
        p = pjs_blank(p + 1, end);
        return p == end ? 0 : *p == ',' || *p == ']' || *p == '}' ? 1 : -1;
    }
    if (*p != ',')
        return -1;
    if (any_comma)
        return 1;
    p = pjs_blank(p + 1, end);
    int more = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t n = strlen(keys[k]), have = (size_t)(end - p);
        if (have < n) {
            more |= memcmp(p, keys[k], have) == 0;
            continue;
        }
        if (memcmp(p, keys[k], n) == 0) {
            const char *c = pjs_blank(p + n, end);
            return c == end ? 0 : *c == ':' ? 1 : -1;
        }
    }
    return more ? 0 : -1;
}

/* The end of an event's "name" value starting at p (its opening quote), as pjs_value_end.
 * Kineto before pytorch/kineto#1459 (June 2026) writes names without escaping '"': a Python
 * frame of with_stack=True (SGLang's default) named after a dynamo co_filename such as
 * {"device": "cpu"}(12): run, or a line holding a quote. Such a quote does not end the
 * string when what follows cannot follow a name: the name then ends at the first later quote
 * (on the same line: Kineto strips newlines from names) followed by another member of the
 * event or by its end. Before, the splitter lost its place in the document and read 0 events
 * (an odd number of quotes) or none after the name. */
static int pjs_name_end(const char *p, const char *end, int at_eof, const char **out)
{
    const char *q = pjs_string_end(p, end);
    if (!q)
        return 0;
    int f = pjs_name_follow(q, end, 1);
    if (f > 0 || (f == 0 && at_eof)) {
        *out = q;
        return 1;
    }
    if (f == 0)
        return 0;
    const char *lim = (size_t)(end - p) > PJS_NAME_MAX ? p + PJS_NAME_MAX : end;
    for (const char *r = q; r < lim && *r != '\n'; r++) {
        if (*r == '\\') {
            r++;
            continue;
        }
        if (*r != '"')
            continue;
        f = pjs_name_follow(r + 1, end, 0);
        if (f > 0) {
            *out = r + 1;
            return 1;
        }
        if (f == 0 && !at_eof)
            return 0;
    }
    if (lim == end && !at_eof && (size_t)(end - p) < PJS_NAME_MAX)
        return 0;   /* the line goes on past the buffer */
    *out = q;       /* no such quote: the string as written */
    return 1;
}

/* Scans one value starting at p (no leading blank). 1: *out is the position after it;
 * 0: the buffer ends inside it (at_eof: a scalar may end at the end); -1: not a value. An
 * object's "name" member is scanned by pjs_name_end. */
static int pjs_value_end(const char *p, const char *end, int at_eof, const char **out)
{
    char c = *p;
    if (c == '"') {
        const char *q = pjs_string_end(p, end);
        if (!q)
            return 0;
        *out = q;
        return 1;
    }
    if (c == '{' || c == '[') {
        int depth = 0, obj = c == '{';
        while (p < end) {
            c = *p;
            if (c == '"') {
                const char *q = pjs_string_end(p, end);
                if (!q)
                    return 0;
                if (depth == 1 && obj && q - p == 6 && memcmp(p, "\"name\"", 6) == 0) {
                    const char *v = pjs_blank(q, end);
                    if (v < end && *v == ':')   /* the key "name": its value */
                        v = pjs_blank(v + 1, end);
                    if (v == end)
                        return 0;
                    if (v > q && *v == '"') {
                        int r = pjs_name_end(v, end, at_eof, &q);
                        if (r <= 0)
                            return r;
                    }
                }
                p = q;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) {
                    *out = p + 1;
                    return 1;
                }
            }
            p++;
        }
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
               *p != '\r' && *p != '\t')
            p++;
        if (p == end && !at_eof)
            return 0;
        *out = p;
        return 1;
    }
    return -1;
}

/* Moves unread input to the front and reads more. 1: more bytes; 0: end of input; -1 err. */
static int pjs_fill(pjs *s, char *err, size_t errlen)
{
    if (s->eof)
        return 0;
    size_t keep = s->end - s->pos;
    if (s->pos > 0) {
        memmove(s->buf, s->buf + s->pos, keep);
        s->base += s->pos;
        s->pos = 0;
        s->end = keep;
    }
    if (s->cap - s->end < PJS_CHUNK_BYTES / 2) {
        if (keep > s->max_value) {
            snprintf(err, errlen, "%s: byte %llu: a JSON value longer than %zu bytes: not a trace "
                     "this reader can stream", s->src->label, s->base, s->max_value);
            return -1;
        }
        size_t nc = s->cap * 2;
        char *nb = realloc(s->buf, nc + 1);
        if (!nb) {
            snprintf(err, errlen, "%s: out of memory for a JSON value of %zu bytes", s->src->label, keep);
            return -1;
        }
        s->buf = nb;
        s->cap = nc;
    }
    ssize_t r = s->src->read(s->src, s->buf + s->end, s->cap - s->end, err, errlen);
    if (r < 0)
        return -1;
    if (r == 0) {
        s->eof = 1;
        return 0;
    }
    s->end += (size_t)r;
    return 1;
}

static void pjs_skip_blank(pjs *s)
{
    while (s->pos < s->end) {
        char c = s->buf[s->pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
            break;
        s->pos++;
    }
}

int pjstream_run(psrc *src, const char *array_key, const pjstream_cb *cb,
                 size_t max_value_bytes, pjstream_info *info, char *err, size_t errlen)
{
    pjs s = {.src = src, .cap = PJS_CHUNK_BYTES, .max_value = max_value_bytes};
    memset(info, 0, sizeof *info);
    s.buf = malloc(s.cap + 1);
    if (!s.buf) {
        snprintf(err, errlen, "%s: out of memory", src->label);
        return -1;
    }
    int state = PJS_START, rc = -1, split = 0;
    char key[PJS_KEY_MAX];
    key[0] = 0;
    for (;;) {
        pjs_skip_blank(&s);
        if (s.pos == s.end) {
            int f = pjs_fill(&s, err, errlen);
            if (f < 0)
                goto out;
            if (f == 0) {
                if (state == PJS_START) {
                    snprintf(err, errlen, "%s: empty: no JSON document", src->label);
                    goto out;
                }
                break;   /* cut off (or done) */
            }
            continue;
        }
        if (state == PJS_DONE) {
            snprintf(err, errlen, "%s: byte %llu: text after the end of the JSON document",
                     src->label, s.base + s.pos);
            goto out;
        }
        const char *p = s.buf + s.pos, *end = s.buf + s.end, *q;
        char c = *p;
        switch (state) {
        case PJS_START:
            if (s.base + s.pos == 0 && c == '\xef') {
                /* a UTF-8 byte order mark: RFC 8259 8.1 lets a parser ignore it (an editor or
                 * a Windows tool that re-saved the trace wrote it) */
                if (end - p < 3)
                    break;   /* more input */
                if (memcmp(p, "\xef\xbb\xbf", 3) == 0) {
                    s.pos += 3;
                    continue;
                }
            }
            if (c == '[') {
                info->doc_array = 1;
                split = 1;
                state = PJS_ELEM;
            } else if (c == '{') {
                state = PJS_KEY;
            } else {
                snprintf(err, errlen, "%s: byte %llu: not JSON: the document starts with '%c', "
                         "expected '{' or '['", src->label, s.base + s.pos, c);
                goto out;
            }
            s.pos++;
            continue;
        case PJS_KEY:
        case PJS_OBJ_NEXT:
            if (c == '}') {
                s.pos++;
                info->complete = 1;
                state = PJS_DONE;
                continue;
            }
            if (state == PJS_OBJ_NEXT) {
                if (c != ',') {
                    snprintf(err, errlen, "%s: byte %llu: expected ',' or '}' after member \"%s\"",
                             src->label, s.base + s.pos, key);
                    goto out;
                }
                s.pos++;
                state = PJS_KEY;
                continue;
            }
            if (c != '"') {
                snprintf(err, errlen, "%s: byte %llu: expected a member name", src->label, s.base + s.pos);
                goto out;
            }
            q = pjs_string_end(p, end);
            if (!q)
                break;   /* more input */
            {
                size_t n = (size_t)(q - p) - 2;
                if (n >= sizeof key)
                    n = sizeof key - 1;
                memcpy(key, p + 1, n);
                key[n] = 0;
            }
            s.pos = (size_t)(q - s.buf);
            state = PJS_COLON;
            continue;
        case PJS_COLON:
            if (c != ':') {
                snprintf(err, errlen, "%s: byte %llu: expected ':' after member name \"%s\"",
                         src->label, s.base + s.pos, key);
                goto out;
            }
            s.pos++;
            state = PJS_VALUE;
            continue;
        case PJS_VALUE:
            if (c == '[' && array_key && strcmp(key, array_key) == 0) {
                info->found_array = 1;
                split = 1;
                s.pos++;
                state = PJS_ELEM;
                continue;
            } else {
                int r = pjs_value_end(p, end, s.eof, &q);
                if (r < 0) {
                    snprintf(err, errlen, "%s: byte %llu: member \"%s\": not a JSON value",
                             src->label, s.base + s.pos, key);
                    goto out;
                }
                if (r == 0)
                    break;
                size_t n = (size_t)(q - p);
                if (n > info->max_value_bytes)
                    info->max_value_bytes = n;
                if (cb->member) {
                    char save = *q;
                    *(char *)q = 0;   /* a NUL after the value, for parsers that want one */
                    int stop = cb->member(cb->user, key, p, n);
                    *(char *)q = save;
                    if (stop) {
                        info->stopped = 1;
                        rc = 0;
                        goto out;
                    }
                }
                s.pos = (size_t)(q - s.buf);
                state = PJS_OBJ_NEXT;
                continue;
            }
        case PJS_ELEM:
        case PJS_ELEM_NEXT:
            if (c == ']') {
                s.pos++;
                split = 0;
                if (info->doc_array) {
                    info->complete = 1;
                    state = PJS_DONE;
                } else {
                    state = PJS_OBJ_NEXT;
                }
                continue;
            }
            if (state == PJS_ELEM_NEXT) {
                if (c != ',') {
                    snprintf(err, errlen, "%s: byte %llu: expected ',' or ']' after element %zu",
                             src->label, s.base + s.pos, info->elements);
                    goto out;
                }
                s.pos++;
                state = PJS_ELEM;   /* a ']' after a trailing ',' is accepted */
                continue;
            } else {
                int r = pjs_value_end(p, end, s.eof, &q);
                if (r < 0) {
                    snprintf(err, errlen, "%s: byte %llu: element %zu is not a JSON value",
                             src->label, s.base + s.pos, info->elements);
                    goto out;
                }
                if (r == 0)
                    break;
                size_t n = (size_t)(q - p);
                if (n > info->max_value_bytes)
                    info->max_value_bytes = n;
                info->elements++;
                char save = *q;
                *(char *)q = 0;
                int stop = cb->element ? cb->element(cb->user, p, n) : 0;
                *(char *)q = save;
                if (stop) {
                    info->stopped = 1;
                    rc = 0;
                    goto out;
                }
                s.pos = (size_t)(q - s.buf);
                state = PJS_ELEM_NEXT;
                continue;
            }
        }
        /* the token runs past the buffer: more input, then scan it again */
        int f = pjs_fill(&s, err, errlen);
        if (f < 0)
            goto out;
        if (f == 0)
            break;   /* cut off inside a token */
    }
    (void)split;
    rc = 0;
out:
    info->bytes = s.base + s.end;
    if (rc == 0 && !info->complete && !info->stopped)
        info->cut_bytes = s.end - s.pos;
    free(s.buf);
    return rc;
}
