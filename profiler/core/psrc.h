/* psrc.h: a byte source the streaming trace readers pull from (a table of one function),
 * so that they stay libc-only: a file, possibly gzip-compressed, is one source (pgz.h, in
 * libspecsim.a only, zlib), a buffer in memory another (psrc_mem, for tests and callers that
 * hold the text). Workload: traces of 10^6..10^9 bytes read in chunks of ~1 MiB. */
#ifndef PSRC_H
#define PSRC_H
#include <stddef.h>
#include <sys/types.h>

typedef struct psrc psrc;
struct psrc {
    /* Copies up to cap bytes into buf; returns the count, 0 at the end, or -1 with err
     * filled (naming the source). */
    ssize_t (*read)(psrc *s, char *buf, size_t cap, char *err, size_t errlen);
    const char *label;          /* the path or a name, for messages */
    unsigned long long bytes_in; /* bytes consumed from the underlying file (compressed) */
};

/* A source over text[0..len) (not copied: it must outlive the source). */
typedef struct {
    psrc base;
    const char *text;
    size_t len, pos;
} psrc_mem;
void psrc_mem_init(psrc_mem *m, const char *text, size_t len, const char *label);

/* Reads from s until cap bytes or the end; returns the count or -1 with err. */
ssize_t psrc_read_full(psrc *s, char *buf, size_t cap, char *err, size_t errlen);

/* Lines of a source, one at a time, in bounded memory (the longest line plus one chunk).
 * Caller-owned: psrc_lines_init / psrc_lines_free. */
typedef struct {
    psrc  *src;
    char  *buf;
    size_t cap, start, end;     /* unread bytes are buf[start..end) */
    int    eof;
    size_t max_line;            /* a longer line is an error, unless cut_long */
    int    cut_long;            /* set by the caller: a longer line is handed out cut to its
                                 * first max_line bytes and the rest of it is dropped (a log
                                 * where an unrelated line may be megabytes) */
    int    skipping;            /* dropping the rest of a cut line */
    /* about the line just handed out */
    int    cut;                 /* it was cut at max_line (cut_long) */
    int    unterminated;        /* the input ended inside it: no '\n' after it (not set
                                 * on a cut line) */
    size_t cut_lines;           /* lines cut so far */
    size_t nul_bytes;           /* with cut_long: NUL bytes skipped at the start of lines so far
                                 * (a log truncated in place while its writer kept its offset:
                                 * logrotate's copytruncate without O_APPEND leaves a hole of
                                 * NULs as long as the old file) */
} psrc_lines;
int  psrc_lines_init(psrc_lines *l, psrc *src, size_t max_line);
/* Next line without its '\n': 1 and *line, *len (valid until the next call), 0 at the end,
 * -1 with err (read error, out of memory, a line longer than max_line). */
int  psrc_lines_next(psrc_lines *l, const char **line, size_t *len, char *err, size_t errlen);
void psrc_lines_free(psrc_lines *l);

#endif
