/* ofile: where a result file (a model, a link, a merged trace) goes. A regular file or a
 * new name is written as NAME.tmp (or .part) and renamed over NAME when complete, so that
 * a reader never sees half of it and a failed write leaves NAME as it was; a name that is
 * a device, a FIFO or a socket (/dev/stdout, a named pipe: `-o` pointed at one) is written
 * in place, never replaced by a regular file. Libc only (specprof merge uses it). */
#ifndef OFILE_H
#define OFILE_H
#include <stddef.h>

/* 1 when path exists and is not a regular file or a directory (following symlinks):
 * written in place; 0 otherwise (written through a temporary name). */
int ofile_in_place(const char *path);
/* Before the work that makes a result: 0 when path can be written as above (a device or
 * FIFO, or a name in a directory this process may write), else -1 with "PATH: why" in err
 * (a directory, a missing or read-only directory): fit and scale once found out only after
 * all their work. */
int ofile_check(const char *path, char *err, size_t errlen);
/* Writes text[0..len) to path as above. 0, or -1 with "PATH: why" in err; on failure a
 * regular path is left as it was (the temporary is removed). */
int ofile_write(const char *path, const char *text, size_t len, char *err, size_t errlen);
#endif
