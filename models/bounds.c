/* bounds: the ranges of bounds.h and the checks every reader calls. Why one table: a
 * fuzzer found int64 ns sums overflowing in the simulator and the trace readers because
 * each reader bounded its numbers its own way (or not at all); here each kind of quantity
 * has one range, and each message says which. */
#include "bounds.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const bnd_kind bnd_cost_us    = {"a cost", "us", 0, BND_COST_US_MAX, 0};
const bnd_kind bnd_slope_us   = {"a cost per unit", "us", 0, BND_SLOPE_US_MAX, 0};
const bnd_kind bnd_tokens     = {"a token count", "tokens", 0, BND_TOKENS_MAX, 0};
const bnd_kind bnd_rows       = {"a batch size", "rows", 1, BND_ROWS_MAX, 1};
const bnd_kind bnd_count      = {"a count per forward", "", 1, BND_COUNT_MAX, 1};
const bnd_kind bnd_bytes      = {"a size", "bytes", 0, BND_BYTES_MAX, 0};
const bnd_kind bnd_bw_gbps    = {"a bandwidth", "GB/s", BND_BW_GBPS_MIN, BND_BW_GBPS_MAX, 0};
const bnd_kind bnd_q_tokens   = {"query tokens per row", "tokens", 0, BND_Q_TOKENS_MAX, 0};
const bnd_kind bnd_blocks     = {"a thread-block count", "blocks", 0, BND_BLOCKS_MAX, 0};
const bnd_kind bnd_frac       = {"a relative spread", "", 0, BND_FRAC_MAX, 0};
const bnd_kind bnd_factor     = {"a factor", "", 0, BND_FACTOR_MAX, 0};
const bnd_kind bnd_experts    = {"an expert count", "experts", 0, BND_EXPERTS_MAX, 1};
const bnd_kind bnd_ranks      = {"a rank count", "ranks", 1, BND_RANKS_MAX, 1};
const bnd_kind bnd_clock_ns   = {"a CUPTI timestamp", "ns", 0, BND_CLOCK_NS_MAX, 1};
const bnd_kind bnd_ts_us      = {"a time after t0", "us", -BND_TS_US_MAX, BND_TS_US_MAX, 0};
const bnd_kind bnd_dur_us     = {"a duration", "us", 0, BND_TS_US_MAX, 0};
const bnd_kind bnd_records    = {"a record count", "", 0, BND_RECORDS_MAX, 1};
const bnd_kind bnd_iterations = {"an iteration count", "", 0, BND_ITERATIONS_MAX, 1};
const bnd_kind bnd_prob       = {"a probability", "", 0, 1, 0};
const bnd_kind bnd_row_exp    = {"a routing exponent", "", BND_ROW_EXP_MIN, 1, 0};
const bnd_kind bnd_size_factor = {"a graph size's factor", "", BND_SIZE_FACTOR_MIN, BND_SIZE_FACTOR_MAX, 0};

int bnd_ok(const bnd_kind *k, double v)
{
    return isfinite(v) && v >= k->lo && v <= k->hi && (!k->integer || v == floor(v));
}

void bnd_range_text(const bnd_kind *k, char *buf, size_t len)
{
    snprintf(buf, len, "%s [%.10g, %.10g]%s%s", k->integer ? "a whole number in" : "in",
             k->lo, k->hi, k->unit[0] ? " " : "", k->unit);
}

static int bnd_fail(const bnd_kind *k, const char *val, const char *file, const char *field,
                    char *err, size_t errlen)
{
    char range[96];
    bnd_range_text(k, range, sizeof range);
    snprintf(err, errlen, "%s: field %s: value %s: out of range: %s must be %s", file, field,
             val, k->what, range);
    return -1;
}

int bnd_check(const bnd_kind *k, double v, const char *file, const char *field,
              char *err, size_t errlen)
{
    if (bnd_ok(k, v))
        return 0;
    char val[40];
    snprintf(val, sizeof val, "%.10g", v);
    return bnd_fail(k, val, file, field, err, errlen);
}

int bnd_check_i64(const bnd_kind *k, int64_t v, const char *file, const char *field,
                  char *err, size_t errlen)
{
    /* compare in the integer domain where the limit is exact, else in double */
    int ok = k->hi >= 9.2e18 ? 1 : v <= (int64_t)k->hi;
    ok = ok && (k->lo <= -9.2e18 ? 1 : v >= (int64_t)k->lo);
    if (ok)
        return 0;
    char val[40];
    snprintf(val, sizeof val, "%" PRId64, v);
    return bnd_fail(k, val, file, field, err, errlen);
}

int bnd_read_file(const char *path, long cap, const char *what, char **text, size_t *len,
                  char *err, size_t errlen)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t n = 0, have = 0;
    char *buf = NULL;
    int rc = -1;
    for (;;) {
        if (n == have) {
            size_t want = have ? 2 * have : 4096;
            if (want > (size_t)cap + 1)
                want = (size_t)cap + 1;
            char *nb = want > have ? realloc(buf, want + 1) : NULL;
            if (!nb) {
                if (want > have) {
                    snprintf(err, errlen, "%s: out of memory reading %zu bytes", path, want);
                    goto out;
                }
                break;                      /* have == cap + 1: over the cap */
            }
            buf = nb;
            have = want;
        }
        size_t r = fread(buf + n, 1, have - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        goto out;
    }
    if (n > (size_t)cap) {
        snprintf(err, errlen, "%s: larger than %ld bytes: not %s", path, cap, what);
        goto out;
    }
    if (!buf && !(buf = malloc(1))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}
