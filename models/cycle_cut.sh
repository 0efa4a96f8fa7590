#!/bin/sh
# cycle_cut.sh: cuts a specprof trace that holds several configurations one after another
# (torchbench's and specbench's calibration runs capture their CUDA graphs again for each
# configuration) into one trace per configuration with CUDA graphs, so that the graph-cycle
# route (docs/importers.md, "Without any annotation") can name each. A configuration is a
# block of graph launches whose executables appear first there (graph_exec_id of the api
# events); its trace holds the events from the block's first graph_instantiate to its last
# graph launch, which is left out with what follows it (there the next configuration begins:
# torchbench's eager 80-row runs come 1.3 ms after the last graph launch before them; the
# header, the windows and the end record, its record count set to the events kept, stay). The configuration's words
# (mode, steps, batch), which a user would know, are read from the block's graph=1 NVTX
# ranges, only to name the file: OUTDIR/<mode>-s<steps>-bs<bs>.json (steps 0: baseline).
# Configurations without graph launches (eager) are in no file.
# usage: sh models/cycle_cut.sh TRACE.json[.gz] OUTDIR      (prints the files written)
set -u
IN=$1
OUT=$2
mkdir -p "$OUT" || exit 1
T=$OUT/.trace.json
case "$IN" in *.gz) gzip -dc "$IN" > "$T" ;; *) cp "$IN" "$T" ;; esac || exit 1
# graph launches in time order: ts exec
grep '"name":"cudaGraphLaunch"' "$T" |
  sed -n 's/.*"ts":\([0-9.]*\).*"graph_exec_id":\([0-9]*\).*/\1 \2/p' | sort -n > "$OUT/.launches"
grep '"name":"graph_instantiate"' "$T" |
  sed -n 's/.*"ts":\([0-9.]*\).*"graph_exec_id":\([0-9]*\).*/\2 \1/p' > "$OUT/.inst"
# block starts: a launch of an executable not seen before after one that was seen; the cut
# time is the first new executable's instantiation
# time is the first new executable's instantiation; the block ends before its last graph
# launch (the eager configuration that torchbench runs next starts 1.3 ms after it)
awk 'NR == FNR { inst[$1] = $2; next }
     { if (!($2 in seen) && (prev == "" || prev_seen)) { if (nb) print a, last; a = ($2 in inst) ? inst[$2] : $1; nb++ }
       prev_seen = ($2 in seen); seen[$2] = 1; prev = $2; last = $1 }
     END { if (nb) print a, last }' "$OUT/.inst" "$OUT/.launches" > "$OUT/.cuts"
n=$(wc -l < "$OUT/.cuts")
i=0
while [ "$i" -lt "$n" ]; do
  i=$((i + 1))
  a=$(sed -n "${i}p" "$OUT/.cuts" | cut -d' ' -f1)
  b=$(sed -n "${i}p" "$OUT/.cuts" | cut -d' ' -f2)
  f=$OUT/.part$i.json
  # the end record promises the events written (header and end excluded): the count kept
  awk -v a="$a" -v b="$b" '
    NR == 1 { print; next }
    /"name":"specprof_end"/ { end = $0; next }
    /"name":"specprof_header"/ { print; next }
    /^\]/ { if (end != "") { sub(/"records":[0-9]+/, "\"records\":" n, end); print end } print; next }
    /"ph":"M"/ { print; next }
    /"cat":"window"/ { print; n++; next }
    { if (match($0, /"ts":[0-9.]+/)) { t = substr($0, RSTART + 5, RLENGTH - 5) + 0; if (t >= a && t < b) { print; n++ } } }' "$T" > "$f"
  # the words of the block: the most common graph=1 verify/decode range
  w=$(grep -o '"name":"\(verify\|decode\) [^"]*graph=1[^"]*"' "$f" | awk '
      { mode = ($0 ~ /"name":"verify/) ? "spec" : "baseline"; s = 0; bs = ""
        n = split($0, x, " "); for (k = 1; k <= n; k++) { split(x[k], kv, "="); gsub(/"/, "", kv[2])
          if (kv[1] == "steps") s = kv[2]; if (kv[1] == "bs") bs = kv[2] }
        c[mode "-s" (mode == "spec" ? s : 0) "-bs" bs]++ }
      END { for (q in c) if (best == "" || c[q] > c[best]) best = q; print best }')
  if [ -z "$w" ]; then rm -f "$f"; continue; fi
  mv "$f" "$OUT/$w.json"
  echo "$OUT/$w.json"
done
rm -f "$T" "$OUT/.launches" "$OUT/.inst" "$OUT/.cuts"
