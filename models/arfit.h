/* arfit: fits the link of the all-reduce model (allreduce.h: latency_us = alpha, bw_gbps =
 * beta, floor_us) to measured all-reduce times, the CSV rows that profiler/bench/arsweep.cu
 * writes, and runs the `specsim fit-allreduce` subcommand. Model: time = max(floor,
 * A*alpha + C*bytes/beta), A and C the algorithm's step and byte counts at N ranks; least
 * squares on relative residuals (times span ~10 us to ~10 ms), the floor/line split found by
 * trying every split (GSL weighted fits). docs/allreduce.md, "Fitting a link".
 * Workload: a few CSVs of tens to hundreds of rows (1 KB..256 MB, a few GPU counts). */
#ifndef ARFIT_H
#define ARFIT_H
#include <stddef.h>
#include "allreduce.h"

#define ARFIT_ENV_MAX 256

/* One CSV row: one message size measured once (its median over iterations). */
typedef struct {
    double bytes;
    double us;                    /* time_us_median */
    int    gpus;
    char   env[ARFIT_ENV_MAX];    /* NCCL_* settings, "default" when none */
    char   mode[16];              /* eager | graph */
    char   dtype[16];             /* "" when the CSV has no dtype column */
    int    file, line;            /* arfit_data.files[file], 1-based CSV line */
} arfit_row;

/* Rows of one or more CSV files. Caller-owned: arfit_data_init, arfit_data_load (appends),
 * arfit_data_free releases the rows and the copied file names. */
typedef struct {
    arfit_row *rows;
    size_t     n, cap;
    char     **files;
    int        nfiles;
} arfit_data;

void arfit_data_init(arfit_data *d);
/* Appends the rows of an arsweep CSV (columns by name: gpus, env, mode, bytes,
 * time_us_median required; dtype, errors optional; '#' lines skipped). Refuses missing
 * columns, non-numeric or non-positive values, rows arsweep flagged (errors > 0).
 * 0, or -1 with "FILE: line L: field F: value V: why". */
int  arfit_data_load(arfit_data *d, const char *path, char *err, size_t errlen);
void arfit_data_free(arfit_data *d);

/* Which rows to fit. NULL or 0: the only value the rows hold (refused when several).
 * algo: the formula (ring, tree, nccl, nccl-tree); NULL: from the env's NCCL_ALGO (none:
 * nccl, Ring: ring, Tree: nccl-tree, NCCL's one-node tree = a chain). */
typedef struct {
    int         gpus;
    const char *env, *mode, *dtype, *algo;
} arfit_select;

/* One measured size: the mean of its rows, the model, (model - measured) / measured. */
typedef struct {
    double bytes, measured_us, model_us, rel_err;
    int    points, on_floor;
} arfit_resid;

/* Caller-owned; arfit_result_free releases resid. */
typedef struct {
    ar_link link;                 /* latency_us, bw_gbps, floor_us fitted; name "" */
    char    algo[16];             /* formula used */
    double  steps_coef, bytes_coef; /* A, C: time = max(floor, A*alpha + C*bytes/beta) */
    int     gpus;
    char    env[ARFIT_ENV_MAX], mode[16], dtype[16];
    double  alpha_sd_us, beta_sd_gbps, floor_sd_us; /* standard errors; < 0: not estimable
                                    (the report and the file's sd_note say why) */
    size_t  line_points;          /* points fitted to the line, and its free parameters */
    int     line_params;
    double  floor_to_bytes;       /* largest size fitted to the floor (0: no floor) */
    double  rms_rel, max_rel;     /* over the points */
    size_t  points;
    int     nsizes;
    arfit_resid *resid;           /* nsizes entries, ascending bytes */
} arfit_result;

/* A and C of formula algo at n ranks (ring, tree, nccl from allreduce.c's own functions;
 * nccl-tree = 2(N-1), 2). 0, or -1 with err naming the value. */
int  arfit_formula(const char *algo, int n, double *steps_coef, double *bytes_coef,
                   char *err, size_t errlen);
/* Fits n points (bytes[i], us[i] > 0, at least 3 distinct sizes) at `gpus` ranks with
 * formula algo. Fills r (gpus, algo, link, sds, residuals; env/mode/dtype left empty).
 * 0, or -1 with err (label names the data in messages). */
int  arfit_fit_points(const double *bytes, const double *us, size_t n, int gpus,
                      const char *algo, const char *label, arfit_result *r, char *err,
                      size_t errlen);
/* Selects the rows of d (sel) and fits them. 0, or -1 with err. */
int  arfit_fit(const arfit_data *d, const arfit_select *sel, arfit_result *r, char *err,
               size_t errlen);
void arfit_result_free(arfit_result *r);

/* Writes the link file (ar_link_load reads it): the link, name, a source line naming the
 * CSVs and the selection, the fit quality and the residuals; through PATH.tmp, or in place
 * when path is a device or FIFO (ofile.h). 0, -1 with err (write error), or -2 with err
 * when the link would not load back (nothing is written). */
int  arfit_write_json(const arfit_result *r, const arfit_data *d, const char *name,
                      const char *path, char *err, size_t errlen);

/* `specsim fit-allreduce SWEEP.csv... -o LINK.json [options]`; argv[0] is the subcommand.
 * Exit status: 0 fitted, 2 bad input or a refused fit, 1 write error. */
int  arfit_main(int argc, char **argv);
#endif
