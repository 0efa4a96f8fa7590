/* sglog.c: the Decode batch line parser of sglog.h. A line is one whose message starts with
 * "Decode batch": right after SGLang's "[time ...] " prefix (whatever a collector put before
 * it), or at the line's start; then it is read as "key: value" pairs separated by ", ";
 * unknown keys (pre-allocated usage, #prealloc-req, est. decode TFLOPS/s, ...) are skipped,
 * so lines of releases with more fields still parse. The server's arguments are found the
 * same way: the line whose message starts with "server_args=ServerArgs(". */
#include "sglog.h"
#include "bounds.h"
#include "pgz.h"
#include "psrc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A longer line is cut here and read as an other line: a Decode batch line is ~300 bytes,
 * but --log-requests-level 1..3 writes whole prompts untruncated ("Receive: obj=...",
 * max_length 1 << 30 in managers/tokenizer_manager.py), megabytes for a long context. */
#define SGLOG_MAX_LINE ((size_t)1 << 20)

void sglog_init(sglog *g) { memset(g, 0, sizeof *g); }

void sglog_free(sglog *g)
{
    if (!g)
        return;
    free(g->iv);
    free(g->server_args);
    memset(g, 0, sizeof *g);
}

/* A decimal integer of at most 18 digits at p (never past end: the line need not end with
 * a NUL): 1, *v and *after; 0 when there is none. */
static int sg_int(const char *p, const char *end, long long *v, const char **after)
{
    long long x = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9' && q - p < 18)
        x = x * 10 + (*q++ - '0');
    if (q == p || (q < end && *q >= '0' && *q <= '9'))
        return 0;
    *v = x;
    *after = q;
    return 1;
}

/* "[2025-06-01 12:00:00 DP6 PP1 TP6 EP6] ..." -> dp, pp, tp (open: that bracket's '[', or
 * NULL for a line without it). */
static void sg_ranks(const char *open, const char *pos, int *dp, int *pp, int *tp)
{
    *dp = *pp = *tp = -1;
    if (!open)
        return;
    for (const char *p = open; p < pos && *p != ']'; p++) {
        if ((p[0] == 'D' || p[0] == 'P' || p[0] == 'T') && p[1] == 'P') {
            if (p > open && p[-1] != ' ' && p[-1] != '[')
                continue;
            long long v;
            const char *e;
            if (p + 2 < pos && sg_int(p + 2, pos, &v, &e) && e < pos && v <= 1000000 && (*e == ' ' || *e == ']')) {
                *(p[0] == 'D' ? dp : p[0] == 'P' ? pp : tp) = (int)v;
            }
        }
    }
}

/* Whether the text before tag (the first "Decode batch" or "server_args=ServerArgs(" of the
 * line) is a prefix, so that the line's message starts with the tag: what comes last before it, colour codes (ESC [ .. letter)
 * and blanks aside, is the "]" of SGLang's "[time TP0] " (logging format "[%(asctime)s{prefix}]
 * %(message)s", sglang/srt/utils configure_logger), or nothing at all; and the text before holds
 * no quote, but for Docker's json-file start {"log":". A prompt that quotes a log line
 * (--log-requests: Receive: obj=GenerateReqInput(text='..[..] Decode batch, ..')) is a repr in
 * quotes, and was counted as a batch. *open: the '[' of that bracket (NULL: none). */
static int sg_message_start(const char *line, const char *tag, const char **open)
{
    static const char docker[] = "{\"log\":\"";
    const char *p = line, *last = NULL, *bra = NULL;
    *open = NULL;
    if ((size_t)(tag - line) >= sizeof docker - 1 && memcmp(line, docker, sizeof docker - 1) == 0)
        p += sizeof docker - 1;
    for (; p < tag; p++) {
        if (*p == 0x1b && p + 1 < tag && p[1] == '[') {     /* a colour code */
            for (p += 2; p < tag && !(*p >= 0x40 && *p <= 0x7e); p++)
                ;
            continue;
        }
        if (*p == '\'' || *p == '"')
            return 0;
        if (*p == '[')
            bra = p;
        if (*p != ' ' && *p != '\t')
            last = p;
    }
    if (last && *last != ']')
        return 0;
    *open = last ? bra : NULL;
    return 1;
}

/* The first tag of the line when the line's message starts with it (sg_message_start), else
 * NULL; *open as there. */
static const char *sg_message(const char *line, size_t len, const char *tag, size_t taglen, const char **open)
{
    const char *m = memmem(line, len, tag, taglen);
    return m && sg_message_start(line, m, open) ? m : NULL;
}

int sglog_parse_line(const char *line, size_t len, sglog_interval *iv, char *err, size_t errlen)
{
    static const char tag[] = "Decode batch";
    const char *open, *m = sg_message(line, len, tag, sizeof tag - 1, &open);
    if (!m)
        return 0;
    const char *end = line + len, *p = m + sizeof tag - 1;
    /* a Decode batch line holds no backslash: one after the tag is the escaped line end of a
     * log stored as JSON (Docker's json-file driver: {"log":"... #queue-req: 0\n","stream":..}) */
    const char *bs = memchr(p, '\\', (size_t)(end - p));
    if (bs)
        end = bs;
    memset(iv, 0, sizeof *iv);
    iv->running_req = iv->cuda_graph = iv->queue_req = -1;
    iv->kv_tokens = iv->token_usage = iv->accept_len = iv->accept_rate = iv->gen_tok_s = -1;
    iv->iter = -1;
    sg_ranks(open, m, &iv->dp, &iv->pp, &iv->tp);
    if (p < end && *p == ' ' && p + 1 < end && p[1] == '[') {   /* Decode batch [123], */
        const char *e;
        long long it;
        if (!sg_int(p + 2, end, &it, &e) || e >= end || *e != ']') {
            snprintf(err, errlen, "field iteration: \"Decode batch [\" without a number");
            return -1;
        }
        iv->iter = it;
        p = e + 1;
    }
    if (p >= end || (*p != ',' && *p != '.')) {
        snprintf(err, errlen, "expected ',' or '.' after \"Decode batch\"");
        return -1;
    }
    p++;
    /* key: value pairs */
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p >= end)
            break;
        const char *k = p, *colon = NULL;
        while (p < end && *p != ',') {
            if (*p == ':' && !colon && p + 1 < end && p[1] == ' ')
                colon = p;
            p++;
        }
        if (!colon)
            continue;                        /* a field without "key: value" */
        size_t kl = (size_t)(colon - k);
        const char *v = colon + 2;
        char vb[64];
        size_t vl = 0;
        for (const char *q = v; q < p && vl < sizeof vb - 1; q++) {
            /* colour codes (ESC [ ... letter) around a value: a coloured log or terminal copy */
            if (*q == 0x1b && q + 1 < p && q[1] == '[') {
                for (q += 2; q < p && !(*q >= 0x40 && *q <= 0x7e); q++)
                    ;
                continue;
            }
            vb[vl++] = *q;
        }
        vb[vl] = 0;
        while (vl && (vb[vl - 1] == ' ' || vb[vl - 1] == '\r'))
            vb[--vl] = 0;
        char *e;
        double x = strtod(vb, &e);
        int num = e != vb && *e == 0 && isfinite(x);   /* strtod reads "nan" and "inf" too */
#define KEY(s) (kl == sizeof(s) - 1 && memcmp(k, s, kl) == 0)
        /* "cpu graph" on a CPU server, "npu graph" on Ascend (the graph_backend map of
         * scheduler_metrics_mixin.py report_decode_stats), "cuda graph" everywhere else */
        if (KEY("cuda graph") || KEY("cpu graph") || KEY("npu graph")) {
            if (!strcmp(vb, "True"))
                iv->cuda_graph = 1;
            else if (!strcmp(vb, "False"))
                iv->cuda_graph = 0;
            else {
                snprintf(err, errlen, "field %.*s: value \"%s\": expected True or False", (int)kl, k, vb);
                return -1;
            }
            continue;
        }
        int known = KEY("#running-req") || KEY("#token") || KEY("#full token") ||
                    KEY("token usage") || KEY("accept len") || KEY("accept rate") ||
                    KEY("gen throughput (token/s)") || KEY("#queue-req");
        if (!known)
            continue;
        if (!num || x < 0) {
            snprintf(err, errlen, "field %.*s: value \"%s\": not a finite number >= 0", (int)kl, k, vb);
            return -1;
        }
        /* counts become ints: within a batch's range (bounds.h: 1e9 requests, a 1e300 once
         * overflowed the cast) */
        if ((KEY("#running-req") || KEY("#queue-req")) && !(x <= BND_TOKENS_MAX)) {
            snprintf(err, errlen, "field %.*s: value \"%s\": out of range: a request count must be in "
                     "[0, 1e9]", (int)kl, k, vb);
            return -1;
        }
        /* the accepted tokens per verify count its bonus token (scheduler_metrics_mixin.py:
         * accepted drafts + 1 per request, over the requests verified): 0.00 is a fork's
         * guarded 0 / 0 for an interval without a speculative forward, not an acceptance */
        if (KEY("accept len") && x < 1) {
            snprintf(err, errlen, "field accept len: value \"%s\": below 1, but every verify keeps at "
                     "least its bonus token (an interval without a speculative forward?)", vb);
            return -1;
        }
        if (KEY("#running-req"))
            iv->running_req = (int)x;
        else if (KEY("#token") || KEY("#full token"))
            iv->kv_tokens = x;
        else if (KEY("token usage"))
            iv->token_usage = x;
        else if (KEY("accept len"))
            iv->accept_len = x;
        else if (KEY("accept rate"))
            iv->accept_rate = x;
        else if (KEY("gen throughput (token/s)"))
            iv->gen_tok_s = x;
        else if (KEY("#queue-req"))
            iv->queue_req = (int)x;
#undef KEY
    }
    if (iv->running_req < 0) {
        snprintf(err, errlen, "field #running-req: missing");
        return -1;
    }
    return 1;
}

/* The source the lines come from, counting the bytes of text it hands out (inflated): where a
 * cut gzip log's text ends, for its warning. */
typedef struct {
    psrc base;
    psrc *in;
    unsigned long long text_bytes;
} sg_count;

static ssize_t sg_count_read(psrc *s, char *buf, size_t cap, char *err, size_t errlen)
{
    sg_count *c = (sg_count *)s;
    ssize_t r = c->in->read(c->in, buf, cap, err, errlen);
    if (r > 0)
        c->text_bytes += (unsigned long long)r;
    return r;
}

int sglog_read(sglog *g, const char *path, int fi, char *err, size_t errlen)
{
    pgz *z;
    if (pgz_open(path, &z, err, errlen))
        return -1;
    if (g->read_to_cut)
        pgz_read_to_cut(z);
    sg_count cnt = {{sg_count_read, pgz_src(z)->label, 0}, pgz_src(z), 0};
    psrc_lines L;
    if (psrc_lines_init(&L, &cnt.base, SGLOG_MAX_LINE)) {
        pgz_close(z);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    L.cut_long = 1;
    const char *ln;
    size_t len, lines = 0, decode = 0, dropped = 0;
    int got, rc = -1, dropped_decode = 0;
    char perr[200];
    while ((got = psrc_lines_next(&L, &ln, &len, err, errlen)) == 1) {
        sglog_interval iv;
        int r = sglog_parse_line(ln, len, &iv, perr, sizeof perr);
        /* the text of a gzip stream cut short ends where inflating stopped: its last line lost
         * its end (it reached the end of the input, so pgz_cut already knows) */
        if (L.unterminated && pgz_cut(z)) {
            dropped = len;
            dropped_decode = r != 0;
            break;
        }
        lines++;
        g->cut_lines += L.cut;
        if (r == 0) {
            g->other_lines++;
            /* the arguments' line is one whose message is them, as SGLang logs it (f"{server_args=}"
             * after its "[time] " prefix): a prompt that quotes such a line (--log-requests:
             * Receive: obj=GenerateReqInput(text='.. server_args=ServerArgs(..)')), logged before
             * the server's own, was read as the server's arguments */
            static const char sa[] = "server_args=ServerArgs(";
            const char *open;
            if (!L.cut && sg_message(ln, len, sa, sizeof sa - 1, &open)) {
                if (!g->server_args && (g->server_args = malloc(len + 1))) {
                    memcpy(g->server_args, ln, len);
                    g->server_args[len] = 0;
                    g->server_args_len = len;
                    snprintf(g->server_args_at, sizeof g->server_args_at, "%.250s: line %zu (server_args=)", path,
                             lines);
                }
                g->server_args_lines++;
            }
            continue;
        }
        /* a line cut short: at SGLOG_MAX_LINE, or where the file ends without a newline (a
         * log copied while the server writes it); every release ends a Decode batch line
         * with #queue-req (or fields after it), so one without it lost its end and its
         * last number may be cut too ("gen throughput (token/s): 78" of 780.00) */
        if (r == 1 && (L.cut || (L.unterminated && !memmem(ln, len, "#queue-req: ", 12)))) {
            snprintf(perr, sizeof perr, "%s", L.cut ? "cut at the line length limit" :
                     "the file ends inside this line (no newline, no #queue-req): a log copied "
                     "while the server wrote it? The line is left out");
            r = -1;
        }
        decode++;
        g->decode_lines++;
        if (r < 0) {
            if (!g->bad_lines) {
                g->first_bad_line = lines;
                snprintf(g->first_bad, sizeof g->first_bad, "%.200s: line %zu: %.180s", path, lines, perr);
            }
            g->bad_lines++;
            continue;
        }
        iv.file = fi;
        iv.line = lines;
        const char *m = memmem(ln, len, "Decode batch", 12);
        g->v_comma += m[12] == ',';
        g->v_period += m[12] == '.';
        g->v_iter += iv.iter >= 0;
        g->v_full_token += memmem(ln, len, "#full token:", 12) != NULL;
        g->v_no_accept += iv.accept_len < 0;
        g->v_no_accept_rate += iv.accept_len >= 0 && iv.accept_rate < 0;
        g->v_engine_prefix += memmem(ln, len, "(SGLangEngine", 13) != NULL;
        g->v_rank_prefix += iv.tp >= 0 || iv.dp >= 0;
        if (g->n == g->cap) {
            size_t nc = g->cap ? g->cap * 2 : 256;
            sglog_interval *ni = realloc(g->iv, nc * sizeof *ni);
            if (!ni) {
                snprintf(err, errlen, "%s: out of memory after %zu intervals", path, g->n);
                goto out;
            }
            g->iv = ni;
            g->cap = nc;
        }
        g->iv[g->n++] = iv;
    }
    g->lines += lines;
    g->nul_bytes += L.nul_bytes;
    if (got < 0)
        goto out;
    char cutnote[200] = "";
    if (pgz_cut(z)) {
        g->gz_cut_files++;
        g->gz_cut.file = fi;
        g->gz_cut.lines = lines;
        g->gz_cut.text_bytes = cnt.text_bytes - dropped;
        g->gz_cut.file_bytes = pgz_src(z)->bytes_in;
        g->gz_cut.dropped_bytes = dropped;
        g->gz_cut.dropped_decode = dropped_decode;
        snprintf(cutnote, sizeof cutnote, " before the cut (the gzip stream ends without its trailer "
                 "after %llu bytes, %llu bytes of text: cut short?)", g->gz_cut.file_bytes, cnt.text_bytes);
    }
    if (decode == 0) {
        snprintf(err, errlen, "%s: field \"Decode batch\": no such line among %zu lines%s: not "
                 "an SGLang server log, or one written above log level INFO (SGLang writes "
                 "\"Decode batch, #running-req: N, #token: T, ..., gen throughput (token/s): G, "
                 "#queue-req: Q\" every --decode-log-interval steps)", path, lines, cutnote);
        goto out;
    }
    rc = 0;
out:
    psrc_lines_free(&L);
    pgz_close(z);
    return rc;
}

/* The (PP, TP) rank of an interval as one number, PP first; -1 for a line with neither. */
static long long sg_rank_key(const sglog_interval *x)
{
    if (x->pp < 0 && x->tp < 0)
        return -1;
    return (long long)(x->pp > 0 ? x->pp : 0) * 2000000 + (x->tp > 0 ? x->tp : 0);
}

size_t sglog_drop_rank_copies(sglog *g)
{
    /* the lowest rank key of each DP rank seen: a few to a few hundred DP ranks, searched
     * linearly (10^6 intervals x 256 DP ranks stays well under a second) */
    typedef struct { int dp; long long low; } sg_low;
    sg_low *low = NULL;
    size_t nlow = 0, cap = 0, kept = 0;
    for (size_t i = 0; i < g->n; i++) {
        long long k = sg_rank_key(&g->iv[i]);
        if (k < 0)
            continue;
        size_t j = 0;
        while (j < nlow && low[j].dp != g->iv[i].dp)
            j++;
        if (j < nlow) {
            if (k < low[j].low)
                low[j].low = k;
            continue;
        }
        if (nlow == cap) {
            sg_low *nl = realloc(low, (cap = cap ? 2 * cap : 16) * sizeof *low);
            if (!nl) {
                free(low);
                return 0;        /* nothing left out: the copies stay */
            }
            low = nl;
        }
        low[nlow++] = (sg_low){g->iv[i].dp, k};
    }
    for (size_t i = 0; i < g->n; i++) {
        long long k = sg_rank_key(&g->iv[i]);
        size_t j = 0;
        while (k >= 0 && low[j].dp != g->iv[i].dp)
            j++;
        if (k < 0 || k == low[j].low)
            g->iv[kept++] = g->iv[i];
    }
    free(low);
    size_t dropped = g->n - kept;
    g->n = kept;
    g->rank_copies += dropped;
    return dropped;
}
