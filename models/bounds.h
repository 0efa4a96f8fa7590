/* bounds: what a number may be. One range per kind of quantity (costs in us, token and
 * row counts, sizes in bytes, times in ns, lengths), used by every reader (models, configs,
 * links, GEMM and all-reduce sweeps, specprof traces) and every command-line flag, so that
 * a value out of range is refused with the file, the field, the value and the range, and
 * nothing downstream (the simulator's int64 ns, GSL's 32-bit draws) sees a value it cannot
 * hold. Libc only: libspecprof.so and the specprof CLI use it too. Each range says why. */
#ifndef BOUNDS_H
#define BOUNDS_H
#include <stddef.h>
#include <stdint.h>

/* The limits, as constants (the knob table and static initialisers use them). Each one is
 * far beyond anything measured here and well inside what the code computes with. */
/* A cost in us (a kernel group's base, a launch, a host gap, a GEMM call, a link's latency
 * or floor, an all-reduce): 10 s. A forward of the largest model here takes ~30 ms on the
 * H200 (traces/validation), so 10 s is 300x beyond; 10 s in ns is 1e10, far from 2^63. */
#define BND_COST_US_MAX 1e7
/* A cost per unit (per token, per expert, per 1000 KV tokens, per wave): 1 s per unit.
 * Fitted slopes here are 0.001-10 us (docs/fit.md). */
#define BND_SLOPE_US_MAX 1e6
/* Tokens of a forward, a prompt or an output (knee_tokens, fitted_tokens_max, sweep token
 * counts, --prompt-len, --output-len, a range's tokens=): 1e9. The most a run here can
 * price is 65536 rows x 4096 draft tokens = 2.7e8 per forward; GSL's integer draws
 * (gsl_rng_uniform_int) take at most 2^32 - 1 = 4.29e9. */
#define BND_TOKENS_MAX 1e9
/* Batch rows (concurrency, a CUDA-graph batch size, a range's rows=): 65536 = 128x
 * SGLang's default largest captured graph (512, server_args.py). The simulator keeps a
 * cost cache entry per batch size, so this also bounds its memory (~16 MB). */
#define BND_ROWS_MAX 65536
/* Kernel launches or collectives per forward of one group: 1e5. The largest model here
 * launches ~2400 kernels a forward (80 layers x ~30); 64 groups x 1e5 x 32 forwards still
 * fit an int. */
#define BND_COUNT_MAX 1e5
/* Sizes in bytes (bytes per token, an all-reduce's bytes, a copy): 1 TB, 7x an H200's
 * memory (141 GB). */
#define BND_BYTES_MAX 1e12
/* Link bandwidth in GB/s: 1 MB/s .. 100 TB/s. NVLink4 is 450 GB/s per direction, PCIe
 * Gen5 x16 64 GB/s (docs/allreduce.md); 1 MB/s keeps bytes/bandwidth finite. */
#define BND_BW_GBPS_MIN 1e-3
#define BND_BW_GBPS_MAX 1e5
/* Query tokens per row and attention tiles (q_tile, q_tile_knee, fitted_q_max): the
 * --draft-tokens maximum, 4096. */
#define BND_Q_TOKENS_MAX 4096
/* Thread blocks of a kernel launch (wave terms): 2^31 - 1 is CUDA's grid x limit. */
#define BND_BLOCKS_MAX 2147483647.0
/* A spread relative to the mean (sd_frac): 10. Measured ones are 0.001-0.3. */
#define BND_FRAC_MAX 10
/* A dimensionless factor (sweep_scale, calls per forward of a sweep site): 1e5. */
#define BND_FACTOR_MAX 1e5
/* MoE experts: 1e5 (Kimi K2.5 has 384). */
#define BND_EXPERTS_MAX 1e5
/* Tensor-parallel ranks and GPUs: 4096. */
#define BND_RANKS_MAX 4096
/* An absolute CUPTI timestamp in ns (t0_ns, end_ns): CUPTI counts ns since the Unix epoch
 * (t0_ns 1.8e18 in the traces here); 4e18 is the year 2096, and 4e18 + 2 x 1e16 (the
 * largest relative time and duration below) stays under 2^63 = 9.2e18. */
#define BND_CLOCK_NS_MAX 4e18
/* A time relative to t0 or a duration in us (an event's ts and dur): 1e10 us = 2.8 hours
 * would cut real captures short, so 1e13 us = 116 days; in ns 1e16. */
#define BND_TS_US_MAX 1e13
/* Counts of records and events (the end record's records, dropped, ...): 1e15. */
#define BND_RECORDS_MAX 1e15
/* Iterations and requests of a simulation: 1e9 (0.4-6 us an iteration of one core: 7 min
 * to 2 hours; specsim run says how long once it is 2 s in). */
#define BND_ITERATIONS_MAX 1e9

/* How a row's tokens share MoE experts (wm_phase_model.expert_row_exp): the tokens routed
 * independently are rows x q^e; e in [0.05, 1] (1: every token alone; below 0.05 a row's
 * tokens would be one token, which no measurement here came near: torchbench 0.5-0.7). */
#define BND_ROW_EXP_MIN 0.05

/* A captured graph size's GPU time against its phase's groups (wm_phase_model.graph_size_factor):
 * [0.5, 2]. The fit's values: 0.97-1.05 (specbench llama8b, docs/fit.md "Captured graph sizes");
 * a factor of 2 would mean the groups' form misses that size by half, which the fit refuses. */
#define BND_SIZE_FACTOR_MIN 0.5
#define BND_SIZE_FACTOR_MAX 2.0

/* File sizes that readers accept (bytes), and the longest line of a line reader. */
#define BND_MODEL_FILE_BYTES   (64L << 20)   /* a model is KBs (a GEMM sweep: ~100 KB) */
#define BND_CONFIG_FILE_BYTES  (1L << 20)    /* a config is a few hundred bytes */
#define BND_LINK_FILE_BYTES    (1L << 20)    /* a link file is a few KB */
#define BND_CSV_FILE_BYTES     (256L << 20)  /* sweeps: ~200 KB (gemm), ~10 KB (arsweep) */
/* A trace is read as a stream (line by line), so its cap only has to stop an endless
 * input: 64 GiB, 64x a 1 GB trace (the calibration traces are 50-250 MB). */
#define BND_TRACE_FILE_BYTES   (64LL << 30)
/* The longest trace line: the writer's lines fit 16 KiB (ptrace_write.h), merged lines
 * 64 KiB; 1 MiB stops /dev/zero or a binary file at once. */
#define BND_TRACE_LINE_BYTES   (1L << 20)

/* A kind of quantity: its range [lo, hi], whether it must be a whole number, its unit. */
typedef struct {
    const char *what;      /* "a cost", "a token count", ... (for the message) */
    const char *unit;      /* "us", "tokens", ... ("" for none) */
    double lo, hi;
    int integer;
} bnd_kind;

extern const bnd_kind bnd_cost_us, bnd_slope_us, bnd_tokens, bnd_rows, bnd_count,
    bnd_bytes, bnd_bw_gbps, bnd_q_tokens, bnd_blocks, bnd_frac, bnd_factor, bnd_experts,
    bnd_ranks, bnd_clock_ns, bnd_ts_us, bnd_dur_us, bnd_records, bnd_iterations, bnd_prob,
    bnd_row_exp, bnd_size_factor;

/* 1 when v is finite, in [k->lo, k->hi] and (if k->integer) whole. */
int bnd_ok(const bnd_kind *k, double v);
/* 0 when bnd_ok, else -1 with "FILE: field F: value V: out of range: KIND must be in
 * [LO, HI] UNIT" in err (file and field as the caller names them). */
int bnd_check(const bnd_kind *k, double v, const char *file, const char *field,
              char *err, size_t errlen);
/* The same for an int64 (trace integers); no conversion to double on the way. */
int bnd_check_i64(const bnd_kind *k, int64_t v, const char *file, const char *field,
                  char *err, size_t errlen);
/* "in [LO, HI] UNIT" for messages that are built elsewhere. */
void bnd_range_text(const bnd_kind *k, char *buf, size_t len);

/* Reads a whole file of at most cap bytes into a malloc'd NUL-terminated buffer (*text,
 * *len; caller frees). Streams it (no seek), so a device, FIFO or /dev/zero stops at the
 * cap. 0, or -1 with "FILE: ..." in err ("larger than CAP bytes: not a WHAT" when over). */
int bnd_read_file(const char *path, long cap, const char *what, char **text, size_t *len,
                  char *err, size_t errlen);
#endif
