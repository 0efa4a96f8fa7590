# simtl.awk: one iteration of a `specsim run --timeline` file (Chrome Trace Event JSON, one
# event per line, traces written by sim/timeline.c) as gnuplot boxes, one track per rank and
# thread (host, gpu stream). Picks the last iteration in the file of the spec process
# (pids below 1000) or, with -v mode=baseline, of the baseline process (pids from 1001); the
# GPU work of the iteration before it that still runs when this one's host work starts (the
# host runs ahead of the GPU) is drawn too, as "other", so that the GPU is not shown idle.
# Writes:  OUTPUT(stdout): y x0_us x1_us category "label"   (times from the iteration's start)
#          -v tracks=FILE: y "track name"  (one per track, for the y tics)
# A "collective" span is a sync segment (compute then its all-reduces, args comm_us): its last
# comm_us are drawn as communication over the phase box.
# Categories (index, shared with plots/timeline.gp):
#   1 draft 2 verify 3 accept 4 extend 5 decode 6 sample 7 comm 8 wait 9 host 10 launch 11 other
function str(key,    m, s) {                 # "key":"value" (no escaped quotes in sim names)
    if (!match($0, "\"" key "\":\"[^\"]*\"")) return ""
    s = substr($0, RSTART, RLENGTH)
    sub("^\"" key "\":\"", "", s); sub("\"$", "", s)
    return s
}
function num(key,    s) {
    if (!match($0, "\"" key "\":-?[0-9.eE+]+")) return ""
    s = substr($0, RSTART, RLENGTH)
    sub("^\"" key "\":", "", s)
    return s + 0
}
function catof(name, cat) {
    if (cat == "gap") return 9
    if (cat == "launch") return 10
    if (cat == "wait") return 8
    if (cat == "comm" || cat == "collective") return 7
    if (name in CAT) return CAT[name]
    return 11
}
BEGIN {
    split("draft verify accept extend decode sample comm wait host launch other", cn, " ")
    for (i = 1; i <= 11; i++) CAT[cn[i]] = i
    lo = (mode == "baseline") ? 1001 : 1
    hi = (mode == "baseline") ? 1999 : 999
    n = 0; the_it = -1
}
/"ph":"M"/ && /"thread_name"/ {
    pid = num("pid"); tid = num("tid")
    if (match($0, /"args":\{"name":"[^"]*"/)) {
        s = substr($0, RSTART, RLENGTH); sub(/^"args":\{"name":"/, "", s); sub(/"$/, "", s)
        tname[pid, tid] = s
    }
    next
}
/"ph":"X"/ {
    pid = num("pid")
    if (pid < lo || pid > hi) next
    it = num("iteration")
    if (the_it < 0 || it > the_it) the_it = it
    n++
    E_pid[n] = pid; E_tid[n] = num("tid"); E_ts[n] = num("ts"); E_dur[n] = num("dur")
    E_it[n] = it; E_name[n] = str("name"); E_cat[n] = str("cat")
    E_comm[n] = num("comm_us")
}
END {
    if (n == 0) { print "simtl: no spans for mode " (mode == "" ? "spec" : mode) > "/dev/stderr"; exit 3 }
    t0 = -1; t1 = 0
    for (i = 1; i <= n; i++) if (E_it[i] == the_it) {
        if (t0 < 0 || E_ts[i] < t0) t0 = E_ts[i]
        if (E_ts[i] + E_dur[i] > t1) t1 = E_ts[i] + E_dur[i]
    }
    span = t1 - t0
    # tracks: rank r host above rank r GPU, rank 0 on top
    maxr = 0
    for (i = 1; i <= n; i++) if (E_pid[i] - lo > maxr) maxr = E_pid[i] - lo
    for (i = 1; i <= n; i++) {
        prev = (E_it[i] == the_it - 1 && E_tid[i] == 2 && E_cat[i] != "collective" && E_ts[i] + E_dur[i] > t0)
        if (E_it[i] != the_it && !prev) continue
        r = E_pid[i] - lo
        isgpu = (E_tid[i] == 2)
        y = 2 * (maxr - r) + (isgpu ? 0 : 1)
        track[y] = sprintf("rank %d %s", r, isgpu ? "GPU" : "host")
        x0 = E_ts[i] - t0; x1 = x0 + E_dur[i]
        c = catof(E_name[i], E_cat[i])
        if (E_cat[i] == "collective") {
            # a sync segment (compute, then its all-reduces): draw the all-reduce part at its end
            if (E_comm[i] == "" || E_comm[i] <= 0) continue
            c = 7; x0 = x1 - E_comm[i]; if (x0 < E_ts[i] - t0) x0 = E_ts[i] - t0
        }
        lab = (E_dur[i] > 0.07 * span) ? E_name[i] : ""
        if (c == 9 && lab != "") lab = "gap"
        if (E_cat[i] == "collective") lab = ""
        if (prev) {
            x0 = 0; c = 11
            lab = (x1 > 0.07 * span) ? "previous iteration" : ""
        }
        printf "%d %.3f %.3f %d \"%s\"\n", y, x0, x1, c, lab
        seen[c] = 1
    }
    if (tracks != "") {
        for (y = 0; y <= 2 * maxr + 1; y++) if (y in track) printf "%d \"%s\"\n", y, track[y] > tracks
    }
    if (cats != "") {
        s = ""
        for (c = 1; c <= 11; c++) if (c in seen) s = s (s == "" ? "" : " ") c
        print s > cats
    }
    printf "%.3f %d %d\n", span, the_it, maxr + 1 > "/dev/stderr"
}
