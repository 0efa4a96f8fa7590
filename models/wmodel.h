/* wmodel: the workload model the simulator replays. Per phase of a speculative iteration
 * (draft, verify, accept, extend, decode, sample): kernel groups whose GPU cost is a
 * function of the phase's token count, KV context and distinct MoE experts touched; the
 * collectives with their bytes per token; host gaps and launch costs. Read from JSON
 * (docs/model-format.md), written by `specsim fit`. Sized for tens of groups per phase. */
#ifndef WMODEL_H
#define WMODEL_H
#include <stddef.h>

enum wm_phase {
    WM_DRAFT,   /* one draft-model forward over bs*topk tokens (the sim runs steps-1 of them) */
    WM_VERIFY,  /* target forward over bs*draft_tokens tokens, tree mask */
    WM_ACCEPT,  /* sampling / verification kernels over bs*draft_tokens tokens */
    WM_EXTEND,  /* draft-extend: draft forward over bs*(steps+1) tokens */
    WM_DECODE,  /* baseline target forward over bs tokens (falls back to WM_VERIFY) */
    WM_SAMPLE,  /* baseline sampling over bs tokens (falls back to WM_ACCEPT) */
    WM_NPHASE
};
extern const char *const wm_phase_name[WM_NPHASE]; /* "draft", "verify", ... */

#define WM_NAME_MAX 96
#define WM_GROUPS_MAX 64
#define WM_COLLS_MAX 8
#define WM_GRAPH_SIZES 64   /* captured graph sizes with a factor, per phase */
#define WM_GSRC_MAX 224  /* a group's source, with its terminating 0 */
/* slices of an eager phase's launch time in a group's launch profile (wm_group.pos) */
#define WM_POS_BINS 32

/* Cost of one kernel group for one forward, in microseconds:
 *   base_us + per_token_us * max(0, tokens - knee_tokens) + per_token_all_us * tokens
 *           + per_expert_us * experts_touched(tokens)
 *           + per_kv_ktoken_us * kv_tokens / 1000
 *           + per_kvq_ktoken_us * kv_tokens / 1000 * tiles
 *           + per_kvq2_ktoken_us * kv_tokens / 1000 * max(0, tiles - q_tile_knee)
 *           + per_wave_us * wm_waves(g, tokens)
 * (tiles = ceil(q_per_row / q_tile),
 * q_per_row: query tokens per batch row, tokens / rows: attention reads a row's KV once
 * and computes over it once per tile of q_tile query tokens, the rows of a tensor-core
 * MMA tile that one row's query tokens x GQA heads fill; q_tile <= 1: per query token)
 * flat while weight-bound (below the knee), then rising; kv_tokens is the KV context summed
 * over the batch rows (padded rows included). */
typedef struct {
    char   name[WM_NAME_MAX];
    int    count;            /* kernel launches per forward (eager launch cost, segments) */
    double base_us;
    double per_token_us;
    double knee_tokens;
    double per_expert_us;
    double per_kv_ktoken_us;
    double sd_frac;          /* measured std/mean of this group's cost (jitter) */
    /* added later; 0 in files that do not have them (and last, so that positional
     * initialisers of the fields above stay valid) */
    double per_kvq_ktoken_us; /* per 1000 KV tokens per query token of a row (attention
                                 compute); 0 in files that do not have it */
    double q_tile;            /* query tokens per attention tile (0: 1) */
    double per_token_all_us;  /* slope at every token count, below the knee too (a GEMM's
                                 activations and tiles while its weights bound it); 0 in
                                 files that do not have it */
    /* CUDA wave quantization of the group's dominant kernel (docs/model-format.md); all 0
     * in files that do not have them (no term):
     *   + per_wave_us * ceil(blocks / wave_capacity),
     *   blocks = round(min(wave_blocks0 + wave_blocks_per_token * tokens
     *                      + wave_blocks_per_expert * experts_touched(tokens), wave_blocks_max))
     * (wave_blocks_max 0: no cap) */
    double wave_blocks0;          /* thread blocks per launch at 0 tokens */
    double wave_blocks_per_token; /* thread blocks per launch per token */
    double wave_capacity;         /* blocks resident at once: blocks per SM x SMs (0: no term) */
    double per_wave_us;           /* cost per wave (all the group's launches of a forward) */
    double wave_blocks_max;       /* blocks stop growing here; 0: no cap */
    double wave_blocks_per_expert;/* blocks per distinct MoE expert touched (an expert-slot
                                     kernel: slots of experts no token chose exit at once) */
    /* GEMM sweep term (docs/model-format.md): + sweep_scale * wm_sweep_us(m, sweep_phase,
     * tokens, q_per_row), the model's measured GEMM curves of that phase; 0: no term */
    double sweep_scale;
    int    sweep_phase;           /* whose GEMM sites (enum wm_phase) */
    /* the tile count past which each attention tile costs more (a kernel variant per tile
     * count, its occupancy falling with its shared memory): + per_kvq2_ktoken_us *
     * kv_tokens / 1000 * max(0, tiles - q_tile_knee); 0 in files without them */
    double per_kvq2_ktoken_us;
    double q_tile_knee;
    /* prediction intervals (docs/simulator.md, "Intervals"); 0 in files without them */
    double resid_frac;            /* relative sd of the group's cost at a configuration the
                                     traces did not hold: the fit's residual over its cells,
                                     corrected for the columns fitted (specsim fit) */
    int    latency_bound;         /* 1: a carried model kept this group's base as measured
                                     (latency-bound kernels, models/carry.c): its base takes
                                     the model's unc.latency_frac, else unc.memory_frac */
    /* how the group's terms were derived when not fitted directly (specsim scale writes its
     * factors and their uncertainty here); "" in fitted and hand-written files */
    char   source[WM_GSRC_MAX];
    /* the fewest query tokens per row the group's KV x tiles terms were fitted at: below it
     * a row is priced at q_min's tiles (nothing measured says a tile holds fewer); 0: no
     * floor (files without the key) */
    double q_min;
    /* where the group's GPU time sits in its phase's eager launch sequence: pos[b] the share
     * of it launched in slice b of WM_POS_BINS equal slices of the host's launch time
     * (summing to 1), measured by the fit on the phase's eager instances; the simulator's
     * launch bound (docs/simulator.md, "Eager launches") reads it. has_pos 0: not measured
     * (a hand-written model, a phase only ever replayed from graphs): spread evenly */
    int    has_pos;
    double pos[WM_POS_BINS];
    /* its phase's expert_row_exp (wm_phase_model), copied here by the reader and the fit so
     * that a group prices its experts alone; not a key of the file's group objects */
    double expert_row_exp;
    /* prediction intervals: the part of the group's error at an untraced configuration that
     * does not grow with its cost, us a forward (docs/fit.md "Residuals": the fit's left-out
     * cells split in two); with it, the error of a forward of cost c is sqrt((resid_frac c)^2 +
     * resid_abs_us^2) (sim/interval.c). 0 in files without it: resid_frac c. */
    double resid_abs_us;
} wm_group;

/* The GEMMs of a forward timed alone at a list of token counts (specbench --gemm-sweep):
 * cuBLAS chooses its kernel by size, so a GEMM's cost steps where no smooth curve of the
 * tokens would (docs/fit.md). */
#define WM_SWEEP_TOK   512
#define WM_SWEEP_SITES 24
typedef struct {
    char     name[32];             /* role: qkv, o, gu, down, lm_head, d_qkv, ... */
    unsigned phases;               /* bit p: the site runs in phase p's forwards */
    double   per_forward;          /* calls per forward (e.g. one per layer) */
    int      by_rows;              /* 1: its M is the batch rows (an LM head over one
                                      token per row), 0: the forward's tokens */
    double   us[WM_SWEEP_TOK];     /* us per call at tok[i] */
} wm_sweep_site;

typedef struct {
    int    ntok;                   /* 0: no sweep */
    double tok[WM_SWEEP_TOK];      /* increasing token counts */
    int    nsite;
    wm_sweep_site site[WM_SWEEP_SITES];
    char   source[256];
} wm_sweep;

typedef struct {
    char   op[16];           /* "allreduce" */
    int    count;            /* collectives per forward (e.g. 2 per layer) */
    double bytes_per_token;  /* e.g. hidden * dtype bytes */
} wm_coll;

typedef struct {
    int      present;        /* 0: phase absent from the file */
    int      ngroups;
    wm_group groups[WM_GROUPS_MAX];
    int      ncolls;
    wm_coll  colls[WM_COLLS_MAX];
    int      always_eager;   /* 1: the program never replays this phase from a CUDA graph
                                (e.g. specbench's accept/sample kernels): launched kernel by
                                kernel at every batch size, unpadded */
    double   host_gap_us;    /* host time between the previous phase and this launch */
    double   host_gap_sd_us;
    /* what the phase was fitted from: the largest token count of a forward and the most
     * query tokens per row (0: not known, a hand-written model); beyond them the costs are
     * extrapolated (wm_beyond_fit) */
    double   fitted_tokens_max;
    double   fitted_q_max;
    /* the longest KV context of a request (the batch's mean ctx= per real row) its forwards
     * held, tokens (0: not known: a trace without ctx=, a hand-written model); past
     * WM_KV_BEYOND_FACTOR times it the KV terms are extrapolated (wm_beyond_kv) */
    double   fitted_kv_row_max;
    /* added later; 0 in files that do not have them (the behaviour before them):
     * host work that grows with the running requests (a scheduler's Python per request): the
     * gap before the phase is host_gap_us + host_gap_per_row_us * requests */
    double   host_gap_per_row_us;
    /* this phase's host cost per kernel launched eagerly (its own op mix: Python per op
     * differs between phases); 0: the model's launch.eager_launch_us */
    double   eager_launch_us;
    /* the host's stalls among those eager launches (a program's own pauses: garbage
     * collection, the OS; docs/simulator.md "Host stalls"): the chance of one per launch and
     * their mean length; eager_launch_us is their mean share included (eager_launch_us -
     * eager_stall_per_launch * eager_stall_us the cost of a launch without one); 0: none */
    double   eager_stall_per_launch;
    double   eager_stall_us;
    /* host time added to the gap when the round did not accept every draft token (the
     * hf-assisted loop: the target's KV cache is cropped back; docs/simulator.md); the
     * simulator adds its expectation, this times P(a draft token was rejected); 0: none */
    double   host_gap_reject_us;
    /* which rows' KV the phase's KV terms count (docs/model-format.md "kv_rows"):
     * WM_KV_REAL (0, files without the key) the batch's real rows, a padded row of a graph
     * replay holding no context (SGLang, specbench); WM_KV_PADDED every row of the padded
     * batch, a padded row counted with the real rows' mean context (an attention over each
     * row's whole KV buffer: torchbench). Chosen by the fit (docs/fit.md, "KV rows"). */
    int      kv_rows;
    /* GPU idle per eager kernel beyond the phase's `(gpu idle in phase)` group, which the fit
     * takes from its graph replays where the phase has both (docs/fit.md "The gap group of
     * graph and eager instances"): queued eager kernels start later after their predecessor
     * than a graph's nodes; the simulator adds kernels x this to an eager instance's GPU
     * time; 0 in files without it */
    double   eager_gap_us;
    /* how the tokens of one row share MoE experts (docs/model-format.md
     * "expert_row_exponent"): a forward of R rows of q tokens touches the experts that
     * R * q^e independently routed tokens would (wm_routed_tokens). 0 (files without
     * the key) or 1: every token routed alone; below 1: a row's consecutive tokens (a draft
     * chain) pick overlapping experts. Chosen by the fit (docs/fit.md, "Experts of a row").
     * Set with wm_phase_set_expert_row_exp, which copies it into the groups. */
    double   expert_row_exp;
    /* the captured CUDA graph sizes (padded rows) whose replays the groups' smooth form
     * misses: each size's measured GPU time against the groups' sum there, relative to the
     * phase's typical cell (docs/model-format.md "graph_size_factors", docs/fit.md "Captured
     * graph sizes"). The simulator multiplies a graph replay of a listed size by its factor;
     * a size not listed, and an eager instance, by 1. 0 sizes in files without the key. */
    int      n_graph_sizes;
    double   graph_size_rows[WM_GRAPH_SIZES];     /* increasing */
    double   graph_size_factor[WM_GRAPH_SIZES];
    /* how far a captured graph size's replays sat from the groups' smooth form: the rms of
     * (factor - 1) over the captured sizes, relative (docs/fit.md "Captured graph sizes"),
     * written whether the factors were kept or not; the prediction intervals take it as the
     * error of a graph replay at a size without a factor (a size the capture never replayed)
     * (docs/model-format.md "graph_size_sd"). 0 in files without it. */
    double   graph_size_sd;
} wm_phase_model;

/* The index of a graph size (padded rows) among the phase's graph_size_factors, -1 when not
 * listed; the factor of a graph replay at that size (1: not listed). */
int    wm_phase_graph_size(const wm_phase_model *ph, int padded);
double wm_phase_graph_factor(const wm_phase_model *ph, int padded);

enum { WM_KV_REAL, WM_KV_PADDED };   /* wm_phase_model.kv_rows */

/* The KV tokens a phase's groups are priced at, for a batch of bs real rows with ctx_tokens
 * of context summed over them, replayed from a graph of padded rows (0: eager). */
double wm_phase_kv_tokens(const wm_phase_model *ph, double ctx_tokens, int bs, int padded);

/* The loop a model's phases were measured in (docs/simulator.md): SGLang's EAGLE worker
 * (the default), or Hugging Face transformers' assisted generation (`hf-assisted`: batch 1,
 * the draft's first forward of a round catches its cache up on 2 tokens, a blocking read
 * after every draft forward, the last rounds draft only what the output still needs). */
enum wm_loop { WM_LOOP_EAGLE, WM_LOOP_HF, WM_NLOOP };
extern const char *const wm_loop_name[WM_NLOOP];   /* "sglang-eagle", "hf-assisted" */
/* The loop named s, or -1. */
int wm_loop_find(const char *s);

typedef struct {
    char   name[WM_NAME_MAX];
    char   source[256];      /* where the numbers came from (traces, preset, hand-written) */
    char   device[WM_NAME_MAX];
    int    ranks;            /* tensor-parallel size the costs were measured at */
    int    moe_experts;      /* 0: dense */
    int    moe_topk;
    double graph_launch_us;  /* host cost of one cudaGraphLaunch */
    double eager_launch_us;  /* host cost per kernel launched eagerly */
    /* the host's speed as the traces saw it change (prediction intervals, docs/simulator.md
     * "Intervals"; 0 in files without them): the relative sd of an instance's eager launch
     * rate about its phase's rate, and the lag-1 autocorrelation of consecutive instances of
     * a phase (the host stays fast or slow for several iterations) */
    double host_speed_sd_frac;
    double host_speed_rho;
    /* the sd of the host's log speed between windows of a capture (a level that holds for a
     * whole benchmark: a process runs fast or slow for seconds at a time), beyond what the
     * AR(1) above gives a window's mean; 0 where the traces hold one window per
     * configuration (docs/fit.md, host_speed_level_sd) */
    double host_speed_level_sd;
    int    loop;             /* enum wm_loop; key "loop", absent: sglang-eagle */
    wm_phase_model phase[WM_NPHASE];
    wm_sweep sweep;          /* GEMM sweep (ntok 0: none) */
    /* A carried model's uncertainty (models/carry.c; all 0: none): relative sd of every
     * memory-bound term (bases, experts, KV, waves, the GEMM sweep), of every compute-bound
     * term (per-token slopes) and of latency-bound bases, each shared by all groups (the
     * fraction of peak a GPU reaches moves them together). */
    struct {
        double memory_frac, compute_frac, latency_frac;
        char   source[128];
    } unc;
} wm_model;

/* Loads path into *m (caller-owned, nothing to free inside). Returns 0, or -1 with a
 * message "FILE: field F: value V: why" in err. */
int  wm_load(wm_model *m, const char *path, char *err, size_t errlen);
/* Same from a JSON text already in memory; name is used in messages. */
int  wm_parse(wm_model *m, const char *json, const char *name, char *err, size_t errlen);
/* Writes m as JSON to path (through PATH.tmp renamed into place; a device or FIFO in
 * place, ofile.h). Only a model that wm_parse takes back is written: else -2 with err and
 * nothing at path changes. Returns 0, -1 with err (cannot write) or -2. */
int  wm_save(const wm_model *m, const char *path, char *err, size_t errlen);

/* Expected distinct experts touched by `tokens` tokens, each routed to topk of E experts
 * uniformly at random: E * (1 - (1 - k/E)^tokens). 0 for a dense model. */
double wm_experts_touched(const wm_model *m, double tokens);
/* The tokens routed independently in a forward of `tokens` tokens, q_per_row a row, when a
 * row's tokens share experts with exponent row_exp (wm_phase_model.expert_row_exp):
 * tokens * q^(row_exp - 1) = rows * q^row_exp; tokens itself for row_exp 0 or 1 or q <= 1. */
double wm_routed_tokens(double tokens, double q_per_row, double row_exp);
/* Sets phase ph's expert_row_exp and its groups' copies. */
void wm_phase_set_expert_row_exp(wm_phase_model *ph, double row_exp);
/* wm_group_us prices a group at one query token per row (decode); wm_group_us_q at
 * q_per_row = tokens / rows (verify: draft_tokens, extend: steps + 1). */
double wm_group_us(const wm_model *m, const wm_group *g, double tokens, double kv_tokens);
double wm_group_us_q(const wm_model *m, const wm_group *g, double tokens, double kv_tokens,
                     double q_per_row);
/* The experts group g's forward of `tokens` tokens, q_per_row a row, touches: its phase's
 * routing (wm_experts_touched of wm_routed_tokens with g->expert_row_exp). */
double wm_group_experts(const wm_model *m, const wm_group *g, double tokens, double q_per_row);
/* CUDA waves of the group's dominant kernel at `tokens` (q_per_row a row): ceil(blocks /
 * wave_capacity) with blocks = round(min(wave_blocks0 + wave_blocks_per_token * tokens +
 * wave_blocks_per_expert * wm_group_experts(tokens, q_per_row), wave_blocks_max)) (no min
 * when wave_blocks_max is 0); 0 when wave_capacity <= 0. wm_waves_e takes the experts
 * touched as an argument. */
double wm_waves(const wm_model *m, const wm_group *g, double tokens, double q_per_row);
double wm_waves_e(const wm_group *g, double tokens, double experts_touched);
/* Whether phase p at `tokens` tokens of a forward and q query tokens per row lies beyond
 * what its model was fitted from (fitted_tokens_max, fitted_q_max); if so, 1 and a sentence
 * saying which in buf ("9 query tokens per row, fitted up to 6"); 0 when within or unknown. */
int wm_beyond_fit(const wm_model *m, int p, double tokens, double q, char *buf, size_t n);
/* Whether phase p priced at kv_row tokens of KV context a request (the batch's mean) lies
 * more than WM_KV_BEYOND_FACTOR times past the longest its model was fitted from, in a phase
 * whose groups have a KV term (0 when within, unknown or without one). Where the other
 * ranges have no factor the KV context has one: the KV terms are linear in the context (an
 * attention kernel reads each cached token once), so a somewhat longer context is what the
 * equation is for; a much longer one meets what no trace ran (how the kernel splits the KV,
 * the caches). The factor is a choice, not a measurement. */
#define WM_KV_BEYOND_FACTOR 2.0
int wm_beyond_kv(const wm_model *m, int p, double kv_row);
/* ceil(q_per_row / q_tile), or q_per_row when q_tile <= 1: the attention tiles of a row. */
double wm_q_tiles(const wm_group *g, double q_per_row);
/* The group's cost per 1000 KV tokens at q_per_row query tokens per row: per_kv_ktoken_us
 * + per_kvq_ktoken_us * tiles + per_kvq2_ktoken_us * max(0, tiles - q_tile_knee). */
double wm_kv_per_ktoken(const wm_group *g, double q_per_row);
/* Sum over the sweep's sites that run in phase p of per_forward x us at the site's M
 * (tokens, or tokens / q_per_row for a by-rows site), linear between the sweep's token
 * counts and along the last two beyond them; 0 without a sweep. */
double wm_sweep_us(const wm_model *m, int p, double tokens, double q_per_row);
/* 1 when the model's sweep has a site that runs in phase p. */
int    wm_sweep_covers(const wm_model *m, int p);
/* GPU time of one forward of phase p (sum over groups); uses the fallback phase when p is
 * absent (decode->verify, sample->accept). */
double wm_phase_gpu_us(const wm_model *m, int p, double tokens, double kv_tokens);
int    wm_phase_kernels(const wm_model *m, int p);        /* launches per forward */
const wm_phase_model *wm_phase_get(const wm_model *m, int p); /* with fallback, or NULL */

/* Added with the implementation (models/wmodel.c): */
/* Empties *m: no phases, ranks 1, everything else 0 (for models built in code, e.g. tests). */
void   wm_init(wm_model *m);
/* Index of phase name ("draft", ...), or -1. */
int    wm_phase_find(const char *name);
/* 0 if phase p (with its fallback) is present; else -1 with
 * "FILE: field phases.P: missing: why" in err (file = the model's path, for the message). */
int    wm_require(const wm_model *m, int p, const char *file, const char *why,
                  char *err, size_t errlen);
#endif
