/* test_corrfind: the correlation-id lower bound (models/corrfind) against a linear scan, over
 * seeded random arrays of two record layouts (the id first, and after other fields) with
 * repeated ids: every id present and absent, the first record of each found. */
#include "check.h"
#include "corrfind.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct { int64_t s, e; uint32_t corr; int32_t pad; } rec;

static int rec_cmp(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}

static void corrfind_first_matches_a_linear_scan(void)
{
    uint64_t x = 42;               /* xorshift64, seeded */
    for (int trial = 0; trial < 200; trial++) {
        size_t n = (size_t)trial % 37;
        rec r[40];
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            r[i] = (rec){(int64_t)(x % 1000), 0, (uint32_t)(x >> 40) % 12 + (trial & 1 ? 4294967280u : 0), 0};
        }
        qsort(r, n, sizeof r[0], rec_cmp);
        for (uint32_t q = 0; q < 14; q++) {
            uint32_t corr = q + (trial & 1 ? 4294967280u : 0);
            const rec *want = NULL;
            for (size_t i = 0; i < n && !want; i++)
                if (r[i].corr == corr)
                    want = &r[i];
            const rec *got = corrfind_first(r, n, sizeof r[0], offsetof(rec, corr), corr);
            CHECK(got == want, "trial %d, n %zu, id %u: record %td, want %td", trial, n, corr,
                  got ? got - r : -1, want ? want - r : -1);
        }
    }
    uint32_t ids[] = {1, 3, 3, 3, 7};  /* the id as the whole record */
    CHECK(corrfind_first(ids, 5, sizeof ids[0], 0, 3) == &ids[1] && !corrfind_first(ids, 5, sizeof ids[0], 0, 4) &&
          !corrfind_first(ids, 0, sizeof ids[0], 0, 1), "uint32_t array");
}

int main(void)
{
    RUN(corrfind_first_matches_a_linear_scan);
    return check_done();
}
