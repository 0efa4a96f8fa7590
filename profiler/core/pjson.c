/* pjson.c: recursive-descent JSON parser into an arena (see pjson.h).
 * Designed for short lines (one trace event each): the arena grows in 64 KiB blocks and
 * is freed at once; a parse error never leaks (its partial values stay in the arena). */
#include "pjson.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PJSON_BLOCK_BYTES ((size_t)64 * 1024)
#define PJSON_MAX_DEPTH 64

typedef struct pjson_block { struct pjson_block *next; size_t used, cap; } pjson_block;
struct pjson_arena { pjson_block *head; size_t total; };

pjson_arena *pjson_arena_create(void) { return calloc(1, sizeof(pjson_arena)); }

void pjson_arena_destroy(pjson_arena *a) {
    if (!a) return;
    pjson_block *b = a->head;
    while (b) { pjson_block *n = b->next; free(b); b = n; }
    free(a);
}

void pjson_arena_reset(pjson_arena *a) {
    if (!a || !a->head) return;
    pjson_block *keep = a->head, *b = keep->next;
    while (b) { pjson_block *n = b->next; free(b); b = n; }
    keep->next = NULL;
    keep->used = 0;
    a->total = keep->cap;
}

void *pjson_arena_alloc(pjson_arena *a, size_t bytes) {
    bytes = (bytes + 7) & ~(size_t)7;
    pjson_block *b = a->head;
    if (!b || b->cap - b->used < bytes) {
        size_t cap = bytes > PJSON_BLOCK_BYTES ? bytes : PJSON_BLOCK_BYTES;
        pjson_block *nb = malloc(sizeof(pjson_block) + cap);
        if (!nb) return NULL;
        nb->used = 0; nb->cap = cap;
        /* a big one-off allocation goes behind the current block so it keeps filling */
        if (b && cap > PJSON_BLOCK_BYTES) { nb->next = b->next; b->next = nb; }
        else { nb->next = b; a->head = nb; }
        a->total += cap;
        b = nb;
    }
    void *p = (char *)(b + 1) + b->used;
    b->used += bytes;
    return p;
}

char *pjson_arena_strdup(pjson_arena *a, const char *s) {
    size_t n = strlen(s);
    char *d = pjson_arena_alloc(a, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

size_t pjson_arena_bytes(const pjson_arena *a) { return a ? a->total : 0; }

typedef struct {
    pjson_arena *a;
    const char *s, *end, *p;
    char *err; size_t errlen;
    int failed;
} pjson_parser;

static int pjson_fail(pjson_parser *ps, const char *fmt, ...) {
    if (ps->failed) return -1;
    ps->failed = 1;
    if (ps->err && ps->errlen) {
        int n = snprintf(ps->err, ps->errlen, "offset %ld: ", (long)(ps->p - ps->s));
        if (n < 0) n = 0;
        if ((size_t)n < ps->errlen) {
            va_list ap; va_start(ap, fmt);
            vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static void pjson_skip_ws(pjson_parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static pjson *pjson_new(pjson_parser *ps, pjson_type t) {
    pjson *v = pjson_arena_alloc(ps->a, sizeof(pjson));
    if (!v) { pjson_fail(ps, "out of memory"); return NULL; }
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

static int pjson_hex4(pjson_parser *ps, unsigned *out) {
    if (ps->end - ps->p < 4) return pjson_fail(ps, "short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = ps->p[k]; v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return pjson_fail(ps, "bad hex digit in \\u escape");
    }
    ps->p += 4; *out = v;
    return 0;
}

static size_t pjson_utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) { o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
                        o[2] = (char)(0x80 | (cp & 0x3F)); return 3; }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* On entry ps->p is at the opening quote. */
static const char *pjson_string(pjson_parser *ps, size_t *len_out) {
    ps->p++;
    const char *q = ps->p;
    while (q < ps->end && *q != '"') { if (*q == '\\') q++; q++; }
    if (q >= ps->end) { pjson_fail(ps, "unterminated string"); return NULL; }
    /* decoded length <= raw bytes between the quotes */
    char *out = pjson_arena_alloc(ps->a, (size_t)(q - ps->p) + 1);
    if (!out) { pjson_fail(ps, "out of memory"); return NULL; }
    size_t n = 0;
    if (!memchr(ps->p, '\\', (size_t)(q - ps->p))) {   /* no escapes (most strings): one copy */
        size_t len = (size_t)(q - ps->p);
        unsigned char bad = 0;
        for (size_t k = 0; k < len; k++) bad |= (unsigned char)ps->p[k] < 0x20;
        if (bad) {
            while ((unsigned char)*ps->p >= 0x20) ps->p++;
            pjson_fail(ps, "control character in string");
            return NULL;
        }
        memcpy(out, ps->p, len);
        out[len] = 0;
        ps->p = q + 1;
        *len_out = len;
        return out;
    }
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) { pjson_fail(ps, "control character in string"); return NULL; }
        if (c != '\\') { out[n++] = (char)c; ps->p++; continue; }
        ps->p++;
        if (ps->p >= ps->end) { pjson_fail(ps, "unterminated escape"); return NULL; }
        char e = *ps->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (pjson_hex4(ps, &cp)) return NULL;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                const char *save = ps->p;
                unsigned lo;
                ps->p += 2;
                if (pjson_hex4(ps, &lo)) return NULL;
                if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else ps->p = save;
            }
            n += pjson_utf8(cp, out + n);
            break;
        }
        default: pjson_fail(ps, "bad escape \\%c", e); return NULL;
        }
    }
    ps->p++; /* closing quote */
    out[n] = 0;
    *len_out = n;
    return out;
}

static pjson *pjson_value(pjson_parser *ps, int depth);

/* A double as int64, saturating (a cast of 1e300 is undefined behaviour). */
static int64_t pjson_sat64(double d) {
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

/* 10^k for k = 0..22: the powers of ten a double holds exactly (Clinger's fast path). */
static const double pjson_pow10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Rounding: to the nearest ns, because the digits below it are the writer's and say which ns
 * is closest (a writer that divides ns by 1e3 in floating point prints 1.2339999 for 1.234 us:
 * dropping them moved such a time down a ns, while the parse rounded); halves away from zero,
 * as llround does (the rounding of the exponent forms, which only a parse reads), the same for
 * negative times as for positive ones. From the digits, never through a double: at 1.7e15 us
 * (an absolute CUPTI time) a double's step is 0.25 us, and 1733580000123456.7894 came out up to
 * ~125 ns away from the ns its digits give. */
int pjson_dec_milli(const char *text, size_t len, int64_t *milli, size_t *used)
{
    const char *p = text, *end = text + len;
    int neg = p < end && *p == '-';
    p += neg;
    if (p >= end || *p < '0' || *p > '9')
        return 0;
    uint64_t m = 0;
    int nfrac = -1, up = 0, over = 0;   /* decimals read (-1: no '.' yet); round up; past uint64 */
    for (; p < end; p++) {
        if (*p == '.' && nfrac < 0) {
            nfrac = 0;
            continue;
        }
        if (*p < '0' || *p > '9')
            break;
        if (nfrac >= 3) {               /* below the ns: the first of them rounds */
            if (nfrac++ == 3)
                up = *p >= '5';
            continue;
        }
        if (m > (UINT64_MAX - 9) / 10)
            over = 1;
        else
            m = m * 10 + (uint64_t)(*p - '0');
        if (nfrac >= 0)
            nfrac++;
    }
    for (int k = nfrac < 0 ? 0 : nfrac; k < 3 && !over; k++) {
        if (m > UINT64_MAX / 10)
            over = 1;
        m *= 10;
    }
    m += (uint64_t)up;
    if (over || m > (uint64_t)INT64_MAX)
        return -1;
    *milli = neg ? -(int64_t)m : (int64_t)m;
    *used = (size_t)(p - text);
    return 1;
}

/* v->milli of a plain decimal (pjson_dec_milli), saturated past int64. */
static void pjson_set_dec_milli(pjson *v, const char *text, size_t len, int neg)
{
    size_t used;
    if (pjson_dec_milli(text, len, &v->milli, &used) != 1)
        v->milli = neg ? INT64_MIN : INT64_MAX;
}

/* A number without exponent and with at most 19 digits is read as an integer mantissa and a
 * count of decimals: the value x1000 (milli) comes out exact for up to 3 decimals (trace
 * timestamps in microseconds written to the ns), and the double is correctly rounded
 * (mantissa <= 2^53 and <= 22 decimals: one exact division), without strtod. Anything else
 * goes through strtod. */
static pjson *pjson_number(pjson_parser *ps) {
    const char *q = ps->p;
    int is_int = 1, neg = 0, fast = 1, ndig = 0, nfrac = 0, plain = 1;   /* plain: no exponent */
    uint64_t mant = 0;
    if (q < ps->end && *q == '-') { neg = 1; q++; }
    if (q >= ps->end || !(*q >= '0' && *q <= '9')) { pjson_fail(ps, "bad number"); return NULL; }
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-')) {
        char c = *q;
        if (c >= '0' && c <= '9') {
            if (++ndig > 19) fast = 0;
            else mant = mant * 10 + (uint64_t)(c - '0');
            if (!is_int) nfrac++;
        } else if (c == '.') {
            if (!is_int) fast = plain = 0;   /* a second '.': strtod judges */
            is_int = 0;
        } else {
            is_int = 0;
            fast = plain = 0;
        }
        q++;
    }
    size_t n = (size_t)(q - ps->p);
    pjson *v = pjson_new(ps, PJSON_NUM);
    if (!v) return NULL;
    if (fast && nfrac == 0 && !is_int) fast = 0;   /* "1." */
    if (fast && is_int && mant <= (uint64_t)INT64_MAX) {
        v->is_int = 1;
        v->i = neg ? -(int64_t)mant : (int64_t)mant;
        v->num = (double)v->i;
        if (v->i <= INT64_MAX / 1000 && v->i >= INT64_MIN / 1000) { v->milli = v->i * 1000; v->milli_exact = 1; }
        else v->milli = v->i > 0 ? INT64_MAX : INT64_MIN;
        ps->p = q;
        return v;
    }
    if (fast && !is_int) {
        int exact_num = mant <= ((uint64_t)1 << 53) && nfrac <= 22;
        if (exact_num) {
            v->num = (double)mant / pjson_pow10[nfrac];
            if (neg) v->num = -v->num;
        } else {
            char buf[64];
            if (n >= sizeof buf) { pjson_fail(ps, "number too long"); return NULL; }
            memcpy(buf, ps->p, n); buf[n] = 0;
            v->num = strtod(buf, NULL);
        }
        v->i = pjson_sat64(v->num);
        uint64_t m = mant;
        int fits = nfrac <= 3 && m <= (uint64_t)INT64_MAX;
        for (int k = nfrac; fits && k < 3; k++) {
            fits = m <= (uint64_t)INT64_MAX / 10;
            m *= 10;
        }
        if (fits) {
            v->milli = neg ? -(int64_t)m : (int64_t)m;
            v->milli_exact = 1;
        } else {
            pjson_set_dec_milli(v, ps->p, n, neg);   /* more than 3 decimals: rounded */
        }
        ps->p = q;
        return v;
    }
    char buf[64];
    if (n >= sizeof buf) { pjson_fail(ps, "number too long"); return NULL; }
    memcpy(buf, ps->p, n); buf[n] = 0;
    char *e;
    errno = 0;
    v->num = strtod(buf, &e);
    if (*e) { pjson_fail(ps, "bad number '%s'", buf); return NULL; }
    /* JSON has no infinity: 1e999 is refused here, so nothing downstream (a writer
     * echoing the value) can print inf */
    if (!isfinite(v->num)) { pjson_fail(ps, "number out of range '%s'", buf); return NULL; }
    if (is_int) {
        errno = 0;
        long long ll = strtoll(buf, &e, 10);
        if (errno == 0 && !*e) { v->is_int = 1; v->i = ll; }
        else v->i = pjson_sat64(v->num);
    } else v->i = pjson_sat64(v->num);
    if (plain) {   /* over 19 digits: from the digits, not the double (pjson_dec_milli) */
        pjson_set_dec_milli(v, ps->p, n, neg);
    } else {
        double m = v->num * 1000.0;
        v->milli = m >= 9.2e18 ? INT64_MAX : m <= -9.2e18 ? INT64_MIN : (int64_t)llround(m);
    }
    ps->p = q;
    return v;
}

static int pjson_lit(pjson_parser *ps, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n)) return 0;
    ps->p += n;
    return 1;
}

static pjson *pjson_array(pjson_parser *ps, int depth) {
    ps->p++;
    pjson *v = pjson_new(ps, PJSON_ARR);
    if (!v) return NULL;
    size_t cap = 0;
    pjson_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') { ps->p++; return v; }
    for (;;) {
        pjson *it = pjson_value(ps, depth + 1);
        if (!it) return NULL;
        if (v->len == cap) {
            size_t nc = cap ? cap * 2 : 4;
            pjson **ni = pjson_arena_alloc(ps->a, nc * sizeof *ni);
            if (!ni) { pjson_fail(ps, "out of memory"); return NULL; }
            if (cap) memcpy(ni, v->items, cap * sizeof *ni);
            v->items = ni; cap = nc;
        }
        v->items[v->len++] = it;
        pjson_skip_ws(ps);
        if (ps->p >= ps->end) { pjson_fail(ps, "unterminated array"); return NULL; }
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == ']') { ps->p++; return v; }
        pjson_fail(ps, "expected ',' or ']' in array");
        return NULL;
    }
}

static pjson *pjson_object(pjson_parser *ps, int depth) {
    ps->p++;
    pjson *v = pjson_new(ps, PJSON_OBJ);
    if (!v) return NULL;
    size_t cap = 0;
    pjson_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') { ps->p++; return v; }
    for (;;) {
        pjson_skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') { pjson_fail(ps, "expected a key string"); return NULL; }
        size_t kl;
        const char *key = pjson_string(ps, &kl);
        if (!key) return NULL;
        pjson_skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') { pjson_fail(ps, "expected ':' after key \"%s\"", key); return NULL; }
        ps->p++;
        pjson *val = pjson_value(ps, depth + 1);
        if (!val) return NULL;
        if (v->len == cap) {
            size_t nc = cap ? cap * 2 : 8;
            pjson_member *nm = pjson_arena_alloc(ps->a, nc * sizeof *nm);
            if (!nm) { pjson_fail(ps, "out of memory"); return NULL; }
            if (cap) memcpy(nm, v->members, cap * sizeof *nm);
            v->members = nm; cap = nc;
        }
        v->members[v->len].key = key;
        v->members[v->len].val = val;
        v->len++;
        pjson_skip_ws(ps);
        if (ps->p >= ps->end) { pjson_fail(ps, "unterminated object"); return NULL; }
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == '}') { ps->p++; return v; }
        pjson_fail(ps, "expected ',' or '}' in object");
        return NULL;
    }
}

static pjson *pjson_value(pjson_parser *ps, int depth) {
    if (depth > PJSON_MAX_DEPTH) { pjson_fail(ps, "nesting deeper than %d", PJSON_MAX_DEPTH); return NULL; }
    pjson_skip_ws(ps);
    if (ps->p >= ps->end) { pjson_fail(ps, "unexpected end of input"); return NULL; }
    char c = *ps->p;
    if (c == '{') return pjson_object(ps, depth);
    if (c == '[') return pjson_array(ps, depth);
    if (c == '"') {
        pjson *v = pjson_new(ps, PJSON_STR);
        if (!v) return NULL;
        v->str = pjson_string(ps, &v->len);
        return v->str ? v : NULL;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return pjson_number(ps);
    if (pjson_lit(ps, "true")) { pjson *v = pjson_new(ps, PJSON_BOOL); if (v) v->i = 1; return v; }
    if (pjson_lit(ps, "false")) return pjson_new(ps, PJSON_BOOL);
    if (pjson_lit(ps, "null")) return pjson_new(ps, PJSON_NULL);
    pjson_fail(ps, "unexpected character '%c'", c);
    return NULL;
}

int pjson_parse(pjson_arena *a, const char *text, size_t len, int allow_trailing_comma,
                pjson **out, char *err, size_t errlen) {
    pjson_parser ps = { a, text, text + len, text, err, errlen, 0 };
    if (err && errlen) err[0] = 0;
    pjson *v = pjson_value(&ps, 0);
    if (!v) return -1;
    pjson_skip_ws(&ps);
    if (allow_trailing_comma && ps.p < ps.end && *ps.p == ',') { ps.p++; pjson_skip_ws(&ps); }
    if (ps.p != ps.end) { pjson_fail(&ps, "trailing characters after the value"); return -1; }
    *out = v;
    return 0;
}

const pjson *pjson_get(const pjson *obj, const char *key) {
    if (!obj || obj->type != PJSON_OBJ) return NULL;
    for (size_t k = 0; k < obj->len; k++)
        if (!strcmp(obj->members[k].key, key)) return obj->members[k].val;
    return NULL;
}

int64_t pjson_get_int(const pjson *obj, const char *key, int64_t dflt) {
    const pjson *v = pjson_get(obj, key);
    if (!v) return dflt;
    if (v->type == PJSON_NUM || v->type == PJSON_BOOL) return v->i;
    return dflt;
}

double pjson_get_num(const pjson *obj, const char *key, double dflt) {
    const pjson *v = pjson_get(obj, key);
    return v && v->type == PJSON_NUM ? v->num : dflt;
}

const char *pjson_get_str(const pjson *obj, const char *key, const char *dflt) {
    const pjson *v = pjson_get(obj, key);
    return v && v->type == PJSON_STR ? v->str : dflt;
}

int pjson_get_bool(const pjson *obj, const char *key, int dflt) {
    const pjson *v = pjson_get(obj, key);
    if (!v) return dflt;
    if (v->type == PJSON_BOOL || v->type == PJSON_NUM) return v->i != 0;
    return dflt;
}

const pjson *pjson_at(const pjson *arr, size_t i) {
    if (!arr || arr->type != PJSON_ARR || i >= arr->len) return NULL;
    return arr->items[i];
}

typedef struct { char *p; size_t len, cap; int over; } pjson_out;

static void po_raw(pjson_out *o, const char *s, size_t n) {
    if (o->over || o->len + n + 1 > o->cap) { o->over = 1; return; }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = 0;
}

static void po_str(pjson_out *o, const char *s) {
    po_raw(o, "\"", 1);
    for (const char *q = s; *q; q++) {
        unsigned char c = (unsigned char)*q;
        char esc[8];
        if (c == '"') po_raw(o, "\\\"", 2);
        else if (c == '\\') po_raw(o, "\\\\", 2);
        else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); po_raw(o, esc, 6); }
        else po_raw(o, (const char *)&c, 1);
    }
    po_raw(o, "\"", 1);
}

static void po_val(pjson_out *o, const pjson *v) {
    char num[40];
    switch (v->type) {
    case PJSON_NULL: po_raw(o, "null", 4); break;
    case PJSON_BOOL: if (v->i) po_raw(o, "true", 4); else po_raw(o, "false", 5); break;
    case PJSON_NUM:
        if (v->is_int) snprintf(num, sizeof num, "%lld", (long long)v->i);
        else if (!isfinite(v->num)) snprintf(num, sizeof num, "null");   /* never inf/nan */
        else snprintf(num, sizeof num, "%.17g", v->num);
        po_raw(o, num, strlen(num));
        break;
    case PJSON_STR: po_str(o, v->str); break;
    case PJSON_ARR:
        po_raw(o, "[", 1);
        for (size_t k = 0; k < v->len; k++) { if (k) po_raw(o, ",", 1); po_val(o, v->items[k]); }
        po_raw(o, "]", 1);
        break;
    case PJSON_OBJ:
        po_raw(o, "{", 1);
        for (size_t k = 0; k < v->len; k++) {
            if (k) po_raw(o, ",", 1);
            po_str(o, v->members[k].key);
            po_raw(o, ":", 1);
            po_val(o, v->members[k].val);
        }
        po_raw(o, "}", 1);
        break;
    }
}

int pjson_write(const pjson *v, char *buf, size_t cap) {
    pjson_out o = { buf, 0, cap, 0 };
    if (!cap) return -1;
    buf[0] = 0;
    po_val(&o, v);
    return o.over ? -1 : (int)o.len;
}
