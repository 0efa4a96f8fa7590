/* ptrace_out.h: one trace file on disk: DIR/specprof.rank<R>.pid<P>.json[.gz].part while
 * it is written, renamed without .part when it ends cleanly (traces/FORMAT.md). Writes go
 * straight to the file descriptor (no stdio buffer) so that what was written survives
 * SIGKILL. Compressed files are one gzip stream (zlib) cut into blocks: ptrace_out_block
 * ends a block with Z_FULL_FLUSH, so that everything handed over before it decompresses
 * from the file as it is, also when the process dies before the gzip trailer is written.
 * Callers hand over whole lines; the struct is caller-owned (ptrace_out_open* fill it). */
#ifndef PTRACE_OUT_H
#define PTRACE_OUT_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int fd;                 /* -1 when not open */
    char path_part[1024];   /* the name while written */
    char path_final[1024];  /* the name after ptrace_out_finish */
    int64_t bytes;          /* written to the file so far (compressed bytes for .gz) */
    int64_t bytes_in;       /* handed over so far (uncompressed) */
    int64_t blocks;         /* blocks ended (compressed files) */
    int gz_level;           /* 0: plain JSON; 1..9: zlib level */
    void *z;                /* the deflate stream and its output buffer (compressed files) */
    int in_place;           /* the final name is a device or FIFO: written there, no rename */
} ptrace_out;

/* ptrace_out_open's path buffer (a trace's path under DIR, its ".part" and the NUL fit in
 * it), and the name it gives a rank and pid at their widest: the launcher refuses a -o whose
 * absolute path leaves no room for that name, before the run. */
#define PTRACE_OUT_PATH_BUF 1024
#define PTRACE_OUT_NAME_WIDEST "/specprof.rank2147483647.pid2147483647.json.gz.part"
/* Creates DIR (and parents) if missing, opens DIR/specprof.rank<R>.pid<P>.json.part and
 * writes "[\n"; where a file of that rank and pid is there already (finished or .part: an
 * image before exec, a pid reused by a later run), ...pid<P>-2.json.part, -3, ...: nothing is
 * written over. Returns 0, or -1 with err "DIR: why". */
int ptrace_out_open(ptrace_out *o, const char *dir, int rank, long pid, char *err, size_t errlen);
/* The same with gz_level 1..9: DIR/specprof.rank<R>.pid<P>.json.gz.part, compressed. */
int ptrace_out_open_gz(ptrace_out *o, const char *dir, int rank, long pid, int gz_level, char *err, size_t errlen);

/* Opens final_path.part (for a given final name, e.g. DIR/merged.json); writes "[\n".
 * A final_path ending in ".gz" is written compressed (zlib level 6). A final_path
 * that is a device or a FIFO (ofile.h) is written in place, not replaced. */
int ptrace_out_open_path(ptrace_out *o, const char *final_path, char *err, size_t errlen);
int ptrace_out_open_path_gz(ptrace_out *o, const char *final_path, int gz_level, char *err, size_t errlen);

/* Appends n bytes (retries short writes and EINTR). Returns 0 or -1 (errno kept). For a
 * compressed file the bytes may stay in the compressor until the next block end. */
int ptrace_out_write(ptrace_out *o, const char *buf, size_t n);

/* Ends a block: for a compressed file, flushes the compressor (Z_FULL_FLUSH) and writes
 * what it held; a plain file has nothing to do. 0 or -1 (errno kept). */
int ptrace_out_block(ptrace_out *o);

/* Ends the stream (gzip trailer), closes and renames .part away. Returns 0 or -1 with err. */
int ptrace_out_finish(ptrace_out *o, char *err, size_t errlen);

/* Closes without renaming (a forked child that must not touch its parent's file). */
void ptrace_out_abandon(ptrace_out *o);
/* Closes and removes the .part file (a write that failed: nothing is left at the name). */
void ptrace_out_discard(ptrace_out *o);

/* mkdir -p; 0 or -1 with err. */
int ptrace_out_mkdirs(const char *dir, char *err, size_t errlen);

#endif
