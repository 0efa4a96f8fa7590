/* ofile: result files written whole or not at all, devices and FIFOs in place (ofile.h).
 * Results are KBs to MBs, written once at the end of a command. */
#include "ofile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ofile_in_place(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int ofile_check(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (!path[0]) {
        snprintf(err, errlen, "\"\": an empty file name");
        return -1;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: a directory (give a file name)", path);
        return -1;
    }
    if (ofile_in_place(path))
        return 0;
    char dir[4096];   /* the temporary NAME.tmp goes beside NAME */
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= sizeof dir) {
        snprintf(err, errlen, "%s: cannot write: path too long", path);
        return -1;
    }
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (n == 0)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)n, path);
    if (access(dir, W_OK) != 0) {
        snprintf(err, errlen, "%s: cannot write in %s: %s", path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int ofile_put(int fd, const char *text, size_t len)
{
    while (len) {
        ssize_t w = write(fd, text, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        text += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes text to fd and closes it; on failure "PATH: write error: ..." in err and -1. */
static int ofile_put_close(int fd, const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    int bad = ofile_put(fd, text, len);
    int e = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        snprintf(err, errlen, "%s: write error: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int ofile_write(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    if (ofile_in_place(path)) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            return -1;
        }
        return ofile_put_close(fd, path, text, len, err, errlen);
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "%s: cannot write: path too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot write %s: %s", path, tmp, strerror(errno));
        return -1;
    }
    if (ofile_put_close(fd, path, text, len, err, errlen)) {
        remove(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}
