/* gcycle: phase instances from the CUDA-graph launch cycle of a trace without annotations
 * (gcycle.h). The graph launches of the launching thread are identified by executable
 * (graph_exec_id; a Kineto trace has none, so by the names and grids of the kernels that share
 * the launch's correlation id), their period found as specprof check finds it, each launch
 * placed at a position of the cycle, the cycle turned so that the user's order starts where
 * the program's iteration does, and the launch calls between graph launches given to a phase.
 * Workload: 10^1..10^5 graph launches and 10^2..10^6 launch calls per trace. */
#include "gcycle.h"
#include "corrfind.h"
#include "ptrace_sum.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the user's words ---------------------------------------------------------------------- */

int gcycle_order_parse(gc_order *o, const char *v, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    snprintf(o->text, sizeof o->text, "%s", v);
    const char *s = v;
    while (*s) {
        char item[64];
        size_t n = 0;
        while (s[n] && s[n] != ',')
            n++;
        if (n == 0 || n >= sizeof item)
            goto bad;
        memcpy(item, s, n);
        item[n] = 0;
        s += n + (s[n] == ',');
        if (o->npos >= GC_POS_MAX) {
            snprintf(err, errlen, "field --graph-cycle: value %s: more than %d positions (a cycle "
                     "is at most %d graph launches, specprof check's limit)", v, GC_POS_MAX, GC_POS_MAX);
            return -1;
        }
        char *plus = strchr(item, '+');
        if (plus)
            *plus++ = 0;
        int p = wm_phase_find(item), q = plus ? wm_phase_find(plus) : -1;
        if (p < 0 || (plus && (q < 0 || strchr(plus, '+')))) {
            snprintf(err, errlen, "field --graph-cycle: value %s: position \"%s%s%s\": not a phase "
                     "(%s, %s, %s, %s, %s, %s; PHASE+EAGER_PHASE for the eager work after it)", v,
                     item, plus ? "+" : "", plus ? plus : "", wm_phase_name[0], wm_phase_name[1],
                     wm_phase_name[2], wm_phase_name[3], wm_phase_name[4], wm_phase_name[5]);
            return -1;
        }
        o->pos[o->npos++] = (gc_pos){p, q};
        if (*s == 0 && s[-1] == ',')
            goto bad;
    }
    if (o->npos == 0)
        goto bad;
    return 0;
bad:
    snprintf(err, errlen, "field --graph-cycle: value \"%s\": expected the phases of the graph "
             "launches in their order, e.g. draft,verify+accept,extend or decode+sample", v);
    return -1;
}

int gcycle_shape_parse(gc_shape *s, const char *v, char *err, size_t errlen)
{
    s->rows = s->steps = s->topk = s->draft_tokens = -1;
    s->ctx_per_row = -1;
    snprintf(s->text, sizeof s->text, "%s", v);
    const char *p = v;
    while (*p) {
        const char *k = p;
        while (*p && *p != '=' && *p != ',')
            p++;
        size_t kl = (size_t)(p - k);
        if (*p != '=')
            goto bad;
        p++;
        char *e;
        double x = strtod(p, &e);
        if (e == p || (*e && *e != ','))
            goto bad;
        p = *e ? e + 1 : e;
#define KEY(str) (kl == sizeof(str) - 1 && strncmp(k, str, kl) == 0)
        /* the ranges of bounds.h: rows in [1, 65536], steps and topk in [0, 1024] */
        int whole = x == (double)(long)x;
        if (KEY("rows") && whole && x >= 1 && x <= 65536)
            s->rows = (int)x;
        else if (KEY("steps") && whole && x >= 0 && x <= 1024)
            s->steps = (int)x;
        else if (KEY("topk") && whole && x >= 1 && x <= 1024)
            s->topk = (int)x;
        else if (KEY("draft_tokens") && whole && x >= 1 && x <= 65536)
            s->draft_tokens = (int)x;
        else if (KEY("ctx") && x >= 0 && x <= 1e9)
            s->ctx_per_row = x;
        else {
            snprintf(err, errlen, "field --shape: value %s: word %.*s: unknown or out of range "
                     "(rows=1..65536, steps=0..1024, topk=1..1024, draft_tokens=1..65536, ctx= KV "
                     "tokens per row 0..1e9)", v, (int)(e - k), k);
            return -1;
        }
#undef KEY
    }
    return 0;
bad:
    snprintf(err, errlen, "field --shape: value \"%s\": expected rows=R[,steps=S][,topk=K]"
             "[,draft_tokens=T][,ctx=C]", v);
    return -1;
}

int gcycle_period(const uint32_t *ids, size_t n)
{
    return ptrace_sum_period(ids, n);
}

/* ---- the trace's graph launches -------------------------------------------------------------- */

typedef struct {
    int64_t  s, e, thread;
    uint32_t corr, exec, id;
    uint32_t sig;             /* signature of its GPU records */
    int      nrec;
    int      pos;             /* position in the cycle (the found one's), -1 out of it */
} gc_launch;

static int gc_is_graph_launch(const char *name) { return strstr(name, "GraphLaunch") != NULL; }

static int gc_cmp_launch(const void *a, const void *b)
{
    const gc_launch *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

typedef struct { uint32_t corr; size_t i; } gc_ci;

static int gc_cmp_ci(const void *a, const void *b)
{
    const gc_ci *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* the earliest launch of a correlation id (ci is sorted by gc_cmp_ci) */
static const gc_ci *gc_ci_find(const gc_ci *c, size_t n, uint32_t corr)
{
    return corrfind_first(c, n, sizeof *c, offsetof(gc_ci, corr), corr);
}

static uint32_t gc_hash(const char *s, const int32_t *g, uint64_t extra)
{
    uint64_t h = 1469598103934665603ull;          /* FNV-1a */
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    for (int i = 0; g && i < 3; i++)
        h = (h ^ (uint32_t)g[i]) * 1099511628211ull;
    h = (h ^ extra) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32));
}

typedef struct { int64_t s, e; const char *name; uint32_t corr; } gc_call;

static int gc_cmp_call(const void *a, const void *b)
{
    const gc_call *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* A call by which the host reads the GPU's results: a synchronize, or a copy to the host
 * (whether the call waited cannot be told from a Kineto trace: its host-cost correction,
 * timport.c, moves the calls but not the copies behind their stream's work). */
typedef struct { uint32_t corr; int64_t e; } gc_dtoh;

static int gc_cmp_dtoh(const void *a, const void *b)
{
    const gc_dtoh *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int gc_call_reads(const gc_call *c, const gc_dtoh *d, size_t nd)
{
    if (strstr(c->name, "Synchronize"))
        return 1;
    if (!strstr(c->name, "emcpy") || nd == 0)
        return 0;
    size_t lo = 0, hi = nd;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d[mid].corr < c->corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nd && d[lo].corr == c->corr;
}

/* The order's position whose eager phase the host waits after (accept, sample: it reads the
 * accepted tokens), else the first with an eager phase; -1: none. */
static int gc_wait_item(const gc_order *o)
{
    for (int k = 0; k < o->npos; k++)
        if (o->pos[k].tail == WM_ACCEPT || o->pos[k].tail == WM_SAMPLE)
            return k;
    for (int k = 0; k < o->npos; k++)
        if (o->pos[k].tail >= 0)
            return k;
    return -1;
}

int gcycle_apply(const fit_trace *t, const gc_order *o, gc_emit_fn emit, void *user,
                 gc_stats *stp, char *err, size_t errlen)
{
    gc_stats dummy;
    gc_stats *st = stp ? stp : &dummy;
    memset(st, 0, sizeof *st);
    int rc = -1;
    gc_launch *L = malloc((t->napi + 1) * sizeof *L);
    gc_ci *ci = malloc((t->napi + 1) * sizeof *ci);
    gc_call *C = malloc((t->napi + 1) * sizeof *C);
    gc_dtoh *D = malloc((t->nmem + 1) * sizeof *D);
    uint32_t *ids = malloc((t->napi + 1) * sizeof *ids);
    if (!L || !ci || !C || !D || !ids) {
        snprintf(err, errlen, "%s: out of memory", t->file);
        goto out;
    }
    /* graph launches, one per correlation id (a runtime launch and the driver call inside it
     * share one) */
    size_t n = 0;
    for (size_t i = 0; i < t->napi; i++) {
        const ptrace_api *a = &t->api[i];
        if (gc_is_graph_launch(a->name))
            L[n++] = (gc_launch){a->start_ns, a->end_ns, a->thread, a->corr, a->graph_exec_id, 0,
                                 0, 0, -1};
    }
    qsort(L, n, sizeof *L, gc_cmp_launch);
    for (size_t i = 0; i < n; i++)
        ci[i] = (gc_ci){L[i].corr, i};
    qsort(ci, n, sizeof *ci, gc_cmp_ci);
    for (size_t k = 1; k < n; k++)       /* the outer (earliest) call of each id stays */
        if (ci[k].corr && ci[k].corr == ci[k - 1].corr)
            L[ci[k].i].nrec = -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (L[i].nrec == 0)
            L[m++] = L[i];
    n = m;
    /* the launching thread: the one with most graph launches (a majority vote: one thread
     * launches the graphs of a rank in SGLang and torchbench) */
    int64_t thread = 0;
    for (size_t i = 0, votes = 0; i < n; i++) {
        if (votes == 0)
            thread = L[i].thread;
        votes += L[i].thread == thread ? 1 : (size_t)-1;
    }
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (L[i].thread == thread)
            L[m++] = L[i];
    st->other_thread = n - m;
    n = m;
    st->launches = n;
    if (n < 3) {
        snprintf(err, errlen, "%s: field cudaGraphLaunch: value %zu graph launches: a graph launch "
                 "cycle needs at least 3 (an eager trace has none: name its phases with "
                 "annotations, docs/importers.md)", t->file, n);
        goto out;
    }
    /* identities: the executable, else a signature of the launch's GPU records */
    int by_exec = 1;
    for (size_t i = 0; i < n; i++)
        by_exec &= L[i].exec != 0;
    st->by_exec = by_exec;
    if (!by_exec) {
        for (size_t i = 0; i < n; i++)
            ci[i] = (gc_ci){L[i].corr, i};
        qsort(ci, n, sizeof *ci, gc_cmp_ci);
        for (size_t k = 0; k < t->nkern; k++) {
            const ptrace_kernel *x = &t->kern[k];
            const gc_ci *c = gc_ci_find(ci, n, x->corr);
            if (c) {
                L[c->i].sig += gc_hash(x->name, x->grid, (uint64_t)x->block[0] << 20 | (uint32_t)x->block[1]);
                L[c->i].nrec++;
            }
        }
        for (size_t k = 0; k < t->nmem; k++) {
            const ptrace_mem *x = &t->mem[k];
            const gc_ci *c = gc_ci_find(ci, n, x->corr);
            if (c) {
                L[c->i].sig += gc_hash(x->copy_kind, NULL, x->bytes + (uint64_t)x->kind);
                L[c->i].nrec++;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        ids[i] = L[i].id = by_exec ? L[i].exec : gc_hash(NULL, NULL, (uint64_t)L[i].sig << 20 ^ (uint64_t)L[i].nrec);
    int p = gcycle_period(ids, n);
    st->period = p;
    if (p == 0) {
        snprintf(err, errlen, "%s: field %s: no graph launch cycle in %zu launches (no period p <= "
                 "%d with the same %s p launches earlier for >= 90%% of them, over >= 3 cycles; "
                 "first ids %u %u %u ...): give one trace per configuration (one batch size), or "
                 "name the phases with annotations", t->file, by_exec ? "graph_exec_id" :
                 "kernels of the graph launches", n, GC_POS_MAX, by_exec ? "executable" :
                 "kernels (names, grids)", ids[0], ids[1], ids[2]);
        goto out;
    }
    if (p != o->npos) {
        snprintf(err, errlen, "%s: field --graph-cycle: value %s: %d position%s, but the trace's %zu "
                 "graph launches repeat every %d (specprof check prints the cycle)", t->file,
                 o->text, o->npos, o->npos == 1 ? "" : "s", n, p);
        goto out;
    }
    /* the cycle's executables: the first p launches that the next p repeat */
    size_t j0 = n;
    for (size_t j = 0; j + 2 * (size_t)p <= n && j0 == n; j++)
        if (!memcmp(ids + j, ids + j + p, (size_t)p * sizeof *ids))
            j0 = j;
    if (j0 == n) {
        snprintf(err, errlen, "%s: field %s: period %d found but no two whole cycles in a row: "
                 "no cycle to place the launches in", t->file, by_exec ? "graph_exec_id" :
                 "kernels of the graph launches", p);
        goto out;
    }
    uint32_t tmpl[GC_POS_MAX];
    memcpy(tmpl, ids + j0, (size_t)p * sizeof *ids);
    /* known launches: their executable's position (the one that continues the count where
     * an executable sits at two) */
    long pa = -1;                         /* index of the previous known launch */
    for (size_t i = 0; i < n; i++) {
        unsigned mask = 0;
        for (int k = 0; k < p; k++)
            mask |= (unsigned)(tmpl[k] == ids[i]) << k;
        if (!mask)
            continue;
        int want = pa >= 0 ? (int)((L[pa].pos + (long)i - pa) % p) : -1, q = 0;
        if (want >= 0 && (mask >> want & 1))
            q = want;
        else
            while (!(mask >> q & 1))
                q++;
        L[i].pos = q;
        pa = (long)i;
    }
    /* other executables (batch-size buckets): counted into the cycle between the known launches
     * around them when the count comes out; else (also before the first and after the last
     * known launch) out of the cycle */
    uint32_t *bucket = ids;               /* reused: distinct placed foreign ids */
    size_t nb = 0;
    long prev = -1;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && L[i].pos < 0)
            continue;
        size_t a = prev < 0 ? 0 : (size_t)prev + 1, k = i - a;
        if (k > 0) {
            /* before the first or after the last known launch the count cannot be checked
             * (a one-off graph at the start of a capture): out */
            int ok = prev >= 0 && i < n && (L[prev].pos + (long)k + 1) % p == L[i].pos;
            for (size_t q = a; q < i; q++) {
                if (!ok) {
                    st->out_of_cycle++;
                    continue;
                }
                L[q].pos = (int)((L[prev].pos + (long)(q - a) + 1) % p);
                size_t b = 0;
                while (b < nb && bucket[b] != L[q].id)
                    b++;
                if (b == nb)
                    bucket[nb++] = L[q].id;
            }
        }
        prev = (long)i;
    }
    st->buckets = nb;
    /* configurations one after another (graphs captured again for each: torchbench's and
     * specbench's calibration runs): the cycle's executables stop and others carry on; one
     * shape cannot name them */
    size_t last_t = j0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < p; k++)
            if (L[i].id == tmpl[k])
                last_t = i;
    if (n - 1 - last_t >= 3 * (size_t)p) {
        snprintf(err, errlen, "%s: field %s: value %u: the cycle's executables are last launched at "
                 "graph launch %zu of %zu and others run for %zu launches after them: the trace "
                 "holds several configurations one after another (graphs captured again for each); "
                 "give one trace per configuration", t->file, by_exec ? "graph_exec_id" :
                 "kernels of the graph launches", L[last_t + 1].id, last_t + 1, n, n - 1 - last_t);
        goto out;
    }
    /* launch calls of the thread between graph launches; copies that made the host wait */
    size_t nc = 0, nd = 0;
    for (size_t i = 0; i < t->napi; i++) {
        const ptrace_api *a = &t->api[i];
        if (a->thread == thread && !gc_is_graph_launch(a->name))
            C[nc++] = (gc_call){a->start_ns, a->end_ns, a->name, a->corr};
    }
    qsort(C, nc, sizeof *C, gc_cmp_call);
    for (size_t i = 0; i < t->nmem; i++) {
        const ptrace_mem *x = &t->mem[i];
        if (x->kind == PTRACE_MEMCPY && x->copy_kind &&
            (!strcmp(x->copy_kind, "DtoH") || !strcmp(x->copy_kind, "AtoH")))
            D[nd++] = (gc_dtoh){x->corr, x->end_ns};
    }
    qsort(D, nd, sizeof *D, gc_cmp_dtoh);
    /* the turn of the cycle: the position after which the host reads the GPU's results (a
     * copy to the host, a synchronize) in most iterations, and in more than at any other
     * position, is the order's waiting position (the eager accept or sample after it);
     * without one, the first launch starts the order */
    int witem = gc_wait_item(o), first = -1;
    size_t waits[GC_POS_MAX] = {0}, tot[GC_POS_MAX] = {0};
    for (size_t i = 0, c = 0; i + 1 < n; i++) {
        while (c < nc && C[c].s < L[i].e)
            c++;
        int wt = 0;
        for (size_t q = c; q < nc && C[q].s < L[i + 1].s; q++)
            wt |= gc_call_reads(&C[q], D, nd);
        if (L[i].pos >= 0) {
            waits[L[i].pos] += (size_t)wt;
            tot[L[i].pos]++;
            if (first < 0)
                first = L[i].pos;
        }
    }
    int shift = first < 0 ? 0 : first;   /* item = (pos - shift) mod p */
    if (witem >= 0) {
        int bp = -1;
        double bf = 0, second = 0;
        for (int k = 0; k < p; k++) {
            double f = tot[k] ? (double)waits[k] / (double)tot[k] : 0;
            if (f > bf)
                second = bf, bf = f, bp = k;
            else if (f > second)
                second = f;
        }
        if (bp >= 0 && bf >= 0.5 && bf > second) {
            shift = ((bp - witem) % p + p) % p;
            st->aligned_by_wait = 1;
        }
    }
    for (int k = 0; k < p; k++)
        st->cycle[k] = tmpl[(k + shift) % p];
    /* the instances */
    for (size_t i = 0, c = 0; i < n; i++) {
        while (c < nc && C[c].s < L[i].s)
            c++;
        if (L[i].pos < 0)
            continue;
        const gc_pos *ps = &o->pos[((L[i].pos - shift) % p + p) % p];
        /* the last launch's eager work runs to wherever the capture stopped: not used */
        int64_t last = L[i].e, t0 = 0, next = i + 1 < n ? L[i + 1].s : L[i].e + 1;
        int any = 0;
        for (size_t q = c; q < nc && C[q].s < next; q++) {
            if (C[q].s <= L[i].e)
                continue;                  /* inside the launch call */
            if (!any)
                t0 = C[q].s;
            any = 1;
            if (C[q].e > last)
                last = C[q].e;
        }
        if (ps->tail < 0 && any && i + 1 < n) {
            /* the calls after the longest pause before the next graph launch prepare the
             * next phase: the program's own host work (its scheduler, Python) ends there;
             * they are in no phase, their time is host time before the next one */
            int64_t prev_e = L[i].e, best = -1, cut = L[i].e;
            size_t q = c;
            for (; q < nc && C[q].s < next; q++) {
                if (C[q].s <= L[i].e)
                    continue;
                if (C[q].s - prev_e > best)
                    best = C[q].s - prev_e, cut = prev_e;
                if (C[q].e > prev_e)
                    prev_e = C[q].e;
            }
            if (next - prev_e > best)
                cut = prev_e;
            for (q = c; q < nc && C[q].s < next; q++)
                st->between += C[q].s > L[i].e && C[q].s >= cut;
            last = cut > L[i].e ? cut : L[i].e;
        }
        if (last >= next)
            last = next - 1;
        int r = ps->tail < 0 ? emit(user, ps->phase, 1, L[i].s, last, thread)
                             : emit(user, ps->phase, 1, L[i].s, L[i].e, thread);
        if (r)
            goto out;
        st->instances++;
        st->per_phase[ps->phase]++;
        if (ps->tail >= 0 && any) {
            if (emit(user, ps->tail, 0, t0, last, thread))
                goto out;
            st->instances++;
            st->per_phase[ps->tail]++;
        }
    }
    rc = 0;
out:
    free(L);
    free(ci);
    free(C);
    free(D);
    free(ids);
    return rc;
}
