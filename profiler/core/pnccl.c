/* pnccl.c: NCCL call <-> launch / graph node matching (see pnccl.h).
 * Eager launches: a direct-mapped table indexed by correlation id (ids grow by one per API
 * call, so a slot is reused only after 2^corr_log2 NCCL launches). Graph nodes: an
 * open-addressing hash (linear probing, tombstones) from node id to an index into the
 * array of captured calls, which clones share. */
#include "pnccl.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pnccl_thread_init(pnccl_thread *t) { memset(t, 0, sizeof *t); }

static void pnccl_merge(ptrace_nccl *g, const ptrace_nccl *c) {
    if (strcmp(g->op, c->op) || strcmp(g->redop, c->redop)) {
        snprintf(g->op, sizeof g->op, "group");
        if (strcmp(g->redop, c->redop)) g->redop[0] = 0;
    }
    if (strcmp(g->dtype, c->dtype)) snprintf(g->dtype, sizeof g->dtype, "mixed");
    g->count += c->count;
    g->bytes += c->bytes;
    g->group_ops += 1;
    g->captured |= c->captured;
}

void pnccl_call_enter(pnccl_thread *t, const ptrace_nccl *c) {
    if (t->depth > 0) {
        if (!t->pending) { t->group = *c; t->group.group_ops = 1; }
        else pnccl_merge(&t->group, c);
        t->pending++;
        return;
    }
    t->cur = *c;
    if (t->cur.group_ops < 1) t->cur.group_ops = 1;
    t->open = 1;
}

void pnccl_call_exit(pnccl_thread *t) {
    if (t->depth == 0) t->open = 0;
}

void pnccl_group_start(pnccl_thread *t) { t->depth++; }

void pnccl_group_end_enter(pnccl_thread *t) {
    if (t->depth == 1 && t->pending) { t->cur = t->group; t->open = 1; }
}

void pnccl_group_end_exit(pnccl_thread *t) {
    if (t->depth > 0) t->depth--;
    if (t->depth == 0) { t->open = 0; t->pending = 0; }
}

const ptrace_nccl *pnccl_thread_current(const pnccl_thread *t) { return t->open ? &t->cur : NULL; }

/* Sizes and names from nccl.h (NCCL 2.28): ncclInt8=0, ncclUint8=1, ncclInt32=2,
 * ncclUint32=3, ncclInt64=4, ncclUint64=5, ncclFloat16=6, ncclFloat32=7, ncclFloat64=8,
 * ncclBfloat16=9, ncclFloat8e4m3=10, ncclFloat8e5m2=11. */
static const struct { const char *name; int bytes; } pnccl_dtypes[] = {
    {"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8},
    {"float16", 2}, {"float32", 4}, {"float64", 8}, {"bfloat16", 2}, {"fp8e4m3", 1}, {"fp8e5m2", 1},
};
static const char *pnccl_redops[] = {"sum", "prod", "max", "min", "avg"};

int pnccl_dtype_bytes(int dtype) {
    if (dtype < 0 || dtype >= (int)(sizeof pnccl_dtypes / sizeof pnccl_dtypes[0])) return 0;
    return pnccl_dtypes[dtype].bytes;
}

int pnccl_describe(ptrace_nccl *c, const char *op, int redop, int dtype, uint64_t count) {
    snprintf(c->op, sizeof c->op, "%s", op);
    if (redop < 0) c->redop[0] = 0;
    else snprintf(c->redop, sizeof c->redop, "%s", redop < 5 ? pnccl_redops[redop] : "custom");
    c->count = count;
    int b = pnccl_dtype_bytes(dtype);
    if (!b) { snprintf(c->dtype, sizeof c->dtype, "unknown"); c->bytes = 0; return -1; }
    snprintf(c->dtype, sizeof c->dtype, "%s", pnccl_dtypes[dtype].name);
    c->bytes = count * (uint64_t)b;
    return 0;
}

typedef struct { uint32_t corr; int used; ptrace_nccl call; } pnccl_corr_slot;
typedef struct { uint64_t node; uint32_t call; } pnccl_node_slot;  /* node 0: empty */
#define PNCCL_TOMB UINT64_MAX

struct pnccl_map {
    pthread_mutex_t mu;
    uint32_t corr_mask, node_mask;
    pnccl_corr_slot *corr;
    pnccl_node_slot *nodes;
    size_t nodes_used;          /* live + tombstones */
    ptrace_nccl *calls;         /* captured calls, shared by a node and its clones */
    size_t n_calls, cap_calls, max_calls;
    pnccl_stats st;
};

pnccl_map *pnccl_map_create(unsigned corr_log2, unsigned node_log2) {
    if (corr_log2 > 24 || node_log2 > 24) return NULL;
    pnccl_map *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->corr_mask = (1u << corr_log2) - 1;
    m->node_mask = (1u << node_log2) - 1;
    m->corr = calloc((size_t)m->corr_mask + 1, sizeof *m->corr);
    m->nodes = calloc((size_t)m->node_mask + 1, sizeof *m->nodes);
    m->max_calls = (size_t)m->node_mask + 1;
    if (!m->corr || !m->nodes) { pnccl_map_destroy(m); return NULL; }
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void pnccl_map_destroy(pnccl_map *m) {
    if (!m) return;
    free(m->corr); free(m->nodes); free(m->calls);
    free(m);
}

void pnccl_map_add_corr(pnccl_map *m, uint32_t corr, const ptrace_nccl *c) {
    pthread_mutex_lock(&m->mu);
    pnccl_corr_slot *s = &m->corr[corr & m->corr_mask];
    s->corr = corr; s->used = 1; s->call = *c;
    m->st.corr_added++;
    pthread_mutex_unlock(&m->mu);
}

static uint32_t pnccl_hash(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
    return (uint32_t)k;
}

/* Slot holding node, or NULL. Caller holds the lock. */
static pnccl_node_slot *pnccl_node_find(pnccl_map *m, uint64_t node) {
    uint32_t i = pnccl_hash(node) & m->node_mask;
    for (uint32_t n = 0; n <= m->node_mask; n++, i = (i + 1) & m->node_mask) {
        pnccl_node_slot *s = &m->nodes[i];
        if (s->node == 0) return NULL;
        if (s->node == node) return s;
    }
    return NULL;
}

/* Drops tombstones by re-inserting the live nodes. Caller holds the lock. */
static void pnccl_node_rehash(pnccl_map *m) {
    size_t n = (size_t)m->node_mask + 1;
    pnccl_node_slot *old = m->nodes, *fresh = calloc(n, sizeof *fresh);
    if (!fresh) return;
    m->nodes = fresh;
    m->nodes_used = 0;
    for (size_t k = 0; k < n; k++) {
        if (old[k].node == 0 || old[k].node == PNCCL_TOMB) continue;
        uint32_t i = pnccl_hash(old[k].node) & m->node_mask;
        while (fresh[i].node) i = (i + 1) & m->node_mask;
        fresh[i] = old[k];
        m->nodes_used++;
    }
    free(old);
}

/* Inserts or overwrites node -> call; -1 when full (3/4 load). Caller holds the lock. */
static int pnccl_node_put(pnccl_map *m, uint64_t node, uint32_t call) {
    pnccl_node_slot *s = pnccl_node_find(m, node);
    if (s) { s->call = call; return 0; }
    size_t limit = ((size_t)m->node_mask + 1) * 3;
    if ((m->nodes_used + 1) * 4 > limit && (size_t)m->st.nodes_live * 2 < m->nodes_used)
        pnccl_node_rehash(m);
    if ((m->nodes_used + 1) * 4 > limit) return -1;
    uint32_t i = pnccl_hash(node) & m->node_mask;
    while (m->nodes[i].node != 0 && m->nodes[i].node != PNCCL_TOMB) i = (i + 1) & m->node_mask;
    if (m->nodes[i].node == 0) m->nodes_used++;
    m->nodes[i].node = node;
    m->nodes[i].call = call;
    m->st.nodes_live++;
    return 0;
}

int pnccl_map_add_node(pnccl_map *m, uint64_t node_id, const ptrace_nccl *c) {
    if (node_id == 0 || node_id == PNCCL_TOMB) return -1;
    int rc = -1;
    pthread_mutex_lock(&m->mu);
    if (m->n_calls == m->cap_calls && m->n_calls < m->max_calls) {
        size_t nc = m->cap_calls ? m->cap_calls * 2 : 64;
        if (nc > m->max_calls) nc = m->max_calls;
        ptrace_nccl *n = realloc(m->calls, nc * sizeof *n);
        if (n) { m->calls = n; m->cap_calls = nc; }
    }
    /* consecutive nodes of one call share its entry */
    uint32_t idx;
    if (m->n_calls && m->calls[m->n_calls - 1].seq == c->seq && c->seq != 0) idx = (uint32_t)(m->n_calls - 1);
    else if (m->n_calls < m->cap_calls) { idx = (uint32_t)m->n_calls++; m->calls[idx] = *c; }
    else { m->st.full++; goto out; }
    if (pnccl_node_put(m, node_id, idx)) { m->st.full++; goto out; }
    m->st.nodes_added++;
    rc = 0;
out:
    m->st.calls_kept = (int64_t)m->n_calls;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int pnccl_map_clone_node(pnccl_map *m, uint64_t orig_id, uint64_t clone_id) {
    if (orig_id == 0 || clone_id == 0 || clone_id == PNCCL_TOMB) return 0;
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    if (m->st.nodes_live) {
        pnccl_node_slot *s = pnccl_node_find(m, orig_id);
        if (s) {
            uint32_t call = s->call;
            if (pnccl_node_put(m, clone_id, call)) { m->st.full++; rc = -1; }
            else { m->st.clones_added++; rc = 1; }
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void pnccl_map_forget_corrs(pnccl_map *m) {
    pthread_mutex_lock(&m->mu);
    memset(m->corr, 0, ((size_t)m->corr_mask + 1) * sizeof *m->corr);
    pthread_mutex_unlock(&m->mu);
}

void pnccl_map_forget_node(pnccl_map *m, uint64_t node_id) {
    if (node_id == 0) return;
    pthread_mutex_lock(&m->mu);
    if (m->st.nodes_live) {
        pnccl_node_slot *s = pnccl_node_find(m, node_id);
        if (s) { s->node = PNCCL_TOMB; m->st.nodes_live--; }
    }
    pthread_mutex_unlock(&m->mu);
}

int pnccl_map_find(pnccl_map *m, uint32_t corr, uint64_t node_id, ptrace_nccl *out) {
    int found = 0;
    pthread_mutex_lock(&m->mu);
    if (node_id) {
        if (m->st.nodes_live) {
            pnccl_node_slot *s = pnccl_node_find(m, node_id);
            if (s) { *out = m->calls[s->call]; found = 1; }
        }
    } else {
        pnccl_corr_slot *s = &m->corr[corr & m->corr_mask];
        if (s->used && s->corr == corr) { *out = s->call; found = 1; }
    }
    if (found) m->st.found++;
    pthread_mutex_unlock(&m->mu);
    return found;
}

void pnccl_map_stats(pnccl_map *m, pnccl_stats *s) {
    pthread_mutex_lock(&m->mu);
    *s = m->st;
    pthread_mutex_unlock(&m->mu);
}
