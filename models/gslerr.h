/* gslerr: GSL's error handler for the whole program. GSL's default handler calls abort()
 * (a 1e12-token output length once reached gsl_rng_uniform_int and killed the run); this
 * one keeps the message, per thread, and returns, so the GSL call returns its error code
 * and the caller reports it. main() and the fuzz harnesses install it first thing. */
#ifndef GSLERR_H
#define GSLERR_H

/* Installs the handler (process-wide, idempotent). */
void gslerr_install(void);
/* The last GSL error on this thread since gslerr_clear ("" when none): "FILE:LINE: why". */
const char *gslerr_last(void);
void gslerr_clear(void);
#endif
