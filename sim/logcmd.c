/* logcmd.c: `specsim log` (logcmd.h). Intervals with the same batch size, CUDA-graph state
 * and accept length (to 0.01 token, as the log prints it) share one simulation; with 10^3
 * logged intervals that is tens of runs of --iterations each. */
#include "logcmd.h"
#include "accept.h"
#include "cgraph.h"
#include "phasemap.h"
#include "sglog.h"
#include "simcfg.h"
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_EXIT_BAD 2
#define LOG_EXIT_RUN 1
/* Simulated iterations per distinct interval: 1,000 (simcfg's default) keep the mean
 * tokens per iteration within ~1% at alpha 0.7 and a few hundred runs under a minute. */
#define LOG_MAX_FILES 256
/* An interval whose logged throughput is below this share of the prediction spent most of
 * its time idle (the server waiting for requests, the first interval after start-up): it is
 * listed, flagged, and left out of the summary. */
#define LOG_IDLE_FRAC 0.2

static void log_usage(FILE *f)
{
    fprintf(f,
        "usage: specsim log SERVER.log... [options] [--model MODEL.json [run knobs]]\n"
        "  Reads SGLang server logs (\"Decode batch\" lines; other lines are counted and\n"
        "  ignored): acceptance per batch size, and with --model each logged interval\n"
        "  predicted at its batch size, accept length and CUDA-graph state (docs/sglang.md).\n"
        "  --server-args F     SGLang's server_args.json (the speculative shape and CUDA-graph\n"
        "                      batch sizes; default: server_args.json beside the first log,\n"
        "                      else the server_args=ServerArgs(...) line the server logs)\n"
        "  --spec-shape S,K,D  speculative_num_steps, _eagle_topk, _num_draft_tokens\n"
        "  --model M.json      predict every interval with this workload model\n"
        "  --csv               the interval table as CSV (with --model)\n"
        "  any `specsim run` knob (--ranks 8 --link pcie5-8gpu --iterations 2000 ...) applies\n"
        "  to the predictions\n"
        "  Exit status: 0, 2 bad input (no Decode batch line, bad flag), 1 a simulation failed.\n");
}

typedef struct {
    int bs, graph, len_c;      /* len_c: accept length in 0.001 tokens (-1: baseline) */
    double tok_s;
    int done, failed;
} log_key;

/* The distinct keys met so far, found by hash: open addressing with linear probing over
 * indices into the key list (slot 0: empty, else index + 1), at most half full, doubled as
 * keys come. Workload: 10^3..10^7 logged intervals with up to tens of thousands of distinct
 * (batch size, graph, accept length) keys; the list was searched linearly per interval (10^5
 * intervals with 15k keys: ~7.5e8 comparisons, 42% of the run at --iterations 1). Caller-owned:
 * zeroed, then log_index_free. */
typedef struct {
    size_t *slot;
    size_t  cap;               /* a power of two, or 0 before the first key */
} log_index;

static size_t log_key_hash(int bs, int graph, int len_c)
{
    /* splitmix64's finaliser over the three fields packed in 64 bits */
    uint64_t x = (uint64_t)(uint32_t)bs << 32 ^ (uint64_t)(uint32_t)len_c << 1 ^ (uint64_t)(graph & 1);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (size_t)x;
}

static int log_key_is(const log_key *k, int bs, int graph, int len_c)
{
    return k->bs == bs && k->graph == graph && k->len_c == len_c;
}

/* The slot of (bs, graph, len_c): the one that holds it, or the empty one where it goes. */
static size_t *log_index_slot(const log_index *ix, const log_key *keys, int bs, int graph, int len_c)
{
    size_t i = log_key_hash(bs, graph, len_c) & (ix->cap - 1);
    while (ix->slot[i] && !log_key_is(&keys[ix->slot[i] - 1], bs, graph, len_c))
        i = (i + 1) & (ix->cap - 1);
    return &ix->slot[i];
}

/* Makes room for one more key beside nkeys: 0, or -1 out of memory. */
static int log_index_reserve(log_index *ix, const log_key *keys, size_t nkeys)
{
    if (2 * (nkeys + 1) <= ix->cap)
        return 0;
    size_t cap = ix->cap ? 2 * ix->cap : 1024;
    size_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -1;
    log_index grown = {slot, cap};
    for (size_t k = 0; k < nkeys; k++)
        *log_index_slot(&grown, keys, keys[k].bs, keys[k].graph, keys[k].len_c) = k + 1;
    free(ix->slot);
    *ix = grown;
    return 0;
}

static void log_index_free(log_index *ix)
{
    free(ix->slot);
    ix->slot = NULL;
    ix->cap = 0;
}

static int log_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The shape's captured sizes as the simulator's list, set on p once simcfg_resolve has run: the
 * cuda-graph-bs knob holds 511 characters (~130 sizes), and a longer list (1..160 is 532) was
 * cut there in silence. --cuda-graph-max-bs (max_bs > 0) still drops the sizes above it. 0, or
 * -1 when it leaves none. */
_Static_assert(PM_GRAPH_BS_MAX <= CG_MAX_SIZES, "a shape's captured sizes fit the simulator's list");
static int log_graphs(sim_params *p, const pm_shape *sh, int max_bs, char *err, size_t errlen)
{
    p->graphs.n = 0;
    for (int i = 0; i < sh->ngraph_bs; i++)
        if (max_bs <= 0 || sh->graph_bs[i] <= max_bs)
            p->graphs.bs[p->graphs.n++] = sh->graph_bs[i];
    if (p->graphs.n == 0) {
        snprintf(err, errlen, "command line: field --cuda-graph-max-bs: value %d: no captured size of the "
                 "server's list (%d..%d, %s) is left", max_bs, sh->graph_bs[0], sh->graph_bs[sh->ngraph_bs - 1],
                 sh->source);
        return -1;
    }
    return 0;
}

static int log_set(simcfg_set_t *s, const char *knob, const char *v, char *err, size_t errlen)
{
    return simcfg_set(s, simcfg_find(knob), v, "specsim log", knob, err, errlen);
}

/* Intervals in batch-size order, in log order within one size (so the sums below add up
 * as before): the acceptance table's rows in one pass over the intervals. The table used to
 * scan every interval for every batch size up to the largest logged one: a line with
 * #running-req 999999999 in a 1,000-line log ran past 20 s. */
static int log_cmp_bs(const void *a, const void *b)
{
    const sglog_interval *x = *(const sglog_interval *const *)a, *y = *(const sglog_interval *const *)b;
    if (x->running_req != y->running_req)
        return (x->running_req > y->running_req) - (x->running_req < y->running_req);
    return (x > y) - (x < y);
}

/* SGLang logs accept len to 2 decimals, so a logged depth + 1 (every draft token accepted, to
 * the log's rounding) is read as depth + 0.995, the largest length that rounds to it: the
 * acceptance models reach depth + 1 only at alpha 1. The limit of a shape (INFINITY when the
 * shape is not known), and a length brought within it (counted in *capped). */
static double log_len_limit(const pm_shape *sh)
{
    int width[ACC_MAX_POS];
    return sh->known ? accept_tree_widths(sh->steps, sh->topk, sh->draft_tokens, width) + 1 - 0.005
                     : INFINITY;
}

static double log_len_in_reach(double len, double limit, size_t *capped)
{
    if (len > limit) {
        ++*capped;
        return limit;
    }
    return len;
}

/* One row of the acceptance table: n intervals of one batch size. Returns their accept
 * lengths' sum. */
static double log_acc_row(const sglog_interval *const *v, size_t n, const pm_shape *sh, double limit,
                          size_t *capped)
{
    double s = 0, s2 = 0, mn = 1e300, mx = -1;
    for (size_t i = 0; i < n; i++) {
        double x = v[i]->accept_len;
        s += x;
        s2 += x * x;
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
    }
    double mean = s / (double)n, sd = n > 1 ? sqrt(fmax(0, (s2 - s * mean) / (double)(n - 1))) : 0;
    char spec[64] = "", al[16] = "-";
    double alpha;
    char aerr[256];
    if (sh->known && accept_alpha_for_len(log_len_in_reach(mean, limit, capped), sh->steps, sh->topk,
                                          sh->draft_tokens, &alpha, aerr, sizeof aerr) == 0) {
        snprintf(al, sizeof al, "%.4f", alpha);
        snprintf(spec, sizeof spec, "alpha:%.4f", alpha);
    } else {
        snprintf(spec, sizeof spec, "--accept-len %.2f", mean);
    }
    printf("  %5d %9zu %10.3f %8.3f %8.2f %8.2f %8s  %s\n", v[0]->running_req, n, mean, sd, mn, mx, al, spec);
    return s;
}

/* Says once, on stderr, that path (just read) was a gzip log cut short: read up to its last
 * whole line, the bytes read, where the file ends and what was left out. */
static void log_warn_gz_cut(const char *path, const sglog *g)
{
    char dropped[160] = "";
    if (g->gz_cut.dropped_bytes)
        snprintf(dropped, sizeof dropped, "; the %llu bytes of the line cut short after it%s left out",
                 g->gz_cut.dropped_bytes, g->gz_cut.dropped_decode ? " (a Decode batch line)" : "");
    fprintf(stderr, "specsim log: warning: %s: the gzip stream ends without its trailer after %llu bytes "
            "(a log copied while gzip was writing it, or cut short): read as the log cut there, up to its "
            "last whole line (line %zu, %llu bytes of text)%s\n", path, g->gz_cut.file_bytes, g->gz_cut.lines,
            g->gz_cut.text_bytes, dropped);
}

int logcmd_main(int argc, char **argv)
{
    const char *files[LOG_MAX_FILES], *args_path = NULL, *shape_flag = NULL, *model = NULL;
    int nfiles = 0, csv = 0;
    static simcfg_set_t base;
    simcfg_defaults(&base);
    char err[2048], v[64];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            log_usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (nfiles >= LOG_MAX_FILES) {
                fprintf(stderr, "specsim log: field FILES: more than %d logs\n", LOG_MAX_FILES);
                return LOG_EXIT_BAD;
            }
            files[nfiles++] = a;
            continue;
        }
        char name[64];
        const char *eq = strchr(a + 2, '='), *val = NULL;
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
        const simcfg_knob *k = simcfg_find(name);
        int mine = !strcmp(name, "server-args") || !strcmp(name, "spec-shape") ||
                   !strcmp(name, "model") || !strcmp(name, "csv");
        int flag = !strcmp(name, "csv") || (k && !mine && k->type == SK_FLAG);
        if (!flag) {
            val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!val) {
                fprintf(stderr, "specsim log: field --%s: missing value\n", name);
                return LOG_EXIT_BAD;
            }
        }
        if (!strcmp(name, "server-args"))
            args_path = val;
        else if (!strcmp(name, "spec-shape"))
            shape_flag = val;
        else if (!strcmp(name, "model"))
            model = val;
        else if (!strcmp(name, "csv"))
            csv = 1;
        else if (k) {
            if (simcfg_set(&base, k, flag ? "1" : val, "command line", a, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return LOG_EXIT_BAD;
            }
        } else {
            fprintf(stderr, "specsim log: field %s: unknown option (specsim log --help)\n", a);
            return LOG_EXIT_BAD;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "specsim log: field FILES: missing: give one or more SGLang server logs\n");
        log_usage(stderr);
        return LOG_EXIT_BAD;
    }
    sglog g;
    sglog_init(&g);
    int rc = LOG_EXIT_BAD;
    log_key *keys = NULL;
    log_index index = {NULL, 0};
    double *errs = NULL;
    const sglog_interval **acc = NULL;
    g.read_to_cut = 1;   /* a .log.gz cut short reads as the plain log cut there, said below */
    for (int f = 0; f < nfiles; f++) {
        size_t cut_before = g.gz_cut_files;
        if (sglog_read(&g, files[f], f, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
        if (g.gz_cut_files > cut_before)
            log_warn_gz_cut(files[f], &g);
    }
    sglog_drop_rank_copies(&g);
    if (g.n == 0) {     /* Decode batch lines, none of them read: nothing to report on */
        fprintf(stderr, "specsim log: every one of the %zu \"Decode batch\" lines is unparsable; "
                "the first: %s\n", g.decode_lines, g.first_bad);
        goto out;
    }
    /* the speculative shape */
    pm_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.cuda_graph = 1;
    char found[700] = "";
    if (args_path) {
        if (phasemap_shape_load(&sh, args_path, err, sizeof err)) {
            fprintf(stderr, "specsim log: field --server-args: %s\n", err);
            goto out;
        }
    } else {
        int r = phasemap_shape_find(&sh, files[0], found, sizeof found, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
        /* no server_args.json: the arguments the server logged at start-up */
        if (r == 0 && g.server_args) {
            if (phasemap_shape_repr(&sh, g.server_args, g.server_args_len, g.server_args_at, err,
                                    sizeof err)) {
                printf("# shape        not read from the log: %s\n", err);
                memset(&sh, 0, sizeof sh);
                sh.cuda_graph = 1;
            } else if (g.server_args_lines > 1) {
                snprintf(sh.source + strlen(sh.source), sizeof sh.source - strlen(sh.source),
                         " (the first of %zu server_args lines: a restarted server?)", g.server_args_lines);
            }
        }
    }
    if (shape_flag && phasemap_shape_flag(&sh, shape_flag, err, sizeof err)) {
        fprintf(stderr, "specsim log: %s\n", err);
        goto out;
    }
    size_t nacc = 0;
    for (size_t i = 0; i < g.n; i++)
        nacc += g.iv[i].accept_len >= 0;
    printf("# specsim log: %d file%s, %zu lines: %zu Decode batch lines (%zu unparsable), %zu "
           "other lines ignored\n", nfiles, nfiles > 1 ? "s" : "", g.lines, g.decode_lines,
           g.bad_lines, g.other_lines);
    printf("# variants     \"Decode batch,\" %zu, \"Decode batch.\" %zu, [iter] %zu, #full token %zu, "
           "no accept len %zu, no accept rate %zu, (SGLangEngine ..) prefix %zu, [.. TPn] prefix %zu\n",
           g.v_comma, g.v_period, g.v_iter, g.v_full_token, g.v_no_accept, g.v_no_accept_rate,
           g.v_engine_prefix, g.v_rank_prefix);
    if (g.bad_lines)
        printf("# first unparsable: %s\n", g.first_bad);
    if (g.rank_copies)
        printf("# rank copies  %zu lines left out: the same batches logged again by TP or PP ranks above "
               "the lowest of their DP rank (--enable-metrics-for-all-schedulers, PP > 1); SGLang logs "
               "each batch from one rank\n", g.rank_copies);
    /* DP attention (--enable-dp-attention): each DP rank's scheduler logs its own batch and
     * throughput, "[.. DP3 TP3 ..]"; an interval is then one DP rank's share */
    {
        unsigned char seen[1024] = {0};
        int ndp = 0, dpmax = -1;
        for (size_t i = 0; i < g.n; i++) {
            int d = g.iv[i].dp;
            if (d < 0 || d >= (int)sizeof seen)
                continue;
            ndp += !seen[d];
            seen[d] = 1;
            if (d > dpmax)
                dpmax = d;
        }
        if (ndp > 1) {
            printf("# dp ranks     %d (DP0..DP%d): each logged interval is one DP rank's batch and "
                   "throughput (DP attention); predicted as --ranks ranks serving that batch alone\n",
                   ndp, dpmax);
            fprintf(stderr, "specsim log: note: the log holds %d DP ranks' lines (DP attention): each "
                    "interval is one DP rank's batch and throughput, and the simulator does not model DP "
                    "attention (attention split over DP ranks, their MoE layers shared): the predicted "
                    "column prices that batch on --ranks ranks alone (docs/sglang.md)\n", ndp);
        }
    }
    if (g.cut_lines)
        printf("# long lines   %zu lines over 1 MiB (--log-requests prompts?) read to 1 MiB and "
               "ignored\n", g.cut_lines);
    if (g.nul_bytes)
        printf("# NUL bytes    %zu skipped before lines: a log truncated in place while the server "
               "kept writing at its old offset (logrotate copytruncate); the lines after them are read\n",
               g.nul_bytes);
    printf("# shape        %s%s%s\n", sh.known ? (snprintf(v, sizeof v, "steps %d, topk %d, draft_tokens %d",
           sh.steps, sh.topk, sh.draft_tokens), v) : "unknown (alpha needs --server-args or --spec-shape)",
           sh.missing[0] ? ": " : "", sh.missing);
    printf("# shape from   %s\n", sh.source[0] ? sh.source : found[0] ? found : "(none)");
    /* ---- acceptance per batch size ---- */
    printf("#\n# acceptance per batch size (#running-req) over %zu intervals with an accept len\n", nacc);
    printf("# %5s %9s %10s %8s %8s %8s %8s  %s\n", "bs", "intervals", "accept_len", "sd", "min", "max",
           "alpha", "--acceptance");
    printf("# %5s %9s %10s %8s %8s %8s %8s  %s\n", "-", "-", "tokens", "tokens", "tokens", "tokens", "-", "-");
    double all_sum = 0;
    size_t all_n = 0, capped_rows = 0;
    const double len_limit = log_len_limit(&sh);
    acc = malloc((nacc + 1) * sizeof *acc);
    if (!acc) {
        fprintf(stderr, "specsim log: out of memory\n");
        goto out;
    }
    for (size_t i = 0, k = 0; i < g.n; i++)
        if (g.iv[i].accept_len >= 0)
            acc[k++] = &g.iv[i];
    qsort(acc, nacc, sizeof *acc, log_cmp_bs);
    for (size_t i = 0, j; i < nacc; i = j) {
        for (j = i + 1; j < nacc && acc[j]->running_req == acc[i]->running_req; j++)
            ;
        all_sum += log_acc_row(acc + i, j - i, &sh, len_limit, &capped_rows);
        all_n += j - i;
    }
    if (all_n) {
        double mean = all_sum / (double)all_n, alpha;
        char aerr[256];
        if (sh.known && accept_alpha_for_len(log_len_in_reach(mean, len_limit, &capped_rows), sh.steps, sh.topk,
                                             sh.draft_tokens, &alpha, aerr, sizeof aerr) == 0)
            printf("# all batch sizes: accept len %.3f over %zu intervals -> --acceptance alpha:%.4f "
                   "(steps %d, topk %d, draft_tokens %d)\n", mean, all_n, alpha, sh.steps, sh.topk,
                   sh.draft_tokens);
        else
            printf("# all batch sizes: accept len %.3f over %zu intervals -> --accept-len %.2f%s\n",
                   mean, all_n, mean, sh.known ? "" : " (alpha: give the speculative shape)");
        printf("# (a per-request histogram of accepted lengths is not in the log: SGLang returns it "
               "per request as meta_info spec_accept_histogram)\n");
        if (capped_rows)
            printf("# %zu of these accept lengths at the draft's limit (every draft token accepted, to the "
                   "log's 2 decimals): alpha from the limit - 0.005\n", capped_rows);
    } else {
        printf("# no accept len in the log: a server without speculative decoding\n");
    }
    if (!model) {
        rc = 0;
        goto out;
    }
    /* ---- predictions ---- */
    if (log_set(&base, "model", model, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    if (nacc && !sh.known) {
        fprintf(stderr, "specsim log: field --spec-shape: missing: predicting a speculative "
                "server's intervals needs its steps, topk and draft tokens (--server-args or "
                "--spec-shape S,K,D)%s%s%s%s\n", sh.missing[0] ? "; " : "",
                sh.missing[0] ? sh.source : "", sh.missing[0] ? ": " : "", sh.missing);
        goto out;
    }
    keys = calloc(g.n + 1, sizeof *keys);
    errs = calloc(g.n + 1, sizeof *errs);
    size_t nkeys = 0, npred = 0, nidle = 0, capped_iv = 0;
    static simcfg_model mc;
    if (!keys || !errs) {
        fprintf(stderr, "specsim log: out of memory\n");
        goto out;
    }
    if (csv)
        printf("file,line,bs,cuda_graph,accept_len,logged_tok_s,predicted_tok_s,error_pct,idle\n");
    else {
        printf("#\n# every logged interval predicted by %s (%ld iterations each; intervals that "
               "share bs, graph and accept len share a run)\n", model, base.cfg.iterations);
        printf("# %-28s %5s %5s %10s %12s %12s %8s\n", "file:line", "bs", "graph", "accept_len",
               "logged", "predicted", "error");
        printf("# %-28s %5s %5s %10s %12s %12s %8s\n", "-", "-", "-", "tokens", "tok/s", "tok/s", "%");
    }
    for (size_t i = 0; i < g.n; i++) {
        const sglog_interval *x = &g.iv[i];
        if (x->gen_tok_s <= 0 || x->running_req < 1)
            continue;
        /* releases before mid-2025 log no "cuda graph:" (scheduler.py log_decode_stats): the
         * server's arguments say whether it captured graphs (--disable-cuda-graph) */
        int graph = x->cuda_graph >= 0 ? x->cuda_graph : sh.cuda_graph;
        /* the accept length in thousandths (a logged limit is read 0.005 below it) */
        int len_c = x->accept_len >= 0 ? (int)lround(log_len_in_reach(x->accept_len, len_limit, &capped_iv) * 1000) : -1;
        if (log_index_reserve(&index, keys, nkeys)) {
            fprintf(stderr, "specsim log: out of memory\n");
            goto out;
        }
        size_t *slot = log_index_slot(&index, keys, x->running_req, graph, len_c);
        log_key *k = *slot ? &keys[*slot - 1] : NULL;
        if (!k) {
            *slot = nkeys + 1;
            k = &keys[nkeys++];
            k->bs = x->running_req;
            k->graph = graph;
            k->len_c = len_c;
            static simcfg_set_t s;
            s = base;
            sim_params p;
            sim_result res;
            int spec = len_c >= 0;
            snprintf(v, sizeof v, "%d", k->bs);
            int bad = log_set(&s, "concurrency", v, err, sizeof err);
            if (!bad && spec) {
                snprintf(v, sizeof v, "%d", sh.steps);
                bad = log_set(&s, "steps", v, err, sizeof err);
                snprintf(v, sizeof v, "%d", sh.topk);
                bad = bad || log_set(&s, "topk", v, err, sizeof err);
                snprintf(v, sizeof v, "%d", sh.draft_tokens);
                bad = bad || log_set(&s, "draft-tokens", v, err, sizeof err);
                /* accept len >= 1 always: 1 is a verify that kept only the bonus token */
                snprintf(v, sizeof v, "%.3f", len_c / 1000.0 > 1.0 ? len_c / 1000.0 : 1.0);
                bad = bad || (len_c > 1000 ? log_set(&s, "accept-len", v, err, sizeof err)
                                          : log_set(&s, "acceptance", "alpha:0", err, sizeof err));
            }
            /* the server's captured sizes are set after the knobs (log_graphs); without them,
             * SGLang's default list */
            if (!bad)
                bad = log_set(&s, "cuda-graph-bs", graph && !sh.ngraph_bs ? "sglang" : "none", err, sizeof err);
            if (!bad)
                bad = simcfg_resolve(&s, &mc, spec, &p, err, sizeof err);
            if (!bad && graph && sh.ngraph_bs)
                bad = log_graphs(&p, &sh, s.cfg.cuda_graph_max_bs, err, sizeof err);
            /* a knob or the model file refused, or a run without a result a user could
             * trust (-2), is bad input, as in `specsim run`; a failed run (-1) is not */
            int run_rc = bad ? 0 : sim_run(&p, NULL, &res, err, sizeof err);
            if (bad || run_rc) {
                fprintf(stderr, "%s:%zu: bs %d: %s\n", files[x->file], x->line, k->bs, err);
                rc = run_rc == -1 ? LOG_EXIT_RUN : LOG_EXIT_BAD;
                goto out;
            }
            k->tok_s = res.tok_s;
        }
        double e = 100.0 * (k->tok_s - x->gen_tok_s) / x->gen_tok_s;
        int idle = x->gen_tok_s < LOG_IDLE_FRAC * k->tok_s;
        if (idle)
            nidle++;
        else
            errs[npred++] = e;
        char fl[40];
        const char *bn = strrchr(files[x->file], '/');
        snprintf(fl, sizeof fl, "%.24s:%zu", bn ? bn + 1 : files[x->file], x->line);
        if (csv)
            printf("%s,%zu,%d,%d,%.2f,%.2f,%.2f,%.2f,%d\n", files[x->file], x->line, x->running_req, graph,
                   x->accept_len, x->gen_tok_s, k->tok_s, e, idle);
        else
            printf("  %-28s %5d %5d %10.2f %12.2f %12.2f %8.2f%s\n", fl, x->running_req, graph,
                   x->accept_len, x->gen_tok_s, k->tok_s, e, idle ? "  idle" : "");
    }
    if (capped_iv)
        fprintf(csv ? stderr : stdout, "# %zu intervals logged accept len at the draft's limit (every draft "
                "token accepted, to the log's 2 decimals): predicted at the limit - 0.005\n", capped_iv);
    if (npred) {
        double *ab = malloc(npred * sizeof *ab), mean = 0;
        size_t within = 0;
        for (size_t i = 0; i < npred && ab; i++) {
            ab[i] = fabs(errs[i]);
            mean += errs[i];
            within += ab[i] <= 10;
        }
        if (ab) {
            qsort(ab, npred, sizeof *ab, log_cmp_dbl);
            fprintf(csv ? stderr : stdout, "# %zu intervals predicted (%zu simulations): median |error| "
                    "%.2f%%, mean error %+.2f%%, %zu within 10%%; %zu idle intervals (logged below "
                    "%.0f%% of the prediction) left out (logged gen throughput includes prefill "
                    "batches and queueing between decode steps; the model does not)\n",
                    npred, nkeys, ab[npred / 2], mean / (double)npred, within, nidle,
                    100 * LOG_IDLE_FRAC);
        }
        free(ab);
    } else {
        fprintf(stderr, "specsim log: no interval with a gen throughput and a batch to predict\n");
    }
    rc = 0;
out:
    log_index_free(&index);
    free(keys);
    free(errs);
    free(acc);
    sglog_free(&g);
    return rc;
}
