/* interval: prediction intervals of a simulated throughput and of a speedup. A run's tok/s
 * is uncertain for four reasons: the model's costs (each fitted group's residual; a carried
 * model's roofline scaling), the draws of a benchmark of a given length (acceptance, jitter,
 * host gaps: what a real run of that length would see), and the simulation's own estimate.
 * Each is propagated analytically to a relative variance of tok/s; the interval is lognormal
 * around the point estimate. docs/simulator.md ("Intervals") has the equations.
 * Workload: once per run, tens of groups. */
#ifndef INTERVAL_H
#define INTERVAL_H
#include "wmodel.h"

#define INTERVAL_Z90 1.2815515655446004   /* standard normal quantile at 0.90 (and -: 0.10) */

enum { INTERVAL_MEM, INTERVAL_COMP, INTERVAL_LAT, INTERVAL_NKIND };

/* What a run knows about the uncertainty of its tok/s, as variances of log tok/s (relative
 * variances), kept apart so that a speedup can cancel what two runs share. */
typedef struct {
    /* the fit's residuals, per model phase (after fallbacks: a baseline's decode that falls
     * back to verify shares verify's errors): sum over its groups of
     * (resid_frac * the group's GPU time in the window / the window)^2 */
    double phase_var[WM_NPHASE];
    /* the same per group for the two phases a baseline may share with a speculative run
     * (decode falls back to verify, sample to accept): their groups' errors cancel in a
     * speedup one by one */
    float  group_sd[2][WM_GROUPS_MAX];
    /* a carried model, per kind of term (memory, compute, latency): unc * the GPU time of
     * that kind in the window / the window; one error shared by every group */
    double kind_sd[INTERVAL_NKIND];
    double run_var;      /* a benchmark of the asked length (--seconds) */
    /* the host's speed over that benchmark (interval_host_var): share^2 * its variance,
     * share = d log(window) / d log(host speed) from the simulation */
    double host_var;
    double est_var;      /* the simulation's estimate (batch means) */
} interval_parts;

/* GPU time per group over a run's measured window, for interval_model. Caller-owned,
 * zeroed (memset or calloc) before the first add. */
typedef struct {
    double group_us[WM_NPHASE][WM_GROUPS_MAX];
    /* the part of each group's error that does not grow with its cost (resid_abs_us per
     * forward), summed over the window's forwards: the same in every forward */
    double group_abs_us[WM_NPHASE][WM_GROUPS_MAX];
    double kind_us[INTERVAL_NKIND];
    /* per model phase: GPU time of graph replays at a size without a factor of its own
     * (wm graph_size_factors), whose error is the phase's graph_size_sd */
    double size_us[WM_NPHASE];
} interval_acc;

/* Adds `weight` forwards of phase p (wm_phase_get's fallback applies) at `tokens` tokens,
 * kv_tokens of KV context and q_per_row query tokens per row; graph_size > 0: replays of the
 * graph captured at that many rows (0: eager). */
void   interval_acc_add(interval_acc *a, const wm_model *m, int p, double tokens,
                        double kv_tokens, double q_per_row, double weight, int graph_size);
/* A group's model error over a window, us: resid_frac x its GPU time in the window
 * (group_us) and abs_us (resid_abs_us x its forwards there), independent parts, at most
 * max(resid_frac, 1) x group_us (the fit counts a cell's error up to its whole cost);
 * resid_frac x group_us where abs_us is 0. */
double interval_group_err_us(double resid_frac, double abs_us, double group_us);
/* The model parts of out (phase_var, kind_sd) for a window of window_us; run_var and
 * est_var are left as they are. */
void   interval_model(const interval_acc *a, const wm_model *m, double window_us,
                      interval_parts *out);
/* Variance of the log of a host's mean speed over a benchmark of `iters` iterations when
 * its speed per iteration has relative sd sd_frac and lag-1 autocorrelation rho (an AR(1)
 * process): sd^2 / N * (1 + 2 sum_{k=1}^{N-1} (1 - k/N) rho^k), in closed form; 0 when
 * iters <= 0 (the long run). */
double interval_host_var(double sd_frac, double rho, double iters);
double interval_model_var(const interval_parts *p);     /* phase_var and kind_sd */
double interval_var(const interval_parts *p);           /* all the parts */
/* p10 and p90 of a lognormal with median mid and log-variance var. */
void   interval_quantiles(double mid, double var, double *p10, double *p90);
/* Variance of log(spec tok/s / base tok/s): what the two runs share (the same model
 * phase's residuals, a carry's kinds) cancels; their draws and estimates are independent. */
double interval_speedup_var(const interval_parts *spec, const interval_parts *base);
#endif
