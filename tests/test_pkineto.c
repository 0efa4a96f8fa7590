/* test_pkineto: the streaming readers (profiler/core psrc, pgz, pjstream, pkineto) and the
 * importer table (models/timport): the splitter fed a few bytes at a time agrees with one
 * parse of the whole document, gzip reads like the plain file, the Kineto fixture's fields
 * land in the typed records exactly, and the importer is chosen by content. */
#include "check.h"
#include "pgz.h"
#include "pjson.h"
#include "pjstream.h"
#include "pkineto.h"
#include "ptrace_write.h"
#include "timport.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define FIXTURE "tests/data/kineto/sglang-eagle-tiny.trace.json"

static char *slurp(const char *path, size_t *len)
{
    char err[256], *t;
    if (pgz_slurp(path, (size_t)1 << 30, &t, len, err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        return NULL;
    }
    return t;
}

/* The committed fixture, or NULL with a failed check naming it: a test without it stops there
 * (it crashed on the NULL). */
static char *fixture(size_t *len)
{
    char *t = slurp(FIXTURE, len);
    CHECK(t != NULL, "%s: the committed fixture cannot be read", FIXTURE);
    return t;
}

/* A source that hands out 1..13 bytes per read (seeded), to cut every token somewhere. */
typedef struct { psrc base; const char *t; size_t len, pos; uint64_t x; } drip;
static ssize_t drip_read(psrc *s, char *buf, size_t cap, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    drip *d = (drip *)s;
    d->x ^= d->x << 13; d->x ^= d->x >> 7; d->x ^= d->x << 17;
    size_t n = 1 + (size_t)(d->x % 13);
    if (n > cap) n = cap;
    if (n > d->len - d->pos) n = d->len - d->pos;
    memcpy(buf, d->t + d->pos, n);
    d->pos += n;
    return (ssize_t)n;
}

/* What the splitter hands out, rewritten compactly (pjson_write) into one string. */
typedef struct { char *out; size_t len, cap; pjson_arena *a; int bad; } collect;
static void col_add(collect *c, const char *tag, const char *text, size_t n)
{
    pjson *v;
    char err[128], buf[1 << 16];
    pjson_arena_reset(c->a);
    if (pjson_parse(c->a, text, n, 0, &v, err, sizeof err) || pjson_write(v, buf, sizeof buf) < 0) {
        c->bad++;
        return;
    }
    size_t k = strlen(tag) + strlen(buf) + 2;
    if (c->len + k + 1 > c->cap) {
        c->cap = (c->len + k + 1) * 2;
        c->out = realloc(c->out, c->cap);
    }
    c->len += (size_t)sprintf(c->out + c->len, "%s%s\n", tag, buf);
}
static int col_member(void *u, const char *key, const char *val, size_t n)
{
    char tag[300];
    snprintf(tag, sizeof tag, "M %s ", key);
    col_add(u, tag, val, n);
    return 0;
}
static int col_elem(void *u, const char *text, size_t n)
{
    col_add(u, "E ", text, n);
    return 0;
}

/* The same from one parse of the whole document. */
static void whole(const char *text, size_t len, const char *key, collect *c)
{
    pjson_arena *a = pjson_arena_create();
    pjson *v;
    char err[128];
    if (pjson_parse(a, text, len, 0, &v, err, sizeof err)) {
        c->bad++;
        pjson_arena_destroy(a);
        return;
    }
    char buf[1 << 16];
    if (v->type == PJSON_ARR) {
        for (size_t i = 0; i < v->len; i++) {
            pjson_write(v->items[i], buf, sizeof buf);
            col_add(c, "E ", buf, strlen(buf));
        }
    } else {
        for (size_t i = 0; i < v->len; i++) {
            const pjson *m = v->members[i].val;
            if (strcmp(v->members[i].key, key) == 0 && m->type == PJSON_ARR) {
                for (size_t j = 0; j < m->len; j++) {
                    pjson_write(m->items[j], buf, sizeof buf);
                    col_add(c, "E ", buf, strlen(buf));
                }
            } else {
                char tag[300];
                snprintf(tag, sizeof tag, "M %s ", v->members[i].key);
                pjson_write(m, buf, sizeof buf);
                col_add(c, tag, buf, strlen(buf));
            }
        }
    }
    pjson_arena_destroy(a);
}

static void pjstream_agrees_with_a_whole_parse_at_any_cut(void)
{
    size_t flen;
    char *fix = fixture(&flen);
    if (!fix)
        return;
    const char *docs[] = {
        fix,
        "{\"a\": \"x]}\\\"{[\", \"traceEvents\": [ {\"s\": \"\\\\\", \"n\": [1, {\"b\": []}]} ,"
        "{\"t\":\"}\"} , 17, \"str\" , [] ], \"z\": {\"q\": [true, false, null, -1.5e3]}}",
        "  [ {\"ph\":\"X\"}, {\"ph\":\"M\",\"args\":{\"k\":\"v\\\"\"}} ]  ",
        "{\"traceEvents\": []}",
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        size_t len = d == 0 ? flen : strlen(docs[d]);
        collect ref = {0}, got = {0};
        ref.a = pjson_arena_create();
        got.a = pjson_arena_create();
        whole(docs[d], len, "traceEvents", &ref);
        for (int seed = 1; seed <= 3; seed++) {
            drip s = {{drip_read, "drip", 0}, docs[d], len, 0, 0x9e3779b97f4a7c15ull * (uint64_t)seed};
            pjstream_cb cb = {col_member, col_elem, &got};
            pjstream_info info;
            char err[256];
            got.len = 0;
            int rc = pjstream_run(&s.base, "traceEvents", &cb, 1 << 20, &info, err, sizeof err);
            CHECK(rc == 0, "doc %zu seed %d: %s", d, seed, err);
            CHECK(info.complete, "doc %zu: complete", d);
            CHECK(got.len == ref.len && (!ref.len || memcmp(got.out, ref.out, ref.len) == 0),
                  "doc %zu seed %d: split differs:\n%.*s\nvs whole parse:\n%.*s", d, seed,
                  (int)(got.len < 400 ? got.len : 400), got.out ? got.out : "",
                  (int)(ref.len < 400 ? ref.len : 400), ref.out ? ref.out : "");
        }
        CHECK(ref.bad == 0 && got.bad == 0, "doc %zu: unparsable pieces %d %d", d, ref.bad, got.bad);
        free(ref.out);
        free(got.out);
        pjson_arena_destroy(ref.a);
        pjson_arena_destroy(got.a);
    }
    free(fix);
}

static void pjstream_reports_a_cut_document_and_refuses_garbage(void)
{
    size_t flen;
    char *fix = fixture(&flen);
    if (!fix)
        return;
    /* cut inside the 40th event: 39 whole events, not complete */
    const char *p = fix;
    for (int i = 0; i < 45 && p; i++)
        p = strstr(p + 1, "\"ph\"");
    psrc_mem m;
    psrc_mem_init(&m, fix, (size_t)(p - fix) + 10, "cut.json");
    pjstream_cb cb = {NULL, NULL, NULL};
    pjstream_info info;
    char err[256];
    CHECK(pjstream_run(&m.base, "traceEvents", &cb, 1 << 20, &info, err, sizeof err) == 0, "%s", err);
    CHECK(!info.complete && info.elements == 44, "complete %d elements %zu", info.complete, info.elements);
    const char *bad[] = {"", "hello", "{\"a\" 1}", "{\"traceEvents\": [1 2]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        psrc_mem_init(&m, bad[i], strlen(bad[i]), "bad.json");
        err[0] = 0;
        CHECK(pjstream_run(&m.base, "traceEvents", &cb, 1 << 20, &info, err, sizeof err) == -1 &&
              strstr(err, "bad.json"), "'%s' accepted or message '%s'", bad[i], err);
    }
    free(fix);
}

/* Writes text as gzip into path, in `members` concatenated gzip members. */
static int write_gz(const char *path, const char *text, size_t len, int members)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t part = len / (size_t)members + 1, off = 0;
    for (int k = 0; k < members && off < len; k++) {
        size_t n = len - off < part ? len - off : part;
        z_stream z;
        memset(&z, 0, sizeof z);
        deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        unsigned char *o = malloc(n + 1024);
        z.next_in = (unsigned char *)text + off;
        z.avail_in = (uInt)n;
        z.next_out = o;
        z.avail_out = (uInt)(n + 1024);
        deflate(&z, Z_FINISH);
        fwrite(o, 1, (size_t)(z.next_out - o), f);
        deflateEnd(&z);
        free(o);
        off += n;
    }
    return fclose(f);
}

static char tmpdir[64];

static void pgz_reads_gzip_like_the_plain_file(void)
{
    size_t flen, glen;
    char *fix = fixture(&flen), err[256], path[128];
    if (!fix)
        return;
    snprintf(path, sizeof path, "%s/t.json.gz", tmpdir);
    CHECK(write_gz(path, fix, flen, 3) == 0, "write gz");
    char *g = slurp(path, &glen);
    CHECK(g && glen == flen && memcmp(g, fix, flen) == 0, "inflated %zu bytes vs %zu", glen, flen);
    free(g);
    /* cut the compressed file in the middle: an error naming the file, not a short read */
    FILE *f = fopen(path, "rb");
    unsigned char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    f = fopen(path, "wb");
    CHECK(n > 0 && f, "%s: %zu bytes", path, n);
    if (f) {
        fwrite(buf, 1, n / 2, f);
        fclose(f);
    }
    char *t;
    size_t tl;
    CHECK(pgz_slurp(path, 1 << 30, &t, &tl, err, sizeof err) == -1 && strstr(err, "cut off") &&
          strstr(err, "t.json.gz"), "message '%s'", err);
    free(fix);
}

/* ---- Kineto fields ------------------------------------------------------------------------- */

typedef struct {
    int nk, nm, na, nr, ng;
    ptrace_kernel k_nccl, k_first;
    char k_first_name[128];
    ptrace_mem m_copy;
    char copy_kind[16];
    ptrace_api a_first;
    char a_names[512];
    ptrace_range g_first;
    char r_names[1024];
} seen;

static int s_kernel(void *u, const ptrace_kernel *k)
{
    seen *s = u;
    if (s->nk++ == 0) {
        s->k_first = *k;
        snprintf(s->k_first_name, sizeof s->k_first_name, "%s", k->name);
    }
    if (k->has_nccl)
        s->k_nccl = *k;
    return 0;
}
static int s_mem(void *u, const ptrace_mem *m)
{
    seen *s = u;
    if (m->kind == PTRACE_MEMCPY && s->copy_kind[0] == 0) {
        s->m_copy = *m;
        snprintf(s->copy_kind, sizeof s->copy_kind, "%s", m->copy_kind);
    }
    s->nm++;
    return 0;
}
static int s_api(void *u, const ptrace_api *a)
{
    seen *s = u;
    if (s->na++ == 0)
        s->a_first = *a;
    if (strlen(s->a_names) + strlen(a->name) + 2 < sizeof s->a_names && !strstr(s->a_names, a->name)) {
        strcat(s->a_names, a->name);
        strcat(s->a_names, ",");
    }
    return 0;
}
static int s_range(void *u, const ptrace_range *r)
{
    seen *s = u;
    s->nr++;
    if (strlen(s->r_names) + strlen(r->name) + 2 < sizeof s->r_names && !strstr(s->r_names, r->name)) {
        strcat(s->r_names, r->name);
        strcat(s->r_names, "|");
    }
    return 0;
}
static int s_grange(void *u, const ptrace_range *r)
{
    seen *s = u;
    if (s->ng++ == 0)
        s->g_first = *r;
    return 0;
}

static void pkineto_reads_the_fixture_fields(void)
{
    size_t flen;
    char *fix = fixture(&flen), err[256];
    if (!fix)
        return;
    CHECK(pkineto_probe(fix, flen > 4096 ? 4096 : flen), "probe");
    seen s;
    memset(&s, 0, sizeof s);
    pkineto_cb cb = {s_kernel, s_mem, s_api, s_range, s_grange, NULL, &s};
    pkineto_info I;
    psrc_mem m;
    psrc_mem_init(&m, fix, flen, FIXTURE);
    CHECK(pkineto_scan(&m.base, &cb, &I, err, sizeof err) == 0, "%s", err);
    /* per round: draft 2, verify 3, sample 1, extend 2 kernels; a copy and a set */
    CHECK(I.kernels == 16 && s.nk == 16, "kernels %zu", I.kernels);
    CHECK(I.mems == 4 && s.nm == 4, "mems %zu", I.mems);
    /* the two cudaStreamSynchronize are kept (specprof records them: the fit tells waits
     * from launch cost) */
    CHECK(I.apis == 14 && I.apis_other == 0, "apis %zu kept, %zu other", I.apis, I.apis_other);
    CHECK(I.ranges == 14 && I.gpu_ranges == 4, "ranges %zu gpu %zu", I.ranges, I.gpu_ranges);
    CHECK(I.cpu_ops == 2 && I.python_functions == 2 && I.flows == 14 && I.metadata == 6,
          "cpu_op %zu python %zu flows %zu meta %zu", I.cpu_ops, I.python_functions, I.flows, I.metadata);
    CHECK(I.complete && I.window_end && I.has_base_time && I.schema_version == 1, "document");
    CHECK(I.bad_events == 0, "%s", I.first_bad);
    /* exact ns: base 1759000000000000000 + ts 1011.000 us */
    CHECK(s.k_first.start_ns == 1759000000000000000LL + 1011000 && s.k_first.end_ns - s.k_first.start_ns == 5000,
          "first kernel %lld..%lld", (long long)s.k_first.start_ns, (long long)s.k_first.end_ns);
    CHECK(s.k_first.corr == 101 && s.k_first.stream == 7 && s.k_first.dev == 0 && s.k_first.grid[0] == 132 &&
          s.k_first.block[0] == 256 && s.k_first.regs == 128 && s.k_first.smem_bytes == 49152 &&
          s.k_first.graph_id == 0, "kernel args corr %u stream %u grid %d regs %d smem %d", s.k_first.corr,
          s.k_first.stream, s.k_first.grid[0], s.k_first.regs, s.k_first.smem_bytes);
    CHECK(strcmp(s.k_first_name, "void draft_attn_kernel<128>(__nv_bfloat16*, int)") == 0, "%s", s.k_first_name);
    CHECK(s.k_nccl.has_nccl && strcmp(s.k_nccl.nccl.op, "allreduce") == 0 &&
          strcmp(s.k_nccl.nccl.dtype, "bfloat16") == 0 && s.k_nccl.nccl.count == 49152 &&
          s.k_nccl.nccl.bytes == 98304 && s.k_nccl.nccl.comm_size == 2, "nccl %s %s %llu %llu %d",
          s.k_nccl.nccl.op, s.k_nccl.nccl.dtype, (unsigned long long)s.k_nccl.nccl.count,
          (unsigned long long)s.k_nccl.nccl.bytes, s.k_nccl.nccl.comm_size);
    CHECK(I.nccl_kernels == 2, "nccl kernels %zu", I.nccl_kernels);
    CHECK(strcmp(s.copy_kind, "DtoH") == 0 && s.m_copy.bytes == 48 && s.m_copy.corr > 0, "copy %s %llu",
          s.copy_kind, (unsigned long long)s.m_copy.bytes);
    CHECK(strcmp(s.a_names, "cudaGraphLaunch,cudaLaunchKernel,cudaMemcpyAsync,cudaStreamSynchronize,"
                 "cudaMemsetAsync,") == 0,
          "api names %s", s.a_names);
    CHECK(s.a_first.corr == 101 && s.a_first.cbid == 311 && s.a_first.thread == 4242 && !s.a_first.domain_driver,
          "api corr %u cbid %u thread %lld", s.a_first.corr, s.a_first.cbid, (long long)s.a_first.thread);
    CHECK(strstr(s.r_names, "draft|verify|step[TARGET_VERIFY bs=3]|verify_sample|draft_extend|") ||
          strstr(s.r_names, "step[TARGET_VERIFY bs=3]"), "ranges %s", s.r_names);
    /* gpu_user_annotation: Kineto widened it by 1 ns on each side; the reader takes it back */
    CHECK(s.g_first.start_ns == 1759000000000000000LL + 1011000 && s.g_first.end_ns - s.g_first.start_ns == 12500 &&
          strcmp(s.g_first.domain, "gpu") == 0 && s.g_first.thread == 7, "gpu span %lld +%lld",
          (long long)s.g_first.start_ns, (long long)(s.g_first.end_ns - s.g_first.start_ns));
    CHECK(strcmp(I.hdr.device.name, "NVIDIA H200") == 0 && I.hdr.device.sms == 132 && I.hdr.device.cc_major == 9 &&
          I.hdr.device.mem_bytes == 150110011392LL, "device %s sms %d", I.hdr.device.name, I.hdr.device.sms);
    CHECK(I.has_dist_info && I.hdr.rank == 0 && I.hdr.world_size == 2 && I.hdr.pid_os == 4242 &&
          I.hdr.t0_ns == 1759000000000000000LL, "rank %d/%d pid %lld", I.hdr.rank, I.hdr.world_size,
          (long long)I.hdr.pid_os);
    free(fix);
}

/* SGLang's --merge-profiles (utils/profile_merger.py) puts every rank in one file, each pid
 * turned into "[TP00] 4242": the first rank is read, the others counted and skipped (they
 * were all read as one rank: two ranks' kernels and spans as one program's). */
static void pkineto_reads_one_rank_of_a_merged_trace(void)
{
    static const char doc[] =
        "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", \"numSms\": 132}, "
        "{\"id\": 1, \"name\": \"NVIDIA H200\", \"numSms\": 132}], \"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": \"[TP00] 4242\", \"tid\": 4242, "
        "\"ts\": 1000.0, \"dur\": 20.0},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"verify_kernel_with_a_name_long_enough_to_push_the_pid_past_"
        "the_first_one_hundred_and_sixty_bytes_of_the_event_text_as_kernel_names_do\", \"pid\": \"[TP00] 0\", "
        "\"tid\": 7, \"ts\": 1005.0, \"dur\": 5.0, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 1}},"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": \"[TP01] 4343\", \"tid\": 4343, "
        "\"ts\": 1000.0, \"dur\": 20.0},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"verify_kernel\", \"pid\": \"[TP01] 1\", \"tid\": 7, "
        "\"ts\": 1005.0, \"dur\": 5.0, \"args\": {\"device\": 1, \"stream\": 7, \"correlation\": 1}},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": \"[TP01] 4343\", \"tid\": 4343, "
        "\"ts\": 1001.0, \"dur\": 2.0}"
        "], \"distributedInfo\": {\"rank\": 0, \"world_size\": 2}}";
    seen s;
    memset(&s, 0, sizeof s);
    pkineto_cb cb = {s_kernel, s_mem, s_api, s_range, s_grange, NULL, &s};
    pkineto_info I;
    psrc_mem m;
    char err[256] = "";
    psrc_mem_init(&m, doc, sizeof doc - 1, "merged");
    CHECK(pkineto_scan(&m.base, &cb, &I, err, sizeof err) == 0, "%s", err);
    CHECK(I.kernels == 1 && s.nk == 1 && I.ranges == 1 && I.cpu_ops == 0, "kernels %zu ranges %zu cpu_op %zu",
          I.kernels, I.ranges, I.cpu_ops);
    CHECK(I.merged_ranks == 2 && strcmp(I.merged_rank, "TP00") == 0 && I.merged_skipped == 3,
          "ranks %d read '%s' skipped %zu", I.merged_ranks, I.merged_rank, I.merged_skipped);
    CHECK(s.k_first.dev == 0 && I.hdr.device.index == 0, "device %u / %d", s.k_first.dev, I.hdr.device.index);
    /* a one-rank trace (numeric pids) is not a merged one */
    size_t flen;
    char *fix = fixture(&flen);
    if (fix) {
        psrc_mem_init(&m, fix, flen, FIXTURE);
        memset(&s, 0, sizeof s);
        CHECK(pkineto_scan(&m.base, &cb, &I, err, sizeof err) == 0 && I.merged_ranks == 0 && I.merged_skipped == 0 &&
              I.kernels == 16, "fixture: ranks %d skipped %zu kernels %zu", I.merged_ranks, I.merged_skipped, I.kernels);
    }
    free(fix);
}

typedef struct {
    int n;
    char name[4][128];
} names_seen;
static int names_kernel(void *u, const ptrace_kernel *k)
{
    names_seen *s = u;
    if (s->n < 4)
        snprintf(s->name[s->n], sizeof s->name[0], "%s", k->name);
    s->n++;
    return 0;
}

/* --enable-cuda-graph-attribution (utils/profile_utils.py) renames a graph kernel
 * "NAME [aten::mm, aten::add, +1 more]" and adds args.cuda_graph_attribution: the reader
 * gives the kernel its own name back; a bracket without that arg is part of the name. */
static void pkineto_takes_the_graph_attribution_suffix_off(void)
{
    static const char doc[] =
        "{\"schemaVersion\": 1, \"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void gemm_kernel<float>(float*) [aten::mm, aten::add, +1 more]\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 1005.0, \"dur\": 5.0, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 1, "
        "\"cuda_graph_attribution\": {\"cpu_ops\": [\"aten::mm\", \"aten::add\", \"step[DECODE bs=8]\"], \"modules\": [], "
        "\"source\": \"attribution.json\"}}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void nest_kernel(int) [step[DECODE bs=8], aten::mm]\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 1010.0, \"dur\": 5.0, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 2, "
        "\"cuda_graph_attribution\": {\"cpu_ops\": [], \"modules\": []}}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void plain_kernel(int) [clone]\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 1020.0, \"dur\": 5.0, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 3}}"
        "]}";
    static const char *want[] = {"void gemm_kernel<float>(float*)", "void nest_kernel(int)",
                                 "void plain_kernel(int) [clone]"};
    names_seen s;
    memset(&s, 0, sizeof s);
    pkineto_cb cb = {names_kernel, NULL, NULL, NULL, NULL, NULL, &s};
    pkineto_info I;
    psrc_mem m;
    char err[256] = "";
    psrc_mem_init(&m, doc, sizeof doc - 1, "attributed");
    CHECK(pkineto_scan(&m.base, &cb, &I, err, sizeof err) == 0 && s.n == 3, "%s: %d kernels", err, s.n);
    for (int i = 0; i < 3 && i < s.n; i++)
        CHECK(strcmp(s.name[i], want[i]) == 0, "kernel %d: '%s', want '%s'", i, s.name[i], want[i]);
    CHECK(I.attributed_kernels == 2, "attributed %zu", I.attributed_kernels);
}

static void pkineto_maps_torch_dtypes_and_collectives(void)
{
    const char *n;
    CHECK(pkineto_dtype("BFloat16", &n) == 2 && !strcmp(n, "bfloat16"), "bf16");
    CHECK(pkineto_dtype("Float", &n) == 4 && !strcmp(n, "float32"), "float");
    CHECK(pkineto_dtype("Float8_e4m3fn", &n) == 1 && !strcmp(n, "fp8e4m3"), "fp8");
    CHECK(pkineto_dtype("Quux", &n) == 0 && !strcmp(n, ""), "unknown");
    char b[32];
    CHECK(!strcmp(pkineto_op("allreduce", b, sizeof b), "allreduce"), "allreduce");
    CHECK(!strcmp(pkineto_op("_allgather_base", b, sizeof b), "allgather"), "%s", b);
    CHECK(!strcmp(pkineto_op("reduce_scatter_tensor_coalesced", b, sizeof b), "reducescatter"), "%s", b);
    CHECK(!strcmp(pkineto_op("all_to_all", b, sizeof b), "alltoall"), "%s", b);
    CHECK(!strcmp(pkineto_op("reduce", b, sizeof b), "reduce"), "%s", b);
}

/* ---- the importer table -------------------------------------------------------------------- */

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* A small specprof trace through the profiler's writer. */
static int write_specprof(const char *path)
{
    FILE *f = fopen(path, "w");
    char line[4096];
    ptrace_ctx ctx = {0, 1000000};
    ptrace_header h;
    memset(&h, 0, sizeof h);
    h.format_version = PTRACE_FORMAT_VERSION;
    h.t0_ns = 1000000;
    h.world_size = 1;
    snprintf(h.device.name, sizeof h.device.name, "Synthetic GPU");
    ptrace_write_open(line, sizeof line);
    fputs(line, f);
    ptrace_write_header(line, sizeof line, &ctx, &h);
    fputs(line, f);
    ptrace_kernel k;
    memset(&k, 0, sizeof k);
    k.start_ns = 2000000;
    k.end_ns = 2000500;
    k.name = "k";
    k.nvtx = k.phase = "";
    ptrace_write_kernel(line, sizeof line, &ctx, &k);
    fputs(line, f);
    ptrace_end e;
    memset(&e, 0, sizeof e);
    e.records = 1;   /* the end record promises what was written (a reader counts it) */
    ptrace_write_end(line, sizeof line, &ctx, &e);
    fputs(line, f);
    return fclose(f);
}

static void timport_chooses_the_importer_by_content(void)
{
    char path[160], err[512];
    size_t flen;
    char *fix = fixture(&flen);
    if (!fix)
        return;
    fit_trace t;
    timport_stats st = {0};
    /* Kineto, plain and gzip (named .json: the content decides) */
    CHECK(timport_load(&t, FIXTURE, NULL, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.importer && !strcmp(st.importer, "kineto") && !st.compressed && t.nkern == 16 && t.nmem == 4 &&
          t.napi == 14 && t.nrng == 14, "kineto: %s %zu kernels %zu calls", st.importer, t.nkern, t.napi);
    /* the fixture's kernels have no graph ids: those of graph launches are marked */
    CHECK(st.graph_inferred == 14, "graph work marked %zu (expected 2 x (2+3+2) kernels)", st.graph_inferred);
    CHECK(t.has_header && t.hdr.cupti_version > 0 && !t.truncated, "header");
    fit_trace_free(&t);
    snprintf(path, sizeof path, "%s/trace.json", tmpdir);
    write_gz(path, fix, flen, 1);
    CHECK(timport_load(&t, path, NULL, &st, err, sizeof err) == 0 && st.compressed &&
          !strcmp(st.importer, "kineto") && t.nkern == 16, "gz kineto: %s", err);
    fit_trace_free(&t);
    /* specprof, plain and gzip */
    snprintf(path, sizeof path, "%s/sp.json", tmpdir);
    write_specprof(path);
    CHECK(timport_load(&t, path, NULL, &st, err, sizeof err) == 0 && !strcmp(st.importer, "specprof") &&
          t.nkern == 1 && !t.truncated, "specprof: %s", err);
    fit_trace_free(&t);
    size_t sl;
    char *sp = slurp(path, &sl);
    snprintf(path, sizeof path, "%s/sp.json.gz", tmpdir);
    write_gz(path, sp, sl, 2);
    CHECK(timport_load(&t, path, NULL, &st, err, sizeof err) == 0 && !strcmp(st.importer, "specprof") &&
          st.compressed && t.nkern == 1, "specprof gz: %s", err);
    fit_trace_free(&t);
    free(sp);
    /* unknown content: refused with what it starts with */
    snprintf(path, sizeof path, "%s/other.json", tmpdir);
    write_file(path, "{\"hello\": [1, 2, 3]}\n");
    CHECK(timport_load(&t, path, NULL, &st, err, sizeof err) == -1 && strstr(err, "other.json") &&
          strstr(err, "not a trace this reader knows") && strstr(err, "{\"hello\""), "message '%s'", err);
    /* a CPU-only Kineto profile: refused naming the field and the count */
    snprintf(path, sizeof path, "%s/cpu.json", tmpdir);
    write_file(path, "{\"schemaVersion\": 1, \"traceEvents\": [\n"
               "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1.000, \"dur\": 2.000},\n"
               "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"step[DECODE bs=1]\", \"pid\": 1, \"tid\": 1, \"ts\": 0.500, \"dur\": 3.000}\n"
               "], \"traceName\": \"x\"}\n");
    CHECK(timport_load(&t, path, NULL, &st, err, sizeof err) == -1 && strstr(err, "cpu.json") &&
          strstr(err, "field traceEvents") && strstr(err, "CPU-only") && strstr(err, "1 cpu_op"),
          "message '%s'", err);
    CHECK(timport_load(&t, FIXTURE, "nosuch", &st, err, sizeof err) == -1 && strstr(err, "--format") &&
          strstr(err, "nosuch"), "message '%s'", err);
    free(fix);
}


/* timport_load with KINETO_HOST_EVENT_US set to host_us for the call. */
static int load_host_cost(fit_trace *t, timport_stats *st, const char *path, const char *host_us,
                          char *err, size_t n)
{
    setenv("KINETO_HOST_EVENT_US", host_us, 1);
    int rc = timport_load(t, path, NULL, st, err, n);
    unsetenv("KINETO_HOST_EVENT_US");
    return rc;
}

/* The profiler's host cost taken out (timport.c ti_kn_unprofile), at 3 us per recorded host
 * event, worked by hand: thread 7 records an annotation at 0, cpu_ops at 10 and 50, launches
 * at 20 and 60 (4 us each); each event's cost is taken out of the time right after it. So the
 * launches start 6 and 12 us earlier and last 1 us; kernel 1 (GPU waited for its launch)
 * moves with it; kernel 2 moves with its launch, not onto kernel 1; the annotation ends 15 us
 * earlier; GPU durations stay. */
static void timport_takes_the_profiler_host_cost_out(void)
{
    char path[160], err[512];
    snprintf(path, sizeof path, "%s/cost.json", tmpdir);
    write_file(path, "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 0, \"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": 0.000, \"dur\": 100.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 7, \"ts\": 10.000, \"dur\": 2.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 20.000, \"dur\": 4.000, \"args\": {\"correlation\": 1}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 5, \"ts\": 30.000, \"dur\": 10.000, \"args\": {\"correlation\": 1, \"stream\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 7, \"ts\": 50.000, \"dur\": 2.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 60.000, \"dur\": 4.000, \"args\": {\"correlation\": 2}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": 0, \"tid\": 5, \"ts\": 66.000, \"dur\": 10.000, \"args\": {\"correlation\": 2, \"stream\": 5}}\n"
        "]}\n");
    fit_trace t;
    timport_stats st = {0};
    int rc = load_host_cost(&t, &st, path, "3", err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(st.host_events == 5 && st.host_cost_per_event_us == 3, "host events %zu cost %g", st.host_events,
          st.host_cost_per_event_us);
    CHECK(t.napi == 2 && t.api[0].start_ns == 14000 && t.api[0].end_ns == 15000 && t.api[1].start_ns == 48000 &&
          t.api[1].end_ns == 49000, "launches %lld..%lld %lld..%lld", (long long)t.api[0].start_ns,
          (long long)t.api[0].end_ns, (long long)t.api[1].start_ns, (long long)t.api[1].end_ns);
    CHECK(t.nkern == 2 && t.kern[0].start_ns == 24000 && t.kern[0].end_ns == 34000 && t.kern[1].start_ns == 54000 &&
          t.kern[1].end_ns == 64000, "kernels %lld..%lld %lld..%lld", (long long)t.kern[0].start_ns,
          (long long)t.kern[0].end_ns, (long long)t.kern[1].start_ns, (long long)t.kern[1].end_ns);
    CHECK(t.nrng == 1 && t.rng[0].start_ns == 0 && t.rng[0].end_ns == 85000, "annotation %lld..%lld",
          (long long)t.rng[0].start_ns, (long long)t.rng[0].end_ns);
    fit_trace_free(&t);
    /* without the cost (KINETO_HOST_EVENT_US=0) the times are the file's */
    setenv("KINETO_HOST_EVENT_US", "0", 1);
    rc = timport_load(&t, path, NULL, &st, err, sizeof err);
    unsetenv("KINETO_HOST_EVENT_US");
    CHECK(rc == 0 && t.kern[1].start_ns == 66000 && t.api[0].start_ns == 20000 && st.host_events == 0, "off");
    if (rc == 0)
        fit_trace_free(&t);
}

/* with_stack=True (SGLang's default) adds a python_function event per Python call. Each was
 * charged the cost per host event measured without stacks (4 us, for cpu_op and runtime
 * calls): one every 5 us on the main thread shrank a 2939 us draft to 565 us and an extend
 * to 11. They are counted, not charged: the trace of timport_takes_the_profiler_host_cost_out
 * with 10 of them between its events maps to the same times. */
static void timport_charges_python_functions_no_profiler_cost(void)
{
    char path[160], err[512], doc[4096];
    int n = snprintf(doc, sizeof doc, "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 0, \"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": 0.000, \"dur\": 100.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 7, \"ts\": 10.000, \"dur\": 2.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 20.000, \"dur\": 4.000, \"args\": {\"correlation\": 1}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 5, \"ts\": 30.000, \"dur\": 10.000, \"args\": {\"correlation\": 1, \"stream\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 7, \"ts\": 50.000, \"dur\": 2.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 60.000, \"dur\": 4.000, \"args\": {\"correlation\": 2}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": 0, \"tid\": 5, \"ts\": 66.000, \"dur\": 10.000, \"args\": {\"correlation\": 2, \"stream\": 5}}");
    for (int i = 0; i < 10; i++)
        n += snprintf(doc + n, sizeof doc - (size_t)n, ",\n{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": "
                      "\"scheduler.py(%d): step\", \"pid\": 1, \"tid\": 7, \"ts\": %d.000, \"dur\": 0.500, "
                      "\"args\": {\"Python id\": %d}}", 100 + i, 25 + 3 * i, i);
    snprintf(doc + n, sizeof doc - (size_t)n, "\n]}\n");
    snprintf(path, sizeof path, "%s/pyfn.json", tmpdir);
    write_file(path, doc);
    fit_trace t;
    timport_stats st = {0};
    int rc = load_host_cost(&t, &st, path, "3", err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(st.host_events == 5 && st.python_functions == 10, "host events %zu (want 5), python_function %zu",
          st.host_events, st.python_functions);
    CHECK(t.napi == 2 && t.api[0].start_ns == 14000 && t.api[1].start_ns == 48000 && t.nkern == 2 &&
          t.kern[1].start_ns == 54000 && t.nrng == 1 && t.rng[0].end_ns == 85000, "launches at %lld, %lld; "
          "kernel 2 at %lld; annotation ends %lld (as without the python_function events: 14000, 48000, 54000, "
          "85000)", (long long)t.api[0].start_ns, (long long)t.api[1].start_ns, (long long)t.kern[1].start_ns,
          (long long)t.rng[0].end_ns);
    fit_trace_free(&t);
}

/* A call that waits for the GPU (a copy to pageable host memory: its call ends after its copy,
 * as torch's .tolist()) still returns when the copy is done once the profiler's host cost is
 * out: 8 events x 3 us moved the call's end to 241 us while the copy behind the long kernel
 * moves only to 246..248, so the call ends at 248 and the host records after it move back
 * by the 7 us (the next launch 260 us, its kernel 270). With the rule off the call ends
 * before its copy and the fit reads no wait (the launch time is the wait). A pinned copy
 * (the call returns before the copy runs) is left as the cost says. */
static void timport_keeps_a_blocking_copy_after_its_wait(void)
{
    char path[160], err[512];
    for (int pinned = 0; pinned <= 1; pinned++) {
        snprintf(path, sizeof path, "%s/wait%d.json", tmpdir, pinned);
        write_file(path, pinned ?
            "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 0, \"traceEvents\": [\n"
            "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": 0.000, \"dur\": 300.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 10.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 50.000, \"dur\": 4.000, \"args\": {\"correlation\": 1}},\n"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 5, \"ts\": 60.000, \"dur\": 200.000, \"args\": {\"correlation\": 1, \"stream\": 5}},\n"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 1, \"tid\": 7, \"ts\": 110.000, \"dur\": 5.000, \"args\": {\"correlation\": 2}},\n"
            "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", \"pid\": 0, \"tid\": 5, \"ts\": 261.000, \"dur\": 2.000, \"args\": {\"correlation\": 2, \"stream\": 5}}\n"
            "]}\n" :
            "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 0, \"traceEvents\": [\n"
            "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": 0.000, \"dur\": 300.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 10.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 20.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 30.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 40.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 50.000, \"dur\": 4.000, \"args\": {\"correlation\": 1}},\n"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 5, \"ts\": 60.000, \"dur\": 200.000, \"args\": {\"correlation\": 1, \"stream\": 5}},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 100.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 1, \"tid\": 7, \"ts\": 110.000, \"dur\": 155.000, \"args\": {\"correlation\": 2}},\n"
            "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pageable)\", \"pid\": 0, \"tid\": 5, \"ts\": 261.000, \"dur\": 2.000, \"args\": {\"correlation\": 2, \"stream\": 5}},\n"
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 7, \"ts\": 270.000, \"dur\": 1.000},\n"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 280.000, \"dur\": 4.000, \"args\": {\"correlation\": 3}},\n"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k3\", \"pid\": 0, \"tid\": 5, \"ts\": 290.000, \"dur\": 10.000, \"args\": {\"correlation\": 3, \"stream\": 5}}\n"
            "]}\n");
        setenv("KINETO_HOST_EVENT_US", "3", 1);
        fit_trace t;
        timport_stats st = {0};
        int rc = timport_load(&t, path, NULL, &st, err, sizeof err);
        unsetenv("KINETO_HOST_EVENT_US");
        CHECK(rc == 0, "%s", err);
        if (rc)
            continue;
        const ptrace_api *cp = NULL, *l3 = NULL;
        for (size_t i = 0; i < t.napi; i++) {
            if (t.api[i].corr == 2)
                cp = &t.api[i];
            if (t.api[i].corr == 3)
                l3 = &t.api[i];
        }
        CHECK(cp && t.nmem == 1, "the copy and its call");
        if (cp && t.nmem == 1 && !pinned) {
            printf("     blocking copy: call ends %.1f us, its copy %.1f..%.1f\n", cp->end_ns / 1e3,
                   t.mem[0].start_ns / 1e3, t.mem[0].end_ns / 1e3);
            CHECK(t.mem[0].start_ns == 246000 && t.mem[0].end_ns == 248000, "copy %lld..%lld",
                  (long long)t.mem[0].start_ns, (long long)t.mem[0].end_ns);
            CHECK(cp->end_ns >= t.mem[0].end_ns, "the blocking call ends at %lld, before its copy "
                  "(%lld)", (long long)cp->end_ns, (long long)t.mem[0].end_ns);
            CHECK(cp->start_ns == 89000 && cp->end_ns == 248000, "call %lld..%lld",
                  (long long)cp->start_ns, (long long)cp->end_ns);
            CHECK(l3 && l3->start_ns == 260000 && t.nkern == 2 && t.kern[1].start_ns == 270000,
                  "after the wait: launch at %lld, its kernel at %lld", l3 ? (long long)l3->start_ns : -1,
                  t.nkern == 2 ? (long long)t.kern[1].start_ns : -1);
        } else if (cp && t.nmem == 1) {
            /* 3 events before the call: 9 us; its own 3 us paid inside it */
            CHECK(cp->start_ns == 101000 && cp->end_ns == 103000, "pinned copy's call %lld..%lld",
                  (long long)cp->start_ns, (long long)cp->end_ns);
        }
        fit_trace_free(&t);
    }
}

/* ---- trace variants of other PyTorch versions and programs ---------------------------------- */

/* Scans doc (a string) with the seen callbacks. */
static int scan_doc(const char *doc, const char *label, seen *s, pkineto_info *I, char *err, size_t errlen)
{
    pkineto_cb cb = {s_kernel, s_mem, s_api, s_range, s_grange, NULL, s};
    psrc_mem m;
    memset(s, 0, sizeof *s);
    psrc_mem_init(&m, doc, strlen(doc), label);
    return pkineto_scan(&m.base, &cb, I, err, errlen);
}

/* PyTorch 2.4..2.6 (Kineto from pytorch/kineto#928 until #1054 moved it) write
 * baseTimeNanoseconds after traceEvents, with the events' ts relative to it. The header's
 * t0 was set to it all the same, ahead of every record: the fit left every phase instance
 * out as "started before the capture" and fitted nothing. */
static void timport_keeps_relative_times_when_base_time_follows_the_events(void)
{
    char path[160], err[512];
    snprintf(path, sizeof path, "%s/base_late.json", tmpdir);
    write_file(path,
        "{\"schemaVersion\": 1, \"deviceProperties\": [], \"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"step[DECODE bs=4]\", \"pid\": 1, \"tid\": 7, \"ts\": 100.000, \"dur\": 50.000},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 110.000, \"dur\": 4.000, \"args\": {\"correlation\": 1}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 120.000, \"dur\": 10.000, \"args\": {\"correlation\": 1, \"stream\": 7, \"device\": 0}}\n"
        "], \"traceName\": \"x\", \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1759000000000000000}\n");
    fit_trace t;
    timport_stats st = {0};
    int rc = load_host_cost(&t, &st, path, "0", err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(t.nkern == 1 && t.kern[0].start_ns == 120000 && t.nrng == 1 && t.rng[0].start_ns == 100000,
          "records %zu: kernel at %lld", t.nkern, t.nkern ? (long long)t.kern[0].start_ns : -1);
    CHECK(t.hdr.t0_ns <= t.rng[0].start_ns, "t0 %lld after the first span (%lld): every instance "
          "would be 'started before the capture'", (long long)t.hdr.t0_ns, (long long)t.rng[0].start_ns);
    CHECK(st.base_time_late == 1, "late base time not reported");
    fit_trace_free(&t);
}

/* Another writer of the format (torch_npu's trace_view.json, Ascend/pytorch issue 133)
 * quotes ts and dur: they were read as 0 (every record at time 0, each phase instance
 * empty). A string holding a number now reads as that number; an X event without a time is
 * skipped and named (event, field, value). */
static void pkineto_reads_times_written_as_strings(void)
{
    static const char num[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": 1712345678901234.567, \"dur\": 40.5},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 1712345678901240.001, \"dur\": 3.250, \"args\": {\"correlation\": 1, \"stream\": 7}}"
        "]}";
    static const char str[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": \"1712345678901234.567\", \"dur\": \"40.5\"},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": \"1712345678901240.001\", \"dur\": \"3.250\", \"args\": {\"correlation\": 1, \"stream\": 7}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"no_ts\", \"pid\": 0, \"tid\": 7, \"dur\": 3.0, \"args\": {\"correlation\": 2}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"bad_ts\", \"pid\": 0, \"tid\": 7, \"ts\": \"soon\", \"dur\": 3.0}"
        "]}";
    seen a, b;
    pkineto_info Ia, Ib;
    char err[256] = "";
    CHECK(scan_doc(num, "num", &a, &Ia, err, sizeof err) == 0, "%s", err);
    CHECK(scan_doc(str, "str", &b, &Ib, err, sizeof err) == 0, "%s", err);
    CHECK(a.nk == 1 && b.nk == 1 && a.nr == 1 && b.nr == 1, "kernels %d %d spans %d %d", a.nk, b.nk, a.nr, b.nr);
    CHECK(b.k_first.start_ns == 1712345678901240001LL && b.k_first.end_ns == 1712345678901243251LL &&
          b.k_first.start_ns == a.k_first.start_ns && b.k_first.end_ns == a.k_first.end_ns,
          "kernel from strings %lld..%lld, from numbers %lld..%lld", (long long)b.k_first.start_ns,
          (long long)b.k_first.end_ns, (long long)a.k_first.start_ns, (long long)a.k_first.end_ns);
    CHECK(Ib.bad_events == 2 && strstr(Ib.first_bad, "event 3") && strstr(Ib.first_bad, "no_ts") &&
          strstr(Ib.first_bad, "field ts") && strstr(Ib.first_bad, "missing"), "bad %zu: %s", Ib.bad_events,
          Ib.first_bad);
}

/* The host events' times as the host callback gets them. */
typedef struct { int n; int64_t tid[8], s[8], e[8]; } hosts;
static int h_host(void *u, int64_t tid, int64_t s, int64_t e)
{
    hosts *h = u;
    if (h->n < 8) {
        h->tid[h->n] = tid;
        h->s[h->n] = s;
        h->e[h->n] = e;
    }
    h->n++;
    return 0;
}

/* doc scanned with only the host callback: pkineto_scan's return, *h and *I filled. */
static int scan_hosts(const char *doc, hosts *h, pkineto_info *I, char *err, size_t errlen)
{
    pkineto_cb cb = {NULL, NULL, NULL, NULL, NULL, h_host, h};
    psrc_mem m;
    memset(h, 0, sizeof *h);
    psrc_mem_init(&m, doc, strlen(doc), "hosts");
    return pkineto_scan(&m.base, &cb, I, err, errlen);
}

/* cpu_op events are read from their text without a parse (pk_host); its number reader stopped
 * at an exponent: "ts": 1.5e+03 was 1.5 us, "ts": 1e-05 was 1 us, "dur": 2.5E1 was 2.5 us. The
 * same times written in exponent form give the same host events as written plainly; a cpu_op
 * without dur or with a ts that is no number is counted and named as unreadable, not dropped in
 * silence or taken as 0 us long. */
static void pkineto_reads_host_times_in_exponent_form(void)
{
    static const char *const forms[2][3] = {
        {"1500.000", "25.000", "0.000"},     /* plain, as Kineto writes them */
        {"1.5e+03", "2.5E1", "1e-05"},       /* exponents (1e-05 us: 0.01 ns, read as 0) */
    };
    hosts h[2];
    pkineto_info I;
    char doc[2048], err[256] = "";
    for (int f = 0; f < 2; f++) {
        snprintf(doc, sizeof doc, "{\"traceEvents\": ["
                 "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 7, "
                 "\"ts\": %s, \"dur\": %s},"
                 "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 8, "
                 "\"ts\": \"%s\", \"dur\": %s}"
                 "]}", forms[f][0], forms[f][1], forms[f][2], forms[f][1]);
        CHECK(scan_hosts(doc, &h[f], &I, err, sizeof err) == 0 && I.cpu_ops == 2 && I.bad_events == 0,
              "form %d: %s: cpu_ops %zu bad %zu %s", f, err, I.cpu_ops, I.bad_events, I.first_bad);
    }
    CHECK(h[0].n == 2 && h[1].n == 2, "host events %d %d", h[0].n, h[1].n);
    for (int i = 0; i < 2 && h[0].n == 2 && h[1].n == 2; i++)
        CHECK(h[1].tid[i] == h[0].tid[i] && h[1].s[i] == h[0].s[i] && h[1].e[i] == h[0].e[i],
              "event %d: exponent form tid %lld %lld..%lld ns, plain %lld %lld..%lld ns", i, (long long)h[1].tid[i],
              (long long)h[1].s[i], (long long)h[1].e[i], (long long)h[0].tid[i], (long long)h[0].s[i],
              (long long)h[0].e[i]);
    CHECK(h[0].s[0] == 1500000 && h[0].e[0] == 1525000, "plain: %lld..%lld", (long long)h[0].s[0],
          (long long)h[0].e[0]);
    static const char bad[] = "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"no_dur\", \"pid\": 1, \"tid\": 7, \"ts\": 10.0},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"nan_ts\", \"pid\": 1, \"tid\": 7, \"ts\": \"soon\", \"dur\": 1.0}"
        "]}";
    hosts hb;
    CHECK(scan_hosts(bad, &hb, &I, err, sizeof err) == 0 && hb.n == 0 && I.bad_events == 2 &&
          strstr(I.first_bad, "no_dur") && strstr(I.first_bad, "field dur") && strstr(I.first_bad, "missing"),
          "%s: host events %d, bad %zu: %s", err, hb.n, I.bad_events, I.first_bad);
}

/* A cpu_op's times are read from its text (pk_host, the fast path), a cuda_runtime call's by the
 * parse; the fast path dropped the digits below the ns while the parse rounded them (through a
 * double: an absolute time of 1.7e15 us with 4+ decimals has 20+ digits, a double 16), so the
 * same time read by the two paths differed by up to ~125 ns. Both now round the decimal digits
 * to the nearest ns, halves away from zero: each time below, written once as a cpu_op and once
 * as a launch call, gives the same ns by both paths, and the ns its digits give. */
static void pkineto_fast_path_and_parse_read_the_same_times(void)
{
    static const struct { const char *ts, *dur; int64_t s_ns, d_ns; } t[] = {
        {"1733580000123456.7894", "12.3456", 1733580000123456789LL, 12346},
        {"1733580000123456.7895", "0.0005", 1733580000123456790LL, 1},      /* halves: up */
        {"1733580000123456.78949999", "0.00049", 1733580000123456789LL, 0},
        {"1733580000123456.789612345678", "3.9999996", 1733580000123456790LL, 4000},
        {"1733580000123456.789", "1.000", 1733580000123456789LL, 1000},     /* as Kineto writes */
        {"\"1733580000123456.7896\"", "7", 1733580000123456790LL, 7000},   /* quoted (torch_npu) */
        {"1.2339999999", "2.0004999", 1234, 2000},         /* ns / 1e3 in floating point */
        {"-1.2345", "0.5", -1235, 500},                    /* halves away from zero */
        {"999.9995", "0.0015", 1000000, 2},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char doc[1024], err[256] = "";
        snprintf(doc, sizeof doc, "{\"traceEvents\": ["
                 "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 7, "
                 "\"ts\": %s, \"dur\": %s},"
                 "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
                 "\"tid\": 7, \"ts\": %s, \"dur\": %s, \"args\": {\"correlation\": 1}}"
                 "]}", t[i].ts, t[i].dur, t[i].ts, t[i].dur);
        hosts h;
        pkineto_info I;
        int rc = scan_hosts(doc, &h, &I, err, sizeof err);
        CHECK(rc == 0 && h.n == 2 && I.cpu_ops == 1 && I.apis == 1 && I.bad_events == 0,
              "ts %s: %s: host events %d, cpu_ops %zu, calls %zu, bad %zu %s", t[i].ts, err, h.n, I.cpu_ops, I.apis,
              I.bad_events, I.first_bad);
        if (rc != 0 || h.n != 2)
            continue;
        CHECK(h.s[0] == h.s[1] && h.e[0] == h.e[1], "ts %s dur %s: the fast path (cpu_op) %lld..%lld ns, the parse "
              "(cuda_runtime) %lld..%lld ns", t[i].ts, t[i].dur, (long long)h.s[0], (long long)h.e[0],
              (long long)h.s[1], (long long)h.e[1]);
        for (int k = 0; k < 2; k++)
            CHECK(h.s[k] == t[i].s_ns && h.e[k] - h.s[k] == t[i].d_ns, "ts %s dur %s, %s: %lld ns for %lld ns long, "
                  "want %lld for %lld", t[i].ts, t[i].dur, k ? "parse" : "fast path", (long long)h.s[k],
                  (long long)(h.e[k] - h.s[k]), (long long)t[i].s_ns, (long long)t[i].d_ns);
    }
}

/* Counts and ids past their range are not cast: a correlation id of 1e30 saturated (every
 * record shared one id), bytes of -4096 became 2^64 - 4096. The event is skipped and named. */
static void pkineto_skips_counts_out_of_range(void)
{
    static const char doc[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 3, \"args\": {\"correlation\": 1, \"stream\": 7}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"big_corr\", \"pid\": 0, \"tid\": 7, \"ts\": 20, \"dur\": 3, \"args\": {\"correlation\": 1e30}},"
        "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pageable)\", \"pid\": 0, \"tid\": 7, \"ts\": 30, \"dur\": 3, \"args\": {\"correlation\": 3, \"bytes\": -4096}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel\", \"pid\": 0, \"tid\": 7, \"ts\": 40, \"dur\": 3, \"args\": {\"correlation\": 4, \"Collective name\": \"allreduce\", \"In msg nelems\": 2.5, \"dtype\": \"Float\"}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": 0, \"tid\": 7, \"ts\": 50, \"dur\": 3, \"args\": {\"correlation\": \"5\"}}"
        "]}";
    seen a;
    pkineto_info I;
    char err[256] = "";
    CHECK(scan_doc(doc, "counts", &a, &I, err, sizeof err) == 0, "%s", err);
    CHECK(a.nk == 2 && I.bad_events == 3 && strstr(I.first_bad, "big_corr") &&
          strstr(I.first_bad, "field args.correlation") && strstr(I.first_bad, "1e+30"),
          "kernels %d bad %zu: %s", a.nk, I.bad_events, I.first_bad);
}

/* The calls the fit reads, by name: ROCm traces (Kineto's rocprofiler logger, cat
 * cuda_runtime) name them hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyWithStream,
 * hipGraphLaunch: all were dropped (0 launch calls: no kernel reached a phase, nothing
 * fitted). The blocking synchronize calls, which specprof records and the fit reads as waits
 * (fit_instances.c fi_syncs), were dropped too: an eager loop's wait for its .item() became
 * host gap. */
static void pkineto_keeps_hip_launches_and_sync_calls(void)
{
    static const char doc[] =
        "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"AMD Instinct MI300X\"}], \"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 10.0, \"dur\": 4.0, \"args\": {\"cid\": 1, \"correlation\": 1}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipExtModuleLaunchKernel\", \"pid\": 1, \"tid\": 7, \"ts\": 20.0, \"dur\": 4.0, \"args\": {\"correlation\": 2}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipMemcpyWithStream\", \"pid\": 1, \"tid\": 7, \"ts\": 30.0, \"dur\": 4.0, \"args\": {\"correlation\": 3}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipGraphLaunch\", \"pid\": 1, \"tid\": 7, \"ts\": 40.0, \"dur\": 4.0, \"args\": {\"correlation\": 4}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipStreamSynchronize\", \"pid\": 1, \"tid\": 7, \"ts\": 50.0, \"dur\": 40.0, \"args\": {\"correlation\": 5}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": 1, \"tid\": 7, \"ts\": 95.0, \"dur\": 4.0, \"args\": {\"correlation\": 6}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuCtxSynchronize\", \"pid\": 1, \"tid\": 7, \"ts\": 100.0, \"dur\": 4.0, \"args\": {\"correlation\": 7}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipEventRecord\", \"pid\": 1, \"tid\": 7, \"ts\": 105.0, \"dur\": 1.0, \"args\": {\"correlation\": 8}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaEventRecord\", \"pid\": 1, \"tid\": 7, \"ts\": 107.0, \"dur\": 1.0, \"args\": {\"correlation\": 9}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"Cijk_gemm\", \"pid\": 0, \"tid\": 1, \"ts\": 15.0, \"dur\": 30.0, \"args\": {\"device\": 0, \"stream\": 1, \"correlation\": 1, \"kind\": \"Dispatch Kernel\"}}"
        "]}";
    seen s;
    pkineto_info I;
    char err[256] = "";
    CHECK(scan_doc(doc, "rocm", &s, &I, err, sizeof err) == 0, "%s", err);
    CHECK(I.apis == 7 && I.apis_other == 2, "calls kept %zu, other %zu (want 7, 2)", I.apis, I.apis_other);
    CHECK(!strcmp(s.a_names, "hipLaunchKernel,hipExtModuleLaunchKernel,hipMemcpyWithStream,hipGraphLaunch,"
                  "hipStreamSynchronize,cudaStreamSynchronize,cuCtxSynchronize,"), "names %s", s.a_names);
    CHECK(s.a_first.corr == 1 && s.nk == 1 && s.k_first.corr == 1, "launch corr %u kernel corr %u",
          s.a_first.corr, s.k_first.corr);
}

/* Kineto before pytorch/kineto#1455 prints a kernel's "blocks per SM" as bare inf when it
 * does not know the device's SM count (DeviceProperties.cpp blocksPerSm), and Python's
 * json.dump (SGLang's trace rewriting) writes NaN / Infinity: such an event did not parse
 * and was dropped with its kernel, counted only ("N lines did not parse"). They are read
 * with those values as null; text inside strings is left alone; an event that still does not
 * parse is named by its number and first bytes. */
static void pkineto_reads_kernels_with_inf_and_nan_args(void)
{
    static const char doc[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"inf_kernel\", \"pid\": 0, \"tid\": 7, \"ts\": 10.0, \"dur\": 3.0, "
        "\"args\": {\"correlation\": 1, \"stream\": 7, \"blocks per SM\": inf, \"warps per SM\": -inf, \"grid\": [4, 1, 1]}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nan: inf, NaN\", \"pid\": 0, \"tid\": 7, \"ts\": 20.0, \"dur\": 3.0, "
        "\"args\": {\"correlation\": 2, \"stream\": 7, \"blocks per SM\": NaN, \"warps per SM\":Infinity, \"x\": [nan, -Infinity]}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"broken\", \"pid\": 0, \"tid\": 7, \"ts\": 30.0, \"dur\": 3.0, \"args\": {\"q\": infinite}},"
        /* past a double's range: inf as strtod (and Python's json) reads it; the kernel was dropped */
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"huge\", \"pid\": 0, \"tid\": 7, \"ts\": 40.0, \"dur\": 3.0, "
        "\"args\": {\"correlation\": 4, \"est. achieved occupancy %\": 1e400, \"x\": [-2E+999, 1e-400, 7]}}"
        "]}";
    seen s;
    pkineto_info I;
    char err[256] = "";
    CHECK(scan_doc(doc, "inf", &s, &I, err, sizeof err) == 0, "%s", err);
    CHECK(I.kernels == 3 && s.nk == 3 && I.nonfinite_events == 3, "kernels %zu (want 3), with inf/NaN %zu",
          I.kernels, I.nonfinite_events);
    CHECK(s.k_first.corr == 1 && s.k_first.grid[0] == 4 && s.k_first.start_ns == 10000 &&
          !strcmp(s.k_first_name, "inf_kernel"), "first kernel %s corr %u grid %d", s.k_first_name,
          s.k_first.corr, s.k_first.grid[0]);
    CHECK(I.bad_events == 1 && strstr(I.first_bad, "event 3") && strstr(I.first_bad, "broken"),
          "bad %zu: %s", I.bad_events, I.first_bad);
}

/* Kineto before pytorch/kineto#1459 writes event names without escaping '"': with_stack=True
 * (SGLang's default) names Python frames after dynamo co_filenames such as {"device": "cpu"}.
 * An odd number of such quotes made the splitter lose its place: 0 events, refused as "a
 * CPU-only profile"; an even number split by luck. Both layouts Kineto wrote (name on its own
 * line; ph, cat, name, pid on one line), every read size; the kernel after them is read, a
 * user_annotation with a quote is skipped and named. */
static void pkineto_reads_names_with_unescaped_quotes(void)
{
    static const char doc[] =
        "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n"
        "  {\n    \"ph\": \"X\",\n    \"cat\": \"python_function\",\n"
        "    \"name\": \"{\"device\": \"cpu\", \"dtype\": \"float32\"}(12): run\",\n"
        "    \"pid\": 1,\n    \"tid\": 1,\n    \"ts\": 1.000,\n    \"dur\": 2.000\n  },\n"
        "  {\n    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"x.py(3): <module> \"\"\"Doc\", \"pid\": 1, "
        "\"tid\": 1,\n    \"ts\": 3.000, \"dur\": 1.000\n  },\n"
        "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"say \"hi\", \"pid\": 1, \"tid\": 1,\n"
        "    \"ts\": 4.000, \"dur\": 1.000\n  },\n"
        "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7,\n"
        "    \"ts\": 5.000, \"dur\": 2.000,\n    \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 1}\n  },\n"
        "  {\n    \"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", \"ts\": 9.000\n  }\n"
        "  ],\n  \"traceName\": \"/tmp/t.json\"\n}\n";
    for (int seed = 0; seed <= 3; seed++) {
        drip d = {{drip_read, "quotes", 0}, doc, sizeof doc - 1, 0, 0x9e3779b97f4a7c15ull * (uint64_t)seed};
        psrc_mem m;
        psrc_mem_init(&m, doc, sizeof doc - 1, "quotes");
        seen s;
        memset(&s, 0, sizeof s);
        pkineto_cb cb = {s_kernel, s_mem, s_api, s_range, s_grange, NULL, &s};
        pkineto_info I;
        char err[256] = "";
        int rc = pkineto_scan(seed ? &d.base : &m.base, &cb, &I, err, sizeof err);
        CHECK(rc == 0 && I.complete && I.events == 5 && I.python_functions == 2 && I.kernels == 1 && s.nk == 1 &&
              s.k_first.start_ns == 5000 && I.window_end, "seed %d: rc %d %s: events %zu python %zu kernels %zu "
              "complete %d", seed, rc, err, I.events, I.python_functions, I.kernels, I.complete);
        CHECK(I.bad_events == 1 && strstr(I.first_bad, "event 3") && strstr(I.first_bad, "say"), "seed %d: bad %zu: %s",
              seed, I.bad_events, I.first_bad);
    }
}

/* A kernel that starts before its launch call is impossible on one clock (the traces of
 * traces/torch start every kernel 4.9 us or more after its call): the GPU and CPU clocks of
 * the trace disagree. That is counted with the largest lead (it went unsaid, and phase
 * instances mixed both clocks); a trace whose kernels follow their calls counts none. */
static void timport_counts_gpu_records_before_their_launch(void)
{
    static const char fmt[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"step[DECODE bs=2]\", \"pid\": 1, \"tid\": 1, \"ts\": 90.0, \"dur\": 60.0},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 100.0, \"dur\": 4.0, \"args\": {\"correlation\": 1}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 1, \"tid\": 1, \"ts\": 110.0, \"dur\": 4.0, \"args\": {\"correlation\": 2}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": %s, \"dur\": 5.0, \"args\": {\"correlation\": 1}},"
        "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", \"pid\": 0, \"tid\": 7, \"ts\": %s, \"dur\": 2.0, "
        "\"args\": {\"correlation\": 2, \"bytes\": 8}}]}";
    static const struct { const char *k, *m; size_t before; int64_t lead_ns; } c[] = {
        {"108.5", "121.0", 0, 0},       /* 8.5 and 11 us after their calls */
        {"90.0", "97.75", 2, 12250},    /* the GPU clock 20 us early: 10 and 12.25 us before */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char doc[2048], path[300], err[1024] = "";
        snprintf(doc, sizeof doc, fmt, c[i].k, c[i].m);
        snprintf(path, sizeof path, "%s/clock%zu.json", tmpdir, i);
        CHECK(write_file(path, doc) == 0, "write %s", path);
        fit_trace t;
        timport_stats st;
        memset(&st, 0, sizeof st);
        int rc = timport_load(&t, path, NULL, &st, err, sizeof err);
        CHECK(rc == 0 && st.gpu_with_call == 2 && st.gpu_before_call == c[i].before && st.gpu_lead_max_ns == c[i].lead_ns,
              "case %zu: rc %d %s: %zu of %zu before their call, lead %lld ns (want %zu, %lld)", i, rc, err,
              st.gpu_before_call, st.gpu_with_call, (long long)st.gpu_lead_max_ns, c[i].before, (long long)c[i].lead_ns);
        if (rc == 0)
            fit_trace_free(&t);
    }
}

/* ---- a large synthetic Kineto trace for make bench ------------------------------------------ */

/* Writes about mb megabytes of Kineto JSON in Kineto's own layout (one key per line pair, as
 * output_json.cpp prints): per SGLang decode step a step span, 6 cpu_op per launch, a
 * cudaLaunchKernel, its kernel and its ac2g flow pair (an eager PyTorch loop's mix:
 * shared/FACTS.md counts 117k cpu_op for 33k kernels). Streams: memory does not grow. */
static int write_big(const char *path, double mb)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, \"name\": "
            "\"NVIDIA H200\", \"totalGlobalMem\": 150110011392,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n"
            "      \"numSms\": 132\n    }\n  ],\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": "
            "1759000000000000000,\n  \"traceEvents\": [");
    long long t = 1000000, corr = 1;
    double target = mb * 1e6;
    int step = 0;
    while (ftell(f) < (long)target) {
        long long s0 = t;
        for (int k = 0; k < 40; k++) {
            for (int c = 0; c < 6; c++) {
                fprintf(f, "\n  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::%s\", \"pid\": 4242, "
                        "\"tid\": 4242,\n    \"ts\": %lld.%03lld, \"dur\": 2.%03d,\n    \"args\": {\n      "
                        "\"External id\": %lld,\"Record function id\": 0, \"Ev Idx\": %d\n    }\n  },",
                        c % 3 == 0 ? "linear" : c % 3 == 1 ? "matmul" : "empty_strided",
                        t / 1000, t % 1000, c * 7, corr * 8 + c, c);
                t += 2500;
            }
            fprintf(f, "\n  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                    "\"pid\": 4242, \"tid\": 4242,\n    \"ts\": %lld.%03lld, \"dur\": 4.125,\n    \"args\": {\n"
                    "      \"External id\": %lld, \"cbid\": 211, \"correlation\": %lld\n    }\n  },",
                    t / 1000, t % 1000, corr * 8, corr);
            fprintf(f, "\n  {\n    \"ph\": \"s\", \"id\": %lld, \"pid\": 4242, \"tid\": 4242, \"ts\": %lld.%03lld,\n"
                    "    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  },", corr, t / 1000, t % 1000);
            long long g = t + 6000;
            fprintf(f, "\n  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void at::native::elementwise_kernel"
                    "<128, 4, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<c10::BFloat16> >(at::"
                    "TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1}>(int, "
                    "at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, "
                    "at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})\", \"pid\": 0, \"tid\": 7,\n"
                    "    \"ts\": %lld.%03lld, \"dur\": 3.%03d,\n    \"args\": {\n      \"External id\": %lld,\n"
                    "      \"queued\": 0, \"device\": 0, \"context\": 1,\n      \"stream\": 7, \"correlation\": %lld,\n"
                    "      \"registers per thread\": 32, \"shared memory\": 0,\n      \"blocks per SM\": 0.5, "
                    "\"warps per SM\": 2,\n      \"grid\": [66, 1, 1], \"block\": [128, 1, 1],\n      \"est. achieved "
                    "occupancy %%\": 3\n    }\n  },", g / 1000, g % 1000, (int)(corr % 1000), corr * 8, corr);
            fprintf(f, "\n  {\n    \"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": 7, \"ts\": %lld.%03lld,\n"
                    "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  },", corr, g / 1000, g % 1000);
            corr++;
            t += 5000;
        }
        fprintf(f, "\n  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"step[DECODE bs=%d]\", "
                "\"pid\": 4242, \"tid\": 4242,\n    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n"
                "      \"External id\": %lld\n    }\n  },", 1 + step % 8, s0 / 1000, s0 % 1000, (t - s0) / 1000,
                (t - s0) % 1000, corr * 8);
        step++;
        t += 20000;
    }
    fprintf(f, "\n  {\n    \"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", "
            "\"ts\": %lld.%03lld\n  }\n  ],\n  \"traceName\": \"%s\"\n}\n", t / 1000, t % 1000, path);
    return fclose(f);
}

/* A trace whose GPU events all fail to read is not a CPU-only profile: the refusal says how
 * many events were skipped and names the first, field and value. It said "a CPU-only
 * profile (0 cpu_op, 0 user_annotation): record with activities=[...CUDA]" for 800 kernels
 * whose times lay past bounds.h's range. */
static void timport_names_unreadable_events_when_no_kernel_reads(void)
{
    static const char doc[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 7, \"ts\": 10.0, \"dur\": 40.5},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 12.0, \"dur\": \"3 us\", \"args\": {\"correlation\": 1}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 16.0, \"dur\": \"3 us\", \"args\": {\"correlation\": 2}}"
        "]}";
    char path[300], err[1024] = "";
    snprintf(path, sizeof path, "%s/unreadable.json", tmpdir);
    CHECK(write_file(path, doc) == 0, "write %s", path);
    fit_trace t;
    int rc = timport_load(&t, path, NULL, NULL, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "unreadable.json") && strstr(err, "2 skipped") && strstr(err, "field dur") &&
          strstr(err, "3 us") && !strstr(err, "CPU-only"), "rc %d: %s", rc, err);
    if (rc == 0)
        fit_trace_free(&t);
}

/* Kineto writes the host events first and the GPU events after them: a file cut before the GPU
 * events, an empty traceEvents and one of metadata only were all refused as "a CPU-only
 * profile ... record with activities=[..CUDA]", which they are not */
static void timport_tells_a_cut_or_empty_trace_from_a_cpu_only_one(void)
{
    static const struct { const char *name, *doc, *w1, *w2; } c[] = {
        {"cut.json", "{\"schemaVersion\": 1, \"traceEvents\": [\n"
         "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"verify\", \"pid\": 1, \"tid\": 1, \"ts\": 1.0, \"dur\": 9.0},\n"
         "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 2.0, \"dur\": 2.0},\n"
         "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 3.0, \"dur\": 1.0, "
         "\"args\": {\"correlation\": 1}},\n{\"ph\": \"X\", \"cat\": \"ker", "3 events, then the document is cut off",
         "the file is incomplete"},
        {"empty.json", "{\"schemaVersion\": 1, \"traceEvents\": []}", "0 events, none of them activity",
         "recorded nothing"},
        {"meta.json", "{\"schemaVersion\": 1, \"traceEvents\": [{\"name\": \"process_name\", \"ph\": \"M\", "
         "\"ts\": 0.0, \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"python3\"}}]}", "1 events, none of them activity",
         "(1 metadata, 0 other)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char path[300], err[1024] = "";
        snprintf(path, sizeof path, "%s/%s", tmpdir, c[i].name);
        CHECK(write_file(path, c[i].doc) == 0, "write %s", path);
        fit_trace t;
        int rc = timport_load(&t, path, NULL, NULL, err, sizeof err);
        CHECK(rc != 0 && strstr(err, c[i].name) && strstr(err, "field traceEvents") && strstr(err, c[i].w1) &&
              strstr(err, c[i].w2) && !strstr(err, "CPU-only"), "%s: rc %d: %s", c[i].name, rc, err);
        if (rc == 0)
            fit_trace_free(&t);
    }
}

/* A .json.gz cut short (a copy or a download that did not finish: no gzip trailer) was refused
 * ("gzip stream cut off") while the .json cut at the same place loaded up to its last whole
 * event. Cut at a third, a half and 9/10 of the compressed bytes, the gzip file loads as the
 * plain file holding what inflates up to the cut: the same records, cut off, the same bytes
 * of a partial event dropped, and the gzip cut said; one whose trailer alone is missing loads
 * whole. */
static void timport_reads_a_cut_gzip_trace_like_the_cut_plain_one(void)
{
    size_t flen;
    char *fix = fixture(&flen), gz[300], plain[300], err[1024];
    if (!fix)
        return;
    snprintf(gz, sizeof gz, "%s/cut.trace.json.gz", tmpdir);
    snprintf(plain, sizeof plain, "%s/cut.trace.json", tmpdir);
    CHECK(fix && write_gz(gz, fix, flen, 1) == 0, "write gz");
    FILE *f = fopen(gz, "rb");
    unsigned char whole[1 << 16];
    size_t zlen = f ? fread(whole, 1, sizeof whole, f) : 0;
    if (f)
        fclose(f);
    int loaded = 0;
    for (int c = 0; c < 4 && fix; c++) {
        size_t cut = c == 3 ? zlen - 8 : zlen * (size_t)(c == 0 ? 3 : c == 1 ? 5 : 9) / 10;
        f = fopen(gz, "wb");
        fwrite(whole, 1, cut, f);
        fclose(f);
        /* what inflates from the cut bytes: the plain file cut at the same place */
        char *text = malloc(flen + 1);
        z_stream z;
        memset(&z, 0, sizeof z);
        inflateInit2(&z, 15 + 16);
        z.next_in = whole;
        z.avail_in = (uInt)cut;
        z.next_out = (unsigned char *)text;
        z.avail_out = (uInt)flen;
        inflate(&z, Z_SYNC_FLUSH);
        size_t tl = flen - z.avail_out;
        inflateEnd(&z);
        text[tl] = 0;
        write_file(plain, text);
        free(text);
        fit_trace tp, tg;
        timport_stats sp, sg;
        char errp[1024] = "";
        memset(&sp, 0, sizeof sp);
        memset(&sg, 0, sizeof sg);
        err[0] = 0;
        int rp = timport_load(&tp, plain, NULL, &sp, errp, sizeof errp);
        int rg = timport_load(&tg, gz, NULL, &sg, err, sizeof err);
        CHECK(rp == rg, "cut at %zu of %zu compressed bytes (%zu of JSON): plain rc %d (%s), gzip rc %d (%s)", cut,
              zlen, tl, rp, errp, rg, err);
        if (rp == 0 && rg == 0) {
            loaded++;
            CHECK(sg.kernels == sp.kernels && sg.mems == sp.mems && sg.apis == sp.apis && sg.ranges == sp.ranges &&
                  sg.events == sp.events && sg.complete == sp.complete && sg.cut_bytes == sp.cut_bytes &&
                  sg.json_bytes == sp.json_bytes && tg.truncated == tp.truncated && sg.cut_compressed &&
                  !sp.cut_compressed && (c == 3) == sg.complete,
                  "cut %d: gzip %zu events %zu kernels complete %d cut_bytes %llu (gz cut %d), plain %zu %zu %d %llu",
                  c, sg.events, sg.kernels, sg.complete, sg.cut_bytes, sg.cut_compressed, sp.events, sp.kernels,
                  sp.complete, sp.cut_bytes);
        }
        if (rp == 0)
            fit_trace_free(&tp);
        if (rg == 0)
            fit_trace_free(&tg);
    }
    CHECK(loaded >= 2, "only %d of the cut files loaded", loaded);
    free(fix);
}

/* A UTF-8 byte order mark before the document (a Windows tool or an editor that re-saved the
 * trace; RFC 8259 8.1 lets a parser ignore it) was refused: "not a trace this reader knows;
 * it starts "...{"schemaVersion"" */
static void pkineto_reads_a_trace_with_a_utf8_bom(void)
{
    static const char doc[] =
        "\xef\xbb\xbf{\"schemaVersion\": 1, \"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 12.5, \"dur\": 3.0, "
        "\"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 1}}]}";
    char path[300], err[1024] = "";
    snprintf(path, sizeof path, "%s/bom.json", tmpdir);
    CHECK(write_file(path, doc) == 0, "write %s", path);
    fit_trace t;
    int rc = timport_load(&t, path, NULL, NULL, err, sizeof err);
    CHECK(rc == 0 && t.nkern == 1 && t.kern[0].start_ns == 12500, "rc %d: %s", rc, err);
    if (rc == 0)
        fit_trace_free(&t);
    for (int seed = 1; seed <= 3; seed++) {   /* the mark split over reads */
        drip s = {{drip_read, "drip", 0}, doc, sizeof doc - 1, 0, 0x9e3779b97f4a7c15ull * (uint64_t)seed};
        pjstream_cb cb = {NULL, NULL, NULL};
        pjstream_info info;
        CHECK(pjstream_run(&s.base, "traceEvents", &cb, 1 << 20, &info, err, sizeof err) == 0 && info.complete &&
              info.elements == 1, "seed %d: %s", seed, err);
    }
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--write-big"))   /* sim/bench.sh */
        return write_big(argv[2], atof(argv[3])) ? 1 : 0;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_pkineto.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    RUN(pjstream_agrees_with_a_whole_parse_at_any_cut);
    RUN(pjstream_reports_a_cut_document_and_refuses_garbage);
    RUN(pgz_reads_gzip_like_the_plain_file);
    RUN(pkineto_reads_the_fixture_fields);
    RUN(pkineto_reads_one_rank_of_a_merged_trace);
    RUN(pkineto_takes_the_graph_attribution_suffix_off);
    RUN(pkineto_maps_torch_dtypes_and_collectives);
    RUN(timport_chooses_the_importer_by_content);
    RUN(timport_takes_the_profiler_host_cost_out);
    RUN(timport_charges_python_functions_no_profiler_cost);
    RUN(timport_keeps_a_blocking_copy_after_its_wait);
    RUN(timport_keeps_relative_times_when_base_time_follows_the_events);
    RUN(pkineto_reads_times_written_as_strings);
    RUN(pkineto_reads_host_times_in_exponent_form);
    RUN(pkineto_fast_path_and_parse_read_the_same_times);
    RUN(pkineto_skips_counts_out_of_range);
    RUN(pkineto_keeps_hip_launches_and_sync_calls);
    RUN(pkineto_reads_kernels_with_inf_and_nan_args);
    RUN(timport_names_unreadable_events_when_no_kernel_reads);
    RUN(timport_tells_a_cut_or_empty_trace_from_a_cpu_only_one);
    RUN(timport_reads_a_cut_gzip_trace_like_the_cut_plain_one);
    RUN(pkineto_reads_a_trace_with_a_utf8_bom);
    RUN(pkineto_reads_names_with_unescaped_quotes);
    RUN(timport_counts_gpu_records_before_their_launch);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) {}
    return check_done();
}
