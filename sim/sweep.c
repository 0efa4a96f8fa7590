/* sweep: grid expansion, checking, and the worker pool. Configuration i is decoded from i
 * (the first axis varies slowest), so every worker builds its own configurations and the
 * results land in an array indexed by i. The part runs in blocks of SWEEP_BLOCK
 * configurations, each block's rows written in order once it is done, so that memory stays
 * bounded whatever the grid (a result is ~1 KB: 10^7 configurations held at once would be
 * 10 GB). Each worker keeps its own loaded model (read-only during a run). */
#include "sweep.h"
#include "report.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SWEEP_MAX_VALUES 100000
/* Configurations run and written at a time: 16384 results (and as many baselines) are
 * ~32 MB; a block of ~1 ms runs is seconds of 2 cores. */
#define SWEEP_BLOCK 16384L
/* A part up to this many configurations is checked whole before any run (10^6 are ~20 s
 * of one core); a larger one checks every grid value once first (each axis's values with
 * the other axes at the part's first configuration) and each block before it runs. */
#define SWEEP_CHECK_ALL 1000000L
/* A sweep projected (after its first block) to take longer than this says so once. */
#define SWEEP_NOTE_S 60.0

static int sweep_add_value(sweep_axis *a, const char *v, size_t len)
{
    if (a->nvals >= SWEEP_MAX_VALUES)
        return -1;
    if (a->nvals == a->cap) {   /* doubling: a range of 1e5 values once took 15 s (make fuzz) */
        int cap = a->cap ? 2 * a->cap : 16;
        char **vals = realloc(a->vals, (size_t)cap * sizeof *vals);
        if (!vals)
            return -1;
        a->vals = vals;
        a->cap = cap;
    }
    if (!(a->vals[a->nvals] = strndup(v, len)))
        return -1;
    a->nvals++;
    return 0;
}

int sweep_grid_add(sweep_grid *g, const char *spec, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    char name[64];
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof name) {
        snprintf(err, errlen, "command line: field --grid: value \"%s\": expected "
                 "KNOB=A..B[:STEP] or KNOB=V1,V2,..", spec);
        return -1;
    }
    memcpy(name, spec, (size_t)(eq - spec));
    name[eq - spec] = '\0';
    const simcfg_knob *k = simcfg_find(name);
    if (!k || (k->flags & SK_OUTPUT) || k->type == SK_FLAG) {
        snprintf(err, errlen, "command line: field --grid: value \"%s\": %s", spec,
                 k ? "an output option cannot be varied" : "unknown knob (see specsim run --help)");
        return -1;
    }
    for (int i = 0; i < g->naxes; i++)
        if (g->axis[i].knob == k) {
            snprintf(err, errlen, "command line: field --grid: value \"%s\": %s is already "
                     "varied", spec, k->name);
            return -1;
        }
    if (g->naxes == SWEEP_MAX_AXES) {
        snprintf(err, errlen, "command line: field --grid: value \"%s\": at most %d axes",
                 spec, SWEEP_MAX_AXES);
        return -1;
    }
    sweep_axis *a = &g->axis[g->naxes];
    memset(a, 0, sizeof *a);
    a->knob = k;
    const char *v = eq + 1;
    const char *dots = strstr(v, "..");
    if (dots && (k->type == SK_INT || k->type == SK_LONG)) {
        char *end;
        errno = 0;
        long lo = strtol(v, &end, 10), hi, step = 1;
        if (end != dots)
            goto bad;
        hi = strtol(dots + 2, &end, 10);
        if (end == dots + 2)
            goto bad;
        if (*end == ':') {
            const char *s = end + 1;
            step = strtol(s, &end, 10);
            if (end == s || step < 1)
                goto bad;
        }
        if (*end || errno || hi < lo)
            goto bad;
        /* both ends within the knob's range (bounds.h), so hi - lo and lo + i * step
         * cannot overflow (a range to 2^63 - 1 once did) */
        if (k->max >= k->min && (lo < k->min || hi > k->max)) {
            snprintf(err, errlen, "command line: field --grid: value %ld (in \"%s\"): out of "
                     "range: %s must be in [%.15g, %.15g]", lo < k->min ? lo : hi, spec, k->name,
                     k->min, k->max);
            goto fail;
        }
        if ((hi - lo) / step >= SWEEP_MAX_VALUES) {   /* once "expected A..B", which it was */
            snprintf(err, errlen, "command line: field --grid: value \"%s\": %ld values: at "
                     "most %d per knob (a larger STEP)", spec,
                     (hi - lo) / step + 1, SWEEP_MAX_VALUES);
            goto fail;
        }
        for (long i = 0; i <= (hi - lo) / step; i++) {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "%ld", lo + i * step);
            if (sweep_add_value(a, buf, (size_t)n))
                goto oom;
        }
    } else {
        char sep = strchr(v, '|') ? '|' : ',';
        for (;;) {
            const char *e = strchr(v, sep);
            size_t len = e ? (size_t)(e - v) : strlen(v);
            if (len == 0)
                goto bad;
            if (sweep_add_value(a, v, len))
                goto oom;
            if (!e)
                break;
            v = e + 1;
        }
    }
    g->naxes++;
    return 0;
bad:
    snprintf(err, errlen, "command line: field --grid: value \"%s\": expected %s=A..B[:STEP] "
             "(integers, A <= B) or %s=V1,V2,..", spec, k->name, k->name);
    goto fail;
oom:
    snprintf(err, errlen, "command line: field --grid: value \"%s\": too many values", spec);
fail:
    for (int i = 0; i < a->nvals; i++)
        free(a->vals[i]);
    free(a->vals);
    memset(a, 0, sizeof *a);
    return -1;
}

void sweep_grid_free(sweep_grid *g)
{
    for (int i = 0; i < g->naxes; i++) {
        for (int j = 0; j < g->axis[i].nvals; j++)
            free(g->axis[i].vals[j]);
        free(g->axis[i].vals);
    }
    memset(g, 0, sizeof *g);
}

long sweep_grid_size(const sweep_grid *g)
{
    long n = 1;
    for (int i = 0; i < g->naxes; i++) {
        if (n > 100000000L / g->axis[i].nvals)
            return -1;
        n *= g->axis[i].nvals;
    }
    return n;
}

/* The value index of each axis for configuration i (last axis fastest). */
static void sweep_digits(const sweep_grid *g, long i, int *d)
{
    for (int a = g->naxes - 1; a >= 0; a--) {
        d[a] = (int)(i % g->axis[a].nvals);
        i /= g->axis[a].nvals;
    }
}

static int sweep_config(const sweep_grid *g, const simcfg_set_t *base, long i, simcfg_set_t *out,
                        char *err, size_t errlen)
{
    int d[SWEEP_MAX_AXES];
    *out = *base;
    sweep_digits(g, i, d);
    for (int a = 0; a < g->naxes; a++) {
        char field[80];
        snprintf(field, sizeof field, "%s", g->axis[a].knob->name);
        if (simcfg_set(out, g->axis[a].knob, g->axis[a].vals[d[a]], "sweep grid", field,
                       err, errlen))
            return -1;
    }
    return 0;
}

int sweep_shard(const char *spec, long n, long *lo, long *hi, char *err, size_t errlen)
{
    *lo = 0;
    *hi = n;
    if (!spec || !*spec)
        return 0;
    char *end;
    errno = 0;
    long i = strtol(spec, &end, 10), k;
    if (end == spec || *end != '/')
        goto bad;
    const char *t = end + 1;
    k = strtol(t, &end, 10);
    if (end == t || *end || errno || k < 1 || i < 1 || i > k)
        goto bad;
    /* contiguous parts, in grid order: part i holds [n(i-1)/k, n i/k) */
    *lo = (long)((long double)n * (i - 1) / k);
    *hi = (long)((long double)n * i / k);
    return 0;
bad:
    snprintf(err, errlen, "command line: field --shard: value \"%s\": expected I/N, integers "
             "with 1 <= I <= N (part I of N)", spec);
    return -1;
}

typedef struct {
    const sweep_grid   *g;
    const simcfg_set_t *base;
    long                n;
    long                lo, hi;      /* the configurations run: [lo, hi) of the grid */
    int                 baseline;
    long               *base_slot;   /* config lo+j -> its baseline's slot in bres */
    long               *bases;       /* slot -> the config index whose baseline it is */
    long               *jobs;        /* >= 0: spec run of config j; < 0: baseline slot -j-1 */
    long                njobs;
    sim_result         *spec, *bres;   /* results: speculative (config lo+j), baselines */
    atomic_long         next, done;
    atomic_long         sdone;       /* speculative runs done in this block */
    long                prev, total; /* configurations written before this block; of the part */
    atomic_long         imprecise;   /* runs that stopped at --iterations short of --precision */
    atomic_int          failed;
    pthread_mutex_t     lock;
    char                err[1536];
    int                 bad_input;   /* the failure was sim_run's -2 (the input's fault) */
    int                 progress;
    /* runs priced past their model's traces (sim_beyond_fit): how many, per phase the
     * largest tokens and query tokens per row of those past it (0: none), and the first
     * such run's model */
    long                nbeyond;
    atomic_long         npartial;    /* runs whose window saw no request finish */
    sim_result          beyond;
    wm_model           *beyond_model;
} sweep_ctx;

/* Notes run r of model m in c when it priced a phase past the model's traces. */
static void sweep_note_beyond(sweep_ctx *c, const wm_model *m, const sim_result *r)
{
    unsigned mask = sim_beyond_fit(m, r);
    if (!mask)
        return;
    pthread_mutex_lock(&c->lock);
    if (!c->beyond_model && (c->beyond_model = malloc(sizeof *c->beyond_model)) != NULL)
        *c->beyond_model = *m;
    c->nbeyond++;
    for (int p = 0; p < WM_NPHASE; p++)
        if (mask >> p & 1) {
            c->beyond.phase_tokens_max[p] = fmax(c->beyond.phase_tokens_max[p],
                                                 r->phase_tokens_max[p]);
            c->beyond.phase_q_max[p] = fmax(c->beyond.phase_q_max[p], r->phase_q_max[p]);
            c->beyond.phase_kv_row_max[p] = fmax(c->beyond.phase_kv_row_max[p], r->phase_kv_row_max[p]);
        }
    pthread_mutex_unlock(&c->lock);
}

static void *sweep_worker(void *arg)
{
    sweep_ctx *c = arg;
    simcfg_model *mc = calloc(1, sizeof *mc);
    simcfg_set_t *s = malloc(sizeof *s);
    sim_params *p = malloc(sizeof *p);
    char err[1024];
    if (!mc || !s || !p) {
        atomic_store(&c->failed, 1);
        goto out;
    }
    for (;;) {
        long j = atomic_fetch_add(&c->next, 1);
        if (j >= c->njobs || atomic_load(&c->failed))
            break;
        long job = c->jobs[j];
        int spec = job >= 0;
        long i = spec ? job : c->bases[-job - 1];
        sim_result *res = spec ? &c->spec[i - c->lo] : &c->bres[-job - 1];
        int rc = sweep_config(c->g, c->base, i, s, err, sizeof err);
        if (!rc)
            rc = simcfg_resolve(s, mc, spec, p, err, sizeof err);
        if (!rc)
            rc = sim_run(p, NULL, res, err, sizeof err);
        if (!rc)
            sweep_note_beyond(c, p->model, res);
        if (!rc && p->precision > 0 && !res->precise)
            atomic_fetch_add(&c->imprecise, 1);
        if (!rc && res->partial)
            atomic_fetch_add(&c->npartial, 1);
        if (rc) {
            /* name the configuration: which grid values gave this */
            char cfg[512] = "";
            int d[SWEEP_MAX_AXES];
            sweep_digits(c->g, i, d);
            for (int a = 0, n = 0; a < c->g->naxes && n < (int)sizeof cfg; a++)
                n += snprintf(cfg + n, sizeof cfg - (size_t)n, "%s%s=%s", a ? " " : "",
                              c->g->axis[a].knob->name, c->g->axis[a].vals[d[a]]);
            pthread_mutex_lock(&c->lock);
            if (!atomic_load(&c->failed)) {
                snprintf(c->err, sizeof c->err, "sweep grid: configuration %ld (%s%s): %s",
                         i, cfg, spec ? "" : ", baseline", err);
                c->bad_input = rc == -2;
            }
            atomic_store(&c->failed, 1);
            pthread_mutex_unlock(&c->lock);
            break;
        }
        long d = atomic_fetch_add(&c->done, 1) + 1;
        long sd = spec ? atomic_fetch_add(&c->sdone, 1) + 1 : atomic_load(&c->sdone);
        if (c->progress && (d % 64 == 0 || d == c->njobs)) {
            pthread_mutex_lock(&c->lock);
            fprintf(stderr, "\rsweep: %ld/%ld configurations", c->prev + sd, c->total);
            if (c->prev + sd == c->total && d == c->njobs)
                fputc('\n', stderr);
            pthread_mutex_unlock(&c->lock);
        }
    }
out:
    free(mc);
    free(s);
    free(p);
    return NULL;
}

static int sweep_cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The baseline key of configuration i: the values of the axes the baseline reads. */
static void sweep_base_key(const sweep_grid *g, long i, long *key)
{
    int d[SWEEP_MAX_AXES];
    sweep_digits(g, i, d);
    for (int a = 0; a < g->naxes; a++)
        key[a] = (g->axis[a].knob->flags & SK_SPEC_ONLY) ? 0 : d[a];
}

/* Checks configurations [lo, hi) of the grid (and their baselines with base's baseline). */
static int sweep_check_range(const sweep_grid *g, const simcfg_set_t *base, long lo, long hi,
                             char *err, size_t errlen)
{
    int rc = -1;
    simcfg_model *mc = calloc(1, sizeof *mc);
    simcfg_set_t *s = malloc(sizeof *s);
    sim_params *p = malloc(sizeof *p);
    if (!mc || !s || !p) {
        snprintf(err, errlen, "sweep: out of memory");
        goto out;
    }
    for (long i = lo; i < hi; i++)
        if (sweep_config(g, base, i, s, err, errlen) ||
            simcfg_resolve(s, mc, 1, p, err, errlen) ||
            (base->cfg.baseline && simcfg_resolve(s, mc, 0, p, err, errlen)))
            goto out;
    rc = 0;
out:
    free(mc);
    free(s);
    free(p);
    return rc;
}

int sweep_check(const sweep_grid *g, const simcfg_set_t *base, char *err, size_t errlen)
{
    long n = sweep_grid_size(g), lo, hi;
    if (n < 0) {
        snprintf(err, errlen, "command line: field --grid: value (product): more than 10^8 "
                 "configurations");
        return -1;
    }
    if (sweep_shard(base->cfg.shard, n, &lo, &hi, err, errlen))
        return -1;
    /* a part's configurations (their baselines differ from them in speculative knobs only,
     * which a baseline does not read) */
    if (hi - lo <= SWEEP_CHECK_ALL)
        return sweep_check_range(g, base, lo, hi, err, errlen);
    /* a large part: every value of every axis once, the others at the part's first
     * configuration's, then its first block (sweep_run checks each block before it runs) */
    int d0[SWEEP_MAX_AXES];
    sweep_digits(g, lo, d0);
    for (int a = 0; a < g->naxes; a++)
        for (int v = 0; v < g->axis[a].nvals; v++) {
            long i = 0;
            for (int b = 0; b < g->naxes; b++)
                i = i * g->axis[b].nvals + (b == a ? v : d0[b]);
            if (sweep_check_range(g, base, i, i + 1, err, errlen))
                return -1;
        }
    return sweep_check_range(g, base, lo, lo + SWEEP_BLOCK < hi ? lo + SWEEP_BLOCK : hi,
                             err, errlen);
}

/* Runs c's block [c->lo, c->hi) on `jobs` threads: c->spec[i - lo] and, with baselines,
 * c->bres[c->base_slot[i - lo]]. 0, or -1 / -2 (the input's fault) with err. */
static int sweep_block(sweep_ctx *c, int jobs, sweep_stats *st, char *err, size_t errlen)
{
    const sweep_grid *g = c->g;
    long m = c->hi - c->lo;
    c->njobs = 0;
    atomic_store(&c->next, 0);
    atomic_store(&c->done, 0);
    atomic_store(&c->sdone, 0);
    if (c->baseline) {
        /* configuration i's baseline is that of the first configuration with the same
         * baseline key. Axes decode in mixed radix, so the first such configuration is i
         * with every speculative axis at index 0 (before lo in this block: its baseline is
         * run here too; runs are seeded, so it is the same run whichever block makes it). */
        long nb = 0;
        for (long i = c->lo; i < c->hi; i++) {
            long key[SWEEP_MAX_AXES], idx = 0;
            sweep_base_key(g, i, key);
            for (int a = 0; a < g->naxes; a++)
                idx = idx * g->axis[a].nvals + key[a];
            c->base_slot[i - c->lo] = c->bases[nb++] = c->base->cfg.baseline_reuse ? idx : i;
        }
        qsort(c->bases, (size_t)nb, sizeof *c->bases, sweep_cmp_long);
        long u = 0;
        for (long k = 0; k < nb; k++)
            if (u == 0 || c->bases[k] != c->bases[u - 1])
                c->bases[u++] = c->bases[k];
        for (long j = 0; j < m; j++) {
            const long *f = bsearch(&c->base_slot[j], c->bases, (size_t)u, sizeof *c->bases,
                                    sweep_cmp_long);
            c->base_slot[j] = f - c->bases;
        }
        memset(c->bres, 0, (size_t)u * sizeof *c->bres);
        for (long k = 0; k < u; k++)
            c->jobs[c->njobs++] = -k - 1;
        st->baselines += u;
    }
    memset(c->spec, 0, (size_t)m * sizeof *c->spec);
    for (long i = c->lo; i < c->hi; i++)
        c->jobs[c->njobs++] = i;
    if (jobs > c->njobs)
        jobs = (int)c->njobs;
    if (jobs < 1)
        jobs = 1;          /* an empty part: one worker finds nothing to do */
    pthread_t *th = calloc((size_t)jobs, sizeof *th);
    if (!th) {
        snprintf(err, errlen, "sweep: out of memory");
        return -1;
    }
    int nth;
    for (nth = 0; nth < jobs; nth++)
        if (pthread_create(&th[nth], NULL, sweep_worker, c))
            break;
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    free(th);
    if (nth == 0) {
        snprintf(err, errlen, "sweep: cannot start a worker thread");
        return -1;
    }
    if (atomic_load(&c->failed)) {
        snprintf(err, errlen, "%s", c->err[0] ? c->err : "sweep: out of memory in a worker");
        return c->bad_input ? -2 : -1;
    }
    return 0;
}

static void sweep_fmt_duration(double s, char *buf, size_t n)
{
    if (s < 120)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.0f min", s / 60);
    else if (s < 172800)
        snprintf(buf, n, "%.1f h", s / 3600);
    else
        snprintf(buf, n, "%.1f days", s / 86400);
}

int sweep_run(const sweep_grid *g, const simcfg_set_t *base, FILE *out, int jobs,
              sweep_stats *st, char *err, size_t errlen)
{
    int rc = -1;
    sweep_ctx c;
    memset(&c, 0, sizeof c);
    memset(st, 0, sizeof *st);
    double t0 = sim_now_s();
    c.g = g;
    c.base = base;
    c.n = sweep_grid_size(g);
    c.baseline = base->cfg.baseline;
    long plo, phi;
    /* check the configurations first: a bad grid value fails before any run */
    if (sweep_check(g, base, err, errlen) ||
        sweep_shard(base->cfg.shard, c.n, &plo, &phi, err, errlen)) {
        rc = -2;
        goto out;
    }
    long B = phi - plo < SWEEP_BLOCK ? phi - plo : SWEEP_BLOCK;
    if (B < 1)
        B = 1;
    c.spec = calloc((size_t)B, sizeof *c.spec);
    c.base_slot = calloc((size_t)B, sizeof *c.base_slot);
    c.bases = calloc((size_t)B, sizeof *c.bases);
    c.jobs = calloc((size_t)B * 2, sizeof *c.jobs);
    c.bres = c.baseline ? calloc((size_t)B, sizeof *c.bres) : NULL;
    if (!c.spec || !c.base_slot || !c.bases || !c.jobs || (c.baseline && !c.bres)) {
        snprintf(err, errlen, "sweep: out of memory");
        goto out;
    }
    if (jobs <= 0)
        jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    c.progress = isatty(fileno(stderr));
    c.total = phi - plo;
    pthread_mutex_init(&c.lock, NULL);
    const char *names[SWEEP_MAX_AXES];
    for (int a = 0; a < g->naxes; a++)
        names[a] = g->axis[a].knob->name;
    report_csv_header(out, names, g->naxes, c.baseline);
    long nruns = 0;
    int noted = 0;
    for (long blo = plo; blo < phi || blo == plo; blo += B) {
        c.lo = blo;
        c.hi = blo + B < phi ? blo + B : phi;
        c.prev = blo - plo;
        /* a large part was checked by value and first block: the others before they run */
        if (blo > plo && phi - plo > SWEEP_CHECK_ALL &&
            sweep_check_range(g, base, c.lo, c.hi, err, errlen)) {
            rc = -2;
            goto unlock;
        }
        if ((rc = sweep_block(&c, jobs, st, err, errlen)) != 0)
            goto unlock;
        rc = -1;
        nruns += c.njobs;
        for (long i = c.lo; i < c.hi; i++) {
            int d[SWEEP_MAX_AXES];
            const char *vals[SWEEP_MAX_AXES];
            sweep_digits(g, i, d);
            for (int a = 0; a < g->naxes; a++)
                vals[a] = g->axis[a].vals[d[a]];
            report_csv_row(out, vals, g->naxes, &c.spec[i - c.lo],
                           c.baseline ? &c.bres[c.base_slot[i - c.lo]] : NULL);
            st->events += c.spec[i - c.lo].events;
        }
        for (long k = 0; c.baseline && k < c.njobs - (c.hi - c.lo); k++)
            st->events += c.bres[k].events;
        if (ferror(out)) {
            snprintf(err, errlen, "sweep: writing the CSV failed");
            goto unlock;
        }
        double el = sim_now_s() - t0;
        double left = el / (double)(c.hi - plo) * (double)(phi - c.hi);
        if (!noted && c.hi < phi && left > SWEEP_NOTE_S) {
            char dur[32];
            sweep_fmt_duration(el + left, dur, sizeof dur);
            if (c.progress)
                fputc('\n', stderr);
            fprintf(stderr, "specsim sweep: note: %ld configurations will take about %s on %d "
                    "threads (%.3g a second so far); --shard I/N runs parts of the grid on several "
                    "machines (docs/simulator.md, \"Large sweeps\")\n", phi - plo, dur, jobs,
                    (double)(c.hi - plo) / el);
            noted = 1;
        }
        if (c.hi >= phi)
            break;
    }
    if (fflush(out) || ferror(out)) {
        snprintf(err, errlen, "sweep: writing the CSV failed");
        goto unlock;
    }
    if (atomic_load(&c.npartial))
        fprintf(stderr, "specsim sweep: warning: in %ld of %ld runs no request finished in the "
                "measured window: their per-request metrics (req_tok_s, tpot) come from the running "
                "requests (CSV column partial = 1; raise --iterations or shorten --output-len)\n",
                (long)atomic_load(&c.npartial), nruns);
    if (atomic_load(&c.imprecise))
        fprintf(stderr, "specsim sweep: warning: %ld of %ld runs stopped at --iterations before "
                "their tok/s was known to +-%.3g%% (the precision column says how well)\n",
                (long)atomic_load(&c.imprecise), nruns, 100 * base->cfg.precision);
    if (c.beyond_model) {
        char note[96];
        snprintf(note, sizeof note, "in %ld of %ld runs, up to ", c.nbeyond, nruns);
        sim_warn_beyond_fit(stderr, "sweep", c.beyond_model, &c.beyond, note);
    }
    st->configs = phi - plo;
    st->wall_s = sim_now_s() - t0;
    rc = 0;
unlock:
    pthread_mutex_destroy(&c.lock);
out:
    free(c.spec);
    free(c.bres);
    free(c.base_slot);
    free(c.bases);
    free(c.jobs);
    free(c.beyond_model);
    return rc;
}
