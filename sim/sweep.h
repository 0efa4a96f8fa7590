/* sweep: a grid over any knobs (`--grid steps=1..6 --grid alpha=0.5,0.7,0.9`), the cartesian
 * product run on every core (pthreads), one CSV row per configuration in grid order
 * whatever the number of workers. Configurations that differ only in speculative knobs
 * (acceptance, steps, topk, draft tokens) share one baseline run (the baseline does not
 * read them), unless baseline_reuse is 0. Up to 10^8 configurations, run and written in blocks (bounded memory). */
#ifndef SWEEP_H
#define SWEEP_H
#include <stdio.h>
#include <stddef.h>
#include "simcfg.h"

#define SWEEP_MAX_AXES 16

typedef struct {
    const simcfg_knob *knob;
    int    nvals, cap;
    char **vals;          /* owned; cap entries allocated */
} sweep_axis;

typedef struct {
    sweep_axis axis[SWEEP_MAX_AXES];
    int        naxes;
} sweep_grid;

/* Adds "knob=a..b[:step]" (integers) or "knob=v1,v2,.." (or v1|v2|.. when values hold
 * commas). 0 or -1 with err naming the value. */
int  sweep_grid_add(sweep_grid *g, const char *spec, char *err, size_t errlen);
void sweep_grid_free(sweep_grid *g);
long sweep_grid_size(const sweep_grid *g);

typedef struct {
    long   configs, baselines;   /* runs done (configs: of the part run) */
    double wall_s;
    unsigned long long events;
} sweep_stats;

/* The part of n configurations that shard "I/N" runs: [lo, hi), contiguous in grid order,
 * so that the N parts' rows concatenated in order are the whole grid's; "" or NULL: all.
 * 0, or -1 with err naming the value. */
int  sweep_shard(const char *shard, long n, long *lo, long *hi, char *err, size_t errlen);
/* Checks base->cfg.shard's part of the grid (base + grid): every configuration of a part up to
 * 10^6, else every grid value once and the first block; 0, or -1
 * with err naming the grid value (or the shard). */
int  sweep_check(const sweep_grid *g, const simcfg_set_t *base, char *err, size_t errlen);
/* Checks the configurations, then runs those of base->cfg.shard's part of the grid (all
 * without one) on `jobs` threads (0: online CPUs) and writes their CSV rows (with the
 * header) to out. Returns 0, -2 for a bad configuration (err names the grid value; also a run that
 * sim_run refused with -2: err names its grid values), -1 for
 * a failure while running. */
int  sweep_run(const sweep_grid *g, const simcfg_set_t *base, FILE *out, int jobs,
               sweep_stats *st, char *err, size_t errlen);
#endif
