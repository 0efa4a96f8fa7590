/* pleager.c: lite mode's eager probe (see pleager.h). The program's thread decides once per
 * phase instance (a thread-local comparison of the innermost phase range's sequence number,
 * then one locked table lookup) whether to probe it; a probed instance costs its thread two
 * cudaEventRecord calls a launch. The hold is a cuStreamWaitValue32 on a flag in mapped host
 * memory: the GPU waits until the host writes the flag (release), with no CUDA call. The
 * writer reads an instance once its end event completed and gives the slot back. */
#include "pleager.h"
#include "pinject.h"
#include "precord.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int pe_err;                        /* cudaError_t */
#define PE_SUCCESS 0
#define PE_NOT_READY 600                   /* cudaErrorNotReady */
#define PE_CHAIN 8                         /* events recorded back to back at the start: the cost */
#define PE_MAX_EVENTS (2 * PLEAGER_MAX_ENTRIES + PE_CHAIN + 8)
#define PE_SEGMENT_DEFAULT 64              /* launches per hold (SPECPROF_PROBE_EAGER_SEGMENT): each
                                              queues 3 commands; a full queue would block the host */
#define PE_WATCHDOG_MS 50                  /* a hold older than this is released by the writer */
#define PE_KEYS 8192                       /* phase shapes counted (open addressing) */
#define PE_NAME_CACHE 4096                 /* kernel names by function (open addressing) */
#define PE_STREAM_PER_THREAD ((void *)0x2) /* cudaStreamPerThread / CU_STREAM_PER_THREAD */
#define PE_HOST_ALLOC_MAPPED 2u            /* cudaHostAllocMapped */
#define PE_WAIT_GEQ 0u                     /* CU_STREAM_WAIT_VALUE_GEQ */
#define PE_WAIT32_VERSION 12000   /* cuStreamWaitValue32's version asked for (the _v2 ABI) */

enum { PE_FREE = 0, PE_FILLING, PE_DONE, PE_READING };

typedef struct {
    int type;                              /* 0 kernel, 1 copy, 2 release, 3 end (pleager_view) */
    const void *fn;
    unsigned grid[3], block[3];
    uint64_t smem_or_bytes;
    int copy_kind;
    int64_t t0, t1;
    int eb, ea;                            /* event indices */
} pe_entry;

typedef struct {
    int dev;
    void *stream;                          /* as held: the per-thread stream's handle for a _ptsz NULL */
    uint64_t stream_id;
    int64_t tid, host0;
    uint32_t phase_seq;
    char nvtx[PNVTX_NAME_MAX], phase[PNVTX_NAME_MAX];
    void **ev;                             /* PE_MAX_EVENTS, made as needed and kept */
    int nev, made;
    pe_entry *e;
    int ne;
    int other_streams, lost;
    atomic_int watchdog;
} pe_inst;

static struct {
    int n, segment, broken;
    pnvtx *nvtx;
    pe_err (*ev_create)(void **), (*ev_record)(void *, void *), (*ev_query)(void *);
    pe_err (*ev_elapsed)(float *, void *, void *);
    pe_err (*is_capturing)(void *, int *), (*stream_id)(void *, unsigned long long *), (*last_error)(void);
    pe_err (*get_device)(int *), (*set_device)(int);
    pe_err (*host_alloc)(void **, size_t, unsigned), (*host_dev_ptr)(void **, void *, unsigned);
    pe_err (*func_name)(const char **, const void *);
    int (*wait32)(void *, unsigned long long, uint32_t, unsigned);   /* CUresult cuStreamWaitValue32 */
    volatile uint32_t *flag;
    unsigned long long flag_dev;
} pe;

static pthread_mutex_t pe_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int pe_state;
static pe_inst pe_slot;
static atomic_uint pe_hold_seq, pe_cur_hold;
static atomic_llong pe_hold_since;
static atomic_int pe_stopped;              /* the capture ended (pleager_stop): nothing held after */
static uint64_t pe_key[PE_KEYS];
static int pe_key_n[PE_KEYS];
static pleager_stats pe_st;                /* under pe_mu */
static struct { const void *fn; char *name; } pe_names[PE_NAME_CACHE];   /* writer only */
static pleager_entry pe_view_e[PLEAGER_MAX_ENTRIES];
static const char *pe_view_names[PLEAGER_MAX_ENTRIES];

static __thread struct {
    int active, need_hold, since_hold;
    uint32_t decided;                      /* the last phase instance decided on (probed or not) */
} pe_t;

static void pe_skip(const char *why) {
    pthread_mutex_lock(&pe_mu);
    pe_st.skipped++;
    if (!pe_st.skip_why[0]) snprintf(pe_st.skip_why, sizeof pe_st.skip_why, "%s", why);
    pthread_mutex_unlock(&pe_mu);
}

void pleager_init(void *(*sym)(const char *), int instances, pnvtx *nvtx) {
    pe.n = instances > 0 ? instances : 0;
    pe.nvtx = nvtx;
    pe_st.instances = pe.n;
    if (!pe.n) return;
    const char *seg = getenv("SPECPROF_PROBE_EAGER_SEGMENT");
    pe.segment = seg && atoi(seg) > 0 && atoi(seg) <= 1024 ? atoi(seg) : PE_SEGMENT_DEFAULT;
    *(void **)&pe.ev_create = sym("cudaEventCreate");
    *(void **)&pe.ev_record = sym("cudaEventRecord");
    *(void **)&pe.ev_query = sym("cudaEventQuery");
    *(void **)&pe.ev_elapsed = sym("cudaEventElapsedTime");
    *(void **)&pe.is_capturing = sym("cudaStreamIsCapturing");
    *(void **)&pe.stream_id = sym("cudaStreamGetId");
    *(void **)&pe.last_error = sym("cudaGetLastError");
    *(void **)&pe.get_device = sym("cudaGetDevice");
    *(void **)&pe.set_device = sym("cudaSetDevice");
    *(void **)&pe.host_alloc = sym("cudaHostAlloc");
    *(void **)&pe.host_dev_ptr = sym("cudaHostGetDevicePointer");
    *(void **)&pe.func_name = sym("cudaFuncGetName");
    /* the driver's cuStreamWaitValue32 through the runtime: cudaGetDriverEntryPointByVersion
     * (CUDA 12.5+), cudaGetDriverEntryPoint (before 13) */
    void *fn = NULL;
    int status = 0;
    pe_err (*by_version)(const char *, void **, unsigned, unsigned long long, int *);
    *(void **)&by_version = sym("cudaGetDriverEntryPointByVersion");
    if (by_version && by_version("cuStreamWaitValue32", &fn, PE_WAIT32_VERSION, 0, &status) != PE_SUCCESS)
        fn = NULL;
    if (!fn) {
        pe_err (*old)(const char *, void **, unsigned long long, int *);
        *(void **)&old = sym("cudaGetDriverEntryPoint");
        if (old && old("cuStreamWaitValue32", &fn, 0, &status) != PE_SUCCESS) fn = NULL;
    }
    if (pe.last_error) pe.last_error();
    *(void **)&pe.wait32 = fn;
    const char *why = NULL;
    if (!pe.ev_create || !pe.ev_record || !pe.ev_query || !pe.ev_elapsed || !pe.is_capturing || !pe.last_error ||
        !pe.get_device || !pe.set_device)
        why = "the runtime's event entry points were not found";
    else if (!pe.wait32)
        why = "cuStreamWaitValue32 not available from the runtime (cudaGetDriverEntryPoint*)";
    else if (!pe.host_alloc || !pe.host_dev_ptr)
        why = "cudaHostAlloc / cudaHostGetDevicePointer not found";
    pe_slot.ev = calloc(PE_MAX_EVENTS, sizeof *pe_slot.ev);
    pe_slot.e = calloc(PLEAGER_MAX_ENTRIES, sizeof *pe_slot.e);
    if (!why && (!pe_slot.ev || !pe_slot.e)) why = "out of memory";
    if (why) { pe.broken = 1; pe_skip(why); }
}

int pleager_instances(void) { return pe.broken ? 0 : pe.n; }

/* The flag, made at the first probe (a CUDA context exists then): 4 bytes of mapped host memory. */
/* The watchdog's own thread: the writer may be blocked inside a CUDA call while the program's
 * thread waits in one the interposer does not see (torchbench's graph loop without a capture
 * range hung 2 of 2 times in H100 call 34 with only the writer watching: a driver call of
 * the writer's waiting behind the program's, whose wait the hold never let end). This thread
 * makes no CUDA call; it wakes every 2 ms while a hold is in place, every 20 ms otherwise. */
static void pe_watchdog(int64_t now_ns);
static void *pe_watchdog_main(void *arg) {
    (void)arg;
    for (;;) {
        int held = atomic_load(&pe_cur_hold) != 0;
        struct timespec ts = { 0, held ? 2000000 : 20000000 };
        nanosleep(&ts, NULL);
        if (held) pe_watchdog(pinject_now_ns());
    }
    return NULL;
}

static int pe_flag(void) {
    if (pe.flag) return 0;
    void *h = NULL, *d = NULL;
    if (pe.host_alloc(&h, 64, PE_HOST_ALLOC_MAPPED) != PE_SUCCESS || pe.host_dev_ptr(&d, h, 0) != PE_SUCCESS) {
        pe.last_error();
        return -1;
    }
    memset(h, 0, 64);
    pe.flag_dev = (unsigned long long)(uintptr_t)d;
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, pe_watchdog_main, NULL);
    pthread_attr_destroy(&at);
    if (rc) return -1;   /* no hold without a watchdog */
    pe.flag = h;
    return 0;
}

static void pe_flag_set(uint32_t v) {
    uint32_t cur = __atomic_load_n(pe.flag, __ATOMIC_ACQUIRE);
    while (cur < v && !__atomic_compare_exchange_n(pe.flag, &cur, v, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {}
}

static void pe_release(void) {
    uint32_t v = atomic_exchange(&pe_cur_hold, 0);
    if (v) pe_flag_set(v);
}

static int pe_hold(void) {
    uint32_t v = atomic_fetch_add(&pe_hold_seq, 1) + 1;
    if (pe.wait32(pe_slot.stream, pe.flag_dev, v, PE_WAIT_GEQ) != 0) return -1;
    atomic_store(&pe_hold_since, pinject_now_ns());
    atomic_store(&pe_cur_hold, v);
    pe_t.need_hold = 0;
    pe_t.since_hold = 0;
    /* the capture ended meanwhile: pleager_stop may have looked at pe_cur_hold before this
     * hold was stored, and no watchdog runs after the end: released here (seq_cst: either it
     * saw the hold or this sees pe_stopped) */
    if (atomic_load(&pe_stopped)) pe_release();
    return 0;
}

/* Records the next event of the instance; its index, or -1. */
static int pe_record(void) {
    pe_inst *s = &pe_slot;
    if (s->nev >= PE_MAX_EVENTS) return -1;
    if (s->nev == s->made) {
        if (pe.ev_create(&s->ev[s->made]) != PE_SUCCESS) { pe.last_error(); return -1; }
        s->made++;
    }
    if (pe.ev_record(s->ev[s->nev], s->stream) != PE_SUCCESS) { pe.last_error(); return -1; }
    return s->nev++;
}

/* A release (type 2) or end (type 3) entry: one event. */
static void pe_marker(int type) {
    pe_inst *s = &pe_slot;
    if (s->ne >= PLEAGER_MAX_ENTRIES) { s->lost++; return; }
    int ev = pe_record();
    if (ev < 0) { s->lost++; return; }
    pe_entry *e = &s->e[s->ne++];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->t0 = e->t1 = pinject_now_ns();
    e->eb = e->ea = ev;
}

/* Closes this thread's instance: its end event, the stream released, the slot to the writer. */
static void pe_end(void) {
    if (!pe_t.active) return;
    pe_marker(3);
    pe_release();
    pe_t.active = 0;
    atomic_store(&pe_state, PE_DONE);
}

/* The phase shape's key: the name less its ctx= words (FNV-1a). */
static uint64_t pe_key_of(const char *name) {
    uint64_t h = 1469598103934665603ull;
    const char *p = name;
    while (*p) {
        while (*p == ' ') p++;
        const char *w = p;
        while (*p && *p != ' ') p++;
        if (p - w >= 4 && !strncmp(w, "ctx=", 4)) continue;
        for (const char *c = w; c < p; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h = (h ^ ' ') * 1099511628211ull;
    }
    return h ? h : 1;
}

/* Shape k's slot in the table (added when add and the table has room), or -1. Caller holds pe_mu. */
static int pe_key_slot(uint64_t k, int add) {
    unsigned i = (unsigned)(k >> 40) & (PE_KEYS - 1);
    for (int q = 0; q < PE_KEYS; q++, i = (i + 1) & (PE_KEYS - 1)) {
        if (pe_key[i] == k) return (int)i;
        if (!pe_key[i]) {
            if (!add) return -1;
            pe_key[i] = k;
            pe_st.keys++;
            return (int)i;
        }
    }
    return -1;
}

/* 1 when the shape has had fewer than N instances probed, and the slot was free: claimed. */
static int pe_claim(const char *phase) {
    int ok = 0;
    pthread_mutex_lock(&pe_mu);
    int i = pe_key_slot(pe_key_of(phase), 1);
    if (i >= 0 && pe_key_n[i] < pe.n) {
        if (atomic_load(&pe_state) == PE_FREE) {
            pe_key_n[i]++;
            atomic_store(&pe_state, PE_FILLING);
            ok = 1;
        } else {
            pe_st.busy++;   /* the one slot held by another instance: "the first N" are the first N that found it free */
        }
    }
    pthread_mutex_unlock(&pe_mu);
    return ok;
}

static void pe_unclaim(const char *phase, const char *why) {
    pthread_mutex_lock(&pe_mu);
    int i = pe_key_slot(pe_key_of(phase), 0);
    if (i >= 0 && pe_key_n[i] > 0) pe_key_n[i]--;
    pthread_mutex_unlock(&pe_mu);
    pe_skip(why);
    atomic_store(&pe_state, PE_FREE);
}

/* A new phase instance on this thread at a launch on stream s: probed from here when chosen. */
static int pe_start(void *s, uint32_t inner, uint32_t phase_seq) {
    pe_inst *in = &pe_slot;
    char nv[PNVTX_NAME_MAX], ph[PNVTX_NAME_MAX];
    /* the phase range's whole name (its shape is that less its ctx= words), asked for as a
     * range's name: pnvtx_names' phase output is the phase's kind ("decode"), which made every
     * shape of a kind one key ("decode bs=1" and "decode bs=2" shared their N instances) */
    pnvtx_names(pe.nvtx, inner, 0, nv, sizeof nv, NULL, 0);
    pnvtx_names(pe.nvtx, phase_seq, 0, ph, sizeof ph, NULL, 0);
    if (!ph[0] || !pe_claim(ph)) return -1;
    int capturing = 0;
    if (pe.is_capturing(s, &capturing) != PE_SUCCESS || capturing) {
        pe.last_error();
        pe_unclaim(ph, "the stream was capturing a graph");
        return -1;
    }
    if (pe_flag()) { pe.broken = 1; pe_unclaim(ph, "cudaHostAlloc of the hold's flag, or the watchdog's thread, failed"); return -1; }
    memcpy(in->nvtx, nv, sizeof nv);
    memcpy(in->phase, ph, sizeof ph);
    in->phase_seq = phase_seq;
    in->stream = s;
    in->dev = 0;
    if (pe.get_device(&in->dev) != PE_SUCCESS) { pe.last_error(); in->dev = 0; }
    unsigned long long id = 0;
    if (!pe.stream_id || pe.stream_id(s, &id) != PE_SUCCESS) { pe.last_error(); id = 0; }
    in->stream_id = id;
    in->tid = pinject_thread()->tid;
    in->host0 = pinject_now_ns();
    in->nev = in->ne = in->other_streams = in->lost = 0;
    atomic_store(&in->watchdog, 0);
    if (pe_hold()) {
        pe.last_error();
        pe.broken = 1;
        pe_unclaim(ph, "cuStreamWaitValue32 on the program's stream failed");
        return -1;
    }
    for (int i = 0; i < PE_CHAIN; i++)
        if (pe_record() < 0) {
            pe_release();
            pe_unclaim(ph, "no event could be recorded");
            return -1;
        }
    pe_t.active = 1;
    pthread_mutex_lock(&pe_mu);
    pe_st.probed++;
    pthread_mutex_unlock(&pe_mu);
    return 0;
}

/* Common to a launch and a copy: this thread's instance, started or ended as the innermost
 * phase range says; 1 when s is the probed stream and an entry can be made. */
static int pe_enter(void *stream, int per_thread) {
    void *s = per_thread && !stream ? PE_STREAM_PER_THREAD : stream;
    pinject_tls *t = pinject_thread();
    int d = t->nvtx.depth;
    uint32_t ph = d > 0 ? t->nvtx.f[d - 1].phase_seq : 0, inner = d > 0 ? t->nvtx.f[d - 1].seq : 0;
    /* after the capture's end nothing is probed: no writer reads an instance then, and no
     * watchdog releases a hold (a wait the interposer does not see hung the program for ever) */
    if (atomic_load(&pe_stopped)) { pe_end(); return 0; }
    if (pe_t.active && (pe_slot.phase_seq != ph || atomic_load(&pe_slot.watchdog))) pe_end();
    if (!pe_t.active) {
        if (!ph || ph == pe_t.decided) return 0;
        pe_t.decided = ph;
        if (pe_start(s, inner, ph)) return 0;
    }
    if (s != pe_slot.stream) { pe_slot.other_streams++; return 0; }
    if (pe_slot.ne + 3 > PLEAGER_MAX_ENTRIES || pe_slot.nev + 4 > PE_MAX_EVENTS) { pe_slot.lost++; return 0; }
    if (pe_t.need_hold) {
        if (pe_hold()) { pe.last_error(); pe_slot.lost++; pe_end(); return 0; }
    } else if (pe_t.since_hold >= pe.segment) {   /* a segment boundary: hold again, then release */
        uint32_t old = atomic_exchange(&pe_cur_hold, 0);
        pe_marker(2);
        if (pe_hold()) { pe.last_error(); if (old) pe_flag_set(old); pe_slot.lost++; pe_end(); return 0; }
        if (old) pe_flag_set(old);
    }
    return 1;
}

static int pe_entry_open(int type) {
    pe_inst *s = &pe_slot;
    int ev = pe_record();
    if (ev < 0) { s->lost++; return -1; }
    pe_entry *e = &s->e[s->ne];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->t0 = pinject_now_ns();
    e->eb = ev;
    e->ea = -1;
    pe_t.since_hold++;
    return s->ne++;
}

int pleager_before(void *stream, int per_thread, const void *func, const unsigned grid[3], const unsigned block[3],
                   size_t smem) {
    if (pe.n <= 0 || pe.broken || !pe_enter(stream, per_thread)) return -1;
    int k = pe_entry_open(0);
    if (k < 0) return -1;
    pe_entry *e = &pe_slot.e[k];
    e->fn = func;
    memcpy(e->grid, grid, sizeof e->grid);
    memcpy(e->block, block, sizeof e->block);
    e->smem_or_bytes = smem;
    return k;
}

int pleager_before_copy(void *stream, int per_thread, uint64_t bytes, int kind) {
    if (pe.n <= 0 || pe.broken || !pe_enter(stream, per_thread)) return -1;
    int k = pe_entry_open(1);
    if (k < 0) return -1;
    pe_slot.e[k].smem_or_bytes = bytes;
    pe_slot.e[k].copy_kind = kind;
    return k;
}

void pleager_after(int entry, int rc) {
    if (entry < 0 || !pe_t.active) return;
    pe_entry *e = &pe_slot.e[entry];
    e->t1 = pinject_now_ns();
    e->ea = pe_record();
    if (rc != PE_SUCCESS || e->ea < 0) {   /* not run, or not timed: the gap after it is not known */
        e->type = 2;
        if (e->ea < 0) e->ea = e->eb;
        pe_slot.lost++;
    }
}

void pleager_blocking(void) {
    if (!atomic_load(&pe_cur_hold)) return;
    if (!pe_t.active) {   /* another thread may wait for the held stream: released, the instance not used */
        uint32_t v = atomic_exchange(&pe_cur_hold, 0);
        if (v) {
            pe_flag_set(v);
            atomic_store(&pe_slot.watchdog, 1);
        }
        return;
    }
    pe_marker(2);
    pe_release();
    pe_t.need_hold = 1;
}

void pleager_popped(void) {
    if (!pe_t.active) return;
    pinject_tls *t = pinject_thread();
    int d = t->nvtx.depth;
    uint32_t ph = d > 0 ? t->nvtx.f[d - 1].phase_seq : 0;
    if (ph != pe_slot.phase_seq) pe_end();
}

void pleager_stop_thread(void) { pe_end(); }

void pleager_stop(void) {
    atomic_store(&pe_stopped, 1);
    pe_release();
}

/* Releases a hold older than PE_WATCHDOG_MS (no CUDA call: the flag is host memory). */
static void pe_watchdog(int64_t now_ns) {
    uint32_t v = atomic_load(&pe_cur_hold);
    if (v && now_ns - atomic_load(&pe_hold_since) > (int64_t)PE_WATCHDOG_MS * 1000000 &&
        atomic_compare_exchange_strong(&pe_cur_hold, &v, 0)) {
        pe_flag_set(v);
        atomic_store(&pe_slot.watchdog, 1);
        pthread_mutex_lock(&pe_mu);
        pe_st.watchdog++;
        pthread_mutex_unlock(&pe_mu);
    }
}

int pleager_poll(int64_t now_ns) {
    if (pe.n <= 0) return 0;
    pe_watchdog(now_ns);
    return atomic_load(&pe_state) != PE_FREE;
}

/* A kernel's name by its function (the runtime's, demangled), cached. */
static const char *pe_name_of(const void *fn) {
    if (!fn || !pe.func_name) return NULL;
    unsigned i = (unsigned)(((uintptr_t)fn * 0x9E3779B97F4A7C15ull) >> 52) & (PE_NAME_CACHE - 1);
    for (int q = 0; q < PE_NAME_CACHE; q++, i = (i + 1) & (PE_NAME_CACHE - 1)) {
        if (pe_names[i].fn == fn) return pe_names[i].name;
        if (!pe_names[i].fn) {
            const char *raw = NULL;
            if (pe.func_name(&raw, fn) != PE_SUCCESS || !raw) { pe.last_error(); raw = NULL; }
            pe_names[i].fn = fn;
            pe_names[i].name = raw ? strdup(precord_demangle(raw)) : NULL;
            return pe_names[i].name;
        }
    }
    return NULL;   /* cache full: not named */
}

static int pe_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int pleager_read(pleager_view *v) {
    if (atomic_load(&pe_state) != PE_DONE) return 0;
    pe_inst *s = &pe_slot;
    if (pe.set_device(s->dev) != PE_SUCCESS) { pe.last_error(); return 0; }
    int ok = s->nev > PE_CHAIN && s->ne > 0;
    if (ok) {
        pe_err q = pe.ev_query(s->ev[s->nev - 1]);
        if (q == PE_NOT_READY) return 0;
        if (q != PE_SUCCESS) { pe.last_error(); ok = 0; }
    }
    static float *t;
    if (!t) t = malloc(PE_MAX_EVENTS * sizeof *t);
    ok = ok && t;
    for (int i = 0; ok && i < s->nev; i++) {
        float ms = 0;
        if (pe.ev_elapsed(&ms, s->ev[0], s->ev[i]) != PE_SUCCESS) { pe.last_error(); ok = 0; }
        t[i] = ms * 1e3f;
    }
    if (!ok) {
        pthread_mutex_lock(&pe_mu);
        pe_st.lost++;
        pthread_mutex_unlock(&pe_mu);
        atomic_store(&pe_state, PE_FREE);
        return -1;
    }
    atomic_store(&pe_state, PE_READING);
    double d[PE_CHAIN];
    for (int i = 1; i < PE_CHAIN; i++) d[i - 1] = (double)t[i] - t[i - 1];
    qsort(d, PE_CHAIN - 1, sizeof *d, pe_cmp_d);
    memset(v, 0, sizeof *v);
    ptrace_eagerprobe *p = &v->p;
    v->dev = s->dev;
    v->span_us = t[s->nev - 1];
    v->first_event = s->ev[0];
    p->dev = (uint32_t)s->dev;
    p->stream = (uint32_t)s->stream_id;
    p->thread = s->tid;
    p->host0_ns = s->host0;
    p->nvtx = s->nvtx;
    p->phase = s->phase;
    p->cost_us = d[(PE_CHAIN - 1) / 2];
    p->other_streams = s->other_streams;
    p->lost = s->lost;
    p->watchdog = atomic_load(&s->watchdog);
    p->e = pe_view_e;
    p->names = pe_view_names;
    for (int i = 0; i < s->ne; i++) {
        const pe_entry *e = &s->e[i];
        pleager_entry *o = &pe_view_e[i];
        memset(o, 0, sizeof *o);
        o->type = e->type;
        o->name = -1;
        if (e->type == 0) {
            const char *nm = pe_name_of(e->fn);
            for (int k = 0; nm && k < p->nnames && o->name < 0; k++)
                if (!strcmp(pe_view_names[k], nm)) o->name = k;
            if (nm && o->name < 0) { pe_view_names[p->nnames] = nm; o->name = p->nnames++; }
            memcpy(o->grid, e->grid, sizeof o->grid);
            memcpy(o->block, e->block, sizeof o->block);
        }
        o->smem_or_bytes = e->smem_or_bytes;
        o->copy_kind = e->copy_kind;
        o->t0_us = (double)(e->t0 - s->host0) / 1e3;
        o->t1_us = (double)(e->t1 - s->host0) / 1e3;
        o->b_us = t[e->eb];
        o->a_us = t[e->ea >= 0 ? e->ea : e->eb];
    }
    p->n = s->ne;
    return 1;
}

void pleager_done(void) {
    if (atomic_load(&pe_state) == PE_READING) atomic_store(&pe_state, PE_FREE);
}

void pleager_get_stats(pleager_stats *s) {
    pthread_mutex_lock(&pe_mu);
    *s = pe_st;
    pthread_mutex_unlock(&pe_mu);
}
