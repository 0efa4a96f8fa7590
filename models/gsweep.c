/* gsweep: the GEMM sweep reader (gsweep.h). */
#include "gsweep.h"
#include "bounds.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GS_LINE 1024
#define GS_COLS 16

enum { GS_SITE, GS_PHASES, GS_PERF, GS_M, GS_TOKENS, GS_US, GS_PRESET, GS_DEVICE, GS_NCOL };
static const char *const gs_col_name[GS_NCOL] = {"site", "phases", "per_forward", "m",
                                                 "tokens", "us", "preset", "device"};
static const int gs_required = 6;   /* the first six */

/* Splits line in place on commas (no quoting: the writer never quotes); returns the count. */
static int gs_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = 0;
    while (n < max) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int gs_num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int gs_tok_index(wm_sweep *sw, double t)
{
    for (int i = 0; i < sw->ntok; i++)
        if (sw->tok[i] == t)
            return i;
    return -1;
}

int gsweep_load(wm_sweep *sw, const char *path, char *err, size_t errlen)
{
    memset(sw, 0, sizeof *sw);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char line[GS_LINE], *fld[GS_COLS], preset[64] = "", device[96] = "";
    int col[GS_NCOL], lineno = 0, rc = -1, nrows = 0;
    /* sums per (site, token): the token list is built as rows come */
    static double sum[WM_SWEEP_SITES][WM_SWEEP_TOK];
    static int cnt[WM_SWEEP_SITES][WM_SWEEP_TOK];
    memset(cnt, 0, sizeof cnt);
    memset(sum, 0, sizeof sum);
    for (int i = 0; i < GS_NCOL; i++)
        col[i] = -1;
    if (!fgets(line, sizeof line, f)) {
        snprintf(err, errlen, "%s: empty file: not a GEMM sweep (specbench --gemm-sweep)", path);
        goto out;
    }
    lineno = 1;
    int nh = gs_split(line, fld, GS_COLS);
    for (int i = 0; i < nh; i++)
        for (int c = 0; c < GS_NCOL; c++)
            if (strcmp(fld[i], gs_col_name[c]) == 0)
                col[c] = i;
    for (int c = 0; c < gs_required; c++)
        if (col[c] < 0) {
            snprintf(err, errlen, "%s: line 1: field %s: missing column (a GEMM sweep has "
                     "site,phases,per_forward,m,tokens,us; specbench --gemm-sweep writes it)",
                     path, gs_col_name[c]);
            goto out;
        }
    long bytes = (long)strlen(line);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        bytes += (long)strlen(line);
        if (bytes > BND_CSV_FILE_BYTES) {
            snprintf(err, errlen, "%s: line %d: larger than %ld bytes: not a GEMM sweep", path,
                     lineno, BND_CSV_FILE_BYTES);
            goto out;
        }
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s: line %d: longer than %d characters", path, lineno, GS_LINE - 1);
            goto out;
        }
        if (line[strspn(line, " \t\r\n")] == 0)
            continue;
        char *v[GS_COLS];
        int n = gs_split(line, v, GS_COLS);
        if (n != nh) {
            snprintf(err, errlen, "%s: line %d: %d fields, the header has %d (a cut-off or "
                     "foreign file?)", path, lineno, n, nh);
            goto out;
        }
        const char *site = v[col[GS_SITE]];
        if (!*site || strlen(site) >= sizeof sw->site[0].name) {
            snprintf(err, errlen, "%s: line %d: field site: value \"%.40s\": empty or longer "
                     "than %zu characters", path, lineno, site, sizeof sw->site[0].name - 1);
            goto out;
        }
        for (int c = GS_PRESET; c <= GS_DEVICE; c++) {
            if (col[c] < 0)
                continue;
            char *have = c == GS_PRESET ? preset : device;
            size_t cap = c == GS_PRESET ? sizeof preset : sizeof device;
            if (!*have)
                snprintf(have, cap, "%s", v[col[c]]);
            else if (strcmp(have, v[col[c]]) != 0) {
                snprintf(err, errlen, "%s: line %d: field %s: value \"%.40s\": the file mixes "
                         "%ss (\"%s\" above): one sweep per file", path, lineno,
                         gs_col_name[c], v[col[c]], gs_col_name[c], have);
                goto out;
            }
        }
        double tok, us, perf;
        const char *bad = gs_num(v[col[GS_TOKENS]], &tok) || tok < 1 ? "tokens"
                        : gs_num(v[col[GS_US]], &us) || us < 0 ? "us"
                        : gs_num(v[col[GS_PERF]], &perf) || perf < 0 ? "per_forward" : NULL;
        if (bad) {
            int c = strcmp(bad, "tokens") == 0 ? GS_TOKENS : strcmp(bad, "us") == 0 ? GS_US : GS_PERF;
            snprintf(err, errlen, "%s: line %d: field %s: value \"%.40s\": %s", path, lineno,
                     bad, v[col[c]], c == GS_TOKENS ? "want a token count >= 1"
                     : "want a finite number >= 0");
            goto out;
        }
        /* the ranges every reader shares (bounds.h) */
        char where[300];
        snprintf(where, sizeof where, "%.200s: line %d", path, lineno);
        if (bnd_check(&bnd_tokens, tok, where, "tokens", err, errlen) ||
            bnd_check(&bnd_cost_us, us, where, "us", err, errlen) ||
            bnd_check(&bnd_factor, perf, where, "per_forward", err, errlen))
            goto out;
        const char *m = v[col[GS_M]];
        if (strcmp(m, "tokens") != 0 && strcmp(m, "rows") != 0) {
            snprintf(err, errlen, "%s: line %d: field m: value \"%.40s\": want tokens or rows",
                     path, lineno, m);
            goto out;
        }
        unsigned phases = 0;
        char pbuf[128];
        snprintf(pbuf, sizeof pbuf, "%s", v[col[GS_PHASES]]);
        for (char *save = NULL, *t = strtok_r(pbuf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
            int p = wm_phase_find(t);
            if (p < 0) {
                snprintf(err, errlen, "%s: line %d: field phases: value \"%.40s\": unknown phase "
                         "\"%s\" (draft, verify, accept, extend, decode, sample; ';' between)",
                         path, lineno, v[col[GS_PHASES]], t);
                goto out;
            }
            phases |= 1u << p;
        }
        if (!phases) {
            snprintf(err, errlen, "%s: line %d: field phases: value \"\": empty", path, lineno);
            goto out;
        }
        int s = 0;
        while (s < sw->nsite && strcmp(sw->site[s].name, site) != 0)
            s++;
        if (s == sw->nsite) {
            if (sw->nsite == WM_SWEEP_SITES) {
                snprintf(err, errlen, "%s: line %d: field site: value \"%s\": more than %d "
                         "sites", path, lineno, site, WM_SWEEP_SITES);
                goto out;
            }
            wm_sweep_site *st = &sw->site[sw->nsite++];
            snprintf(st->name, sizeof st->name, "%s", site);
            st->phases = phases;
            st->per_forward = perf;
            st->by_rows = strcmp(m, "rows") == 0;
        } else if (sw->site[s].phases != phases || sw->site[s].per_forward != perf ||
                   sw->site[s].by_rows != (strcmp(m, "rows") == 0)) {
            snprintf(err, errlen, "%s: line %d: site %s: fields phases/per_forward/m differ "
                     "from its earlier rows", path, lineno, site);
            goto out;
        }
        int ti = gs_tok_index(sw, tok);
        if (ti < 0) {
            if (sw->ntok == WM_SWEEP_TOK) {
                snprintf(err, errlen, "%s: line %d: field tokens: value %g: more than %d token "
                         "counts", path, lineno, tok, WM_SWEEP_TOK);
                goto out;
            }
            ti = sw->ntok;
            sw->tok[sw->ntok++] = tok;
        }
        sum[s][ti] += us;
        cnt[s][ti]++;
        nrows++;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        goto out;
    }
    if (sw->nsite == 0 || sw->ntok < 2) {
        snprintf(err, errlen, "%s: %d rows: a sweep needs at least 2 token counts (field "
                 "tokens)", path, nrows);
        goto out;
    }
    /* the token counts in order, each site's values with them */
    int ord[WM_SWEEP_TOK];
    for (int i = 0; i < sw->ntok; i++)
        ord[i] = i;
    for (int i = 1; i < sw->ntok; i++)
        for (int j = i; j > 0 && sw->tok[ord[j - 1]] > sw->tok[ord[j]]; j--) {
            int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    double tok[WM_SWEEP_TOK];
    for (int i = 0; i < sw->ntok; i++)
        tok[i] = sw->tok[ord[i]];
    for (int s = 0; s < sw->nsite; s++)
        for (int i = 0; i < sw->ntok; i++) {
            int k = ord[i];
            if (cnt[s][k] == 0) {
                snprintf(err, errlen, "%s: site %s: field tokens: value %g: no row for it (every "
                         "site needs every token count of the file)", path, sw->site[s].name,
                         sw->tok[k]);
                goto out;
            }
            sw->site[s].us[i] = sum[s][k] / cnt[s][k];
        }
    memcpy(sw->tok, tok, sizeof tok[0] * (size_t)sw->ntok);
    snprintf(sw->source, sizeof sw->source, "GEMM sweep %.120s (%s%s%s%s%d sites x %d token counts, "
             "%g..%g)", path, preset, *preset ? ", " : "", *device ? device : "", *device ? ", " : "",
             sw->nsite, sw->ntok, sw->tok[0], sw->tok[sw->ntok - 1]);
    rc = 0;
out:
    fclose(f);
    if (rc)
        memset(sw, 0, sizeof *sw);
    return rc;
}
