/* check.h: the tiny test harness every tests/test_*.c uses. A test is a static void
 * function; RUN(name) runs it and prints "ok name" or "FAIL name"; a failing CHECK prints
 * file:line, the expression and the values. check_done() prints the totals line that
 * tests/run.sh sums into "N passed, N failed". */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <math.h>

static int check_tests_passed, check_tests_failed, check_cur_failed;

#define CHECK(cond, ...) do { if (!(cond)) { check_cur_failed++; \
    fprintf(stderr, "  %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* |a-b| <= tol_abs + tol_rel*|b| */
#define CHECK_NEAR(a, b, tol_abs, tol_rel) do { double a_ = (a), b_ = (b); \
    if (!(fabs(a_ - b_) <= (tol_abs) + (tol_rel) * fabs(b_))) { check_cur_failed++; \
    fprintf(stderr, "  %s:%d: %s = %.9g, expected %s = %.9g (tol abs %g rel %g)\n", \
            __FILE__, __LINE__, #a, a_, #b, b_, (double)(tol_abs), (double)(tol_rel)); } } while (0)

#define RUN(name) do { check_cur_failed = 0; name(); \
    if (check_cur_failed) { check_tests_failed++; printf("FAIL %s\n", #name); } \
    else { check_tests_passed++; printf("ok   %s\n", #name); } fflush(stdout); } while (0)

static inline int check_done(void) {
    printf("@@ %d %d\n", check_tests_passed, check_tests_failed);
    return check_tests_failed ? 1 : 0;
}
#endif
