/* bmeans: batch means with doubling batches and one control variate (bmeans.h). The ratio's
 * variance comes from the linearisation ratio - R ~ sum(y - R x) / sum(x) (the delta
 * method), with the batches' z = y - R x as independent draws; the control variate enters
 * as a regression of z on c (Lavenberg and Welch 1981, "A perspective on the use of control
 * variables to increase the efficiency of Monte Carlo simulations"). */
#include "bmeans.h"

#include <math.h>
#include <string.h>

void bmeans_init(bmeans *b)
{
    memset(b, 0, sizeof *b);
    b->k = 1;
}

int bmeans_add(bmeans *b, double y, double x, double c)
{
    b->n++;
    b->sum_y += y;
    b->sum_x += x;
    b->sum_c += c;
    b->cur_y += y;
    b->cur_x += x;
    b->cur_c += c;
    if (++b->cur_n < b->k)
        return 0;
    b->y[b->nb] = b->cur_y;
    b->x[b->nb] = b->cur_x;
    b->c[b->nb] = b->cur_c;
    b->cur_y = b->cur_x = b->cur_c = 0;
    b->cur_n = 0;
    if (++b->nb == BMEANS_MAX) {
        /* merge neighbours: BMEANS_MAX/2 batches of twice the length */
        for (int i = 0; i < BMEANS_MAX / 2; i++) {
            b->y[i] = b->y[2 * i] + b->y[2 * i + 1];
            b->x[i] = b->x[2 * i] + b->x[2 * i + 1];
            b->c[i] = b->c[2 * i] + b->c[2 * i + 1];
        }
        b->nb = BMEANS_MAX / 2;
        b->k *= 2;
    }
    return 1;
}

void bmeans_estimate(const bmeans *b, bmeans_est *e)
{
    memset(e, 0, sizeof *e);
    e->ratio = b->sum_x > 0 ? b->sum_y / b->sum_x : 0;
    e->ratio_cv = e->ratio;
    int nb = b->nb;
    if (nb < 3 || !(b->sum_x > 0))
        return;
    e->nb = nb;
    double R = e->ratio, zm = 0, cm = 0, xm = 0;
    for (int i = 0; i < nb; i++) {
        zm += b->y[i] - R * b->x[i];
        cm += b->c[i];
        xm += b->x[i];
    }
    zm /= nb;
    cm /= nb;
    xm /= nb;
    double szz = 0, szc = 0, scc = 0;
    for (int i = 0; i < nb; i++) {
        double dz = b->y[i] - R * b->x[i] - zm, dc = b->c[i] - cm;
        szz += dz * dz;
        szc += dz * dc;
        scc += dc * dc;
    }
    e->lambda = szz / (nb - 1) / xm;
    e->se = sqrt(e->lambda / b->sum_x);
    /* scc is a sum of squares of differences: 0 only when c never varied (a baseline) */
    e->beta = scc > 0 ? szc / scc : 0;
    double sww = szz - e->beta * szc;     /* residual sum of squares of z on c */
    if (sww < 0)
        sww = 0;
    double lam_cv = scc > 0 ? sww / (nb - 2) / xm : e->lambda;
    e->ratio_cv = (b->sum_y - e->beta * b->sum_c) / b->sum_x;
    e->se_cv = sqrt(lam_cv / b->sum_x);
}
