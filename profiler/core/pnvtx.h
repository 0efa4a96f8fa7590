/* pnvtx.h: NVTX range bookkeeping for specprof: per-thread push/pop stacks, start/end
 * ranges by id, domain and registered-string names, and the link from a launch
 * (CUPTI correlation id) to the innermost range and the innermost *phase* range open on
 * the launching thread at launch time. GPU records arrive later (up to a flush period),
 * so names live in a ring of the last 2^ring_log2 ranges pushed.
 * Phase: the first word of a range name when it is one of the configured phases
 * (default draft,verify,accept,extend,decode,sample); e.g. "verify bs=8 tokens=32".
 * Workload: 10..10^4 ranges and 10^3..10^5 launches per second, one lock. */
#ifndef PNVTX_H
#define PNVTX_H
#include <stddef.h>
#include <stdint.h>

#define PNVTX_NAME_MAX 192      /* longer range names are cut */
#define PNVTX_MAX_DEPTH 64      /* deeper pushes are counted, not tracked */
#define PNVTX_MAX_DOMAINS 64
#define PNVTX_DEFAULT_PHASES "draft,verify,accept,extend,decode,sample"

/* mark: two counters the caller sets after a push (lite mode: the thread's kernel and graph
 * launches so far), handed back in pnvtx_closed when the range pops */
typedef struct { uint32_t seq, phase_seq; uint16_t domain; int64_t start_ns; uint64_t mark[2]; } pnvtx_frame;

/* Per host thread; caller-owned and zero-initialised. */
typedef struct { int depth, lost; pnvtx_frame f[PNVTX_MAX_DEPTH]; } pnvtx_stack;

/* A range that just ended. */
typedef struct {
    char name[PNVTX_NAME_MAX];
    char domain[48];
    int64_t start_ns, end_ns;
    int push_pop;
    uint64_t mark[2];         /* the frame's marks (push/pop ranges; 0 for start/end) */
} pnvtx_closed;

typedef struct pnvtx pnvtx;

/* phases_csv: comma-separated phase words, NULL for the default. NULL on bad input or
 * no memory (err says why). Destroy accepts NULL. */
pnvtx *pnvtx_create(unsigned ring_log2, unsigned corr_log2, const char *phases_csv,
                    char *err, size_t errlen);
void pnvtx_destroy(pnvtx *n);
int pnvtx_phase_count(const pnvtx *n);
const char *pnvtx_phase_name(const pnvtx *n, int i);

/* Phase word of a range name into out ("" and 0 when the name is not a phase); 1 if it is. */
int pnvtx_phase_of(const pnvtx *n, const char *name, char *out, size_t cap);

/* Domains: handle 0 is the default domain (index 0, name ""). */
int pnvtx_domain_add(pnvtx *n, uint64_t handle, const char *name);
int pnvtx_domain_index(pnvtx *n, uint64_t handle);
/* Registered strings (nvtxDomainRegisterStringA). */
void pnvtx_string_add(pnvtx *n, uint64_t handle, const char *s);
int pnvtx_string_find(pnvtx *n, uint64_t handle, char *out, size_t cap);

/* nvtxRangePush* on the thread owning s. Returns the range's sequence number. */
uint32_t pnvtx_push(pnvtx *n, pnvtx_stack *s, const char *name, int domain, int64_t ts_ns);
/* nvtxRangePop / nvtxDomainRangePop: closes the innermost range of that domain on the
 * thread. 1 and *out when a range closed, 0 when none was open (pushed before tracking). */
int pnvtx_pop(pnvtx *n, pnvtx_stack *s, int domain, int64_t ts_ns, pnvtx_closed *out);
/* nvtxRangeStart* / nvtxRangeEnd: process-wide ranges by id (not used for phases). */
void pnvtx_start(pnvtx *n, uint64_t id, const char *name, int domain, int64_t ts_ns);
int pnvtx_end(pnvtx *n, uint64_t id, int64_t ts_ns, pnvtx_closed *out);

/* A launch API with correlation id corr is entered on the thread owning s. */
void pnvtx_on_launch(pnvtx *n, const pnvtx_stack *s, uint32_t corr);
/* Names for a GPU record with correlation id corr: innermost range and phase word
 * ("" when none). 1 when the launch was seen. */
int pnvtx_lookup(pnvtx *n, uint32_t corr, char *nvtx, size_t nvtx_cap, char *phase, size_t phase_cap);

/* Names of the innermost range seq and of the phase range phase_seq (as in a frame: the
 * thread's stack top when a launch was made), "" when 0 or no longer in the ring. */
void pnvtx_names(pnvtx *n, uint32_t seq, uint32_t phase_seq, char *nvtx, size_t nvtx_cap, char *phase,
                 size_t phase_cap);

typedef struct { int64_t pushed, popped, unmatched_pops, lost_deep, evicted, starts_dropped; } pnvtx_stats;
void pnvtx_get_stats(pnvtx *n, pnvtx_stats *st);

#endif
