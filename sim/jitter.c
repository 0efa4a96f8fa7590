/* jitter: quantile tables for the truncated normal and for the max of R of them (the
 * straggler a collective waits for). The max of R i.i.d. draws with CDF F has CDF F^R, so
 * its quantile is F^-1(u^(1/R)): one uniform per straggler instead of R draws. Tables are
 * built once per R (2049 inverse-normal calls) and shared by all threads of a sweep. */
#define HAVE_INLINE 1   /* GSL inline gsl_rng_uniform; before any GSL header */
#include "jitter.h"

#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <gsl/gsl_cdf.h>

/* Tables are kept per ranks value for the life of the process: at most JITTER_MAX_RANKS
 * of 16 KB each, built on first use (a sweep over ranks 1..8 builds 9, with R = 1). */
#define JITTER_MAX_RANKS 4096

static pthread_mutex_t jitter_lock = PTHREAD_MUTEX_INITIALIZER;
static jitter_table *jitter_cache[JITTER_MAX_RANKS + 1];

static void jitter_build(jitter_table *t, int ranks)
{
    double lo = gsl_cdf_ugaussian_P(-JITTER_TRUNC), hi = gsl_cdf_ugaussian_P(JITTER_TRUNC);
    t->ranks = ranks;
    for (int i = 0; i <= JITTER_TABLE_N; i++) {
        double u = (double)i / JITTER_TABLE_N;
        double v = ranks == 1 ? u : pow(u, 1.0 / ranks);
        if (i == 0)
            t->q[i] = -JITTER_TRUNC;
        else if (i == JITTER_TABLE_N)
            t->q[i] = JITTER_TRUNC;
        else
            t->q[i] = gsl_cdf_ugaussian_Pinv(lo + (hi - lo) * v);
    }
    /* Moments of the piecewise-linear quantile function, exactly: on each interval q is
     * linear from a to b, so E[q] = (a+b)/2 and E[q^2] = (a^2+ab+b^2)/3 per interval. */
    double m1 = 0, m2 = 0;
    for (int i = 0; i < JITTER_TABLE_N; i++) {
        double a = t->q[i], b = t->q[i + 1];
        m1 += (a + b) / 2;
        m2 += (a * a + a * b + b * b) / 3;
    }
    m1 /= JITTER_TABLE_N;
    m2 /= JITTER_TABLE_N;
    t->mean = m1;
    t->sd = sqrt(fmax(0.0, m2 - m1 * m1));
}

const jitter_table *jitter_table_get(int ranks)
{
    if (ranks < 1 || ranks > JITTER_MAX_RANKS)
        return NULL;
    pthread_mutex_lock(&jitter_lock);
    jitter_table *t = jitter_cache[ranks];
    if (!t && (t = malloc(sizeof *t)) != NULL) {
        jitter_build(t, ranks);
        jitter_cache[ranks] = t;
    }
    pthread_mutex_unlock(&jitter_lock);
    return t;
}

double jitter_trunc_sd(void)
{
    static const double T = JITTER_TRUNC;
    double phi = exp(-T * T / 2) / sqrt(2 * M_PI);
    double mass = gsl_cdf_ugaussian_P(T) - gsl_cdf_ugaussian_P(-T);
    return sqrt(1 - 2 * T * phi / mass);
}

double jitter_sum(const jitter_table *t, const jitter_table *unit, int k, gsl_rng *r)
{
    if (k <= 0)
        return 0;
    if (k <= JITTER_EXACT_MAX) {
        double s = 0;
        for (int i = 0; i < k; i++)
            s += jitter_draw(t, r);
        return s;
    }
    double z = jitter_draw(unit, r) / unit->sd;
    return k * t->mean + sqrt((double)k) * t->sd * z;
}

unsigned long jitter_stream_seed(unsigned long seed, unsigned long id)
{
    /* splitmix64 (Steele, Lea, Flood 2014): a bijective mixer, good avalanche. */
    uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ull + (uint64_t)id + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (unsigned long)(z & 0xffffffffu);   /* taus2 and mt19937 seed from 32 bits */
}
