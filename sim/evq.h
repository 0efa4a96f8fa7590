/* evq: the simulator's event queue, a binary min-heap keyed by (time_ns, seq) so that events
 * at equal times pop in the order they were pushed (FIFO). Workload: a few dozen pending
 * events at most (one per rank and host plus the group's collective), tens of millions of
 * push/pop pairs per second; entries are 24 bytes and move by value. */
#ifndef EVQ_H
#define EVQ_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t  t_ns;   /* simulated time, integer nanoseconds */
    uint64_t seq;    /* push order: breaks ties so equal times pop FIFO */
    int32_t  type;   /* caller's event type */
    int32_t  a;      /* caller's payload (e.g. a rank) */
    int64_t  b;      /* caller's payload (e.g. a global phase index) */
} evq_event;

typedef struct {
    evq_event *heap;     /* owned: freed by evq_free */
    size_t     n, cap;   /* n counts the root hole while `hole` is set */
    int        hole;     /* the root was popped and not yet refilled */
    uint64_t   next_seq;
    uint64_t   pops;     /* events popped since evq_init (the engine's event count) */
} evq;

/* Caller-owned struct; cap_hint sizes the first allocation. Returns 0 or -1 (no memory). */
int    evq_init(evq *q, size_t cap_hint);
void   evq_free(evq *q);                       /* frees the heap; q may be reused after init */
/* Pushes an event at t_ns. Returns 0, or -1 if memory ran out. */
int    evq_push(evq *q, int64_t t_ns, int32_t type, int32_t a, int64_t b);
/* Pops the earliest event into *out. Returns 1, or 0 when the queue is empty. */
int    evq_pop(evq *q, evq_event *out);
size_t evq_size(const evq *q);
#endif
