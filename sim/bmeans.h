/* bmeans: batch means of a ratio (tokens / time) over a simulated window, with one control
 * variate: a per-iteration quantity whose expectation is known to be 0 (the acceptance draws
 * minus their closed-form mean). They give the run's standard error (for --precision), the
 * variance a benchmark of another length would see (for prediction intervals), and a
 * lower-variance estimate of the long-run ratio. Workload: one value per simulated
 * iteration, 10^2..10^6 of them; O(1) per iteration, O(BMEANS_MAX) per batch. */
#ifndef BMEANS_H
#define BMEANS_H

/* Batches held at most; when full, neighbours merge and the batch length doubles, so a run
 * of any length has BMEANS_MAX/2..BMEANS_MAX complete batches once it has BMEANS_MAX/2
 * iterations (Schmeiser 1982, "Batch size effects in the analysis of simulation output":
 * 10-30 batches suffice; 20-40 here). */
#define BMEANS_MAX 40

typedef struct {
    long   k;                    /* iterations per batch */
    long   cur_n;                /* iterations in the batch being filled */
    double cur_y, cur_x, cur_c;
    int    nb;                   /* complete batches */
    double y[BMEANS_MAX], x[BMEANS_MAX], c[BMEANS_MAX];
    long   n;                    /* iterations added */
    double sum_y, sum_x, sum_c;  /* over every iteration, the batch being filled included */
} bmeans;

typedef struct {
    int    nb;                   /* complete batches behind the variances (< 3: none) */
    double ratio;                /* sum y / sum x */
    double se;                   /* its standard error (batch means) */
    double lambda;               /* variance of sum(y - ratio*x) per unit of x: a window of
                                    length X has var(ratio) = lambda / X */
    double beta;                 /* control-variate coefficient (0: none, c never varied) */
    double ratio_cv;             /* (sum y - beta * sum c) / sum x */
    double se_cv;                /* its standard error */
} bmeans_est;

void bmeans_init(bmeans *b);
/* Adds one iteration: y (tokens), x (time, > 0) and c (the control variate, mean 0).
 * Returns 1 when it completed a batch, else 0. */
int  bmeans_add(bmeans *b, double y, double x, double c);
/* The estimates from what was added so far. Without 3 complete batches the variances and
 * beta are 0 and ratio_cv = ratio. */
void bmeans_estimate(const bmeans *b, bmeans_est *e);
#endif
