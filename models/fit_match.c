/* fit_match: stage 2, a phase's instances -> its groups (fr_phase). In: the kept instances
 * and their elements; out: the groups (by position in the forward with repeated layers
 * folded, or by kernel name when instances differ in shape), per instance and group the us
 * and launches per forward, the wave kernel's geometry and variant, the launches per forward.
 * Workload: 10^3..10^5 instances of tens to thousands of elements. */
#include "fit_int.h"
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- stage 2: matching kernels into groups ------------------------------------------------- */

/* Elements a phase instance may hold once besides its F forwards (input copies before
 * them, tree building after): searched up to this many on each side. */
#define FIT_EDGE_MAX 8

/* Does instance `in` consist of a prefix of a elements, F identical forwards of n elements
 * and a suffix of b? */
static int fm_fits_shape(const fr_run *R, const fr_inst *in, int a, int n, int b)
{
    /* in 64 bits: F and n come from different instances (F is bounded, bounds.h) */
    if (n < 1 || (long long)in->ne != (long long)a + (long long)in->F * n + b)
        return 0;
    const fr_elem *e = &R->el[in->e0 + (size_t)a];
    for (int f = 1; f < in->F; f++)
        for (int k = 0; k < n; k++)
            if (e[f * n + k].cls != e[k].cls)
                return 0;
    return 1;
}

/* The shape (a, n, b) of an instance with F >= 2 forwards: the smallest a+b that fits. */
static int fm_shape(const fr_run *R, const fr_inst *in, int *a, int *n, int *b)
{
    for (int sum = 0; sum <= 2 * FIT_EDGE_MAX && sum <= in->ne; sum++)
        for (int x = sum < FIT_EDGE_MAX ? sum : FIT_EDGE_MAX; x >= 0 && sum - x <= FIT_EDGE_MAX; x--) {
            int y = sum - x;
            if ((in->ne - sum) % in->F || in->ne - sum < in->F)
                continue;
            if (fm_fits_shape(R, in, x, (in->ne - sum) / in->F, y)) {
                *a = x;
                *n = (in->ne - sum) / in->F;
                *b = y;
                return 0;
            }
        }
    return -1;
}

/* The repeated layer of a forward: the period P and offset h that cover the most elements
 * with L >= 2 repeats of s[h .. h+P); ties go to the shorter period. No repeat: L = 1. */
static void fm_layers(const char *const *s, int n, int *h, int *P, int *L)
{
    int best = 0;
    *h = 0;
    *P = n > 0 ? n : 1;
    *L = 1;
    for (int p = 1; p <= n / 2; p++) {
        int run = 0;
        for (int i = 0; i <= n - p; i++) {
            int eq = i + p < n && s[i] == s[i + p];
            if (eq) {
                run++;
                continue;
            }
            int reps = (run + p) / p;
            if (run > 0 && reps >= 2 && reps * p > best) {
                best = reps * p;
                *h = i - run;
                *P = p;
                *L = reps;
            }
            run = 0;
        }
    }
}

static int fm_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Group name "<prefix> <class>", cut to fit. */
static void fm_gname(char *dst, const char *prefix, const char *cls)
{
    snprintf(dst, WM_NAME_MAX, "%s%s%.*s", prefix, *prefix ? " " : "",
             (int)(WM_NAME_MAX - 1 - strlen(prefix) - 1), cls);
}

/* Group of element e of instance in (the phase's matching done). */
static int fm_elem_group(const fr_phase *P, const fr_inst *in, const fr_elem *el, int e)
{
    if (P->by == FIT_BY_POSITION) {
        int k = e < P->A ? e : e >= in->ne - P->B ? P->A + P->nfwd + (e - (in->ne - P->B))
                                                  : P->A + (e - P->A) % P->nfwd;
        return P->pos2g[k];
    }
    int g = 0;
    while (g < P->G && !(P->gcls[g] && P->gcls[g] == el->cls))
        g++;
    return g == P->G ? P->other_g : g;   /* a class merged into "(other kernels)" */
}

/* Per group, the kernel (by full name) with the most time in the instances q0..q1-1 of the
 * phase (an element's time: its longest kernel's, whose name it carries); NULL: none. Names
 * past the FM_NAMES_MAX-th of a group are rare ones, not counted. */
#define FM_NAMES_MAX 16
static void fm_top_kernels(const fr_run *R, const fr_phase *P, int q0, int q1,
                           const char *top[WM_GROUPS_MAX])
{
    struct { const char *name; double us; } k[WM_GROUPS_MAX][FM_NAMES_MAX];
    int nk[WM_GROUPS_MAX] = {0};
    for (int q = q0; q < q1; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        for (int e = 0; e < in->ne; e++) {
            const fr_elem *el = &R->el[in->e0 + (size_t)e];
            int g = fm_elem_group(P, in, el, e);
            if (g < 0 || g >= WM_GROUPS_MAX || !el->dname)
                continue;
            int j = 0;
            while (j < nk[g] && strcmp(k[g][j].name, el->dname) != 0)
                j++;
            if (j == nk[g]) {
                if (j == FM_NAMES_MAX)
                    continue;
                k[g][nk[g]++].name = el->dname;
                k[g][j].us = 0;
            }
            k[g][j].us += el->dmax_us;
        }
    }
    for (int g = 0; g < WM_GROUPS_MAX; g++) {
        top[g] = NULL;
        double best = -1;
        for (int j = 0; j < nk[g]; j++)
            if (k[g][j].us > best)
                top[g] = k[g][j].name, best = k[g][j].us;
    }
}

/* Per instance and group, the kernel variant it ran: its top kernel (fm_top_kernels),
 * numbered per group in order of appearance (1, 2, ...). An attention kernel compiled per
 * tile count (specbench's k_attn_split<1>, <2>, <3>) tells the fit where the tiles step
 * (fg_fit_tiles). 0: no named kernel, or past FM_NAMES_MAX names. */
static void fm_variants(const fr_run *R, fr_phase *P)
{
    int G1 = P->G + 1;
    const char *seen[WM_GROUPS_MAX][FM_NAMES_MAX];
    int nseen[WM_GROUPS_MAX] = {0};
    for (int q = 0; q < P->ninst; q++) {
        const char *top[WM_GROUPS_MAX];
        fm_top_kernels(R, P, q, q + 1, top);
        for (int g = 0; g < P->G && g < WM_GROUPS_MAX; g++) {
            if (!top[g])
                continue;
            int v = 0;
            while (v < nseen[g] && strcmp(seen[g][v], top[g]) != 0)
                v++;
            if (v == nseen[g] && v < FM_NAMES_MAX)
                seen[g][nseen[g]++] = top[g];
            P->WV[(size_t)q * (size_t)G1 + (size_t)g] = v < FM_NAMES_MAX ? v + 1 : 0;
        }
    }
}

/* A phase's shape: a prefix of A elements, one forward of N, a suffix of B. */
typedef struct {
    int A, N, B;
} fm_layout;

/* The phase's shape: a prefix, F identical forwards, a suffix (draft instances hold steps-1
 * forwards); taken from the instances with F >= 2, the most common one; else (one forward
 * per instance) the most common kernel count. n: the phase's kept instances. */
static int fm_phase_layout(fr_run *R, int p, int n, fm_layout *lo)
{
    int *sa = malloc(3 * (size_t)n * sizeof *sa), ns = 0;
    if (!sa)
        return fit_run_fail(R, "out of memory");
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        int a, m, b;
        if (in->phase == p && !in->drop && in->F >= 2 && fm_shape(R, in, &a, &m, &b) == 0) {
            sa[3 * ns] = a, sa[3 * ns + 1] = m, sa[3 * ns + 2] = b;
            ns++;
        }
    }
    int A = 0, N = -1, B = 0, best = 0;
    for (int i = 0; i < ns; i++) {
        int c = 0;
        for (int j = 0; j < ns; j++)
            c += sa[3 * j] == sa[3 * i] && sa[3 * j + 1] == sa[3 * i + 1] && sa[3 * j + 2] == sa[3 * i + 2];
        if (c > best)
            best = c, A = sa[3 * i], N = sa[3 * i + 1], B = sa[3 * i + 2];
    }
    if (N < 0) {   /* one forward per instance: the most common kernel count */
        ns = 0;
        for (size_t i = 0; i < R->nin; i++)
            if (R->in[i].phase == p && !R->in[i].drop)
                sa[ns++] = R->in[i].ne;
        qsort(sa, (size_t)ns, sizeof *sa, fm_cmp_int);
        for (int a = 0, b; a < ns; a = b) {
            for (b = a; b < ns && sa[b] == sa[a]; b++)
                ;
            if (b - a > best)
                best = b - a, N = sa[a];
        }
    }
    free(sa);
    *lo = (fm_layout){A, N, B};
    return 0;
}

/* Which instances have the shape (nfwd); one at either edge of a trace that does not was cut
 * by the capture window (dropped: *n counts down). Then the kept ones into P->inst; *same:
 * all of them have the shape. */
static int fm_keep(fr_run *R, int p, const fm_layout *lo, int *n, int *same)
{
    fr_phase *P = &R->ph[p];
    for (size_t i = 0; i < R->nin; i++)
        if (R->in[i].phase == p && !R->in[i].drop)
            R->in[i].nfwd = fm_fits_shape(R, &R->in[i], lo->A, lo->N, lo->B) ? lo->N : -1;
    for (int t = 0; t < R->nt; t++) {
        int first = -1, last = -1;
        for (size_t i = R->tin0[t]; i < R->tin0[t + 1]; i++)
            if (R->in[i].phase == p && !R->in[i].drop) {
                if (first < 0)
                    first = (int)i;
                last = (int)i;
            }
        if (first < 0 || first == last)
            continue;
        if (R->in[first].nfwd < 0)
            R->in[first].drop = FR_PARTIAL, (*n)--;
        if (R->in[last].nfwd < 0)
            R->in[last].drop = FR_PARTIAL, (*n)--;
    }
    P->inst = malloc((size_t)*n * sizeof *P->inst);
    if (!P->inst)
        return fit_run_fail(R, "out of memory");
    P->ninst = 0;
    *same = 1;
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->phase != p || in->drop)
            continue;
        P->inst[P->ninst++] = (int)i;
        *same &= in->nfwd > 0;
    }
    return 0;
}

/* By position (every instance has the shape): a group per position of the prefix, the
 * forward's head, one repeated layer, its tail and the suffix, named p/h/L/t/s and the
 * class; kept when that many groups fit (P->by = FIT_BY_POSITION). */
static int fm_by_position(fr_run *R, fr_phase *P, const fm_layout *lo)
{
    int A = lo->A, N = lo->N, B = lo->B;
    const fr_inst *rep = &R->in[P->inst[0]];
    int npos = A + N + B;
    const char **s = malloc((size_t)npos * sizeof *s);
    P->pos2g = malloc((size_t)npos * sizeof *P->pos2g);
    if (!s || !P->pos2g) {
        free(s);
        return fit_run_fail(R, "out of memory");
    }
    for (int k = 0; k < A + N; k++)
        s[k] = R->el[rep->e0 + (size_t)k].cls;
    for (int k = 0; k < B; k++)
        s[A + N + k] = R->el[rep->e0 + (size_t)(rep->ne - B + k)].cls;
    int h, per, L;
    fm_layers(s + A, N, &h, &per, &L);
    int tail = N - h - L * per;
    int G = A + (L < 2 ? N : h + per + tail) + B;
    if (G <= WM_GROUPS_MAX - 2) {
        char pre[16];
        P->by = FIT_BY_POSITION;
        P->A = A;
        P->nfwd = N;
        P->B = B;
        P->G = G;
        for (int k = 0; k < npos; k++) {
            int g, f = k - A;
            if (k < A)
                g = k, snprintf(pre, sizeof pre, "p%d", k);
            else if (k >= A + N)
                g = G - B + (k - A - N), snprintf(pre, sizeof pre, "s%d", k - A - N);
            else if (L < 2)   /* no repeated layer: plain positions */
                g = A + f, snprintf(pre, sizeof pre, "k%d", f);
            else if (f < h)
                g = A + f, snprintf(pre, sizeof pre, "h%d", f);
            else if (f < h + L * per)
                g = A + h + (f - h) % per, snprintf(pre, sizeof pre, "L%d", (f - h) % per);
            else
                g = A + h + per + (f - h - L * per), snprintf(pre, sizeof pre, "t%d", f - h - L * per);
            P->pos2g[k] = g;
            if (k < A || k >= A + N || L < 2 || f < h + per || f >= h + L * per)
                fm_gname(P->name[g], pre, s[k]);
        }
    }
    free(s);
    return 0;
}

/* By name: one group per kernel class; the rarest merged into "(other kernels)" when there
 * are too many. */
static int fm_by_name(fr_run *R, fr_phase *P, int p)
{
    typedef struct { const char *cls; double us; } cl_t;
    cl_t *cl = NULL;
    int ncl = 0, cap = 0;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        for (int e = 0; e < in->ne; e++) {
            const fr_elem *el = &R->el[in->e0 + (size_t)e];
            int k = 0;
            while (k < ncl && cl[k].cls != el->cls)
                k++;
            if (k == ncl) {
                if (ncl == cap) {
                    cap = cap ? 2 * cap : 64;
                    cl_t *nc = realloc(cl, (size_t)cap * sizeof *cl);
                    if (!nc) {
                        free(cl);
                        return fit_run_fail(R, "out of memory");
                    }
                    cl = nc;
                }
                cl[ncl++] = (cl_t){el->cls, 0};
            }
            cl[k].us += el->dur_us;
        }
    }
    int keep = ncl <= WM_GROUPS_MAX - 2 ? ncl : WM_GROUPS_MAX - 3;
    if (keep < ncl) {   /* the largest by time keep their own group */
        for (int a = 0; a < keep; a++)
            for (int b = a + 1; b < ncl; b++)
                if (cl[b].us > cl[a].us) {
                    cl_t x = cl[a];
                    cl[a] = cl[b];
                    cl[b] = x;
                }
        fit_run_warn(R, "phase %s: %d kernel names; the %d smallest by time share the group "
                     "\"(other kernels)\"", wm_phase_name[p], ncl, ncl - keep);
    }
    for (int k = 0; k < keep; k++) {
        P->gcls[k] = cl[k].cls;
        fm_gname(P->name[k], "", cl[k].cls);
    }
    P->G = keep;
    P->other_g = -1;
    if (keep < ncl) {
        P->gcls[P->G] = NULL;
        P->other_g = P->G;
        snprintf(P->name[P->G++], WM_NAME_MAX, "(other kernels)");
    }
    free(cl);
    return 0;
}

/* Each group's launch profile (wm_group.pos): in every eager instance with launch calls,
 * the share of the group's GPU time whose launch call ended in each of WM_POS_BINS equal
 * slices of the instance's launch time (its first call's start to its last kernel launch
 * call's end); summed over the instances into P->POS, each instance weighing one (docs/fit.md
 * section 4, launch_pos). */
static int fm_launch_profile(fr_run *R, fr_phase *P)
{
    int G1 = P->G + 1;
    P->POS = calloc((size_t)G1 * WM_POS_BINS, sizeof *P->POS);
    double *h = calloc((size_t)G1 * WM_POS_BINS, sizeof *h);
    if (!P->POS || !h) {
        free(h);
        return fit_run_fail(R, "out of memory");
    }
    if (fit_env_off("FIT_LAUNCH_PROFILE")) {   /* none: the simulator's even spread */
        free(h);
        return 0;
    }
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (in->graph != 0 || in->napi < 2)
            continue;
        /* the launch time ends with the last kernel's launch call: a blocking copy after it
         * (accept's read of the accepted tokens) waits for the GPU, it does not launch */
        int64_t end = INT64_MIN;
        for (int e = 0; e < in->ne; e++)
            if (R->el[in->e0 + (size_t)e].call_end_ns > end)
                end = R->el[in->e0 + (size_t)e].call_end_ns;
        if (end <= in->lb)
            continue;
        memset(h, 0, (size_t)G1 * WM_POS_BINS * sizeof *h);
        int any = 0;
        for (int e = 0; e < in->ne; e++) {
            const fr_elem *el = &R->el[in->e0 + (size_t)e];
            if (el->call_end_ns == 0)
                continue;
            int g = fm_elem_group(P, in, el, e);
            double x = (double)(el->call_end_ns - in->lb) / (double)(end - in->lb);
            int b = (int)floor(x * WM_POS_BINS);
            b = b < 0 ? 0 : b >= WM_POS_BINS ? WM_POS_BINS - 1 : b;
            h[(size_t)g * WM_POS_BINS + (size_t)b] += el->dur_us;
            any = 1;
        }
        if (!any)
            continue;
        for (int g = 0; g < G1; g++) {
            double t = 0;
            for (int b = 0; b < WM_POS_BINS; b++)
                t += h[(size_t)g * WM_POS_BINS + (size_t)b];
            for (int b = 0; t > 0 && b < WM_POS_BINS; b++)
                P->POS[(size_t)g * WM_POS_BINS + (size_t)b] += h[(size_t)g * WM_POS_BINS + (size_t)b] / t;
        }
    }
    free(h);
    return 0;
}

/* Per instance and group: microseconds and launches per forward, the wave kernel's blocks,
 * capacity and time, the kernel variants. */
static int fm_sums(fr_run *R, fr_phase *P)
{
    int G1 = P->G + 1;
    P->Y = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->Y);
    P->L = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->L);
    P->WB = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WB);
    P->WC = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WC);
    P->WD = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WD);
    P->WV = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WV);
    if (!P->Y || !P->L || !P->WB || !P->WC || !P->WD || !P->WV)
        return fit_run_fail(R, "out of memory");
    fm_variants(R, P);
    /* per group, the kernel whose waves the wave column counts: the one with the most time
     * in the group (by name it holds several: the GEMM class holds every GEMM) */
    const char *wname[WM_GROUPS_MAX];
    fm_top_kernels(R, P, 0, P->ninst, wname);
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        double *y = &P->Y[(size_t)q * (size_t)G1], *l = &P->L[(size_t)q * (size_t)G1];
        if (P->copy_g >= 0) {
            y[P->copy_g] = in->copy_us / in->F;
            l[P->copy_g] = (double)in->ncopy / in->F;
        }
        for (int e = 0; e < in->ne; e++) {
            const fr_elem *el = &R->el[in->e0 + (size_t)e];
            int g = fm_elem_group(P, in, el, e);
            assert(g >= 0);
            y[g] += el->dur_us / in->F;
            /* the wave geometry of the group's kernel: its elements alike in an instance */
            double *wb = &P->WB[(size_t)q * (size_t)G1 + (size_t)g];
            double *wc = &P->WC[(size_t)q * (size_t)G1 + (size_t)g];
            if (g < WM_GROUPS_MAX && wname[g] && el->dname && strcmp(el->dname, wname[g]) == 0 &&
                *wb >= 0) {
                P->WD[(size_t)q * (size_t)G1 + (size_t)g] += el->dmax_us / in->F;
                if (*wb == 0)
                    *wb = el->blocks, *wc = el->cap;
                else if (*wb != el->blocks || *wc != el->cap)
                    *wb = -1;   /* they differ: no wave term for the group */
            }
            l[g] += (double)el->launches / in->F;
        }
    }
    return fm_launch_profile(R, P);
}

/* By name, a group must be in every trace where its phase is. */
static int fm_check_traces(fr_run *R, const fr_phase *P, int p)
{
    int G1 = P->G + 1;
    for (int g = 0; g < P->G; g++) {
        if (g == P->copy_g)
            continue;
        int present_in = -1;
        for (int q = 0; q < P->ninst && present_in < 0; q++)
            if (P->L[(size_t)q * (size_t)G1 + (size_t)g] > 0)
                present_in = R->in[P->inst[q]].trace;
        for (int t = 0; t < R->nt; t++) {
            int has_phase = 0, has = 0;
            for (int q = 0; q < P->ninst; q++) {
                if (R->in[P->inst[q]].trace != t)
                    continue;
                has_phase = 1;
                has |= P->L[(size_t)q * (size_t)G1 + (size_t)g] > 0;
            }
            if (has_phase && !has)
                return fit_run_fail(R, "%s: phase %s: group %s: absent from this trace (present "
                                    "in %s); its cost cannot be fitted across traces that differ "
                                    "in their kernels: capture the traces with the same program "
                                    "and settings", R->tr[t].file, wm_phase_name[p], P->name[g],
                                    present_in >= 0 ? R->tr[present_in].file : "another trace");
        }
    }
    return 0;
}

/* Launches per forward of each group: the median over instances. */
static int fm_counts(fr_run *R, fr_phase *P)
{
    int G1 = P->G + 1;
    double *v = malloc((size_t)P->ninst * sizeof *v);
    if (!v)
        return fit_run_fail(R, "out of memory");
    for (int g = 0; g < P->G; g++) {
        for (int q = 0; q < P->ninst; q++)
            v[q] = P->L[(size_t)q * (size_t)G1 + (size_t)g];
        int c = (int)lround(fit_group_median(v, (size_t)P->ninst));
        P->count[g] = c < 1 ? 1 : c;
    }
    P->count[P->G] = 1;
    free(v);
    return 0;
}

int fit_match_phase(fr_run *R, int p)
{
    fr_phase *P = &R->ph[p];
    int n = 0;
    for (size_t i = 0; i < R->nin; i++)
        n += R->in[i].phase == p && !R->in[i].drop;
    if (n == 0)
        return 0;
    fm_layout lo = {0, -1, 0};
    int same = 0;
    if (fm_phase_layout(R, p, n, &lo) || fm_keep(R, p, &lo, &n, &same))
        return -1;
    if (P->ninst == 0) {   /* every instance was cut by the capture window: as none (make fuzz) */
        free(P->inst);
        P->inst = NULL;
        return 0;
    }
    P->by = FIT_BY_NAME;
    if (same && fm_by_position(R, P, &lo))
        return -1;
    if (P->by == FIT_BY_NAME && fm_by_name(R, P, p))
        return -1;
    /* the copies of the phase, if any instance has some */
    P->copy_g = -1;
    for (int q = 0; q < P->ninst && P->copy_g < 0; q++)
        if (R->in[P->inst[q]].ncopy > 0) {
            P->copy_g = P->G;
            snprintf(P->name[P->G++], WM_NAME_MAX, "(copies)");
        }
    snprintf(P->name[P->G], WM_NAME_MAX, "(gpu idle in phase)");
    if (fm_sums(R, P) || (P->by == FIT_BY_NAME && fm_check_traces(R, P, p)))
        return -1;
    return fm_counts(R, P);
}
