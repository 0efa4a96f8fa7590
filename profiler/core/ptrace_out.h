/* ptrace_out.h: one trace file on disk: DIR/specprof.rank<R>.pid<P>.json.part while it
 * is written, renamed to .json when it ends cleanly (traces/FORMAT.md). Writes go straight
 * to the file descriptor (no stdio buffer) so that what was written survives SIGKILL.
 * Callers hand over whole lines; the struct is caller-owned (ptrace_out_open fills it). */
#ifndef PTRACE_OUT_H
#define PTRACE_OUT_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int fd;                 /* -1 when not open */
    char path_part[1024];   /* the name while written */
    char path_final[1024];  /* the name after ptrace_out_finish */
    int64_t bytes;          /* written so far */
    int in_place;           /* the final name is a device or FIFO: written there, no rename */
} ptrace_out;

/* Creates DIR (and parents) if missing, opens DIR/specprof.rank<R>.pid<P>.json.part
 * (truncating) and writes "[\n". Returns 0, or -1 with err "DIR: why". */
int ptrace_out_open(ptrace_out *o, const char *dir, int rank, long pid, char *err, size_t errlen);

/* Opens final_path.part (for a given final name, e.g. DIR/merged.json); writes "[\n".
 * A final_path that is a device or a FIFO (ofile.h) is written in place, not replaced. */
int ptrace_out_open_path(ptrace_out *o, const char *final_path, char *err, size_t errlen);

/* Appends n bytes (retries short writes and EINTR). Returns 0 or -1 (errno kept). */
int ptrace_out_write(ptrace_out *o, const char *buf, size_t n);

/* Closes and renames .json.part to .json. Returns 0 or -1 with err. */
int ptrace_out_finish(ptrace_out *o, char *err, size_t errlen);

/* Closes without renaming (a forked child that must not touch its parent's file). */
void ptrace_out_abandon(ptrace_out *o);
/* Closes and removes the .part file (a write that failed: nothing is left at the name). */
void ptrace_out_discard(ptrace_out *o);

/* mkdir -p; 0 or -1 with err. */
int ptrace_out_mkdirs(const char *dir, char *err, size_t errlen);

#endif
