/* test_ptrace_json.c: the libc-only JSON parser behind the trace reader
 * (profiler/core/pjson): values, escapes, errors with offsets, write/parse round trip. */
#include "check.h"
#include "pjson.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pjson *parse(pjson_arena *a, const char *s, char *err) {
    pjson *v = NULL;
    if (pjson_parse(a, s, strlen(s), 0, &v, err, 128)) return NULL;
    return v;
}

static void pjson_parses_values_and_escapes(void) {
    pjson_arena *a = pjson_arena_create();
    char err[128];
    pjson *v = parse(a, " {\"a\":1,\"b\":-2.5e3,\"s\":\"x\\\"y\\\\z\\n\\u00e9\\ud83d\\ude00\",\"t\":true,\"n\":null,"
                        "\"arr\":[1,[2,{}],[]],\"big\":9007199254740993} ", err);
    CHECK(v != NULL, "%s", err);
    if (v) {
        CHECK(pjson_get_int(v, "a", 0) == 1 && pjson_get(v, "a")->is_int, "a");
        CHECK(pjson_get_num(v, "b", 0) == -2500.0 && !pjson_get(v, "b")->is_int, "b");
        CHECK(!strcmp(pjson_get_str(v, "s", ""), "x\"y\\z\n\xc3\xa9\xf0\x9f\x98\x80"), "s '%s'", pjson_get_str(v, "s", ""));
        CHECK(pjson_get_bool(v, "t", 0) == 1 && pjson_get(v, "n")->type == PJSON_NULL, "t/n");
        const pjson *arr = pjson_get(v, "arr");
        CHECK(arr && arr->len == 3 && pjson_at(arr, 1)->len == 2 && pjson_at(pjson_at(arr, 1), 1)->type == PJSON_OBJ, "arr");
        CHECK(pjson_get_int(v, "big", 0) == 9007199254740993LL, "int64 kept exact");
        CHECK(pjson_get_int(v, "missing", -7) == -7 && pjson_get_str(v, "a", "d")[0] == 'd', "defaults");
    }
    pjson_arena_destroy(a);
}

static void pjson_errors_name_the_offset(void) {
    const char *bad[] = { "", "{", "{\"a\"}", "{\"a\":}", "[1,]", "[1 2]", "\"abc", "tru", "{\"a\":1}x", "\"\\q\"",
                          "\"a\x01\"", "01x", "-" };
    pjson_arena *a = pjson_arena_create();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[128] = "";
        pjson *v;
        CHECK(pjson_parse(a, bad[i], strlen(bad[i]), 0, &v, err, sizeof err) == -1, "accepted '%s'", bad[i]);
        CHECK(!strncmp(err, "offset ", 7), "message '%s'", err);
    }
    /* depth limit */
    char deep[200];
    memset(deep, '[', 100); memset(deep + 100, ']', 100);
    pjson *v;
    char err[128];
    CHECK(pjson_parse(a, deep, 200, 0, &v, err, sizeof err) == -1 && strstr(err, "nesting"), "depth: '%s'", err);
    /* one trailing comma only when allowed */
    CHECK(pjson_parse(a, "{\"a\":1},", 8, 1, &v, err, sizeof err) == 0, "trailing comma allowed");
    CHECK(pjson_parse(a, "{\"a\":1},", 8, 0, &v, err, sizeof err) == -1, "trailing comma refused");
    pjson_arena_destroy(a);
}

static void pjson_write_then_parse_is_identity(void) {
    const char *src = "{\"name\":\"q\\\"\\\\\\u0001\",\"n\":[1,-2,3.25,1e-07,true,false,null],\"o\":{\"k\":{}}}";
    pjson_arena *a = pjson_arena_create();
    char err[128], out1[512], out2[512];
    pjson *v = parse(a, src, err), *w;
    CHECK(v != NULL, "%s", err);
    if (!v) { pjson_arena_destroy(a); return; }
    int n1 = pjson_write(v, out1, sizeof out1);
    CHECK(n1 > 0, "write");
    CHECK(pjson_parse(a, out1, (size_t)n1, 0, &w, err, sizeof err) == 0, "%s: %s", out1, err);
    int n2 = pjson_write(w, out2, sizeof out2);
    CHECK(n1 == n2 && !strcmp(out1, out2), "'%s' vs '%s'", out1, out2);
    CHECK(pjson_write(v, out1, 10) == -1, "small buffer");
    pjson_arena_reset(a);
    CHECK(parse(a, "[1]", err) != NULL, "arena usable after reset");
    pjson_arena_destroy(a);
    pjson_arena_destroy(NULL);
}

/* The fast number path (integer mantissa, no strtod) against strtod on seeded random
 * numbers of the shapes traces hold, and the exact x1000 value of up to 3 decimals. */
static void pjson_numbers_match_strtod_and_milli_is_exact(void) {
    pjson_arena *a = pjson_arena_create();
    char err[128], buf[64];
    uint64_t x = 0x9e3779b97f4a7c15ull;     /* xorshift64, seeded */
    int bad_num = 0, bad_milli = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint64_t ip = x % 1000000000000000ull;           /* up to 15 integer digits */
        int dec = (int)((x >> 40) % 6);                  /* 0..5 decimals */
        unsigned fr = (unsigned)((x >> 20) % 100000);
        if (dec == 0) snprintf(buf, sizeof buf, "%s%llu", i & 1 ? "-" : "", (unsigned long long)ip);
        else snprintf(buf, sizeof buf, "%s%llu.%0*u", i & 1 ? "-" : "", (unsigned long long)(ip % 1000000000000ull),
                      dec, fr % (unsigned)(dec == 1 ? 10 : dec == 2 ? 100 : dec == 3 ? 1000 : dec == 4 ? 10000 : 100000));
        pjson *v = parse(a, buf, err);
        if (!v) { bad_num++; continue; }
        if (v->num != strtod(buf, NULL)) bad_num++;
        if (dec <= 3) {
            /* the same digits with the point moved 3 places: an exact integer */
            char ib[64]; const char *dot = strchr(buf, '.');
            if (!dot) snprintf(ib, sizeof ib, "%s000", buf);
            else snprintf(ib, sizeof ib, "%.*s%s%.*s", (int)(dot - buf), buf, dot + 1, 3 - dec, "000");
            if (!v->milli_exact || v->milli != strtoll(ib, NULL, 10)) bad_milli++;
        } else if (v->milli_exact) bad_milli++;
        pjson_arena_reset(a);
    }
    CHECK(bad_num == 0, "%d numbers differ from strtod", bad_num);
    CHECK(bad_milli == 0, "%d milli values wrong", bad_milli);
    /* a Kineto-style absolute timestamp past 2^53 ns keeps its nanoseconds */
    pjson *v = parse(a, "5427389637806123.457", err);
    CHECK(v && v->milli_exact && v->milli == 5427389637806123457LL, "milli %lld", v ? (long long)v->milli : 0LL);
    v = parse(a, "1.5e3", err);
    CHECK(v && v->milli == 1500000 && !v->milli_exact, "exponent: milli %lld", v ? (long long)v->milli : 0LL);
    pjson_arena_destroy(a);
}

int main(void) {
    RUN(pjson_parses_values_and_escapes);
    RUN(pjson_errors_name_the_offset);
    RUN(pjson_write_then_parse_is_identity);
    RUN(pjson_numbers_match_strtod_and_milli_is_exact);
    return check_done();
}
