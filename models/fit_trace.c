/* fit_trace: specprof trace files -> fit_trace (fit.h): the kernels, copies, launch calls and
 * NVTX ranges the fit reads, their strings interned in the trace's pool. In: a path (through
 * ptrace_read.h) or records added one by one; out: a fit_trace, and the string pool and array
 * growth the later stages use (fit_int.h). Workload: 10^4..10^6 records per trace. */
#include "fit_int.h"
#include "timport.h"
#include "ptrace_read.h"
#include "ptrace_out.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- interned strings --------------------------------------------------------------------- */

struct fit_strpool {
    char  **slot;          /* open addressing, power-of-two size */
    size_t  nslot, n;
    char   *chunk;         /* current chunk; chunks are chained through their first bytes */
    size_t  used, cap;
};

#define FIT_POOL_CHUNK (64u << 10)

fit_strpool *fit_trace_pool_create(void)
{
    fit_strpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->nslot = 1024;
    p->slot = calloc(p->nslot, sizeof *p->slot);
    if (!p->slot) {
        free(p);
        return NULL;
    }
    return p;
}

void fit_trace_pool_destroy(fit_strpool *p)
{
    if (!p)
        return;
    char *c = p->chunk;
    while (c) {
        char *next;
        memcpy(&next, c, sizeof next);
        free(c);
        c = next;
    }
    free(p->slot);
    free(p);
}

static uint64_t ft_pool_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;          /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static char *ft_pool_store(fit_strpool *p, const char *s, size_t n)
{
    size_t need = n + 1;
    if (p->used + need > p->cap) {
        size_t cap = need + sizeof(char *) > FIT_POOL_CHUNK ? need + sizeof(char *) : FIT_POOL_CHUNK;
        char *c = malloc(cap);
        if (!c)
            return NULL;
        memcpy(c, &p->chunk, sizeof p->chunk);
        p->chunk = c;
        p->used = sizeof(char *);
        p->cap = cap;
    }
    char *d = p->chunk + p->used;
    memcpy(d, s, n);
    d[n] = 0;
    p->used += need;
    return d;
}

/* The pool's copy of s[0..n) (one copy per distinct string), or NULL when out of memory. */
const char *fit_trace_intern_n(fit_strpool *p, const char *s, size_t n)
{
    if (2 * (p->n + 1) > p->nslot) {
        size_t ns = p->nslot * 2;
        char **t = calloc(ns, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < p->nslot; i++) {
            if (!p->slot[i])
                continue;
            size_t j = ft_pool_hash(p->slot[i], strlen(p->slot[i])) & (ns - 1);
            while (t[j])
                j = (j + 1) & (ns - 1);
            t[j] = p->slot[i];
        }
        free(p->slot);
        p->slot = t;
        p->nslot = ns;
    }
    size_t j = ft_pool_hash(s, n) & (p->nslot - 1);
    while (p->slot[j]) {
        if (strncmp(p->slot[j], s, n) == 0 && p->slot[j][n] == 0)
            return p->slot[j];
        j = (j + 1) & (p->nslot - 1);
    }
    char *d = ft_pool_store(p, s, n);
    if (!d)
        return NULL;
    p->slot[j] = d;
    p->n++;
    return d;
}

const char *fit_trace_intern(fit_strpool *p, const char *s)
{
    return fit_trace_intern_n(p, s ? s : "", s ? strlen(s) : 0);
}

/* ---- traces ------------------------------------------------------------------------------- */

int fit_trace_init(fit_trace *t, const char *label)
{
    memset(t, 0, sizeof *t);
    snprintf(t->file, sizeof t->file, "%s", label ? label : "(trace)");
    t->pool = fit_trace_pool_create();
    return t->pool ? 0 : -1;
}

void fit_trace_free(fit_trace *t)
{
    if (!t)
        return;
    free(t->kern);
    free(t->mem);
    free(t->api);
    free(t->rng);
    free(t->win);
    free(t->gl);
    free(t->rng_keep);
    fit_trace_pool_destroy(t->pool);
    memset(t, 0, sizeof *t);
}

/* Grows *arr (elements of size sz) so that one more fits. */
int fit_trace_grow(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    void *a = realloc(*arr, nc * sz);
    if (!a)
        return -1;
    *arr = a;
    *cap = nc;
    return 0;
}

int fit_trace_add_kernel(fit_trace *t, const ptrace_kernel *k)
{
    if (fit_trace_grow((void **)&t->kern, &t->capkern, t->nkern, sizeof *t->kern))
        return -1;
    ptrace_kernel c = *k;
    if (!(c.name = fit_trace_intern(t->pool, k->name)) || !(c.nvtx = fit_trace_intern(t->pool, k->nvtx)) ||
        !(c.phase = fit_trace_intern(t->pool, k->phase)))
        return -1;
    t->kern[t->nkern++] = c;
    return 0;
}

int fit_trace_add_mem(fit_trace *t, const ptrace_mem *m)
{
    if (fit_trace_grow((void **)&t->mem, &t->capmem, t->nmem, sizeof *t->mem))
        return -1;
    ptrace_mem c = *m;
    if (!(c.copy_kind = fit_trace_intern(t->pool, m->copy_kind)) ||
        !(c.nvtx = fit_trace_intern(t->pool, m->nvtx)) || !(c.phase = fit_trace_intern(t->pool, m->phase)))
        return -1;
    t->mem[t->nmem++] = c;
    return 0;
}

int fit_trace_add_api(fit_trace *t, const ptrace_api *a)
{
    if (fit_trace_grow((void **)&t->api, &t->capapi, t->napi, sizeof *t->api))
        return -1;
    ptrace_api c = *a;
    if (!(c.name = fit_trace_intern(t->pool, a->name)) ||
        (a->copy_kind && !(c.copy_kind = fit_trace_intern(t->pool, a->copy_kind))) ||
        (a->untimed && !(c.untimed = fit_trace_intern(t->pool, a->untimed))))
        return -1;
    t->api[t->napi++] = c;
    return 0;
}

int fit_trace_add_range(fit_trace *t, const ptrace_range *r)
{
    if (fit_trace_grow((void **)&t->rng, &t->caprng, t->nrng, sizeof *t->rng))
        return -1;
    ptrace_range c = *r;
    if (!(c.name = fit_trace_intern(t->pool, r->name)) || !(c.domain = fit_trace_intern(t->pool, r->domain)))
        return -1;
    t->rng[t->nrng++] = c;
    return 0;
}

int fit_trace_add_window(fit_trace *t, const ptrace_window *w)
{
    if (fit_trace_grow((void **)&t->win, &t->capwin, t->nwin, sizeof *t->win))
        return -1;
    size_t i = t->nwin++;   /* the file has them in the order they closed: keep time order anyway */
    while (i > 0 && t->win[i - 1].start_ns > w->start_ns) {
        t->win[i] = t->win[i - 1];
        i--;
    }
    t->win[i] = *w;
    return 0;
}

int fit_trace_add_graphlaunch(fit_trace *t, const ptrace_graphlaunch *g)
{
    if (fit_trace_grow((void **)&t->gl, &t->capgl, t->ngl, sizeof *t->gl))
        return -1;
    ptrace_graphlaunch c = *g;
    if (!(c.nvtx = fit_trace_intern(t->pool, g->nvtx)) || !(c.phase = fit_trace_intern(t->pool, g->phase)))
        return -1;
    t->gl[t->ngl++] = c;
    return 0;
}

int fit_trace_is_lite(const fit_trace *t)
{
    return t->has_header && !strcmp(t->hdr.mode, "lite");
}

int fit_trace_unprofiled(const fit_trace *t)
{
    return fit_trace_is_lite(t) && t->hdr.cupti_version == 0;
}

/* The window holding time ts_ns, or -1 (also when the trace has none). */
long fit_trace_window_of(const fit_trace *t, int64_t ts_ns)
{
    size_t lo = 0, hi = t->nwin;
    while (lo < hi) {   /* the last window starting at or before ts */
        size_t mid = (lo + hi) / 2;
        if (t->win[mid].start_ns <= ts_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || ts_ns > t->win[lo - 1].end_ns)
        return -1;
    return (long)(lo - 1);
}

/* Scan callback: typed views of the events the fit uses, copied into the trace. */
static int ft_take(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fit_trace *t = user;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_kernel k; ptrace_mem m; ptrace_api a; ptrace_range r; ptrace_window w;
            ptrace_graphlaunch g; } u;
    if (ptrace_read_kernel(ev, t0, &u.k) == 0)
        return fit_trace_add_kernel(t, &u.k);
    if (ptrace_read_mem(ev, t0, &u.m) == 0)
        return fit_trace_add_mem(t, &u.m);
    if (ptrace_read_api(ev, t0, &u.a) == 0)
        return fit_trace_add_api(t, &u.a);
    if (ptrace_read_range(ev, t0, &u.r) == 0)
        return fit_trace_add_range(t, &u.r);
    if (ptrace_read_window(ev, t0, &u.w) == 0)
        return fit_trace_add_window(t, &u.w);
    if (ptrace_read_graphlaunch(ev, t0, &u.g) == 0)
        return fit_trace_add_graphlaunch(t, &u.g);
    return 0;
}

/* In a windowed capture every recorded API call lies inside one node-level window (the
 * calls are recorded from a window's opening to its closing, traces/FORMAT.md). A call that
 * is not (its start before the window, or its end after it: switched on or off mid-call, or
 * the stale records CUPTI 13.0.1 wrote after its per-API records were switched off and on
 * again: the start and correlation id of a call long finished, docs/profiler.md) is left out:
 * it would price a host gap across a window's edge. So are calls whose correlation id
 * another call of the same domain has too (each API call has its own id: the stale records
 * repeat an old call's, and the GPU records launched then carry it as well, so the call
 * would take them into its range; without the call they are placed by their args.nvtx).
 * Returns how many were left out. */
static int ft_cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t ft_api_key(const ptrace_api *a)
{
    return (uint64_t)a->corr << 1 | (uint64_t)(a->domain_driver != 0);
}

size_t fit_trace_drop_cut_api(fit_trace *t)
{
    if (!t->nwin)
        return 0;
    size_t k = 0, n0 = t->napi;
    for (size_t i = 0; i < t->napi; i++) {
        long w = fit_trace_window_of(t, t->api[i].start_ns);
        if (w >= 0 && t->api[i].end_ns <= t->win[w].end_ns)
            t->api[k++] = t->api[i];
    }
    t->napi = k;
    uint64_t *key = malloc((k + 1) * sizeof *key);
    if (key) {   /* out of memory: only the window rule */
        for (size_t i = 0; i < k; i++)
            key[i] = ft_api_key(&t->api[i]);
        qsort(key, k, sizeof *key, ft_cmp_key);
        size_t m = 0;
        for (size_t i = 0; i < t->napi; i++) {
            uint64_t x = ft_api_key(&t->api[i]);
            size_t lo = 0, hi = k;
            while (lo < hi) {   /* first key >= x */
                size_t mid = (lo + hi) / 2;
                if (key[mid] < x)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int repeated = lo + 1 < k && key[lo + 1] == x;
            if (!repeated || t->api[i].corr == 0)
                t->api[m++] = t->api[i];
        }
        t->napi = m;
        free(key);
    }
    return n0 - t->napi;
}

/* Streams the file (plain or gzip, ptrace_scan_file): the fit holds its records, never the
 * text, so a trace costs its records' memory whatever its size on disk. */
int fit_trace_load_specprof(fit_trace *t, const char *path, char *err, size_t errlen)
{
    ptrace_info info;
    if (fit_trace_init(t, path)) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    /* streamed, line by line: the records kept, not the text (a 1 GB trace needs no 1 GB
     * buffer; /dev/zero stops at the line cap, bounds.h) */
    if (ptrace_scan_file(path, ft_take, t, &info, err, errlen))
        goto fail;
    if (info.merged) {
        snprintf(err, errlen, "%s: a merged trace (specprof merge): give the per-rank files "
                 "to specsim fit", path);
        goto fail;
    }
    if (info.lines && info.events && !info.complete && !info.cut_last_line &&
        (t->nkern + t->nmem + t->napi + t->nrng) < info.events / 2) {
        /* the callback stopped early: only out of memory does that */
        snprintf(err, errlen, "%s: out of memory after %zu records", path,
                 t->nkern + t->nmem + t->napi + t->nrng);
        goto fail;
    }
    t->api_cut = fit_trace_drop_cut_api(t);
    t->has_header = info.has_header;
    t->hdr = info.header;
    if (info.has_end)
        t->lite = info.end.lite;
    t->truncated = !info.complete;
    t->cut_last_line = info.cut_last_line;
    t->bad_lines = info.bad_lines;
    return 0;
fail:
    fit_trace_free(t);
    return -1;
}

/* Any trace format the importers know (models/timport.h: specprof or Kineto, plain or gzip,
 * chosen by content, streamed). Phase naming of foreign traces is the caller's
 * (models/phasemap.h; specsim fit applies it). */
int fit_trace_load(fit_trace *t, const char *path, char *err, size_t errlen)
{
    return timport_load(t, path, NULL, NULL, err, errlen);
}
