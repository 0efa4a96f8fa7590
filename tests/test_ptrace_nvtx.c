/* test_ptrace_nvtx.c: NVTX range bookkeeping (profiler/core/pnvtx): stacks per thread
 * and domain, phase words, the launch -> range link that GPU records read later. */
#include "check.h"
#include "pnvtx.h"
#include <string.h>

static void pnvtx_phase_is_first_word_of_configured_list(void) {
    char err[128], ph[24];
    pnvtx *n = pnvtx_create(4, 4, NULL, err, sizeof err);
    CHECK(n != NULL, "%s", err);
    if (!n) return;
    CHECK(pnvtx_phase_of(n, "verify bs=8 tokens=32", ph, sizeof ph) == 1 && !strcmp(ph, "verify"), "verify");
    CHECK(pnvtx_phase_of(n, "draft", ph, sizeof ph) == 1 && !strcmp(ph, "draft"), "draft alone");
    CHECK(pnvtx_phase_of(n, "drafting", ph, sizeof ph) == 0 && ph[0] == 0, "prefix is not a phase");
    CHECK(pnvtx_phase_of(n, "forward verify", ph, sizeof ph) == 0, "second word");
    CHECK(pnvtx_phase_count(n) == 6 && !strcmp(pnvtx_phase_name(n, 5), "sample"), "default list");
    pnvtx_destroy(n);
    n = pnvtx_create(4, 4, "target_verify,draft_extend", err, sizeof err);
    CHECK(n && pnvtx_phase_of(n, "draft_extend bs=4", ph, sizeof ph) == 1 && pnvtx_phase_of(n, "verify", ph, sizeof ph) == 0,
          "custom list");
    pnvtx_destroy(n);
    const char *bad[] = { "", "a,,b", "two words", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
    for (int i = 0; i < 4; i++) {
        err[0] = 0;
        CHECK(pnvtx_create(4, 4, bad[i], err, sizeof err) == NULL && strstr(err, "phases"), "bad list %d: '%s'", i, err);
    }
}

static void pnvtx_launch_links_innermost_and_phase_range(void) {
    char err[128], nv[PNVTX_NAME_MAX], ph[24];
    pnvtx *n = pnvtx_create(8, 8, NULL, err, sizeof err);
    pnvtx_stack t1, t2;
    memset(&t1, 0, sizeof t1); memset(&t2, 0, sizeof t2);
    pnvtx_on_launch(n, &t1, 10);                      /* no range open */
    pnvtx_push(n, &t1, "decode bs=4", 0, 100);
    pnvtx_push(n, &t1, "attention", 0, 110);          /* not a phase: phase stays decode */
    pnvtx_on_launch(n, &t1, 11);
    pnvtx_push(n, &t2, "verify tokens=16", 0, 120);   /* another thread */
    pnvtx_on_launch(n, &t2, 12);
    pnvtx_closed c;
    CHECK(pnvtx_pop(n, &t1, 0, 130, &c) == 1 && !strcmp(c.name, "attention") && c.start_ns == 110 && c.end_ns == 130,
          "pop attention: '%s'", c.name);
    pnvtx_on_launch(n, &t1, 13);
    CHECK(pnvtx_lookup(n, 10, nv, sizeof nv, ph, sizeof ph) == 1 && nv[0] == 0 && ph[0] == 0, "corr 10 outside");
    CHECK(pnvtx_lookup(n, 11, nv, sizeof nv, ph, sizeof ph) == 1 && !strcmp(nv, "attention") && !strcmp(ph, "decode"),
          "corr 11: '%s' '%s'", nv, ph);
    CHECK(pnvtx_lookup(n, 12, nv, sizeof nv, ph, sizeof ph) == 1 && !strcmp(nv, "verify tokens=16") && !strcmp(ph, "verify"),
          "corr 12 other thread");
    CHECK(pnvtx_lookup(n, 13, nv, sizeof nv, ph, sizeof ph) == 1 && !strcmp(nv, "decode bs=4"), "corr 13 after pop");
    CHECK(pnvtx_lookup(n, 14, nv, sizeof nv, ph, sizeof ph) == 0, "unseen corr");
    pnvtx_destroy(n);
}

static void pnvtx_domains_pop_their_own_ranges(void) {
    char err[128], nv[PNVTX_NAME_MAX], ph[24];
    pnvtx *n = pnvtx_create(8, 8, NULL, err, sizeof err);
    pnvtx_stack t;
    memset(&t, 0, sizeof t);
    int nccl = pnvtx_domain_add(n, 0xabc, "NCCL");
    CHECK(nccl > 0 && pnvtx_domain_index(n, 0xabc) == nccl && pnvtx_domain_index(n, 0) == 0, "domains");
    pnvtx_push(n, &t, "verify", 0, 1);
    pnvtx_push(n, &t, "ncclAllReduce", nccl, 2);
    pnvtx_on_launch(n, &t, 5);
    CHECK(pnvtx_lookup(n, 5, nv, sizeof nv, ph, sizeof ph) && !strcmp(nv, "ncclAllReduce") && !strcmp(ph, "verify"),
          "NCCL's own range is innermost, the phase is still verify: '%s' '%s'", nv, ph);
    pnvtx_closed c;
    /* default-domain pop while the NCCL range is open closes the default one */
    CHECK(pnvtx_pop(n, &t, 0, 3, &c) == 1 && !strcmp(c.name, "verify") && c.domain[0] == 0, "pop default");
    CHECK(pnvtx_pop(n, &t, nccl, 4, &c) == 1 && !strcmp(c.name, "ncclAllReduce") && !strcmp(c.domain, "NCCL"), "pop NCCL");
    CHECK(pnvtx_pop(n, &t, 0, 5, &c) == 0, "pop with nothing open (pushed before specprof attached)");
    int unknown = pnvtx_domain_index(n, 0xdef);
    CHECK(unknown > 0 && unknown != nccl, "domain created before attach gets an index");
    pnvtx_string_add(n, 77, "registered name");
    CHECK(pnvtx_string_find(n, 77, nv, sizeof nv) == 1 && !strcmp(nv, "registered name"), "string");
    CHECK(pnvtx_string_find(n, 78, nv, sizeof nv) == 0 && !strcmp(nv, "string78"), "unknown string");
    pnvtx_stats st;
    pnvtx_get_stats(n, &st);
    CHECK(st.pushed == 2 && st.popped == 2 && st.unmatched_pops == 1, "stats");
    pnvtx_destroy(n);
}

static void pnvtx_start_end_ranges_by_id(void) {
    char err[128];
    pnvtx *n = pnvtx_create(4, 4, NULL, err, sizeof err);
    pnvtx_closed c;
    pnvtx_start(n, 1, "load", 0, 10);
    pnvtx_start(n, 1025, "save", 0, 20);               /* same bucket */
    CHECK(pnvtx_end(n, 1025, 30, &c) == 1 && !strcmp(c.name, "save") && c.start_ns == 20 && c.push_pop == 0, "end save");
    CHECK(pnvtx_end(n, 1, 40, &c) == 1 && !strcmp(c.name, "load") && c.end_ns == 40, "end load");
    CHECK(pnvtx_end(n, 1, 50, &c) == 0, "ended twice");
    pnvtx_destroy(n);
}

static void pnvtx_ring_eviction_gives_empty_not_stale_names(void) {
    char err[128], nv[PNVTX_NAME_MAX], ph[24];
    pnvtx *n = pnvtx_create(2, 8, NULL, err, sizeof err);   /* 4 names kept */
    pnvtx_stack t;
    memset(&t, 0, sizeof t);
    pnvtx_push(n, &t, "verify old", 0, 0);
    pnvtx_on_launch(n, &t, 1);
    pnvtx_closed c;
    pnvtx_pop(n, &t, 0, 1, &c);
    for (int i = 0; i < 4; i++) { pnvtx_push(n, &t, "x", 0, 2); pnvtx_pop(n, &t, 0, 3, &c); }
    CHECK(pnvtx_lookup(n, 1, nv, sizeof nv, ph, sizeof ph) == 1 && nv[0] == 0 && ph[0] == 0, "evicted: '%s'", nv);
    /* deep stacks: pushes past the limit are counted and their pops ignored */
    for (int i = 0; i < PNVTX_MAX_DEPTH + 3; i++) pnvtx_push(n, &t, "deep", 0, i);
    CHECK(t.depth == PNVTX_MAX_DEPTH && t.lost == 3, "depth %d lost %d", t.depth, t.lost);
    int closed = 0;
    for (int i = 0; i < PNVTX_MAX_DEPTH + 3; i++) closed += pnvtx_pop(n, &t, 0, 100, &c);
    CHECK(closed == PNVTX_MAX_DEPTH && t.depth == 0 && t.lost == 0, "closed %d", closed);
    pnvtx_destroy(n);
}

int main(void) {
    RUN(pnvtx_phase_is_first_word_of_configured_list);
    RUN(pnvtx_launch_links_innermost_and_phase_range);
    RUN(pnvtx_domains_pop_their_own_ranges);
    RUN(pnvtx_start_end_ranges_by_id);
    RUN(pnvtx_ring_eviction_gives_empty_not_stale_names);
    return check_done();
}
