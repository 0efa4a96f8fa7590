/* evq: binary min-heap of events ordered by (t_ns, seq). Hole-based sift (one copy per
 * level instead of a swap), and a pop defers refilling the root (see evq_push). Pending
 * sets stay small (ranks + a few), so the heap lives in L1; tests/test_evq.c checks it
 * against a sorted list. */
#include "evq.h"

#include <stdlib.h>

static inline int evq_before(const evq_event *x, const evq_event *y)
{
    return x->t_ns < y->t_ns || (x->t_ns == y->t_ns && x->seq < y->seq);
}

int evq_init(evq *q, size_t cap_hint)
{
    q->n = 0;
    q->hole = 0;
    q->next_seq = 0;
    q->pops = 0;
    q->cap = cap_hint < 16 ? 16 : cap_hint;
    q->heap = malloc(q->cap * sizeof *q->heap);
    return q->heap ? 0 : -1;
}

void evq_free(evq *q)
{
    free(q->heap);
    q->heap = NULL;
    q->n = q->cap = 0;
    q->hole = 0;
}

/* Sifts e down from index i (the slot at i is free) and stores it. */
static inline void evq_sift_down(evq *q, size_t i, evq_event e)
{
    size_t n = q->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && evq_before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!evq_before(&q->heap[c], &e))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    q->heap[i] = e;
}

/* A pop leaves the root as a hole (q->hole) instead of refilling it: an event handler
 * usually pushes one event next, which then drops into the hole and sifts down once,
 * instead of a refill sift-down plus a sift-up. Both subtrees of the hole are heaps. */
int evq_push(evq *q, int64_t t_ns, int32_t type, int32_t a, int64_t b)
{
    evq_event e = {t_ns, q->next_seq++, type, a, b};
    if (q->hole) {
        q->hole = 0;
        evq_sift_down(q, 0, e);
        return 0;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap * 2;
        evq_event *h = realloc(q->heap, cap * sizeof *h);
        if (!h)
            return -1;
        q->heap = h;
        q->cap = cap;
    }
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!evq_before(&e, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
    return 0;
}

int evq_pop(evq *q, evq_event *out)
{
    if (q->hole) {
        /* refill the hole left by the previous pop with the last event */
        q->hole = 0;
        evq_event last = q->heap[--q->n];
        if (q->n > 0)
            evq_sift_down(q, 0, last);
    }
    if (q->n == 0)
        return 0;
    *out = q->heap[0];
    q->hole = 1;
    q->pops++;
    return 1;
}

size_t evq_size(const evq *q) { return q->n - (size_t)q->hole; }
