/* report: how results are written. One table of metrics (name, unit, format, getter) serves
 * the text tables (a `#` header row and a units row, as gnuplot reads them), CSV rows
 * (run --csv and sweeps: the same columns) and JSON. */
#ifndef REPORT_H
#define REPORT_H
#include <stdio.h>
#include "sim.h"

typedef struct {
    const char *name;     /* CSV/JSON column ("tok_s"); baseline columns get "base_" */
    const char *unit;
    const char *fmt;      /* printf format of the value */
    int         table;    /* 0: summary table, 1: breakdown table, 2: engine (CSV/JSON),
                             3: the prediction interval */
    double    (*get)(const sim_result *r);
} report_metric;

extern const report_metric report_metrics[];
extern const int report_nmetrics;

/* speedup = spec tok/s / baseline tok/s (0 when the baseline produced nothing) */
double report_speedup(const sim_result *spec, const sim_result *base);
/* p10 and p90 of the speedup (interval_speedup_var); 0 and 0 without intervals. */
void report_speedup_interval(const sim_result *spec, const sim_result *base, double *p10,
                             double *p90);
/* Text tables; base may be NULL (no baseline). */
void report_text(FILE *f, const sim_result *spec, const sim_result *base);
/* CSV header: the given knob columns, then every metric, base_ metrics and speedup when
 * baseline is set. */
void report_csv_header(FILE *f, const char *const *knobs, int nknobs, int baseline);
void report_csv_row(FILE *f, const char *const *values, int nvalues, const sim_result *spec,
                    const sim_result *base);
/* JSON object {"metric": value, ...} text of one result (caller frees with free()). */
char *report_json_metrics(const sim_result *r);
#endif
