/* test_cgraph: the CUDA-graph batch-size list. The binary-search bucket is checked against
 * a linear scan for every batch size; the default list against SGLang's ranges; parse errors
 * name the value. */
#include "cgraph.h"
#include "check.h"

#include <string.h>

/* The slow obvious reference: first captured size >= bs, 0 if none. */
static int brute_bucket(const cg_list *l, int bs)
{
    for (int i = 0; i < l->n; i++)
        if (l->bs[i] >= bs)
            return l->bs[i];
    return 0;
}

static void cgraph_default_matches_sglang_ranges(void)
{
    cg_list l;
    cg_default(&l, 512);
    /* 8 + 12 (10..32/2) + 7 (40..64/4) + 24 (72..256/8) + 16 (272..512/16) = 67 */
    CHECK(l.n == 67, "n = %d, want 67", l.n);
    CHECK(l.bs[0] == 1 && l.bs[7] == 8 && l.bs[8] == 10, "head %d %d %d", l.bs[0], l.bs[7], l.bs[8]);
    CHECK(l.bs[19] == 32 && l.bs[20] == 40, "32 then 40: %d %d", l.bs[19], l.bs[20]);
    CHECK(l.bs[26] == 64 && l.bs[27] == 72, "64 then 72: %d %d", l.bs[26], l.bs[27]);
    CHECK(l.bs[50] == 256 && l.bs[51] == 272, "256 then 272: %d %d", l.bs[50], l.bs[51]);
    CHECK(l.bs[l.n - 1] == 512, "last %d", l.bs[l.n - 1]);
    for (int i = 1; i < l.n; i++)
        CHECK(l.bs[i] > l.bs[i - 1], "not ascending at %d: %d %d", i, l.bs[i - 1], l.bs[i]);
    cg_default(&l, 160); /* older SGLang max */
    CHECK(l.bs[l.n - 1] == 160 && l.n == 8 + 12 + 7 + 12, "max 160: n %d last %d", l.n,
          l.bs[l.n - 1]);
    cg_default(&l, 100); /* 100 is not captured: the list stops at 96, as SGLang filters */
    CHECK(l.bs[l.n - 1] == 96, "max 100: last %d", l.bs[l.n - 1]);
    cg_default(&l, 0);
    CHECK(l.n == 0, "max 0: n %d", l.n);
}

static void cgraph_bucket_matches_brute_force(void)
{
    cg_list lists[4];
    char err[256];
    cg_default(&lists[0], 512);
    cg_default(&lists[1], 100);
    CHECK(cg_parse(&lists[2], "8,16", err, sizeof err) == 0, "%s", err);
    CHECK(cg_parse(&lists[3], "3,1,2,7,200,64", err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < 4; k++)
        for (int bs = 1; bs <= 600; bs++) {
            int got = cg_bucket(&lists[k], bs), want = brute_bucket(&lists[k], bs);
            CHECK(got == want, "list %d bs %d: bucket %d, brute force %d", k, bs, got, want);
        }
}

static void cgraph_nine_pads_to_sixteen(void)
{
    cg_list l;
    char err[256];
    CHECK(cg_parse(&l, "8,16", err, sizeof err) == 0, "%s", err);
    CHECK(cg_bucket(&l, 9) == 16, "bucket(9) = %d", cg_bucket(&l, 9));
    CHECK(cg_bucket(&l, 8) == 8, "bucket(8) = %d", cg_bucket(&l, 8));
    CHECK(cg_bucket(&l, 1) == 8, "bucket(1) = %d", cg_bucket(&l, 1));
    CHECK(cg_bucket(&l, 17) == 0, "bucket(17) = %d: above the max runs eagerly", cg_bucket(&l, 17));
}

static void cgraph_parse_sorts_and_dedups(void)
{
    cg_list l;
    char err[256];
    CHECK(cg_parse(&l, "16,4,8,4,1,16", err, sizeof err) == 0, "%s", err);
    CHECK(l.n == 4 && l.bs[0] == 1 && l.bs[1] == 4 && l.bs[2] == 8 && l.bs[3] == 16,
          "n %d: %d %d %d %d", l.n, l.bs[0], l.bs[1], l.bs[2], l.bs[3]);
    CHECK(cg_parse(&l, "sglang", err, sizeof err) == 0 && l.n == 67 && l.bs[66] == 512,
          "sglang: n %d", l.n);
    CHECK(cg_parse(&l, "sglang:160", err, sizeof err) == 0 && l.bs[l.n - 1] == 160,
          "sglang:160: last %d", l.bs[l.n - 1]);
    CHECK(cg_parse(&l, "none", err, sizeof err) == 0 && l.n == 0 && cg_bucket(&l, 1) == 0,
          "none: n %d", l.n);
}

static void cgraph_parse_rejects_bad_lists(void)
{
    static const struct { const char *spec, *needle; } bad[] = {
        {"", "empty"},
        {"1,0,4", "value 0"},
        {"1,-3", "value -3"},
        {"1,x,4", "\"x\""},
        {"1,,4", "\"\""},
        {"4,", "\"\""},
        {"2.5", "\"2.5\""},
        {"sglang:0", "sglang:0"},
        {"sglang:abc", "sglang:abc"},
        {"99999999999999999999", "99999999999999999999"},
        {"1,2147483647", "[1, 65536]"},        /* pad + 1 once overflowed the simulator */
        {"65537", "value 65537"},
        {"sglang:2147483647", "[1, 65536]"},
        {"sglang:10000", "holds 660 batch sizes"},   /* was cut to its first 512 in silence */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_list l;
        char err[256] = "";
        int rc = cg_parse(&l, bad[i].spec, err, sizeof err);
        CHECK(rc == -1, "\"%s\" accepted", bad[i].spec);
        CHECK(strstr(err, bad[i].needle) != NULL, "\"%s\": message \"%s\" lacks \"%s\"",
              bad[i].spec, err, bad[i].needle);
    }
    /* more than CG_MAX_SIZES entries */
    char big[8 * (CG_MAX_SIZES + 2)];
    size_t n = 0;
    for (int i = 1; i <= CG_MAX_SIZES + 1; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s%d", i > 1 ? "," : "", i);
    cg_list l;
    char err[256] = "";
    CHECK(cg_parse(&l, big, err, sizeof err) == -1, "%d sizes accepted", CG_MAX_SIZES + 1);
    CHECK(strstr(err, "513") != NULL, "message \"%s\" lacks the value 513", err);
    CHECK(cg_parse(&l, "sglang:7632", err, sizeof err) == 0 && l.n == CG_MAX_SIZES && l.bs[l.n - 1] == 7632,
          "sglang:7632: %s, %d sizes", err, l.n);
}

int main(void)
{
    RUN(cgraph_default_matches_sglang_ranges);
    RUN(cgraph_bucket_matches_brute_force);
    RUN(cgraph_nine_pads_to_sixteen);
    RUN(cgraph_parse_sorts_and_dedups);
    RUN(cgraph_parse_rejects_bad_lists);
    return check_done();
}
