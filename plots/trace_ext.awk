# trace_ext.awk: first pass of the measured timeline: the events of a specprof trace
# (traces/FORMAT.md: one JSON event per line) as tab-separated rows for `sort -n`:
#   ts_us dur_us kind pid tid corr phase nccl name nvtx
# kind: G (GPU: kernel, memcpy, memset), A (host launch API call), C (host NCCL call),
# N (NVTX range). phase: the trace's own `phase` arg for GPU events, the first word of the
# range name for NVTX ranges when it is one of `phases` (-v phases="draft verify ...").
# Metadata, instants and lines that do not parse are skipped (a cut-off last line too).
function str(key,    s) {                     # "key":"value" with JSON escapes kept
    if (!match($0, "\"" key "\":\"([^\"\\\\]|\\\\.)*\"")) return ""
    s = substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 5)
    gsub(/\t/, " ", s)
    return s
}
function num(key,    s) {
    if (!match($0, "\"" key "\":-?[0-9.eE+]+")) return ""
    s = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
    return s + 0
}
BEGIN {
    OFS = "\t"
    if (phases == "") phases = "draft verify accept extend decode sample"
    np = split(phases, P, " ")
    for (i = 1; i <= np; i++) isphase[P[i]] = 1
}
!/"ph":"X"/ { next }
!/\}\},?[ \t\r]*$/ { next }                   # not a whole event (cut off mid-write)
{
    cat = str("cat"); name = str("name")
    ts = num("ts"); dur = num("dur"); pid = num("pid"); tid = num("tid")
    if (ts == "" || dur == "") next
    corr = num("corr"); if (corr == "") corr = 0
    if (cat == "kernel" || cat == "memcpy" || cat == "memset") {
        kind = "G"; ph = str("phase"); nv = str("nvtx")
        nc = (index($0, "\"nccl\":{") > 0 || name ~ /^nccl/) ? 1 : 0
    } else if (cat == "api") {
        kind = "A"; ph = ""; nv = ""; nc = 0
    } else if (cat == "nccl") {
        kind = "C"; ph = ""; nv = ""; nc = 1
    } else if (cat == "nvtx") {
        kind = "N"; nv = name; nc = 0
        ph = name; sub(/[ \t].*$/, "", ph)
        if (!(ph in isphase)) ph = ""
    } else next
    if (ph == "") ph = "-"
    if (nv == "") nv = "-"
    print ts, dur, kind, pid, tid, corr, ph, nc, name, nv
}
