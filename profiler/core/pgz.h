/* pgz.h: a file as a byte source (psrc.h), inflated on the fly when it is gzip-compressed
 * (recognised by its magic bytes, not its name; concatenated gzip members are read one
 * after another, as gzip -dc does). Why: SGLang's /start_profile writes one
 * .trace.json.gz per rank and a 1 GB trace must load in bounded memory. Needs zlib, so it
 * is in libspecsim.a and not in specprof or libspecprof.so (profiler/profiler.mk). */
#ifndef PGZ_H
#define PGZ_H
#include "psrc.h"

typedef struct pgz pgz;   /* opaque: holds the FILE and the zlib stream */

/* Opens path; *out is a source to read (its label is path). 0, or -1 with err naming the
 * file. pgz_close frees it (NULL accepted). */
int  pgz_open(const char *path, pgz **out, char *err, size_t errlen);
psrc *pgz_src(pgz *g);
int  pgz_compressed(const pgz *g);     /* 1: gzip */
/* A gzip stream that ends inside compressed data (no trailer: a copy or a download that did
 * not finish) then reads as ending there: what inflates up to the cut, then the end (0), and
 * pgz_cut says so. Without it such a stream is an error (the default: a small file read whole,
 * pgz_slurp, is refused when cut). For readers that read a cut plain file up to its cut. */
void pgz_read_to_cut(pgz *g);
int  pgz_cut(const pgz *g);            /* 1: the stream was cut (pgz_read_to_cut) */
void pgz_close(pgz *g);

/* Every byte of path (inflated) into a malloc'd NUL-terminated buffer of at most max_bytes;
 * 0, or -1 with err (a larger file is refused, naming the limit). For small files
 * (server_args.json, logs' neighbours); traces are streamed. */
int  pgz_slurp(const char *path, size_t max_bytes, char **text, size_t *len, char *err,
               size_t errlen);
#endif
