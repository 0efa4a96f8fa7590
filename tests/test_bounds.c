/* test_bounds: the ranges of bounds.h (each limit in, just past it out, non-finite out),
 * the message every reader passes on (file, field, value, range), the capped reader
 * (/dev/zero stops at the cap), and ofile's rule (a FIFO given as the output is written,
 * not replaced by a regular file). */
#include "check.h"
#include "bounds.h"
#include "ofile.h"
#include "gslerr.h"
#include <gsl/gsl_rng.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void bounds_accept_limits_refuse_past_them(void)
{
    const bnd_kind *all[] = {&bnd_cost_us, &bnd_slope_us, &bnd_tokens, &bnd_rows, &bnd_count,
                             &bnd_bytes, &bnd_bw_gbps, &bnd_q_tokens, &bnd_blocks, &bnd_frac,
                             &bnd_factor, &bnd_experts, &bnd_ranks, &bnd_clock_ns, &bnd_ts_us,
                             &bnd_dur_us, &bnd_records, &bnd_iterations};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const bnd_kind *k = all[i];
        CHECK(bnd_ok(k, k->lo) && bnd_ok(k, k->hi), "%s: limits refused", k->what);
        CHECK(!bnd_ok(k, k->hi * 1.0001 + 1) && !bnd_ok(k, k->lo - 1), "%s: past the limits accepted",
              k->what);
        CHECK(!bnd_ok(k, NAN) && !bnd_ok(k, INFINITY) && !bnd_ok(k, -INFINITY), "%s: non-finite accepted",
              k->what);
        CHECK(!k->integer || !bnd_ok(k, k->lo + 0.5), "%s: a fraction accepted", k->what);
    }
    /* what the simulator's int64 ns and GSL's 32-bit draws need */
    CHECK(BND_COST_US_MAX * 1000 < 9.2e18 / 1e6, "a cost in ns leaves no room");
    CHECK(BND_TOKENS_MAX < 4294967295.0, "tokens past gsl_rng_uniform_int's range");
    CHECK(BND_CLOCK_NS_MAX + 2 * BND_TS_US_MAX * 1000 < 9.2e18, "t0 + ts + dur can overflow");
    CHECK(BND_TRACE_FILE_BYTES >= (1LL << 30), "a 1 GB trace would be refused");
}

static void bounds_message_names_file_field_value_range(void)
{
    char err[256];
    CHECK(bnd_check(&bnd_cost_us, 1e300, "m.json", "phases.verify.groups[0].base_us", err,
                    sizeof err) == -1, "1e300 us accepted");
    CHECK(strstr(err, "m.json: field phases.verify.groups[0].base_us: value 1e+300: out of range") &&
          strstr(err, "[0, 10000000] us"), "message \"%s\"", err);
    CHECK(bnd_check_i64(&bnd_clock_ns, INT64_MAX, "t.json: line 2", "t0_ns", err, sizeof err) == -1 &&
          strstr(err, "t.json: line 2: field t0_ns: value 9223372036854775807: out of range"),
          "message \"%s\"", err);
    CHECK(bnd_check_i64(&bnd_ts_us, INT64_MIN, "t", "ts", err, sizeof err) == -1, "INT64_MIN ts accepted");
    CHECK(bnd_check(&bnd_rows, 7, "f", "x", err, sizeof err) == 0, "7 rows refused");
}

static void bounds_read_file_stops_at_the_cap(void)
{
    char *text = NULL, err[256];
    size_t len = 1;
    /* /dev/zero never ends: the reader stops one byte past the cap */
    CHECK(bnd_read_file("/dev/zero", 1 << 16, "a config file", &text, &len, err, sizeof err) == -1 &&
          strstr(err, "/dev/zero: larger than 65536 bytes: not a config file"), "message \"%s\"", err);
    CHECK(text == NULL, "buffer left behind");
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_bounds.%d", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("{\"a\": 1}", f);
    fclose(f);
    CHECK(bnd_read_file(path, 8, "x", &text, &len, err, sizeof err) == 0 && len == 8 &&
          !strcmp(text, "{\"a\": 1}"), "a file of exactly the cap: %s", err);
    free(text);
    CHECK(bnd_read_file(path, 7, "x", &text, &len, err, sizeof err) == -1, "one byte over accepted");
    unlink(path);
    CHECK(bnd_read_file("/nonexistent/x", 8, "x", &text, &len, err, sizeof err) == -1 &&
          strstr(err, "cannot open"), "message \"%s\"", err);
}

static void ofile_writes_a_fifo_in_place_and_replaces_files_whole(void)
{
    char dir[64], fifo[96], reg[96], got[64] = "", err[256];
    snprintf(dir, sizeof dir, "/tmp/test_bounds.d%d", (int)getpid());
    mkdir(dir, 0700);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(reg, sizeof reg, "%s/reg", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {               /* the reader at the other end of the FIFO */
        int fd = open(fifo, O_RDONLY);
        char buf[64];
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
        _exit(n == 6 && !memcmp(buf, "hello\n", 6) ? 0 : 1);
    }
    CHECK(ofile_in_place(fifo) == 1 && ofile_in_place(reg) == 0 && ofile_in_place(dir) == 0,
          "in_place rule");
    CHECK(ofile_write(fifo, "hello\n", 6, err, sizeof err) == 0, "%s", err);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the FIFO's reader did not get the text");
    struct stat sb;
    CHECK(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "the FIFO was replaced by a regular file");
    CHECK(ofile_write(reg, "abc", 3, err, sizeof err) == 0, "%s", err);
    FILE *f = fopen(reg, "r");
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f)
        fclose(f);
    CHECK(n == 3 && !memcmp(got, "abc", 3), "regular file holds \"%s\"", got);
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp", reg);
    CHECK(access(tmp, F_OK) != 0, "temporary left behind");
    unlink(fifo);
    unlink(reg);
    rmdir(dir);
}


/* GSL's default handler calls abort() (gsl_rng_uniform_int with n > 2^32 once killed a run
 * with a 1e12-token output length); with gslerr's the call returns and the message stays. */
static void gslerr_handler_returns_instead_of_aborting(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        gslerr_install();
        gslerr_clear();
        gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
        unsigned long v = gsl_rng_uniform_int(r, 1ul << 33);   /* n past 2^32 */
        gsl_rng_free(r);
        _exit(v == 0 && strstr(gslerr_last(), "invalid n") ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "GSL aborted or said nothing: status %d", st);
}

int main(void)
{
    RUN(bounds_accept_limits_refuse_past_them);
    RUN(bounds_message_names_file_field_value_range);
    RUN(bounds_read_file_stops_at_the_cap);
    RUN(ofile_writes_a_fifo_in_place_and_replaces_files_whole);
    RUN(gslerr_handler_returns_instead_of_aborting);
    return check_done();
}
