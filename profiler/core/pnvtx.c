/* pnvtx.c: NVTX range stacks, name ring and launch -> range links (see pnvtx.h).
 * The ring slot of range seq is seq & mask; a slot is valid for seq when it still holds
 * seq, so a lookup after 2^ring_log2 newer pushes finds nothing (no stale name). */
#include "pnvtx.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PNVTX_MAX_PHASES 16
#define PNVTX_STRINGS 1024
#define PNVTX_STARTS 1024

typedef struct { uint32_t seq; uint16_t domain; char name[PNVTX_NAME_MAX]; } pnvtx_slot;
typedef struct { uint32_t corr, inner, phase; } pnvtx_link;
typedef struct { uint64_t handle; char s[PNVTX_NAME_MAX]; } pnvtx_string;
typedef struct { uint64_t id; int used; int domain; int64_t start_ns; char name[PNVTX_NAME_MAX]; } pnvtx_startslot;

struct pnvtx {
    pthread_mutex_t mu;
    uint32_t next_seq;
    uint32_t ring_mask, corr_mask;
    pnvtx_slot *ring;
    pnvtx_link *links;
    int n_phases;
    char phases[PNVTX_MAX_PHASES][24];
    int n_domains;
    uint64_t dom_handle[PNVTX_MAX_DOMAINS];
    char dom_name[PNVTX_MAX_DOMAINS][48];
    pnvtx_string strings[PNVTX_STRINGS];
    int n_strings;
    pnvtx_startslot starts[PNVTX_STARTS];
    pnvtx_stats st;
};

static int pnvtx_parse_phases(pnvtx *n, const char *csv, char *err, size_t errlen) {
    const char *p = csv;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= sizeof n->phases[0]) {
            snprintf(err, errlen, "phases: value \"%s\": each phase must be 1..%zu characters", csv,
                     sizeof n->phases[0] - 1);
            return -1;
        }
        if (n->n_phases == PNVTX_MAX_PHASES) {
            snprintf(err, errlen, "phases: value \"%s\": at most %d phases", csv, PNVTX_MAX_PHASES);
            return -1;
        }
        for (size_t i = 0; i < len; i++) if (p[i] == ' ' || p[i] == '\t') {
            snprintf(err, errlen, "phases: value \"%s\": a phase is one word", csv);
            return -1;
        }
        memcpy(n->phases[n->n_phases], p, len);
        n->phases[n->n_phases++][len] = 0;
        p += len + (e ? 1 : 0);
    }
    if (!n->n_phases) { snprintf(err, errlen, "phases: empty list"); return -1; }
    return 0;
}

pnvtx *pnvtx_create(unsigned ring_log2, unsigned corr_log2, const char *phases_csv,
                    char *err, size_t errlen) {
    if (ring_log2 < 1 || ring_log2 > 20 || corr_log2 < 1 || corr_log2 > 24) {
        snprintf(err, errlen, "pnvtx: ring_log2 %u / corr_log2 %u out of range", ring_log2, corr_log2);
        return NULL;
    }
    pnvtx *n = calloc(1, sizeof *n);
    if (!n) { snprintf(err, errlen, "pnvtx: out of memory"); return NULL; }
    n->ring_mask = (1u << ring_log2) - 1;
    n->corr_mask = (1u << corr_log2) - 1;
    n->ring = calloc((size_t)n->ring_mask + 1, sizeof *n->ring);
    n->links = calloc((size_t)n->corr_mask + 1, sizeof *n->links);
    if (!n->ring || !n->links) { snprintf(err, errlen, "pnvtx: out of memory"); pnvtx_destroy(n); return NULL; }
    if (pnvtx_parse_phases(n, phases_csv ? phases_csv : PNVTX_DEFAULT_PHASES, err, errlen)) {
        pnvtx_destroy(n);
        return NULL;
    }
    n->next_seq = 1;
    n->n_domains = 1;  /* index 0: default domain, name "" */
    pthread_mutex_init(&n->mu, NULL);
    return n;
}

void pnvtx_destroy(pnvtx *n) {
    if (!n) return;
    free(n->ring); free(n->links);
    free(n);
}

int pnvtx_phase_count(const pnvtx *n) { return n->n_phases; }
const char *pnvtx_phase_name(const pnvtx *n, int i) { return i >= 0 && i < n->n_phases ? n->phases[i] : ""; }

int pnvtx_phase_of(const pnvtx *n, const char *name, char *out, size_t cap) {
    size_t w = strcspn(name, " \t");
    for (int i = 0; i < n->n_phases; i++)
        if (strlen(n->phases[i]) == w && !strncmp(name, n->phases[i], w)) {
            snprintf(out, cap, "%s", n->phases[i]);
            return 1;
        }
    if (cap) out[0] = 0;
    return 0;
}

int pnvtx_domain_add(pnvtx *n, uint64_t handle, const char *name) {
    if (!handle) return 0;
    pthread_mutex_lock(&n->mu);
    int idx = 0;
    for (int i = 1; i < n->n_domains; i++) if (n->dom_handle[i] == handle) { idx = i; break; }
    if (!idx && n->n_domains < PNVTX_MAX_DOMAINS) idx = n->n_domains++;
    if (idx) {
        n->dom_handle[idx] = handle;
        snprintf(n->dom_name[idx], sizeof n->dom_name[idx], "%s", name ? name : "");
    }
    pthread_mutex_unlock(&n->mu);
    return idx;
}

int pnvtx_domain_index(pnvtx *n, uint64_t handle) {
    if (!handle) return 0;
    pthread_mutex_lock(&n->mu);
    int idx = 0;
    for (int i = 1; i < n->n_domains; i++) if (n->dom_handle[i] == handle) { idx = i; break; }
    if (!idx && n->n_domains < PNVTX_MAX_DOMAINS) {   /* created before we were attached */
        idx = n->n_domains++;
        n->dom_handle[idx] = handle;
        snprintf(n->dom_name[idx], sizeof n->dom_name[idx], "domain%d", idx);
    }
    pthread_mutex_unlock(&n->mu);
    return idx;
}

void pnvtx_string_add(pnvtx *n, uint64_t handle, const char *s) {
    pthread_mutex_lock(&n->mu);
    int slot = -1;
    for (int i = 0; i < n->n_strings; i++) if (n->strings[i].handle == handle) { slot = i; break; }
    if (slot < 0) slot = n->n_strings < PNVTX_STRINGS ? n->n_strings++ : (int)(handle % PNVTX_STRINGS);
    n->strings[slot].handle = handle;
    snprintf(n->strings[slot].s, sizeof n->strings[slot].s, "%s", s ? s : "");
    pthread_mutex_unlock(&n->mu);
}

int pnvtx_string_find(pnvtx *n, uint64_t handle, char *out, size_t cap) {
    int found = 0;
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < n->n_strings; i++)
        if (n->strings[i].handle == handle) { snprintf(out, cap, "%s", n->strings[i].s); found = 1; break; }
    pthread_mutex_unlock(&n->mu);
    if (!found && cap) snprintf(out, cap, "string%llu", (unsigned long long)handle);
    return found;
}

uint32_t pnvtx_push(pnvtx *n, pnvtx_stack *s, const char *name, int domain, int64_t ts_ns) {
    char ph[24];
    int is_phase = pnvtx_phase_of(n, name ? name : "", ph, sizeof ph);
    pthread_mutex_lock(&n->mu);
    uint32_t seq = n->next_seq++;
    if (n->next_seq == 0) n->next_seq = 1;
    pnvtx_slot *sl = &n->ring[seq & n->ring_mask];
    if (sl->seq) n->st.evicted++;
    sl->seq = seq;
    sl->domain = (uint16_t)domain;
    snprintf(sl->name, sizeof sl->name, "%s", name ? name : "");
    n->st.pushed++;
    if (s->depth >= PNVTX_MAX_DEPTH) n->st.lost_deep++;
    pthread_mutex_unlock(&n->mu);
    if (s->depth >= PNVTX_MAX_DEPTH) { s->lost++; return seq; }
    pnvtx_frame *f = &s->f[s->depth];
    f->seq = seq;
    f->domain = (uint16_t)domain;
    f->start_ns = ts_ns;
    f->phase_seq = is_phase ? seq : (s->depth ? s->f[s->depth - 1].phase_seq : 0);
    f->mark[0] = f->mark[1] = 0;
    s->depth++;
    return seq;
}

/* Copies the name of range seq into out ("" if evicted). Caller holds the lock. */
static void pnvtx_name_locked(pnvtx *n, uint32_t seq, char *out, size_t cap) {
    pnvtx_slot *sl = &n->ring[seq & n->ring_mask];
    snprintf(out, cap, "%s", sl->seq == seq ? sl->name : "");
}

int pnvtx_pop(pnvtx *n, pnvtx_stack *s, int domain, int64_t ts_ns, pnvtx_closed *out) {
    if (s->lost > 0 && s->depth >= PNVTX_MAX_DEPTH) { s->lost--; return 0; }
    int k = s->depth - 1;
    while (k >= 0 && s->f[k].domain != domain) k--;
    if (k < 0) {
        pthread_mutex_lock(&n->mu); n->st.unmatched_pops++; pthread_mutex_unlock(&n->mu);
        return 0;
    }
    pnvtx_frame f = s->f[k];
    /* frames above k (other domains) keep their order; their phase links stay as pushed */
    memmove(&s->f[k], &s->f[k + 1], (size_t)(s->depth - k - 1) * sizeof s->f[0]);
    s->depth--;
    pthread_mutex_lock(&n->mu);
    pnvtx_name_locked(n, f.seq, out->name, sizeof out->name);
    snprintf(out->domain, sizeof out->domain, "%s", domain > 0 && domain < n->n_domains ? n->dom_name[domain] : "");
    n->st.popped++;
    pthread_mutex_unlock(&n->mu);
    out->start_ns = f.start_ns;
    out->end_ns = ts_ns;
    out->push_pop = 1;
    out->mark[0] = f.mark[0];
    out->mark[1] = f.mark[1];
    return 1;
}

void pnvtx_start(pnvtx *n, uint64_t id, const char *name, int domain, int64_t ts_ns) {
    pthread_mutex_lock(&n->mu);
    pnvtx_startslot *sl = NULL;
    for (unsigned i = 0, h = (unsigned)(id % PNVTX_STARTS); i < PNVTX_STARTS; i++, h = (h + 1) % PNVTX_STARTS)
        if (!n->starts[h].used) { sl = &n->starts[h]; break; }
    if (!sl) n->st.starts_dropped++;
    else {
        sl->used = 1; sl->id = id; sl->domain = domain; sl->start_ns = ts_ns;
        snprintf(sl->name, sizeof sl->name, "%s", name ? name : "");
    }
    pthread_mutex_unlock(&n->mu);
}

int pnvtx_end(pnvtx *n, uint64_t id, int64_t ts_ns, pnvtx_closed *out) {
    int found = 0;
    pthread_mutex_lock(&n->mu);
    for (unsigned i = 0, h = (unsigned)(id % PNVTX_STARTS); i < PNVTX_STARTS; i++, h = (h + 1) % PNVTX_STARTS) {
        pnvtx_startslot *sl = &n->starts[h];
        if (sl->used && sl->id == id) {
            snprintf(out->name, sizeof out->name, "%s", sl->name);
            snprintf(out->domain, sizeof out->domain, "%s",
                     sl->domain > 0 && sl->domain < n->n_domains ? n->dom_name[sl->domain] : "");
            out->start_ns = sl->start_ns;
            out->end_ns = ts_ns;
            out->push_pop = 0;
            out->mark[0] = out->mark[1] = 0;
            sl->used = 0;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&n->mu);
    return found;
}

void pnvtx_on_launch(pnvtx *n, const pnvtx_stack *s, uint32_t corr) {
    uint32_t inner = 0, phase = 0;
    if (s->depth > 0) { inner = s->f[s->depth - 1].seq; phase = s->f[s->depth - 1].phase_seq; }
    pthread_mutex_lock(&n->mu);
    pnvtx_link *l = &n->links[corr & n->corr_mask];
    l->corr = corr; l->inner = inner; l->phase = phase;
    pthread_mutex_unlock(&n->mu);
}

int pnvtx_lookup(pnvtx *n, uint32_t corr, char *nvtx, size_t nvtx_cap, char *phase, size_t phase_cap) {
    int found = 0;
    char ph_name[PNVTX_NAME_MAX];
    ph_name[0] = 0;
    if (nvtx_cap) nvtx[0] = 0;
    if (phase_cap) phase[0] = 0;
    pthread_mutex_lock(&n->mu);
    pnvtx_link *l = &n->links[corr & n->corr_mask];
    if (l->corr == corr && corr != 0) {
        found = 1;
        if (l->inner) pnvtx_name_locked(n, l->inner, nvtx, nvtx_cap);
        if (l->phase) pnvtx_name_locked(n, l->phase, ph_name, sizeof ph_name);
    }
    pthread_mutex_unlock(&n->mu);
    if (ph_name[0]) pnvtx_phase_of(n, ph_name, phase, phase_cap);
    return found;
}

void pnvtx_names(pnvtx *n, uint32_t seq, uint32_t phase_seq, char *nvtx, size_t nvtx_cap, char *phase,
                 size_t phase_cap) {
    char ph_name[PNVTX_NAME_MAX];
    ph_name[0] = 0;
    if (nvtx_cap) nvtx[0] = 0;
    if (phase_cap) phase[0] = 0;
    pthread_mutex_lock(&n->mu);
    if (seq) pnvtx_name_locked(n, seq, nvtx, nvtx_cap);
    if (phase_seq) pnvtx_name_locked(n, phase_seq, ph_name, sizeof ph_name);
    pthread_mutex_unlock(&n->mu);
    if (ph_name[0]) pnvtx_phase_of(n, ph_name, phase, phase_cap);
}

void pnvtx_get_stats(pnvtx *n, pnvtx_stats *st) {
    pthread_mutex_lock(&n->mu);
    *st = n->st;
    pthread_mutex_unlock(&n->mu);
}
