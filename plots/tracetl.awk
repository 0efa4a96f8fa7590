# tracetl.awk: second pass of the measured timeline: picks one steady-state iteration from the
# rows of plots/trace_ext.awk (sorted by time) and writes it as gnuplot boxes, like
# plots/simtl.awk: stdout "y x0_us x1_us category label", -v tracks=FILE "y name",
# -v cats=FILE the categories present, -v meta=FILE the iteration's shape as shell lines.
# Iterations are cut on the GPU of the lowest rank where the phase of the kernels (their NVTX
# range) turns to draft or decode, or to verify not after draft (steps = 1). The chosen one
# has the most common shape (range name without ctx=) and, among those, the median length;
# the first and last iterations of the capture are left out (they may be cut). GPU work of the
# previous iteration still running when the iteration's host work starts is kept, as "other"
# (category 11), so that the GPU is not shown idle while the host runs ahead. Host events are
# those from the iteration's first NVTX range (found through the launch call that the first
# kernel's correlation id names) to the next one.
# Categories: 1 draft 2 verify 3 accept 4 extend 5 decode 6 sample 7 comm 8 wait 9 host
# 10 launch 11 other; 0 = a label only.
BEGIN {
    FS = "\t"
    split("draft verify accept extend decode sample", pn, " ")
    for (i = 1; i <= 6; i++) PC[pn[i]] = i
    n = 0; p0 = ""
}
{
    n++
    ts[n] = $1 + 0; du[n] = $2 + 0; kd[n] = $3; pid[n] = $4 + 0; tid[n] = $5
    co[n] = $6 + 0; ph[n] = $7; nc[n] = $8 + 0; nm[n] = $9; nv[n] = $10
    if (p0 == "" || pid[n] < p0) p0 = pid[n]
}
function starts_iter(p, prev) {
    if (p == prev) return 0
    return (p == "draft" || p == "decode" || (p == "verify" && prev != "draft"))
}
function shape(s) { gsub(/ ctx=[0-9]+/, "", s); return s }
function field(s, k,    m) {                  # value of k= in an NVTX range name, or ""
    if (!match(s, "(^| )" k "=[0-9]+")) return ""
    m = substr(s, RSTART, RLENGTH); sub(/^ /, "", m); sub(/^[a-z_]+=/, "", m)
    return m
}
function fail(msg) { print "tracetl: " msg > "/dev/stderr"; failed = 1; exit 3 }
END {
    if (failed) exit 3
    if (n == 0) fail("no events in the trace")
    K = 0; prev = ""
    for (i = 1; i <= n; i++) {
        if (kd[i] != "G" || pid[i] != p0 || ph[i] == "-") continue
        if (starts_iter(ph[i], prev)) {
            K++; st[K] = ts[i]; key[K] = shape(nv[i]); fc[K] = co[i]; fph[K] = ph[i]; fnv[K] = nv[i]
        }
        prev = ph[i]
    }
    if (K < 3) fail(sprintf("%d iterations found from the kernels' NVTX phases (need 3: the first and last may be cut); was the program run with NVTX ranges named after the phases?", K))
    # most common shape among complete iterations 2..K-1
    best = ""; bestc = 0
    for (k = 2; k < K; k++) { cnt[key[k]]++; if (cnt[key[k]] > bestc) { bestc = cnt[key[k]]; best = key[k] } }
    m = 0
    for (k = 2; k < K; k++) if (key[k] == best) { m++; cand[m] = k; len[m] = st[k + 1] - st[k] }
    # median length: sort the m candidates by length (insertion sort; m is small enough here,
    # and capped so that a long capture does not make this quadratic)
    if (m > 2000) m = 2000
    for (i = 2; i <= m; i++) {
        x = cand[i]; y = len[i]
        for (j = i - 1; j >= 1 && len[j] > y; j--) { cand[j + 1] = cand[j]; len[j + 1] = len[j] }
        cand[j + 1] = x; len[j + 1] = y
    }
    it = cand[int((m + 1) / 2)]
    S = st[it]; E = st[it + 1]
    # host window: the launch call of the first kernel, then the NVTX range around it
    ta = -1
    if (fc[it] > 0)
        for (i = 1; i <= n; i++) if (kd[i] == "A" && pid[i] == p0 && co[i] == fc[it]) { ta = ts[i]; break }
    H0 = -1; H1 = -1
    if (ta >= 0) {
        for (i = 1; i <= n && ts[i] <= ta; i++)
            if (kd[i] == "N" && pid[i] == p0 && ph[i] == fph[it]) { H0 = ts[i]; hname = nm[i] }
        if (H0 >= 0)
            for (i = 1; i <= n; i++)
                if (kd[i] == "N" && pid[i] == p0 && ph[i] == fph[it] && ts[i] > H0) { H1 = ts[i]; break }
    }
    if (H0 < 0) { H0 = S; H1 = E; hostnote = "host window = GPU window (no launch call matched)" }
    if (H1 < 0) H1 = E
    T0 = (H0 < S) ? H0 : S
    Tend = 0
    # tracks: per rank, host threads first, then GPU streams
    for (i = 1; i <= n; i++) {
        g = (kd[i] == "G")
        if (g && (ts[i] + du[i] <= T0 || ts[i] >= E)) continue
        if (g && ts[i] < S) prevk[i] = 1      # the previous iteration, still on the GPU
        if (!g && (ts[i] < H0 || ts[i] >= H1)) continue
        sel[i] = 1
        tk = pid[i] SUBSEP (g ? "s" : "h") SUBSEP tid[i]
        if (!(tk in tix)) { nt++; tix[tk] = nt; tpid[nt] = pid[i]; tg[nt] = g; ttid[nt] = tid[i] }
    }
    # order: rank ascending, host before GPU, then by id; rank 0 host on top (largest y)
    for (a = 1; a <= nt; a++) ord[a] = a
    for (a = 2; a <= nt; a++) {
        x = ord[a]
        for (b = a - 1; b >= 1 && tless(x, ord[b]); b--) ord[b + 1] = ord[b]
        ord[b + 1] = x
    }
    for (a = 1; a <= nt; a++) {
        yof[ord[a]] = nt - a
        if (tracks != "")
            printf "%d \"rank %d %s %s\"\n", nt - a, tpid[ord[a]], tg[ord[a]] ? "stream" : "host thread", ttid[ord[a]] > tracks
    }
    span = 0
    for (i = 1; i <= n; i++) if (sel[i]) { e = ts[i] + du[i] - T0; if (e > span) span = e }
    runph = ""; runy = -1
    for (i = 1; i <= n; i++) {
        if (!sel[i]) continue
        g = (kd[i] == "G")
        y = yof[tix[pid[i] SUBSEP (g ? "s" : "h") SUBSEP tid[i]]]
        x0 = ts[i] - T0; x1 = x0 + du[i]
        if (i in prevk) {
            if (x0 < 0) x0 = 0
            printf "%d %.3f %.3f 11 \"\"\n", y, x0, x1
            seen[11] = 1
            if (!pl) { pl = 1; plx0 = x0; ply = y }
            plx1 = x1
            continue
        }
        if (g && ts[i] + du[i] > gend) gend = ts[i] + du[i]
        if (g) c = nc[i] ? 7 : ((ph[i] in PC) ? PC[ph[i]] : 11)
        else if (kd[i] == "N") c = (ph[i] in PC) ? PC[ph[i]] : 9
        else if (nm[i] ~ /Synchronize|EventQuery|StreamQuery/) c = 8
        else c = 10
        printf "%d %.3f %.3f %d \"\"\n", y, x0, x1, c
        seen[c] = 1
        # one label per run of same-phase kernels on a stream, at its middle if wide enough
        if (g) {
            if (ph[i] != runph || y != runy) { flush(); runph = ph[i]; runy = y; rx0 = x0 }
            rx1 = x1
        } else if (kd[i] == "N" && du[i] > 0.07 * span && ph[i] != "-")
            printf "%d %.3f %.3f 0 \"%s\"\n", y, x0, x1, ph[i]
        else if (c == 8 && du[i] > 0.07 * span)
            printf "%d %.3f %.3f 0 \"sync\"\n", y, x0, x1
    }
    flush()
    if (pl && plx1 - plx0 > 0.07 * span) printf "%d %.3f %.3f 0 \"previous iteration\"\n", ply, plx0, plx1
    if (cats != "") {
        s = ""
        for (c = 1; c <= 11; c++) if (c in seen) s = s (s == "" ? "" : " ") c
        print s > cats
    }
    # the shape (bs=, steps=, ...) from the kernels' innermost range, or, when that is a range
    # nested inside the phase range (no bs=), from the phase range on the host
    shp = fnv[it]
    if (shp !~ /(^| )bs=/ && hname ~ /(^| )bs=/) shp = hname
    if (meta != "") {
        printf "tl_iterations=%d\ntl_chosen=%d\ntl_same_shape=%d\n", K, it, bestc > meta
        printf "tl_span_us=%.3f\ntl_period_us=%.3f\ntl_gpu_us=%.3f\n", span, E - S, gend - S > meta
        printf "tl_first_phase=%s\n", fph[it] > meta
        printf "tl_bs=%s\ntl_rows=%s\ntl_steps=%s\ntl_topk=%s\ntl_ctx=%s\ntl_graph=%s\ntl_tokens=%s\n", \
            field(shp, "bs"), field(shp, "rows"), field(shp, "steps"), field(shp, "topk"), \
            field(shp, "ctx"), field(shp, "graph"), field(shp, "tokens") > meta
        printf "tl_ranks=%d\n", nranks() > meta
        printf "tl_note='%s'\n", hostnote > meta
    }
}
function flush() {
    if (runph != "" && runph != "-" && rx1 - rx0 > 0.07 * span)
        printf "%d %.3f %.3f 0 \"%s\"\n", runy, rx0, rx1, runph
    runph = ""
}
function tless(a, b) {
    if (tpid[a] != tpid[b]) return tpid[a] < tpid[b]
    if (tg[a] != tg[b]) return tg[a] < tg[b]
    return ttid[a] + 0 < ttid[b] + 0
}
function nranks(    i, c, seenp) {
    c = 0
    for (i = 1; i <= n; i++) if (!(pid[i] in seenp)) { seenp[pid[i]] = 1; c++ }
    return c
}
