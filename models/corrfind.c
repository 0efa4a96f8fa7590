/* corrfind.c: the lower bound of corrfind.h, written once for the callers' record types. */
#include "corrfind.h"

#include <string.h>

static uint32_t corrfind_id(const char *rec, size_t off)
{
    uint32_t id;
    memcpy(&id, rec + off, sizeof id);
    return id;
}

const void *corrfind_first(const void *base, size_t n, size_t stride, size_t off, uint32_t corr)
{
    const char *b = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (corrfind_id(b + mid * stride, off) < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && corrfind_id(b + lo * stride, off) == corr ? b + lo * stride : NULL;
}
