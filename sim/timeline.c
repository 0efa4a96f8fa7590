/* timeline: a Chrome Trace Event writer. Timestamps are microseconds with three decimals
 * (the simulator's nanoseconds, exactly). Metadata events name each rank's process and its
 * "host" and "gpu stream" threads, so Perfetto shows one track per rank and host. */
#include "timeline.h"

#include <errno.h>
#include <string.h>

#define TL_TID_HOST 1
#define TL_TID_GPU  2

int timeline_open(timeline *t, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->f = fopen(path, "w");
    if (!t->f) {
        snprintf(err, errlen, "%s: cannot write the timeline: %s", path, strerror(errno));
        return -1;
    }
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"specsim\"},"
          "\"traceEvents\":[\n", t->f);
    return 0;
}

static void tl_sep(timeline *t)
{
    if (t->nevents++)
        fputs(",\n", t->f);
}

void timeline_process(timeline *t, int pid_base, const char *label, int ranks)
{
    t->pid_base = pid_base;
    for (int r = 0; r < ranks; r++) {
        int pid = pid_base + r;
        tl_sep(t);
        fprintf(t->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"name\":\"%s rank %d\"}},\n", pid, label, r);
        fprintf(t->f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"sort_index\":%d}},\n", pid, pid);
        fprintf(t->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                "\"args\":{\"name\":\"host\"}},\n", pid, TL_TID_HOST);
        fprintf(t->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                "\"args\":{\"name\":\"gpu stream\"}}", pid, TL_TID_GPU);
    }
}

static void tl_time(FILE *f, const char *key, int64_t ns)
{
    /* exact: integer microseconds and the three digits of nanoseconds */
    fprintf(f, "\"%s\":%lld.%03lld", key, (long long)(ns / 1000), (long long)(ns % 1000));
}

void timeline_span(void *ctx, const sim_span *s)
{
    timeline *t = ctx;
    FILE *f = t->f;
    tl_sep(t);
    fprintf(f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,", s->name,
            s->cat, t->pid_base + s->rank, s->track == SIM_TRACK_HOST ? TL_TID_HOST : TL_TID_GPU);
    tl_time(f, "ts", s->start_ns);
    fputc(',', f);
    tl_time(f, "dur", s->end_ns - s->start_ns);
    fprintf(f, ",\"args\":{\"iteration\":%ld,\"bs\":%d,\"padded_bs\":%d,\"eager\":%d,"
            "\"tokens\":%.0f", s->iteration, s->bs, s->padded_bs, s->eager, s->tokens);
    if (s->collectives)
        fprintf(f, ",\"allreduces\":%d,\"comm_us\":%.3f", s->collectives, s->comm_us);
    fputs("}}", f);
}

int timeline_close(timeline *t, const char *path, char *err, size_t errlen)
{
    if (!t->f)
        return 0;
    fputs("\n]}\n", t->f);
    int bad = ferror(t->f);
    if (fclose(t->f) != 0)
        bad = 1;
    t->f = NULL;
    if (bad) {
        snprintf(err, errlen, "%s: writing the timeline failed", path);
        return -1;
    }
    return 0;
}
