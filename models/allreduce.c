/* allreduce: alpha-beta time of one all-reduce, per algorithm (a table, STYLE 7) and per
 * link (presets with sources). Why: tensor-parallel decode pays ~2 all-reduces per layer of
 * a few KB to a few MB, so the small-message floor and the per-step latency decide the
 * cost more than the bandwidth. Presets are single-node (one NVLink or PCIe domain).
 * Equations and the arithmetic behind every preset number: docs/allreduce.md. */
#include "allreduce.h"
#include "bounds.h"
#include "jkeys.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#define AR_BYTES_PER_US_PER_GBPS 1e3 /* 1 GB/s = 1e9 B/s = 1e3 B/us */

static double ar_max(double a, double b) { return a > b ? a : b; }

static double ar_bw(double gbps) { return gbps * AR_BYTES_PER_US_PER_GBPS; } /* B/us */

static double ar_p2p_floor(const ar_link *l)
{
    return l->p2p_floor_us > 0 ? l->p2p_floor_us : l->floor_us;
}

static double ar_p2p_bw(const ar_link *l)
{
    return ar_bw(l->p2p_bw_gbps > 0 ? l->p2p_bw_gbps : l->bw_gbps);
}

/* Ring (reduce-scatter then all-gather around a ring): 2(N-1) steps, each rank sends and
 * receives 2(N-1)/N of the buffer. Thakur, Rabenseifner & Gropp 2005; nccl-tests
 * doc/PERFORMANCE.md defines busbw = algbw * 2(N-1)/N from the same count. */
static double ar_ring_us(const ar_link *l, double bytes, int n)
{
    if (n <= 1)
        return 0;
    double t = 2.0 * (n - 1) * l->latency_us + 2.0 * (n - 1) / n * bytes / ar_bw(l->bw_gbps);
    return ar_max(l->floor_us, t);
}

/* Double binary tree (Sanders, Speck & Traff 2009; NCCL 2.4): reduce up and broadcast
 * down two complementary trees of depth ceil(log2 N), each carrying half the buffer.
 * Every rank is interior in one tree, so its port moves 2*bytes in each direction
 * (switch or PCIe star: the port, not a point-to-point wire, is the bottleneck). */
static double ar_tree_us(const ar_link *l, double bytes, int n)
{
    if (n <= 1)
        return 0;
    double depth = ceil(log2((double)n));
    double t = 2.0 * depth * l->latency_us + 2.0 * bytes / ar_bw(l->bw_gbps);
    return ar_max(l->floor_us, t);
}

/* The tree NCCL builds inside one node is a chain through the local ranks
 * (src/graph/connect.cc: tree.up = treeIntra[i-1], tree.down[0] = treeIntra[i+1]; depth
 * nRanks/nNodes - 1 + log2(nNodes)), so on one node it takes 2(N-1) steps like the ring and
 * moves 2*bytes per port: never faster than the ring in this model, which matches NCCL's
 * own tuning model picking the ring on one node. */
static double ar_nccl_chain_us(const ar_link *l, double bytes, int n)
{
    if (n <= 1)
        return 0;
    double t = 2.0 * (n - 1) * l->latency_us + 2.0 * bytes / ar_bw(l->bw_gbps);
    return ar_max(l->floor_us, t);
}

/* "nccl": the better of NCCL's ring and NCCL's tree as NCCL builds them on one node. */
static double ar_nccl_us(const ar_link *l, double bytes, int n)
{
    double r = ar_ring_us(l, bytes, n), c = ar_nccl_chain_us(l, bytes, n);
    return r < c ? r : c;
}

/* One-shot (SGLang/vLLM custom all-reduce, cross_device_reduce_1stage): every rank reads
 * the whole buffer from each of the N-1 peers and reduces locally: one latency, (N-1)*bytes
 * through each rank's port. */
static double ar_oneshot_us(const ar_link *l, double bytes, int n)
{
    if (n <= 1)
        return 0;
    double t = l->latency_us + (n - 1) * bytes / ar_p2p_bw(l);
    return ar_max(ar_p2p_floor(l), t);
}

/* Two-shot (cross_device_reduce_2stage): reduce-scatter (each rank reads its 1/N slice from
 * N-1 peers) then all-gather (reads the other slices): two latencies, 2(N-1)/N * bytes. */
static double ar_twoshot_us(const ar_link *l, double bytes, int n)
{
    if (n <= 1)
        return 0;
    double t = 2.0 * l->latency_us + 2.0 * (n - 1) / n * bytes / ar_p2p_bw(l);
    return ar_max(ar_p2p_floor(l), t);
}

/* SGLang's custom all-reduce dispatch (custom_all_reduce.py): one-shot when
 * (ws <= 4 and bytes < 512 KB) or (ws <= 8 and bytes < 256 KB), else two-shot. SGLang only
 * enables it with full NVLink or at most 2 PCIe GPUs; the simulator does not enforce that. */
static double ar_custom_us(const ar_link *l, double bytes, int n)
{
    int one = (n <= 4 && bytes < 512.0 * 1024) || (n <= 8 && bytes < 256.0 * 1024);
    return one ? ar_oneshot_us(l, bytes, n) : ar_twoshot_us(l, bytes, n);
}

static const ar_algo ar_algos[] = {
    {"ring", ar_ring_us},
    {"tree", ar_tree_us},
    {"nccl", ar_nccl_us},
    {"oneshot", ar_oneshot_us},
    {"twoshot", ar_twoshot_us},
    {"custom", ar_custom_us},
};
static const char *const ar_algo_about[] = {
    "2(N-1)*alpha + 2(N-1)/N*B/beta (Thakur et al. 2005)",
    "double binary tree: 2*ceil(log2 N)*alpha + 2*B/beta (Sanders et al. 2009)",
    "min(ring, NCCL's one-node tree = chain): NCCL's choice on one node",
    "each rank reads all peers: alpha + (N-1)*B/p2p_beta (SGLang/vLLM 1-stage)",
    "reduce-scatter + all-gather by P2P: 2*alpha + 2(N-1)/N*B/p2p_beta (2-stage)",
    "SGLang custom all-reduce: oneshot below 256 KB at N<=8 (512 KB at N<=4), else twoshot",
};
#define AR_NALGO (sizeof ar_algos / sizeof ar_algos[0])

/* --- link presets (docs/allreduce.md shows the arithmetic) --- */

/* 8x RTX PRO 6000 Blackwell on PCIe Gen5, NCCL (voipmonitor/rtx6kpro
 * hardware/pcie-bandwidth.md, in shared/FACTS.md): all-reduce flat ~24 us from 256 B to
 * 64 KB, 28 us at 256 KB, ring busbw 37-41 GB/s tuned (22 default); a custom P2P kernel
 * 7.5 us at 256 B, slower than NCCL from 64 KB.
 *   bw 40 GB/s (busbw at large sizes);
 *   ring(256 KB) = 14*alpha + 1.75*262144 B / 40e3 B/us = 14*alpha + 11.469 us = 28 us
 *   -> alpha = 16.531/14 = 1.1808 us;  floor 24 us;
 *   p2p: floor 7.5 us; oneshot(64 KB) = alpha + 7*65536/p2p_bw = 24 us -> 20.10 GB/s. */
#define AR_PCIE5_BW_GBPS     40.0
#define AR_PCIE5_ALPHA_US    ((28.0 - 1.75 * 262144.0 / (AR_PCIE5_BW_GBPS * 1e3)) / 14.0)
#define AR_PCIE5_FLOOR_US    24.0
#define AR_PCIE5_P2P_FLOOR   7.5
#define AR_PCIE5_P2P_BW_GBPS (7.0 * 65536.0 / (24.0 - AR_PCIE5_ALPHA_US) / 1e3)

/* 8x H100/H200 SXM, NVLink4 through NVSwitch.
 *   bw 370 GB/s: NCCL ring busbw on 8 GPUs (NVIDIA/nccl-tests#212; NVIDIA/nccl#1455
 *     reports 365-370 GB/s for ring on 2-8 H100).
 *   alpha 0.6 us: NCCL's own per-step NVLink latency for Ring/LL (src/graph/tuning.cc
 *     hwLat, quoted in NVIDIA/nccl#1334).
 *   floor 20 us: ESTIMATE. vLLM's H100 benchmarks (vllm-project/vllm PR 24111, 24532)
 *     measure pynccl at 21 us (TP=4) and 23 us (TP=6) for 0.5 MB, where the ring's
 *     bandwidth term is only 2-3 us; no 8-GPU small-message NCCL number was found.
 *     NCCL's tuning model gives 6.6 + 14*0.6 = 15 us. NCCL >= 2.27 with symmetric memory
 *     reaches ~2.3 us on 8x H200 (NVIDIA/nccl#1940): model that with a custom link
 *     (--link alpha=0.6,beta=370,floor=2.3).
 *   p2p floor 5.7 us: SGLang custom all-reduce, H100 TP=8, 2-16 KB (sgl-project/sglang
 *     PR 2904; no CUDA graph). p2p_bw 127 GB/s: fits its 7.8 us at 128 KB with oneshot
 *     (7*131072 B / (7.8-0.6) us); twoshot then gives 15.6 us at 1 MB (measured 16.7). */
#define AR_NVL4_BW_GBPS      370.0
#define AR_NVL4_ALPHA_US     0.6
#define AR_NVL4_FLOOR_US     20.0
#define AR_NVL4_P2P_FLOOR    5.7
#define AR_NVL4_P2P_BW_GBPS  (7.0 * 131072.0 / (7.8 - AR_NVL4_ALPHA_US) / 1e3)

static const ar_link ar_links[] = {
    {"pcie5-8gpu", AR_PCIE5_ALPHA_US, AR_PCIE5_BW_GBPS, AR_PCIE5_FLOOR_US,
     "8x RTX PRO 6000 PCIe Gen5, NCCL tuned: flat ~24 us to 64 KB, 28 us at 256 KB, ring "
     "busbw 40 GB/s; custom P2P kernel 7.5 us at 256 B (voipmonitor/rtx6kpro "
     "hardware/pcie-bandwidth.md)",
     AR_PCIE5_P2P_FLOOR, AR_PCIE5_P2P_BW_GBPS},
    {"pcie5-8gpu-default", AR_PCIE5_ALPHA_US, 22.0, AR_PCIE5_FLOOR_US,
     "as pcie5-8gpu but NCCL default settings: ring busbw 22 GB/s on a direct-attach "
     "dual-socket board (voipmonitor/rtx6kpro hardware/pcie-bandwidth.md)",
     AR_PCIE5_P2P_FLOOR, AR_PCIE5_P2P_BW_GBPS},
    {"nvlink4-8gpu", AR_NVL4_ALPHA_US, AR_NVL4_BW_GBPS, AR_NVL4_FLOOR_US,
     "8x H100/H200 SXM NVSwitch: ring busbw 370 GB/s (NVIDIA/nccl-tests#212), 0.6 us/step "
     "(NCCL tuning.cc via NVIDIA/nccl#1334), floor 20 us ESTIMATED from vLLM H100 pynccl "
     "21-23 us at 0.5 MB (vllm PRs 24111, 24532); custom AR 5.7 us (sglang PR 2904)",
     AR_NVL4_P2P_FLOOR, AR_NVL4_P2P_BW_GBPS},
};
#define AR_NLINK (sizeof ar_links / sizeof ar_links[0])

const ar_algo *ar_algo_find(const char *name)
{
    for (size_t i = 0; i < AR_NALGO; i++)
        if (strcmp(ar_algos[i].name, name) == 0)
            return &ar_algos[i];
    return NULL;
}

const ar_link *ar_link_preset(const char *name)
{
    for (size_t i = 0; i < AR_NLINK; i++)
        if (strcmp(ar_links[i].name, name) == 0)
            return &ar_links[i];
    return NULL;
}

void ar_list(void (*cb)(const char *kind, const char *name, const char *source))
{
    for (size_t i = 0; i < AR_NALGO; i++)
        cb("allreduce-algo", ar_algos[i].name, ar_algo_about[i]);
    for (size_t i = 0; i < AR_NLINK; i++)
        cb("link", ar_links[i].name, ar_links[i].source);
}

double ar_time_us(const ar_algo *a, const ar_link *l, double bytes, int ranks)
{
    return a->time_us(l, bytes, ranks);
}

int ar_link_parse(ar_link *l, const char *spec, char *err, size_t errlen)
{
    static const char *const keys[] = {"alpha", "beta", "floor", "p2p_floor", "p2p_beta"};
    double v[5] = {-1, -1, 0, 0, 0};
    int seen[5] = {0};
    memset(l, 0, sizeof *l);
    if (spec == NULL || *spec == '\0') {
        snprintf(err, errlen, "link: value \"\": empty (give a preset name or "
                 "alpha=US,beta=GBPS[,floor=US])");
        return -1;
    }
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        int k = -1;
        if (eq != NULL)
            for (int i = 0; i < 5; i++)
                if (strlen(keys[i]) == (size_t)(eq - p) && strncmp(p, keys[i], (size_t)(eq - p)) == 0)
                    k = i;
        if (k < 0) {
            snprintf(err, errlen, "link: value \"%.*s\" in \"%s\": expected KEY=NUMBER with KEY "
                     "one of alpha, beta, floor, p2p_floor, p2p_beta", (int)(len < 40 ? len : 40),
                     p, spec);
            return -1;
        }
        char buf[64];
        size_t nlen = len - (size_t)(eq + 1 - p);
        char *end = buf;
        if (nlen > 0 && nlen < sizeof buf) {
            memcpy(buf, eq + 1, nlen);
            buf[nlen] = '\0';
            errno = 0;
            v[k] = strtod(buf, &end);
        }
        if (nlen == 0 || nlen >= sizeof buf || end != buf + nlen || !isfinite(v[k]) ||
            v[k] < 0) {
            snprintf(err, errlen, "link: value \"%.*s\" in \"%s\": %s must be a finite number "
                     ">= 0", (int)(len < 40 ? len : 40), p, spec, keys[k]);
            return -1;
        }
        /* alpha and the floors are costs, the betas bandwidths (bounds.h); p2p_beta 0 is
         * "the same as beta" */
        const bnd_kind *kind = k == 1 || k == 4 ? &bnd_bw_gbps : &bnd_cost_us;
        if (!(k == 4 && v[k] == 0) && !bnd_ok(kind, v[k])) {
            char range[96];
            bnd_range_text(kind, range, sizeof range);
            snprintf(err, errlen, "link: value \"%.*s\" in \"%s\": out of range: %s must be %s",
                     (int)(len < 40 ? len : 40), p, spec, keys[k], range);
            return -1;
        }
        if (seen[k]++) {
            snprintf(err, errlen, "link: value \"%.*s\" in \"%s\": %s given twice",
                     (int)(len < 40 ? len : 40), p, spec, keys[k]);
            return -1;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (!seen[0] || !seen[1]) {
        snprintf(err, errlen, "link: value \"%s\": alpha= (us per step) and beta= (GB/s) "
                 "are both required", spec);
        return -1;
    }
    if (!(v[1] > 0)) {
        snprintf(err, errlen, "link: value \"%s\": beta must be > 0 GB/s", spec);
        return -1;
    }
    snprintf(l->name, sizeof l->name, "custom");
    l->latency_us = v[0];
    l->bw_gbps = v[1];
    l->floor_us = v[2];
    l->p2p_floor_us = v[3];
    l->p2p_bw_gbps = v[4];
    l->source = "given on the command line (alpha/beta/floor)";
    return 0;
}

/* --- links from files (specsim fit-allreduce) --- */

#define AR_LINK_FORMAT 1

/* ar_link.source is a borrowed pointer and links are copied by value (sim_params, sweep
 * workers), so a loaded file's source text is kept once per distinct text for the life of
 * the process: a handful of link files per run, a few hundred bytes each. The list stays
 * reachable from this static, so leak checkers do not report it. */
struct ar_src {
    struct ar_src *next;
    char text[];
};
static struct ar_src *ar_srcs;
static pthread_mutex_t ar_srcs_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *ar_src_intern(const char *text)
{
    const char *out = NULL;
    pthread_mutex_lock(&ar_srcs_lock);
    for (struct ar_src *p = ar_srcs; p && !out; p = p->next)
        if (strcmp(p->text, text) == 0)
            out = p->text;
    if (!out) {
        size_t n = strlen(text) + 1;
        struct ar_src *p = malloc(sizeof *p + n);
        if (p) {
            memcpy(p->text, text, n);
            p->next = ar_srcs;
            ar_srcs = p;
            out = p->text;
        }
    }
    pthread_mutex_unlock(&ar_srcs_lock);
    return out;
}

/* A number field: required (must be present) or optional (0 when absent), within kind's
 * range (bounds.h); an optional bandwidth may be 0 (unset). 0 or -1 with err. */
static int ar_json_num(const cJSON *root, const char *path, const char *key, int required,
                       const bnd_kind *kind, double *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = 0;
    if (!v) {
        if (!required)
            return 0;
        snprintf(err, errlen, "%s: field %s: missing (a link file needs latency_us, bw_gbps "
                 "and floor_us; specsim fit-allreduce writes them)", path, key);
        return -1;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        char *t = cJSON_PrintUnformatted(v);
        snprintf(err, errlen, "%s: field %s: value %.40s: not a finite number", path, key,
                 t ? t : "?");
        free(t);
        return -1;
    }
    *out = v->valuedouble;
    if (!required && *out == 0)
        return 0;
    return bnd_check(kind, *out, path, key, err, errlen);
}

int ar_link_load(const char *path, ar_link *l, char *err, size_t errlen)
{
    int rc;
    char *text = NULL;
    memset(l, 0, sizeof *l);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s (a link file is written by specsim "
                 "fit-allreduce)", path, strerror(errno));
        return -1;
    }
    fclose(f);
    size_t n;
    if (bnd_read_file(path, BND_LINK_FILE_BYTES, "a link file", &text, &n, err, errlen))
        return -1;
    rc = ar_link_from_text(text, path, l, err, errlen);
    free(text);
    return rc;
}

int ar_link_from_text(const char *text, const char *path, ar_link *l, char *err, size_t errlen)
{
    int rc = -1;
    cJSON *root = NULL;
    memset(l, 0, sizeof *l);
    root = cJSON_Parse(text);
    if (!root || !cJSON_IsObject(root)) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(err, errlen, "%s: not a JSON object (JSON error near \"%.20s\")", path,
                 at && !root ? at : "");
        goto done;
    }
    for (const cJSON *it = root->child; it; it = it->next)   /* cJSON keeps the first of two */
        if (jkeys_dup(root, it)) {
            snprintf(err, errlen, "%s: field %.40s: given twice", path, it->string);
            goto done;
        }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "specsim_link");
    if (!cJSON_IsNumber(fmt) || fmt->valuedouble != AR_LINK_FORMAT) {
        char *t = fmt ? cJSON_PrintUnformatted(fmt) : NULL;
        snprintf(err, errlen, "%s: field specsim_link: value %.20s: expected %d (a link file "
                 "from specsim fit-allreduce)", path, t ? t : "(missing)", AR_LINK_FORMAT);
        free(t);
        goto done;
    }
    double alpha, bw, floor_us, p2p_floor, p2p_bw;
    if (ar_json_num(root, path, "latency_us", 1, &bnd_cost_us, &alpha, err, errlen) ||
        ar_json_num(root, path, "bw_gbps", 1, &bnd_bw_gbps, &bw, err, errlen) ||
        ar_json_num(root, path, "floor_us", 1, &bnd_cost_us, &floor_us, err, errlen) ||
        ar_json_num(root, path, "p2p_floor_us", 0, &bnd_cost_us, &p2p_floor, err, errlen) ||
        ar_json_num(root, path, "p2p_bw_gbps", 0, &bnd_bw_gbps, &p2p_bw, err, errlen))
        goto done;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (name && (!cJSON_IsString(name) || !name->valuestring[0] ||
                 strlen(name->valuestring) >= sizeof l->name)) {
        snprintf(err, errlen, "%s: field name: must be a string of 1..%zu characters", path,
                 sizeof l->name - 1);
        goto done;
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(root, "source");
    if (src && !cJSON_IsString(src)) {
        snprintf(err, errlen, "%s: field source: must be a string", path);
        goto done;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s: %s", path, src ? src->valuestring : "(no source given)");
    l->source = ar_src_intern(buf);
    if (!l->source) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    snprintf(l->name, sizeof l->name, "%s", name ? name->valuestring : "file");
    l->latency_us = alpha;
    l->bw_gbps = bw;
    l->floor_us = floor_us;
    l->p2p_floor_us = p2p_floor;
    l->p2p_bw_gbps = p2p_bw;
    rc = 0;
done:
    cJSON_Delete(root);
    if (rc)
        memset(l, 0, sizeof *l);
    return rc;
}
