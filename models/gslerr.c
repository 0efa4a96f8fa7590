/* gslerr: a GSL error handler that never aborts (gslerr.h). */
#include "gslerr.h"

#include <stdio.h>
#include <gsl/gsl_errno.h>

static _Thread_local char gslerr_msg[256];

static void gslerr_handler(const char *reason, const char *file, int line, int gsl_errno)
{
    snprintf(gslerr_msg, sizeof gslerr_msg, "%s:%d: %s (GSL error %d)", file, line, reason,
             gsl_errno);
}

void gslerr_install(void)
{
    gsl_set_error_handler(gslerr_handler);
}

const char *gslerr_last(void)
{
    return gslerr_msg;
}

void gslerr_clear(void)
{
    gslerr_msg[0] = '\0';
}
