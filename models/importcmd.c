/* importcmd.c: `specsim import` (importcmd.h). Loads each trace through timport, applies the
 * naming profile, prints one report block per trace. */
#include "importcmd.h"
#include "phasemap.h"
#include "timport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IMPORT_EXIT_BAD 2

static void import_usage(FILE *f)
{
    fprintf(f,
        "usage: specsim import TRACE... [options]\n"
        "  Reads traces as `specsim fit` does (specprof or Kineto/torch.profiler JSON, plain or\n"
        "  gzip, chosen by content) and says what it found: records, phase instances, what was\n"
        "  ignored (docs/importers.md).\n"
        "%s"
        "      --format F        force the importer (specprof, kineto) instead of probing\n"
        "      --instances N     print the first N phase instances as the fit reads them\n"
        "      --perf            read speed (MB/s of JSON per CPU second) and peak memory\n"
        "      --scan-only       read and count the records without keeping them (the reader's\n"
        "                        own speed and memory; no phases)\n", phasemap_options_help);
}

/* Peak resident memory of this process in KiB (Linux /proc/self/status VmHWM), -1 unknown. */
static long import_peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static double import_now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The device line's first part: the name, SM count and compute capability, or which field of
 * the file holds none (a Kineto deviceProperties entry without numSms or computeMajor, or
 * with 0: Kineto's XPU and child-profiler entries; it printed "0 SMs, cc 0.0"). */
static void import_device(const char *path, const char *importer, const ptrace_header *h)
{
    int kineto = !strcmp(importer, "kineto");
    if (!h->device.name[0]) {
        printf("# device not recorded (%s: no %s); ", path,
               kineto ? "deviceProperties entry for the kernels' device" : "device.name in the header");
        return;
    }
    char missing[64] = "";   /* the fields without a value, as the file names them */
    printf("# device %s", h->device.name);
    if (h->device.sms > 0)
        printf(", %d SMs", h->device.sms);
    else
        snprintf(missing, sizeof missing, "%s", kineto ? "numSms" : "sms");
    if (h->device.cc_major > 0)
        printf(", cc %d.%d", h->device.cc_major, h->device.cc_minor);
    else
        snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s", missing[0] ? ", " : "",
                 kineto ? "computeMajor" : "cc_major");
    if (missing[0])
        printf(" (%s: field %s%s missing or 0)", path, kineto ? "deviceProperties " : "device.", missing);
    printf("; ");
}

int importcmd_main(int argc, char **argv)
{
    phasemap pm;
    phasemap_init(&pm);
    const char *force = NULL;
    int perf = 0, ninst = 0, nfiles = 0, rc = 0, scan_only = 0;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    char err[2048];
    if (!files)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            import_usage(stdout);
            free(files);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) {
            files[nfiles++] = a;
            continue;
        }
        const char *name = a + 2;
        if (!strcmp(name, "perf") || !strcmp(name, "scan-only")) {
            perf |= name[0] == 'p';
            scan_only |= name[0] == 's';
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "specsim import: field %s: missing value\n", a);
            free(files);
            return IMPORT_EXIT_BAD;
        }
        const char *v = argv[++i];
        int r = phasemap_option(&pm, name, v, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "specsim import: %s\n", err);
            free(files);
            return IMPORT_EXIT_BAD;
        }
        if (r == 1)
            continue;
        if (!strcmp(name, "format"))
            force = v;
        else if (!strcmp(name, "instances")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (end == v || *end || n < 0 || n > 1000000000L) {   /* as fit --instances-max */
                fprintf(stderr, "specsim import: field --instances: value \"%s\": expected a "
                        "count of instances to print, 0..1000000000\n", v);
                free(files);
                return IMPORT_EXIT_BAD;
            }
            ninst = (int)n;
        }
        else {
            fprintf(stderr, "specsim import: field %s: unknown option (specsim import --help)\n", a);
            free(files);
            return IMPORT_EXIT_BAD;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "specsim import: field TRACES: missing\n");
        import_usage(stderr);
        free(files);
        return IMPORT_EXIT_BAD;
    }
    for (int f = 0; f < nfiles; f++) {
        const char *path = files[f];
        fit_trace t;
        timport_stats st;
        memset(&st, 0, sizeof st);
        st.discard = scan_only;
        double t0 = import_now_s(CLOCK_MONOTONIC), c0 = import_now_s(CLOCK_PROCESS_CPUTIME_ID);
        if (timport_load(&t, path, force, &st, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            rc = IMPORT_EXIT_BAD;
            continue;
        }
        double t1 = import_now_s(CLOCK_MONOTONIC), c1 = import_now_s(CLOCK_PROCESS_CPUTIME_ID);
        printf("# trace %s: %s%s, %llu bytes%s, %zu events: %zu kernels, %zu memcpy/memset, %zu "
               "launch calls, %zu spans", path, st.importer, st.compressed ? " (gzip)" : "",
               st.file_bytes, st.json_bytes ? "" : "", st.events, st.kernels, st.mems, st.apis, st.ranges);
        if (!strcmp(st.importer, "kineto"))
            printf(" (+%zu GPU spans counted), %zu NCCL kernels with sizes, %zu GPU records marked "
                   "graph work by their launch", st.gpu_ranges, st.nccl_kernels, st.graph_inferred);
        printf("; %s\n", st.complete ? "complete" : "cut off (no end marker)");
        if (st.merged_ranks > 1)
            printf("# merged trace of %d ranks (SGLang --merge-profiles): rank [%s] read, %zu events "
                   "of the others skipped (the fit reads one rank; the per-rank files beside it are "
                   "{id}-TP-N[...].trace.json.gz)\n", st.merged_ranks, st.merged_rank, st.merged_skipped);
        if (st.bad_events)
            fprintf(stderr, "specsim import: warning: %s: %zu events skipped; the first: %s\n", path,
                    st.bad_events, st.bad_first);
        timport_warn_cut("specsim import", path, &st);
        timport_warn_clocks("specsim import", path, &st);
        if (st.python_functions)
            printf("# %zu python_function events (with_stack=True): counted; the profiler cost taken "
                   "out per host event does not cover them (measured without stacks), so the Python "
                   "tracer's own cost stays in the host times (record with with_stack=False for the "
                   "fit)\n", st.python_functions);
        if (st.nonfinite_events)
            printf("# %zu events carry inf, NaN or out-of-range values (Kineto's blocks per SM without "
                   "the device's SM count, json.dump's NaN, 1e400): read as null\n", st.nonfinite_events);
        import_device(path, st.importer, &t.hdr);
        if (t.hdr.world_size > 0)
            printf("rank %d of %d\n", t.hdr.rank, t.hdr.world_size);
        else
            printf("rank not recorded\n");
        if (scan_only) {
            double mb = (double)(st.json_bytes ? st.json_bytes : st.file_bytes) / 1e6;
            printf("# perf scan only: wall %.3f s, CPU %.3f s: %.1f MB of JSON = %.0f MB/s per CPU "
                   "second; peak memory %.1f MB\n", t1 - t0, c1 - c0, mb,
                   mb / (c1 - c0 > 1e-9 ? c1 - c0 : 1e-9), import_peak_kib() / 1024.0);
            fit_trace_free(&t);
            continue;
        }
        phasemap local = pm;
        pm_stats ps;
        if (phasemap_shape_for(&local, path, err, sizeof err) ||
            phasemap_apply(&local, &t, &ps, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            rc = IMPORT_EXIT_BAD;
            fit_trace_free(&t);
            continue;
        }
        printf("# phases (%s profile; shape %s): ", ps.profile,
               local.shape.known ? local.shape.source : "none");
        for (int p = 0, first = 1; p < WM_NPHASE; p++)
            if (ps.per_phase[p]) {
                printf("%s%s %zu", first ? "" : ", ", wm_phase_name[p], ps.per_phase[p]);
                first = 0;
            }
        printf("; %zu step spans folded into stages, %zu verify stages split into verify and "
               "accept, %zu sample instances after decode steps, %zu stages took a neighbour's batch, %zu "
               "without one, %zu spans ignored%s%s%s; KV context %s\n", ps.folded, ps.split, ps.sample_after, ps.borrowed,
               ps.no_batch, ps.ignored, ps.ignored ? " (" : "", ps.ignored_names,
               ps.ignored ? ")" : "", ps.ctx_from == 1 ? "from g_sk=" : ps.ctx_from == 2 ?
               "from --ctx" : ps.ctx_from == 3 ? "from the server log's #token" : ps.profile[0] == 's' && ps.profile[1] == 'p' ? "from ctx= words" : "none (0)");
        if (ps.note[0])
            printf("# %s\n", ps.note);
        for (int i = 0; i < ninst && (size_t)i < t.nrng; i++)
            printf("  %.3f us +%.3f us: %s\n", (t.rng[i].start_ns - t.hdr.t0_ns) / 1000.0,
                   (t.rng[i].end_ns - t.rng[i].start_ns) / 1000.0, t.rng[i].name);
        if (perf) {
            double mb = (double)(st.json_bytes ? st.json_bytes : st.file_bytes) / 1e6;
            printf("# perf read: wall %.3f s, CPU %.3f s: %.1f MB of JSON = %.0f MB/s per CPU "
                   "second (file %.1f MB); peak memory %.1f MB (records kept: %zu kernels, %zu "
                   "launch calls)\n", t1 - t0, c1 - c0, mb, mb / (c1 - c0 > 1e-9 ? c1 - c0 : 1e-9),
                   (double)st.file_bytes / 1e6, import_peak_kib() / 1024.0, t.nkern, t.napi);
        }
        fit_trace_free(&t);
    }
    free(files);
    return rc;
}
