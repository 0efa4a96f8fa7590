/* test_evq: the event queue against a slow obvious reference (a sorted array with stable
 * insertion): the same pops in the same order, equal times in push order. */
#include "check.h"
#include "evq.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>

typedef struct { int64_t t; int32_t type, a; int64_t b; } ref_ev;

/* Reference: array kept sorted by time; a new event goes after all events with t <= its t. */
typedef struct { ref_ev *v; size_t n, cap; } ref_list;

static void ref_push(ref_list *l, ref_ev e)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    size_t i = l->n;
    while (i > 0 && l->v[i - 1].t > e.t)
        i--;
    memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof *l->v);
    l->v[i] = e;
    l->n++;
}

static ref_ev ref_pop(ref_list *l)
{
    ref_ev e = l->v[0];
    memmove(&l->v[0], &l->v[1], (l->n - 1) * sizeof *l->v);
    l->n--;
    return e;
}

static void evq_pops_in_time_order(void)
{
    evq q;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r, 7);
    CHECK(evq_init(&q, 4) == 0, "init");
    for (int i = 0; i < 5000; i++)
        evq_push(&q, (int64_t)gsl_rng_uniform_int(r, 1000), 0, i, 0);
    evq_event e, prev = {INT64_MIN, 0, 0, 0, 0};
    int n = 0, bad = 0;
    while (evq_pop(&q, &e)) {
        if (e.t_ns < prev.t_ns || (e.t_ns == prev.t_ns && e.a < prev.a))
            bad++;
        prev = e;
        n++;
    }
    CHECK(n == 5000, "popped %d of 5000", n);
    CHECK(bad == 0, "%d pops out of (time, push) order", bad);
    CHECK(q.pops == 5000, "pop count %llu", (unsigned long long)q.pops);
    evq_free(&q);
    gsl_rng_free(r);
}

static void evq_matches_sorted_list(void)
{
    /* 100k random operations: pushes at times drawn near "now" (many ties: 1/8 of pushes
     * reuse the current time), pops in between; the queue never holds more than ~200. */
    evq q;
    ref_list l = {0};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r, 12345);
    CHECK(evq_init(&q, 1) == 0, "init");
    int64_t now = 0;
    long mismatches = 0, pops = 0;
    for (int op = 0; op < 100000; op++) {
        int push = l.n == 0 || (gsl_rng_uniform(r) < (l.n > 200 ? 0.3 : 0.55));
        if (push) {
            int64_t t = gsl_rng_uniform(r) < 0.125 ? now : now + (int64_t)gsl_rng_uniform_int(r, 50);
            ref_ev e = {t, (int32_t)gsl_rng_uniform_int(r, 4), op, (int64_t)op * 3};
            ref_push(&l, e);
            CHECK(evq_push(&q, e.t, e.type, e.a, e.b) == 0, "push");
        } else {
            evq_event got;
            ref_ev want = ref_pop(&l);
            int ok = evq_pop(&q, &got);
            pops++;
            if (!ok || got.t_ns != want.t || got.type != want.type || got.a != want.a ||
                got.b != want.b) {
                if (mismatches++ < 5)
                    CHECK(0, "pop %ld: got (t %lld, a %d) want (t %lld, a %d)", pops,
                          (long long)got.t_ns, got.a, (long long)want.t, want.a);
            }
            now = want.t;
        }
        CHECK(evq_size(&q) == l.n, "size %zu vs %zu", evq_size(&q), l.n);
        if (evq_size(&q) != l.n)
            break;
    }
    while (l.n) {
        evq_event got;
        ref_ev want = ref_pop(&l);
        if (!evq_pop(&q, &got) || got.t_ns != want.t || got.a != want.a)
            mismatches++;
    }
    evq_event dummy;
    CHECK(evq_pop(&q, &dummy) == 0, "queue should be empty");
    CHECK(mismatches == 0, "%ld mismatches", mismatches);
    CHECK(pops > 40000, "only %ld pops interleaved", pops);
    free(l.v);
    evq_free(&q);
    gsl_rng_free(r);
}

int main(void)
{
    RUN(evq_pops_in_time_order);
    RUN(evq_matches_sorted_list);
    return check_done();
}
