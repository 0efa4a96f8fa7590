/* fit_sample: a capped load of a long specprof capture (fit.h: fit_sample_load). A steady-state
 * capture repeats the same phase instances: the fit needs tens of them per configuration, and
 * a 1 GB trace holds thousands. Three streaming passes: the ranges (which instances to keep:
 * at most cap per phase and configuration, stratified over the whole capture), the launch
 * calls (which lie in a kept instance), then the records of those alone. Workload: 10^6..10^7
 * records, 10^4..10^6 ranges; memory: ~56 bytes a range, a few bits a launch call, the kept
 * instances' records (docs/fit.md "Long captures"). */
#include "fit_int.h"
#include "ptrace_read.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The seed of the choice inside each stratum (any fixed value: a fit is reproducible). */
#define FS_SEED 0x5eed5a3b1e5ull
/* Launch calls compared with the ranges' threads (fit_instances.c, fi_calls: the same 4096). */
#define FS_SAME_IDS_CALLS 4096
/* Correlation ids a bitmap may cover: 2^30 (128 MiB of bits); a trace with larger ids loads
 * whole (CUPTI numbers its calls from 1: a 1 GB trace reaches a few 10^6). */
#define FS_CORR_MAX (1u << 30)

int fit_sample_cap(int def)
{
    const char *e = getenv("FIT_INSTANCES_MAX");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == 0 && v >= 0 && v <= 1000000000L)
            return (int)v;
    }
    return def;
}

/* One phase range of the capture, compact: its span, thread, name (hashed: the by-name rule
 * of fit_instances.c compares names), configuration and whether it is kept. */
typedef struct {
    int64_t  r0, r1, thread;
    uint64_t name_h;
    uint32_t ord;             /* the range's place among the file's ranges */
    int32_t  cfg;             /* configuration index; -1: its words did not parse (kept: the
                                 fit refuses it as a whole load would) */
    uint8_t  phase, keep;     /* keep: 0 no, 1 sampled, 2 a kept one's predecessor */
} fs_inst;

typedef struct { uint8_t *b; size_t nbits; } fs_bits;

static int fs_bits_set(fs_bits *m, size_t i)
{
    if (i >= m->nbits) {
        size_t nb = m->nbits ? m->nbits : 1 << 16;
        while (nb <= i)
            nb *= 2;
        uint8_t *x = realloc(m->b, nb / 8);
        if (!x)
            return -1;
        memset(x + m->nbits / 8, 0, (nb - m->nbits) / 8);
        m->b = x;
        m->nbits = nb;
    }
    m->b[i / 8] |= (uint8_t)(1u << (i % 8));
    return 0;
}

static int fs_bits_get(const fs_bits *m, size_t i)
{
    return i < m->nbits && (m->b[i / 8] >> (i % 8) & 1);
}

/* The correlation ids of the kept launch calls: open addressing (0 is empty: CUPTI's ids
 * start at 1). */
typedef struct { uint32_t *slot; size_t nslot, n; } fs_set;

static size_t fs_set_hash(uint32_t k, size_t mask) { return (size_t)((k * 2654435761u) & mask); }

static int fs_set_add(fs_set *s, uint32_t k)
{
    if (2 * (s->n + 1) > s->nslot) {
        size_t ns = s->nslot ? 2 * s->nslot : 4096;
        uint32_t *t = calloc(ns, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < s->nslot; i++)
            if (s->slot[i]) {
                size_t j = fs_set_hash(s->slot[i], ns - 1);
                while (t[j])
                    j = (j + 1) & (ns - 1);
                t[j] = s->slot[i];
            }
        free(s->slot);
        s->slot = t;
        s->nslot = ns;
    }
    size_t j = fs_set_hash(k, s->nslot - 1);
    while (s->slot[j] && s->slot[j] != k)
        j = (j + 1) & (s->nslot - 1);
    if (!s->slot[j]) {
        s->slot[j] = k;
        s->n++;
    }
    return 0;
}

static int fs_set_has(const fs_set *s, uint32_t k)
{
    if (!s->nslot || !k)
        return 0;
    size_t j = fs_set_hash(k, s->nslot - 1);
    while (s->slot[j]) {
        if (s->slot[j] == k)
            return 1;
        j = (j + 1) & (s->nslot - 1);
    }
    return 0;
}

static uint64_t fs_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;          /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t fs_rand(uint64_t *x)             /* splitmix64 */
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct {
    const char *path;
    int      cap;
    int      oom;
    /* pass 1 */
    fs_inst *in;
    size_t   nin, capin;
    size_t   nrng;            /* range events seen (ordinals) */
    ptrace_window *win;
    size_t   nwin, capwin;
    struct { int64_t s, e, thread; } first[FS_SAME_IDS_CALLS];
    size_t   nfirst;
    const char **cfg;         /* configuration keys (pool strings), ncfg */
    size_t   ncfg, capcfg;
    size_t  *cfg_n;           /* instances per configuration */
    fit_strpool *pool;
    int      same_ids;
    /* pass 2 */
    size_t   napi;            /* API events seen (ordinals) */
    fs_bits  api_keep;        /* by ordinal: the call is loaded */
    fs_bits  has_call;        /* by 2 x correlation id + driver: a call passed the window rule */
    fs_bits  dup;             /* the same: more than one did (fit_trace_drop_cut_api's rule,
                                 windowed captures only) */
    fs_set   kept_corr;
    size_t   api_cut;
    int      corr_too_big;
    /* pass 3 */
    fit_trace *t;
    size_t   rng_ord, api_ord, nkeep_rng;
    int64_t  rec_end;
    size_t  *seq_of;          /* per instance (file order of ranges -> sorted index): see fs_choose */
} fs_st;

/* Windows (fit_trace.c's rule): the one holding ts, or -1. */
static long fs_window_of(const fs_st *S, int64_t ts)
{
    size_t lo = 0, hi = S->nwin;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (S->win[mid].start_ns <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || ts > S->win[lo - 1].end_ns)
        return -1;
    return (long)(lo - 1);
}

static int fs_call_in_window(const fs_st *S, int64_t s, int64_t e)
{
    if (!S->nwin)
        return 1;
    long w = fs_window_of(S, s);
    return w >= 0 && e <= S->win[w].end_ns;
}

/* The first instance (sorted by start) that starts after t: S->nin when none. */
static size_t fs_after(const fs_st *S, int64_t t)
{
    size_t lo = 0, hi = S->nin;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S->in[mid].r0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* fit_instances.c's fi_find_inst over the whole capture's instances: the innermost whose
 * range on thread holds t; -1. */
static long fs_find_inst(const fs_st *S, int64_t t, int64_t thread)
{
    size_t lo = fs_after(S, t);
    for (size_t i = lo, k = 0; i > 0 && k < FIT_BACK_SEARCH; i--, k++) {
        const fs_inst *in = &S->in[i - 1];
        if (in->r1 >= t && (thread == 0 || in->thread == 0 || in->thread == thread))
            return (long)(i - 1);
    }
    return -1;
}

/* fit_instances.c's fi_find_by_name: the latest instance named (hash h) started at or
 * before t; -1. */
static long fs_find_by_name(const fs_st *S, int64_t t, uint64_t h)
{
    size_t lo = fs_after(S, t);
    for (size_t i = lo, k = 0; i > 0 && k < 4 * FIT_BACK_SEARCH; i--, k++)
        if (S->in[i - 1].name_h == h)
            return (long)(i - 1);
    return -1;
}

/* A configuration: the range's words as the fit reads them, without its KV context (which
 * grows through a serving run: the cap keeps instances of every context, spread over the
 * capture). */
static int fs_cfg_of(fs_st *S, int p, const fr_inst *x)
{
    char key[256];
    snprintf(key, sizeof key, "%d %.17g %d %d %d %d %d %d %d %d", p, x->tokens, x->bs, x->rows,
             x->graph, x->steps, x->topk, x->F, x->experts, x->moe_topk);
    const char *k = fit_trace_intern(S->pool, key);
    if (!k)
        return -1;
    for (size_t i = S->ncfg; i > 0; i--)   /* few configurations: a scan (newest first) */
        if (S->cfg[i - 1] == k) {
            S->cfg_n[i - 1]++;
            return (int)(i - 1);
        }
    if (S->ncfg == S->capcfg) {
        size_t nc = S->capcfg ? 2 * S->capcfg : 64;
        const char **c = realloc(S->cfg, nc * sizeof *c);
        size_t *n = c ? realloc(S->cfg_n, nc * sizeof *n) : NULL;
        if (c)
            S->cfg = c;
        if (!n)
            return -1;
        S->cfg_n = n;
        S->capcfg = nc;
    }
    S->cfg[S->ncfg] = k;
    S->cfg_n[S->ncfg] = 1;
    return (int)S->ncfg++;
}

/* Pass 1: the phase ranges, the windows, the first launch calls' threads. */
static int fs_pass1(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fs_st *S = user;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_range r; ptrace_window w; ptrace_api a; } u;
    if (ptrace_read_range(ev, t0, &u.r) == 0) {
        uint32_t ord = (uint32_t)S->nrng++;
        fr_inst x;
        const char *bad;
        const bnd_kind *badk;
        double badv = 0;
        memset(&x, 0, sizeof x);
        int p = fit_instances_parse(u.r.name, &x, &bad, &badk, &badv);
        if (p < 0)
            return 0;
        int cfg = -1;   /* words the fit refuses: kept, so that it does */
        if (!bad && x.tokens > 0 && x.kv >= 0 && (cfg = fs_cfg_of(S, p, &x)) < 0)
            return S->oom = 1;
        if (fit_trace_grow((void **)&S->in, &S->capin, S->nin, sizeof *S->in))
            return S->oom = 1;
        S->in[S->nin++] = (fs_inst){u.r.start_ns, u.r.end_ns, u.r.thread, fs_hash(u.r.name), ord,
                                    cfg, (uint8_t)p, cfg < 0};
        return 0;
    }
    if (ptrace_read_window(ev, t0, &u.w) == 0) {
        if (fit_trace_grow((void **)&S->win, &S->capwin, S->nwin, sizeof *S->win))
            return S->oom = 1;
        size_t i = S->nwin++;
        while (i > 0 && S->win[i - 1].start_ns > u.w.start_ns) {
            S->win[i] = S->win[i - 1];
            i--;
        }
        S->win[i] = u.w;
        return 0;
    }
    if (ptrace_read_api(ev, t0, &u.a) == 0 && S->nfirst < FS_SAME_IDS_CALLS) {
        S->first[S->nfirst].s = u.a.start_ns;
        S->first[S->nfirst].e = u.a.end_ns;
        S->first[S->nfirst].thread = u.a.thread;
        S->nfirst++;
    }
    return 0;
}

static int fs_cmp_inst(const void *a, const void *b)
{
    const fs_inst *x = a, *y = b;
    if (x->r0 != y->r0)
        return x->r0 < y->r0 ? -1 : 1;
    return (x->r1 > y->r1) - (x->r1 < y->r1);
}

/* After pass 1: per configuration above the cap, cap instances, one drawn in each of cap
 * equal strata of its instances in time order (every part of the capture represented, no
 * aliasing with a period of the run); each kept instance's predecessor as context. Returns
 * how many configurations were over the cap. */
static size_t fs_choose(fs_st *S)
{
    if (S->nin)   /* none: S->in is NULL (a trace without phases), which qsort may not get */
        qsort(S->in, S->nin, sizeof *S->in, fs_cmp_inst);
    size_t over = 0;
    for (size_t c = 0; c < S->ncfg; c++)
        over += S->cfg_n[c] > (size_t)S->cap;
    if (!over)
        return 0;
    size_t *seen = calloc(S->ncfg + 1, sizeof *seen), *next = calloc(S->ncfg + 1, sizeof *next);
    size_t *strat = calloc(S->ncfg + 1, sizeof *strat);
    uint64_t *rng = calloc(S->ncfg + 1, sizeof *rng);
    if (!seen || !next || !rng || !strat) {
        free(strat);
        free(seen);
        free(next);
        free(rng);
        S->oom = 1;
        return 0;
    }
    /* stratum j of configuration c: its instances [j*n/cap, (j+1)*n/cap); next[c] the one
     * drawn in the current stratum */
    for (size_t c = 0; c < S->ncfg; c++) {
        /* seeded by the count: the phases of one configuration (as many instances each)
         * draw the same positions, so that a kept instance's predecessor, the phase before
         * it in the same iteration, is mostly kept too (not loaded twice as context) */
        rng[c] = FS_SEED ^ (uint64_t)S->cfg_n[c] * 0x9e3779b97f4a7c15ull;
        size_t n = S->cfg_n[c], cap = (size_t)S->cap;
        if (n > cap)
            next[c] = fs_rand(&rng[c]) % (n / cap);   /* n > cap: stratum 0 is not empty */
    }
    for (size_t i = 0; i < S->nin; i++) {
        fs_inst *in = &S->in[i];
        if (in->cfg < 0)
            continue;
        size_t c = (size_t)in->cfg, n = S->cfg_n[c], cap = (size_t)S->cap, k = seen[c]++;
        if (n <= cap) {
            in->keep = 1;
            continue;
        }
        if (k == next[c]) {
            in->keep = 1;
            size_t j = ++strat[c];     /* the next stratum */
            if (j < cap) {
                size_t lo = (size_t)((uint64_t)j * n / cap), hi = (size_t)((uint64_t)(j + 1) * n / cap);
                next[c] = lo + (size_t)(fs_rand(&rng[c]) % (hi - lo));
            } else {
                next[c] = SIZE_MAX;
            }
        }
    }
    for (size_t i = 1; i < S->nin; i++)
        if (S->in[i].keep == 1 && !S->in[i - 1].keep)
            S->in[i - 1].keep = 2;
    free(strat);
    free(seen);
    free(next);
    free(rng);
    /* fit_instances.c compares launch calls' threads with the ranges' (fi_calls) */
    S->same_ids = S->nfirst == 0;
    for (size_t i = 0; i < S->nfirst && !S->same_ids; i++) {
        if (!fs_call_in_window(S, S->first[i].s, S->first[i].e))
            continue;
        for (size_t q = 0; q < S->nin && !S->same_ids; q++)
            S->same_ids = S->first[i].thread == S->in[q].thread;
    }
    return over;
}

/* Pass 2: each launch call (after the window rule) placed as fi_calls places it; the kept
 * instances' calls marked for loading and their correlation ids kept. */
static int fs_pass2(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fs_st *S = user;
    ptrace_api a;
    if (ptrace_read_api(ev, info->header.t0_ns, &a))
        return 0;
    size_t ord = S->napi++;
    if (!fs_call_in_window(S, a.start_ns, a.end_ns)) {
        S->api_cut++;
        return 0;
    }
    if (a.corr) {
        if (a.corr >= FS_CORR_MAX) {
            S->corr_too_big = 1;
            return 1;
        }
        size_t key = 2 * (size_t)a.corr + (a.domain_driver != 0);
        if (S->nwin && fs_bits_get(&S->has_call, key) && fs_bits_set(&S->dup, key))
            return S->oom = 1;
        if (fs_bits_set(&S->has_call, key))
            return S->oom = 1;
    }
    long k = fs_find_inst(S, a.start_ns, S->same_ids ? a.thread : 0);
    if (k < 0 || !S->in[k].keep)
        return 0;
    if (fs_bits_set(&S->api_keep, ord) || (a.corr && fs_set_add(&S->kept_corr, a.corr)))
        return S->oom = 1;
    return 0;
}

/* A GPU record (kernel, copy) is loaded when fi_records would place it in a kept instance:
 * by its launch call's id, else (no call) by its args.nvtx. */
static int fs_call_left(const fs_st *S, uint32_t corr, int driver)
{
    size_t key = 2 * (size_t)corr + (driver != 0);
    return fs_bits_get(&S->has_call, key) && !fs_bits_get(&S->dup, key);
}

static int fs_rec_kept(const fs_st *S, uint32_t corr, int64_t s, const char *nvtx)
{
    if (corr && (fs_call_left(S, corr, 0) || fs_call_left(S, corr, 1)))
        return fs_set_has(&S->kept_corr, corr);
    if (!nvtx || !*nvtx)
        return 0;
    long k = fs_find_by_name(S, s, fs_hash(nvtx));
    return k >= 0 && S->in[k].keep;
}

/* Pass 3: the kept ranges, calls and records, every window. */
static int fs_pass3(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fs_st *S = user;
    fit_trace *t = S->t;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_kernel k; ptrace_mem m; ptrace_api a; ptrace_range r; ptrace_window w;
            ptrace_graphlaunch g; } u;
    if (ptrace_read_kernel(ev, t0, &u.k) == 0) {
        if (u.k.end_ns > S->rec_end)
            S->rec_end = u.k.end_ns;
        if (fs_rec_kept(S, u.k.corr, u.k.start_ns, u.k.nvtx) && fit_trace_add_kernel(t, &u.k))
            return S->oom = 1;
        return 0;
    }
    if (ptrace_read_mem(ev, t0, &u.m) == 0) {
        if (u.m.end_ns > S->rec_end)
            S->rec_end = u.m.end_ns;
        if (fs_rec_kept(S, u.m.corr, u.m.start_ns, u.m.nvtx) && fit_trace_add_mem(t, &u.m))
            return S->oom = 1;
        return 0;
    }
    if (ptrace_read_api(ev, t0, &u.a) == 0) {
        size_t ord = S->api_ord++;
        if (!fs_bits_get(&S->api_keep, ord))
            return 0;
        if (u.a.corr && fs_bits_get(&S->dup, 2 * (size_t)u.a.corr + (u.a.domain_driver != 0))) {
            S->api_cut++;         /* the stale-record rule (fit_trace_drop_cut_api) */
            return 0;
        }
        return fit_trace_add_api(t, &u.a) ? (S->oom = 1) : 0;
    }
    if (ptrace_read_range(ev, t0, &u.r) == 0) {
        size_t ord = S->rng_ord++;
        if (ord >= S->nrng)
            return S->oom = 1;    /* the file changed between the passes */
        size_t q = S->seq_of[ord];
        if (q == SIZE_MAX || !S->in[q].keep)
            return 0;
        if (t->nrng >= S->nkeep_rng || fit_trace_add_range(t, &u.r))
            return S->oom = 1;
        t->rng_keep[t->nrng - 1] = (fit_rng_keep){q, S->in[q].keep == 2};
        return 0;
    }
    if (ptrace_read_window(ev, t0, &u.w) == 0)
        return fit_trace_add_window(t, &u.w) ? (S->oom = 1) : 0;
    if (ptrace_read_graphlaunch(ev, t0, &u.g) == 0) {   /* placed as a GPU record is */
        if (u.g.end_ns > S->rec_end)
            S->rec_end = u.g.end_ns;
        if (fs_rec_kept(S, u.g.corr, u.g.start_ns, u.g.nvtx) && fit_trace_add_graphlaunch(t, &u.g))
            return S->oom = 1;
        return 0;
    }
    return 0;
}

static void fs_free(fs_st *S)
{
    free(S->in);
    free(S->win);
    free(S->cfg);
    free(S->cfg_n);
    free(S->api_keep.b);
    free(S->has_call.b);
    free(S->dup.b);
    free(S->kept_corr.slot);
    free(S->seq_of);
    fit_trace_pool_destroy(S->pool);
}

int fit_sample_load(fit_trace *t, const char *path, int cap, char *err, size_t errlen)
{
    if (cap <= 0)
        return fit_trace_load_specprof(t, path, err, errlen);
    fs_st *S = calloc(1, sizeof *S);
    ptrace_info info;
    int rc = -1;
    if (!S || !(S->pool = fit_trace_pool_create())) {
        free(S);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    S->path = path;
    S->cap = cap;
    if (ptrace_scan_file(path, fs_pass1, S, &info, err, errlen))
        goto out;
    if (S->oom)
        goto oom;
    if (info.merged || fs_choose(S) == 0 || S->oom) {
        if (S->oom)
            goto oom;
        /* nothing over the cap (or a merged file, refused there): the whole load */
        fs_free(S);
        free(S);
        return fit_trace_load_specprof(t, path, err, errlen);
    }
    if (ptrace_scan_file(path, fs_pass2, S, &info, err, errlen))
        goto out;
    if (S->oom)
        goto oom;
    if (S->corr_too_big) {
        fs_free(S);
        free(S);
        return fit_trace_load_specprof(t, path, err, errlen);
    }
    /* the ranges' ordinals -> their instances (sorted), and the kept ranges' count */
    S->seq_of = malloc((S->nrng + 1) * sizeof *S->seq_of);
    if (!S->seq_of)
        goto oom;
    for (size_t i = 0; i < S->nrng; i++)
        S->seq_of[i] = SIZE_MAX;
    for (size_t q = 0; q < S->nin; q++) {
        S->seq_of[S->in[q].ord] = q;
        S->nkeep_rng += S->in[q].keep != 0;
    }
    if (fit_trace_init(t, path))
        goto oom;
    S->t = t;
    t->rng_keep = malloc((S->nkeep_rng + 1) * sizeof *t->rng_keep);
    t->rng = malloc((S->nkeep_rng + 1) * sizeof *t->rng);
    t->caprng = S->nkeep_rng + 1;
    if (!t->rng_keep || !t->rng)
        goto oom_t;
    S->rec_end = INT64_MIN;
    if (ptrace_scan_file(path, fs_pass3, S, &info, err, errlen)) {
        fit_trace_free(t);
        goto out;
    }
    if (S->oom || S->rng_ord != S->nrng)
        goto oom_t;
    for (size_t q = 0; q < S->nin; q++)
        if (!S->in[q].keep)
            t->sampled_out[S->in[q].phase]++;
    t->has_rec_end = S->rec_end != INT64_MIN;
    t->rec_end_ns = S->rec_end;
    t->api_cut = S->api_cut;
    t->has_header = info.has_header;
    t->hdr = info.header;
    if (info.has_end)
        t->lite = info.end.lite;
    t->truncated = !info.complete;
    t->cut_last_line = info.cut_last_line;
    t->bad_lines = info.bad_lines;
    rc = 0;
    goto out;
oom_t:
    fit_trace_free(t);
oom:
    snprintf(err, errlen, "%s: out of memory (capped load)", path);
out:
    fs_free(S);
    free(S);
    return rc;
}
