/* tpwhatif: derives, for `make report`, a tensor-parallel what-if model from a workload model
 * that has no collectives (one measured at one rank, such as models/example-llama8b.json):
 * the same per-rank kernel costs plus the all-reduces a TP forward would add, so that the
 * interconnect figures compare links on real bytes instead of drawing equal bars.
 * Built and run by plots/report.sh against build/libspecsim.a (wm_load / wm_save). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wmodel.h"

/* A strict positive number from argv; exits 2 naming the argument on a bad value. */
static double tpwhatif_num(const char *what, const char *s, double lo, double hi)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!end || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "tpwhatif: argument %s: value \"%s\": must be a number in [%g, %g]\n",
                what, s, lo, hi);
        exit(2);
    }
    return v;
}

/* Adds one all-reduce entry to phase p unless it already has collectives. */
static void tpwhatif_add(wm_phase_model *p, int count, double bytes_per_token)
{
    if (!p->present || p->ncolls > 0 || count < 1)
        return;
    snprintf(p->colls[0].op, sizeof p->colls[0].op, "allreduce");
    p->colls[0].count = count;
    p->colls[0].bytes_per_token = bytes_per_token;
    p->ncolls = 1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr,
                "usage: tpwhatif IN.json OUT.json TARGET_ALLREDUCES BYTES_PER_TOKEN DRAFT_ALLREDUCES\n"
                "  adds TARGET_ALLREDUCES all-reduces of BYTES_PER_TOKEN*tokens bytes per forward\n"
                "  to verify and decode, DRAFT_ALLREDUCES to draft and extend, when IN has no\n"
                "  collectives (e.g. Llama-3.1-8B: 64 = 2 per layer * 32 layers, 8192 = 4096 * 2 B)\n");
        return 2;
    }
    int target = (int)tpwhatif_num("TARGET_ALLREDUCES", argv[3], 1, 100000);
    double bytes = tpwhatif_num("BYTES_PER_TOKEN", argv[4], 1, 1e9);
    int draft = (int)tpwhatif_num("DRAFT_ALLREDUCES", argv[5], 0, 100000);

    static wm_model m;           /* large: off the stack */
    char err[512];
    if (wm_load(&m, argv[1], err, sizeof err)) {
        fprintf(stderr, "tpwhatif: %s\n", err);
        return 2;
    }
    for (int p = 0; p < WM_NPHASE; p++)
        if (m.phase[p].ncolls > 0) {
            fprintf(stderr, "tpwhatif: %s: field phases.%s.collectives: already has %d; "
                    "nothing to derive (use the model as it is)\n",
                    argv[1], wm_phase_name[p], m.phase[p].ncolls);
            return 2;
        }
    tpwhatif_add(&m.phase[WM_VERIFY], target, bytes);
    tpwhatif_add(&m.phase[WM_DECODE], target, bytes);
    tpwhatif_add(&m.phase[WM_DRAFT], draft, bytes);
    tpwhatif_add(&m.phase[WM_EXTEND], draft, bytes);

    char name[WM_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s-tp-whatif", m.name);
    snprintf(m.name, sizeof m.name, "%.*s", WM_NAME_MAX - 1, name);
    snprintf(m.source, sizeof m.source,
             "what-if by plots/tpwhatif: %s's per-rank costs + %d all-reduces/forward of %g B/token "
             "(verify, decode), %d (draft, extend)", argv[1], target, bytes, draft);
    if (wm_save(&m, argv[2], err, sizeof err)) {
        fprintf(stderr, "tpwhatif: %s\n", err);
        return 1;
    }
    return 0;
}
