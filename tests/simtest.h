/* simtest.h: the simulator parameters the simulator's tests start from (test_sim.c,
 * test_interval.c): alpha 0.7, graphs 1,2,4,8,16, NCCL over NVLink4 x 8, chain steps 3 x 4
 * draft tokens, one request with an endless output, 1000 iterations, no warm-up, seed 1,
 * the model's launch costs. Each test changes what it studies. */
#ifndef SIMTEST_H
#define SIMTEST_H
#include "check.h"
#include "sim.h"
#include <string.h>

static inline void simtest_params(sim_params *p, const wm_model *m, int spec)
{
    char err[256];
    memset(p, 0, sizeof *p);
    p->model = m;
    CHECK(accept_parse(&p->acc, "alpha:0.7", err, sizeof err) == 0, "%s", err);
    CHECK(cg_parse(&p->graphs, "1,2,4,8,16", err, sizeof err) == 0, "%s", err);
    p->algo = ar_algo_find("nccl");
    p->link = *ar_link_preset("nvlink4-8gpu");
    p->spec = spec;
    p->steps = 3;
    p->topk = 1;
    p->draft_tokens = 4;
    p->concurrency = 1;
    p->iterations = 1000;
    p->warmup = 0;
    CHECK(batch_lendist_parse(&p->out_len, "1000000000", err, sizeof err) == 0, "%s", err);
    p->prompt_tokens = 100;
    p->stagger = 0;
    p->ranks = 1;
    p->sync_segments = 4;
    p->seed = 1;
    p->graph_launch_us = m->graph_launch_us;
    p->eager_launch_us = m->eager_launch_us;
}
#endif
