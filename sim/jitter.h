/* jitter: the random factors of the simulator. Costs are multiplied by (1 + sd * z) with z a
 * standard normal truncated at +-JITTER_TRUNC; a collective waits for the slowest of R
 * ranks, so it needs the max of R such draws. Both are drawn by inverse CDF from a table
 * (one uniform and one interpolation per draw): the simulator draws millions per second. */
#ifndef JITTER_H
#define JITTER_H
#include <gsl/gsl_rng.h>

/* Truncation of the normal jitter, in standard deviations. 3 keeps (1 + sd*z) positive for
 * sd < 1/3 and drops only 0.27% of the mass (a modelling choice, not a measurement). */
#define JITTER_TRUNC 3.0
#define JITTER_TABLE_N 2048          /* intervals of the quantile table */
/* Sums of more than this many straggler draws use the central limit theorem (one draw). */
#define JITTER_EXACT_MAX 8

typedef struct {
    int    ranks;                    /* the table is for the max of this many draws */
    double q[JITTER_TABLE_N + 1];    /* quantile at u = i / JITTER_TABLE_N */
    double mean, sd;                 /* of the max, integrated from the table */
} jitter_table;

/* The table for the max of `ranks` truncated normals (ranks = 1: the plain truncated
 * normal). Built once per ranks value and kept for the life of the process (thread-safe;
 * nothing to free). NULL if ranks is outside 1..4096 or out of memory. */
const jitter_table *jitter_table_get(int ranks);

/* One draw by inverse CDF: uniform u in [0,1) -> quantile. */
static inline double jitter_quantile(const jitter_table *t, double u)
{
    double x = u * JITTER_TABLE_N;
    int i = (int)x;
    if (i >= JITTER_TABLE_N)
        i = JITTER_TABLE_N - 1;
    double f = x - i;
    return t->q[i] + f * (t->q[i + 1] - t->q[i]);
}
static inline double jitter_draw(const jitter_table *t, gsl_rng *r)
{
    return jitter_quantile(t, gsl_rng_uniform(r));
}
/* Sum of k independent draws from t: exact (k draws) for k <= JITTER_EXACT_MAX, else the
 * normal approximation k*mean + sqrt(k)*sd*Z, Z drawn from `unit` (jitter_table_get(1))
 * rescaled to unit sd. */
double jitter_sum(const jitter_table *t, const jitter_table *unit, int k, gsl_rng *r);
/* Seed of the RNG stream of entity `id` (a rank's host or GPU, a request, ...) for a run
 * seeded with `seed`: splitmix64 of both, so streams are distinct and reproducible. */
unsigned long jitter_stream_seed(unsigned long seed, unsigned long id);
/* Standard deviation of the truncated normal itself (0.9866 for JITTER_TRUNC = 3). */
double jitter_trunc_sd(void);
#endif
