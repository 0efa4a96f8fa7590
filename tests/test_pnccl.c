/* test_pnccl.c: NCCL call <-> launch matching (profiler/core/pnccl) on synthetic CUPTI
 * sequences: eager calls by correlation id, calls inside stream capture by graph node,
 * followed through cudaGraphInstantiate's clones to the replayed records, groups. */
#include "check.h"
#include "pnccl.h"
#include <string.h>

static ptrace_nccl call(const char *op, int redop, int dtype, uint64_t count, uint32_t seq, int captured) {
    ptrace_nccl c;
    memset(&c, 0, sizeof c);
    pnccl_describe(&c, op, redop, dtype, count);
    c.comm_size = 8; c.rank = 2; c.root_or_peer = -1; c.seq = seq; c.captured = captured;
    return c;
}

static void pnccl_describe_uses_nccl_enum_sizes(void) {
    ptrace_nccl c;
    /* nccl.h: ncclBfloat16 = 9 (2 B), ncclFloat32 = 7 (4 B), ncclInt64 = 4, ncclFloat8e5m2 = 11, ncclAvg = 4 */
    CHECK(pnccl_describe(&c, "allreduce", 0, 9, 7168) == 0 && c.bytes == 14336 && !strcmp(c.dtype, "bfloat16"),
          "bf16 %llu %s", (unsigned long long)c.bytes, c.dtype);
    CHECK(!strcmp(c.redop, "sum"), "redop %s", c.redop);
    CHECK(pnccl_describe(&c, "allgather", -1, 7, 1000) == 0 && c.bytes == 4000 && c.redop[0] == 0, "f32");
    CHECK(pnccl_describe(&c, "reduce", 4, 4, 3) == 0 && c.bytes == 24 && !strcmp(c.redop, "avg"), "int64 avg");
    CHECK(pnccl_describe(&c, "allreduce", 7, 11, 5) == 0 && c.bytes == 5 && !strcmp(c.redop, "custom"), "fp8 custom");
    CHECK(pnccl_describe(&c, "allreduce", 0, 12, 5) == -1 && c.bytes == 0 && !strcmp(c.dtype, "unknown"), "bad dtype");
    CHECK(pnccl_dtype_bytes(-1) == 0 && pnccl_dtype_bytes(6) == 2 && pnccl_dtype_bytes(8) == 8, "sizes");
}

/* eager: ncclAllReduce opens, NCCL launches (cuLaunchKernelEx corr 41), closes; an
 * unrelated launch (corr 42) after it must not match */
static void pnccl_eager_launch_matches_by_corr(void) {
    pnccl_map *m = pnccl_map_create(10, 10);
    pnccl_thread t;
    pnccl_thread_init(&t);
    ptrace_nccl c = call("allreduce", 0, 9, 7168, 1, 0), out;
    CHECK(pnccl_thread_current(&t) == NULL, "nothing open");
    pnccl_call_enter(&t, &c);
    const ptrace_nccl *cur = pnccl_thread_current(&t);
    CHECK(cur && cur->seq == 1, "open");
    if (cur) pnccl_map_add_corr(m, 41, cur);
    pnccl_call_exit(&t);
    CHECK(pnccl_thread_current(&t) == NULL, "closed");
    CHECK(pnccl_map_find(m, 41, 0, &out) == 1 && out.bytes == 14336 && out.seq == 1, "kernel corr 41");
    CHECK(pnccl_map_find(m, 42, 0, &out) == 0, "corr 42 is not NCCL");
    /* a corr colliding in the direct-mapped table (41 + 1024) replaces, never aliases */
    CHECK(pnccl_map_find(m, 41 + 1024, 0, &out) == 0, "alias");
    pnccl_map_destroy(m);
}

/* capture: during ncclAllReduce inside stream capture, NCCL's launch creates node 501
 * (and a memcpy node 502 for the 1-rank path); instantiate clones 500->900, 501->901,
 * 502->902; replay kernel records carry graphNodeId 901/902 and the graph launch's corr */
static void pnccl_captured_call_follows_clones_to_replay(void) {
    pnccl_map *m = pnccl_map_create(10, 10);
    pnccl_thread t;
    pnccl_thread_init(&t);
    ptrace_nccl c = call("allreduce", 0, 7, 1 << 20, 7, 1), out;
    /* node 500: a user kernel captured before the call */
    pnccl_call_enter(&t, &c);
    CHECK(pnccl_map_add_node(m, 501, pnccl_thread_current(&t)) == 0, "node 501");
    CHECK(pnccl_map_add_node(m, 502, pnccl_thread_current(&t)) == 0, "node 502");
    pnccl_call_exit(&t);
    CHECK(pnccl_map_clone_node(m, 500, 900) == 0, "500 is not NCCL");
    CHECK(pnccl_map_clone_node(m, 501, 901) == 1, "clone 501");
    CHECK(pnccl_map_clone_node(m, 502, 902) == 1, "clone 502");
    /* a second instantiation of the same graph: clones of the originals again */
    CHECK(pnccl_map_clone_node(m, 501, 1901) == 1, "second exec");
    /* replay records: corr is the cudaGraphLaunch's (77), not an NCCL corr */
    CHECK(pnccl_map_find(m, 77, 901, &out) == 1 && out.seq == 7 && out.captured == 1 && out.bytes == 4u << 20,
          "replayed node 901");
    CHECK(pnccl_map_find(m, 77, 902, &out) == 1 && out.seq == 7, "replayed memcpy node 902");
    CHECK(pnccl_map_find(m, 77, 1901, &out) == 1, "second exec node");
    CHECK(pnccl_map_find(m, 77, 900, &out) == 0, "user kernel node");
    CHECK(pnccl_map_find(m, 77, 0, &out) == 0, "graph launch corr is not an NCCL launch");
    pnccl_stats st;
    pnccl_map_stats(m, &st);
    CHECK(st.nodes_added == 2 && st.clones_added == 3 && st.calls_kept == 1, "stats nodes %lld clones %lld calls %lld",
          (long long)st.nodes_added, (long long)st.clones_added, (long long)st.calls_kept);
    /* the exec graph is destroyed: its nodes are forgotten, the originals stay */
    pnccl_map_forget_node(m, 901);
    CHECK(pnccl_map_find(m, 77, 901, &out) == 0 && pnccl_map_find(m, 77, 501, &out) == 1, "forget");
    pnccl_map_destroy(m);
}

/* ncclGroupStart; two allreduces and a reducescatter; ncclGroupEnd launches once:
 * the launch inside ncclGroupEnd carries the merge */
static void pnccl_group_merges_calls_into_one_launch(void) {
    pnccl_map *m = pnccl_map_create(8, 8);
    pnccl_thread t;
    pnccl_thread_init(&t);
    ptrace_nccl a = call("allreduce", 0, 9, 100, 1, 0), b = call("allreduce", 0, 9, 50, 2, 0), out;
    ptrace_nccl r = call("reducescatter", 0, 9, 10, 3, 0);
    pnccl_group_start(&t);
    pnccl_call_enter(&t, &a);
    CHECK(pnccl_thread_current(&t) == NULL, "no launch inside a group");
    pnccl_call_exit(&t);
    pnccl_call_enter(&t, &b); pnccl_call_exit(&t);
    pnccl_group_start(&t);                       /* nested group */
    pnccl_call_enter(&t, &r); pnccl_call_exit(&t);
    pnccl_group_end_enter(&t);
    CHECK(pnccl_thread_current(&t) == NULL, "inner group end does not launch");
    pnccl_group_end_exit(&t);
    pnccl_group_end_enter(&t);
    const ptrace_nccl *cur = pnccl_thread_current(&t);
    CHECK(cur != NULL, "outer group end launches");
    if (cur) {
        CHECK(cur->group_ops == 3 && cur->count == 160 && cur->bytes == 320 && !strcmp(cur->op, "group") &&
              !strcmp(cur->dtype, "bfloat16") && cur->seq == 1, "merge op %s ops %d count %llu", cur->op,
              cur->group_ops, (unsigned long long)cur->count);
        pnccl_map_add_corr(m, 9, cur);
    }
    pnccl_group_end_exit(&t);
    CHECK(pnccl_thread_current(&t) == NULL && t.depth == 0 && t.pending == 0, "reset");
    CHECK(pnccl_map_find(m, 9, 0, &out) == 1 && out.group_ops == 3, "group launch");
    /* same op in a group keeps its name */
    pnccl_group_start(&t);
    pnccl_call_enter(&t, &a); pnccl_call_exit(&t);
    pnccl_call_enter(&t, &b); pnccl_call_exit(&t);
    pnccl_group_end_enter(&t);
    cur = pnccl_thread_current(&t);
    CHECK(cur && !strcmp(cur->op, "allreduce") && cur->group_ops == 2 && cur->count == 150, "same-op group");
    pnccl_group_end_exit(&t);
    /* an empty group launches nothing */
    pnccl_group_start(&t);
    pnccl_group_end_enter(&t);
    CHECK(pnccl_thread_current(&t) == NULL, "empty group");
    pnccl_group_end_exit(&t);
    pnccl_map_destroy(m);
}

/* a slow obvious model: 3000 random operations on the node table against a plain array */
static uint64_t rs = 12345;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }

static void pnccl_node_table_agrees_with_brute_force(void) {
    enum { N = 400 };
    pnccl_map *m = pnccl_map_create(6, 10);   /* 1024 node slots, 768 usable */
    static uint32_t ref[N + 1];               /* node id -> call seq, 0 none */
    memset(ref, 0, sizeof ref);
    int bad = 0;
    for (int step = 0; step < 3000; step++) {
        uint64_t node = 1 + rnd() % N;
        int op = (int)(rnd() % 4);
        ptrace_nccl c = call("allreduce", 0, 7, 4, (uint32_t)(1 + step), 1), out;
        if (op == 0) { if (pnccl_map_add_node(m, node, &c) == 0) ref[node] = c.seq; }
        else if (op == 1) {
            uint64_t clone = 1 + rnd() % N;
            int rc = pnccl_map_clone_node(m, node, clone);
            if (rc == 1) ref[clone] = ref[node];
            if ((rc == 1) != (ref[node] != 0) && rc != -1) { bad++; CHECK(0, "clone %llu rc %d ref %u", (unsigned long long)node, rc, ref[node]); }
        } else if (op == 2) { pnccl_map_forget_node(m, node); ref[node] = 0; }
        else {
            int f = pnccl_map_find(m, 5, node, &out);
            if (f != (ref[node] != 0) || (f && out.seq != ref[node])) {
                bad++; CHECK(0, "step %d node %llu found %d seq %u ref %u", step, (unsigned long long)node, f, f ? out.seq : 0, ref[node]);
            }
        }
        if (bad > 5) break;
    }
    for (uint64_t n = 1; n <= N; n++) {
        ptrace_nccl out;
        int f = pnccl_map_find(m, 5, n, &out);
        if (f != (ref[n] != 0)) { CHECK(0, "final node %llu", (unsigned long long)n); break; }
    }
    pnccl_map_destroy(m);
}

static void pnccl_full_table_fails_cleanly(void) {
    pnccl_map *m = pnccl_map_create(4, 4);    /* 16 slots: 12 usable */
    ptrace_nccl c = call("allreduce", 0, 7, 4, 1, 1), out;
    int ok = 0, full = 0;
    for (uint64_t n = 1; n <= 20; n++) { c.seq = (uint32_t)n; if (pnccl_map_add_node(m, n, &c) == 0) ok++; else full++; }
    CHECK(ok == 12 && full == 8, "ok %d full %d", ok, full);
    CHECK(pnccl_map_find(m, 0, 12, &out) == 1 && out.seq == 12 && pnccl_map_find(m, 0, 13, &out) == 0, "contents");
    pnccl_stats st;
    pnccl_map_stats(m, &st);
    CHECK(st.full == 8, "full count %lld", (long long)st.full);
    CHECK(pnccl_map_create(25, 4) == NULL, "oversized table refused");
    pnccl_map_destroy(NULL);
    pnccl_map_destroy(m);
}

int main(void) {
    RUN(pnccl_describe_uses_nccl_enum_sizes);
    RUN(pnccl_eager_launch_matches_by_corr);
    RUN(pnccl_captured_call_follows_clones_to_replay);
    RUN(pnccl_group_merges_calls_into_one_launch);
    RUN(pnccl_node_table_agrees_with_brute_force);
    RUN(pnccl_full_table_fails_cleanly);
    return check_done();
}
