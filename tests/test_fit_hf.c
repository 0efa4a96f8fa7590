/* test_fit_hf: the hf-assisted fit (models/fit_hf.c) on a synthetic trace of a host-bound
 * assisted-generation loop with known host times per stretch (a plain generate, then rounds
 * of K=3 drafts: verify, the host after it, the catch-up draft, drafts with the host before
 * each, the host before verify; some rounds reject a draft token and pay a cache crop), and
 * the simulator on the fitted model against the program's own iteration times. */
#include "check.h"
#include "fit_hf.h"
#include "sim.h"
#include "simtest.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The program's host times (us) and kernels of each stretch. */
#define DEC_US 10000.0
#define DEC_K 100
#define DGAP_US 1000.0
#define DGAP_K 5
#define VER_US 12000.0
#define VER_K 120
#define VGAP_US 1300.0
#define VGAP_K 8
#define ACC_US 4000.0
#define ACC_K 20
#define REJ_US 6000.0
#define REJ_K 40
#define CAT_US 3000.0
#define CAT_K 30
#define DRF_US 2500.0
#define DRF_K 25
#define FGAP_US 800.0
#define FGAP_K 5

typedef struct {
    fit_trace t;
    int64_t now_ns;
} prog;

static void stretch(prog *p, double us, int kernels)
{
    int64_t d = (int64_t)(us * 1000);
    for (int i = 0; i < kernels; i++) {
        ptrace_kernel k;
        memset(&k, 0, sizeof k);
        k.name = "k";
        k.nvtx = k.phase = "";
        k.start_ns = p->now_ns + d * i / kernels + 100;
        k.end_ns = k.start_ns + 1000;       /* 1 us of GPU time */
        CHECK(fit_trace_add_kernel(&p->t, &k) == 0, "add kernel");
    }
    p->now_ns += d;
}

static void forward(prog *p, const char *word, int tokens, int ctx, double us, int kernels)
{
    char name[96];
    snprintf(name, sizeof name, "%s tokens=%d bs=1 rows=1 ctx=%d graph=0", word, tokens, ctx);
    ptrace_range r = {p->now_ns, p->now_ns + (int64_t)(us * 1000), name, "", 7, 1, 0, 0, 0};
    CHECK(fit_trace_add_range(&p->t, &r) == 0, "add range");
    stretch(p, us, kernels);
}

/* A plain generate of n tokens, then rounds of K=3 drafts; round r rejects when r % 3 == 1. */
static void program(prog *p, int with_drafts)
{
    int ctx = 64;
    for (int i = 0; i < 12; i++) {
        forward(p, "decode", 1, ctx++, DEC_US, DEC_K);
        stretch(p, DGAP_US, DGAP_K);
    }
    stretch(p, 50000, 0);
    if (!with_drafts)
        return;
    ctx = 64;
    for (int r = 0; r < 10; r++) {
        forward(p, "verify", 4, ctx, VER_US, VER_K);
        int rej = r % 3 == 1, gained = rej ? 2 : 4;
        stretch(p, rej ? REJ_US : ACC_US, rej ? REJ_K : ACC_K);
        forward(p, "draft", 2, ctx + gained - 1, CAT_US, CAT_K);
        ctx += gained;
        for (int d = 0; d < 2; d++) {
            stretch(p, FGAP_US, FGAP_K);
            forward(p, "draft", 1, ctx + 1 + d, DRF_US, DRF_K);
        }
        stretch(p, VGAP_US, VGAP_K);
    }
}

/* The simulator's parameters for a fitted hf-assisted model (simtest.h's, then its loop, K=3,
 * 200 iterations of 64-token prompts): spec set by the caller, acceptance acc, output lengths
 * len. */
static void hf_sim_params(sim_params *sp, const wm_model *m, const char *acc, const char *len)
{
    char err[256];
    simtest_params(sp, m, 0);
    sp->loop = m->loop;
    CHECK(accept_parse(&sp->acc, acc, err, sizeof err) == 0, "%s", err);
    CHECK(batch_lendist_parse(&sp->out_len, len, err, sizeof err) == 0, "%s", err);
    sp->iterations = 200;
    sp->prompt_tokens = 64;
}

static void fit_hf_recovers_host_stretches(void)
{
    prog p;
    memset(&p, 0, sizeof p);
    CHECK(fit_trace_init(&p.t, "synthetic-hf") == 0, "init");
    p.now_ns = 1000000;
    program(&p, 1);
    wm_model m;
    fit_hf_report rep;
    char err[512];
    int rc = fit_hf_run(&p.t, 1, NULL, NULL, &m, &rep, err, sizeof err);
    CHECK(rc == 0, "fit_hf_run: %s", err);
    if (rc)
        goto out;
    CHECK(m.loop == WM_LOOP_HF, "loop %d", m.loop);
    const wm_phase_model *ph = m.phase;
    /* host per phase = its kernels x its eager launch cost */
    CHECK_NEAR(wm_phase_kernels(&m, WM_DECODE) * ph[WM_DECODE].eager_launch_us, DEC_US, 0.02, 0);
    CHECK_NEAR(wm_phase_kernels(&m, WM_SAMPLE) * ph[WM_SAMPLE].eager_launch_us, DGAP_US, 0.02, 0);
    CHECK_NEAR(wm_phase_kernels(&m, WM_VERIFY) * ph[WM_VERIFY].eager_launch_us, VER_US + VGAP_US, 0.02, 0);
    CHECK_NEAR(wm_phase_kernels(&m, WM_ACCEPT) * ph[WM_ACCEPT].eager_launch_us, ACC_US, 0.02, 0);
    CHECK_NEAR(wm_phase_kernels(&m, WM_EXTEND) * ph[WM_EXTEND].eager_launch_us, CAT_US, 0.02, 0);
    CHECK_NEAR(wm_phase_kernels(&m, WM_DRAFT) * ph[WM_DRAFT].eager_launch_us, DRF_US + FGAP_US, 0.02, 0);
    CHECK_NEAR(ph[WM_EXTEND].host_gap_reject_us, REJ_US - ACC_US, 0.02, 0);
    CHECK(wm_phase_kernels(&m, WM_VERIFY) == VER_K + VGAP_K, "verify kernels %d",
          wm_phase_kernels(&m, WM_VERIFY));
    CHECK(rep.st[FIT_HF_REJECT_GAP].n == 3 && rep.st[FIT_HF_ACCEPT_GAP].n == 7,
          "rejections %d, full acceptances %d", rep.st[FIT_HF_REJECT_GAP].n,
          rep.st[FIT_HF_ACCEPT_GAP].n);
    for (int q = 0; q < WM_NPHASE; q++)
        CHECK(ph[q].present && ph[q].always_eager, "phase %s: present %d eager %d",
              wm_phase_name[q], ph[q].present, ph[q].always_eager);

    /* the simulator on the fitted model: the program's plain step and, at alpha 0 (every
     * round rejects its first draft token), its round */
    sim_params sp;
    sim_result r;
    hf_sim_params(&sp, &m, "alpha:0", "100000");
    sp.spec = 1;
    rc = sim_run(&sp, NULL, &r, err, sizeof err);
    CHECK(rc == 0, "sim_run: %s", err);
    double round_us = VER_US + VGAP_US + REJ_US + CAT_US + 2 * (DRF_US + FGAP_US);
    if (rc == 0)
        CHECK_NEAR(r.iter_us, round_us, 0.005 * round_us, 0);
    sp.spec = 0;
    rc = sim_run(&sp, NULL, &r, err, sizeof err);
    CHECK(rc == 0, "sim_run baseline: %s", err);
    if (rc == 0)
        CHECK_NEAR(r.iter_us, DEC_US + DGAP_US, 0.005 * (DEC_US + DGAP_US), 0);
out:
    fit_trace_free(&p.t);
}

/* Generates at a host level each: G generates (a prefill range starts each; even ones plain,
 * odd ones assisted), every stretch scaled by exp(level_sd z_g) of its generate and by
 * exp(within_sd e_i) of its own, z and e standard normal draws (a fixed LCG). */
static double lcg_normal(uint64_t *st)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
        u[i] = ((double)(*st >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

static void levels_program(prog *p, int gens, double level_sd, double within_sd, uint64_t seed)
{
    uint64_t st = seed;
    for (int g = 0; g < gens; g++) {
        double f = exp(level_sd * lcg_normal(&st));
#define S(us) ((us) * f * exp(within_sd * lcg_normal(&st)))
        forward(p, "prefill", 64, 0, S(30000.0), 200);
        stretch(p, S(DGAP_US), DGAP_K);
        int ctx = 64;
        if (g % 2 == 0) {
            for (int i = 0; i < 12; i++) {
                forward(p, "decode", 1, ctx++, S(DEC_US), DEC_K);
                stretch(p, S(DGAP_US), DGAP_K);
            }
        } else {
            for (int r = 0; r < 6; r++) {
                forward(p, "verify", 4, ctx, S(VER_US), VER_K);
                int rej = r % 3 == 1, gained = rej ? 2 : 4;
                stretch(p, S(rej ? REJ_US : ACC_US), rej ? REJ_K : ACC_K);
                forward(p, "draft", 2, ctx + gained - 1, S(CAT_US), CAT_K);
                ctx += gained;
                for (int d = 0; d < 2; d++) {
                    stretch(p, S(FGAP_US), FGAP_K);
                    forward(p, "draft", 1, ctx + 1 + d, S(DRF_US), DRF_K);
                }
                stretch(p, S(VGAP_US), VGAP_K);
            }
        }
#undef S
        stretch(p, 20000, 0);
    }
}

static int levels_fit(int gens, double level_sd, double within_sd, wm_model *m, fit_hf_report *rep)
{
    prog p;
    memset(&p, 0, sizeof p);
    CHECK(fit_trace_init(&p.t, "synthetic-hf-levels") == 0, "init");
    p.now_ns = 1000000;
    levels_program(&p, gens, level_sd, within_sd, 42);
    char err[512];
    int rc = fit_hf_run(&p.t, 1, NULL, NULL, m, rep, err, sizeof err);
    CHECK(rc == 0, "fit_hf_run: %s", err);
    fit_trace_free(&p.t);
    return rc;
}

/* The host's level between generates (fit_hf.c fh_host_level) is recovered, and the
 * simulator's interval of a one-generate benchmark carries it. */
static void fit_hf_fits_the_hosts_level_between_generates(void)
{
    wm_model m;
    fit_hf_report rep;
    if (levels_fit(60, 0.10, 0.05, &m, &rep))
        return;
    CHECK(rep.level_runs == 60, "runs %d", rep.level_runs);
    /* 60 runs: the sd of an sd estimate is ~0.1 / sqrt(118) = 0.009 */
    CHECK_NEAR(m.host_speed_level_sd, 0.10, 0.025, 0);
    CHECK_NEAR(m.host_speed_sd_frac, 0.05, 0.01, 0);
    CHECK(m.host_speed_rho == 0, "rho %g", m.host_speed_rho);

    sim_params sp;
    sim_result r;
    char err[256];
    hf_sim_params(&sp, &m, "alpha:0.8", "64");
    sp.intervals = 1;
    sp.bench_s = 1.0;
    int rc = sim_run(&sp, NULL, &r, err, sizeof err);
    CHECK(rc == 0, "sim_run: %s", err);
    /* a host-bound loop: its whole window follows the host's level */
    if (rc == 0)
        CHECK(r.host_share > 0.9 && r.unc_run > 0.9 * m.host_speed_level_sd &&
              r.unc_run < 1.2 * m.host_speed_level_sd, "host share %g, run sd %g against level %g",
              r.host_share, r.unc_run, m.host_speed_level_sd);

    /* a steady host: no level; the rule off or too few runs: none fitted */
    if (levels_fit(60, 0, 0.05, &m, &rep) == 0)
        CHECK(m.host_speed_level_sd < 0.015, "steady host: level %g", m.host_speed_level_sd);
    setenv("FIT_HOST_LEVEL", "0", 1);
    if (levels_fit(60, 0.10, 0.05, &m, &rep) == 0)
        CHECK(m.host_speed_level_sd == 0 && m.host_speed_sd_frac == 0, "rule off: level %g",
              m.host_speed_level_sd);
    unsetenv("FIT_HOST_LEVEL");
    if (levels_fit(4, 0.10, 0.05, &m, &rep) == 0)
        CHECK(rep.level_runs == 4 && m.host_speed_level_sd == 0, "4 runs: level %g",
              m.host_speed_level_sd);
}

static void fit_hf_refuses_traces_without_drafts(void)
{
    prog p;
    memset(&p, 0, sizeof p);
    CHECK(fit_trace_init(&p.t, "plain-only") == 0, "init");
    program(&p, 0);
    wm_model m;
    fit_hf_report rep;
    char err[512] = "";
    CHECK(fit_hf_run(&p.t, 1, NULL, NULL, &m, &rep, err, sizeof err) == -1, "fitted without drafts");
    CHECK(strstr(err, "plain-only") && strstr(err, "field ranges") && strstr(err, "verify forward"),
          "message \"%s\"", err);
    fit_trace_free(&p.t);
}

int main(void)
{
    RUN(fit_hf_recovers_host_stretches);
    RUN(fit_hf_refuses_traces_without_drafts);
    RUN(fit_hf_fits_the_hosts_level_between_generates);
    return check_done();
}
