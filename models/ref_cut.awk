# ref_cut.awk: a node-level specprof trace cut to the time spans of chosen configurations, for
# models/ref_cut_check.sh. Pass 1 finds the span of every NVTX range whose name holds
# " steps=S" and " bs=B" for a chosen S:B; pass 2 keeps the meta lines and the records that
# start inside a span (1 ms either side), and writes specprof_end with the records kept.
# usage: awk -v keep="5:16,0:16" -f models/ref_cut.awk FILE FILE   (one decompressed trace, twice)
function num(s, key,    i, r) { i = index(s, key); if (!i) return ""; r = substr(s, i + length(key)); sub(/[ ,"}].*/, "", r); return r }
BEGIN { n = split(keep, K, ","); for (i = 1; i <= n; i++) { split(K[i], p, ":"); want[p[1] ":" p[2]] = 1 } }
FNR == 1 { pass++ }
pass == 1 && /"cat":"nvtx"/ {
  k = num($0, " steps=") ":" num($0, " bs=")
  if (!(k in want)) next
  ts = num($0, "\"ts\":") + 0; d = num($0, "\"dur\":") + 0
  if (!(k in lo) || ts < lo[k]) lo[k] = ts
  if (!(k in hi) || ts + d > hi[k]) hi[k] = ts + d
  next
}
pass == 2 {
  if ($0 == "[") { print; next }
  if ($0 == "]") { sub(/"records":[0-9]+/, "\"records\":" recs + 0, end); print end; print; next }
  if ($0 ~ /"name":"specprof_end"/) { end = $0; next }
  if ($0 ~ /"ph":"M"/) { print; next }
  ts = num($0, "\"ts\":") + 0
  for (k in lo) if (ts >= lo[k] - 1000 && ts <= hi[k] + 1000) { print; recs++; break }
}
