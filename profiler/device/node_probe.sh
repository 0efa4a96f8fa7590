#!/bin/bash
# node_probe.sh: per-node times of a CUDA graph without CUPTI (profiler/demo/node_probe.cu's
# header: an instrumented clone with an event node after each work node). Per size, two
# processes build the same graph: `events` (no CUPTI: the spans of the original and
# instrumented replays, the host cost of launching each, per-node times from the events) and
# `cupti` (CUPTI initialized before the graph exists: each node's kernel or copy records by
# graph node id). Joined here by node index: each node's share of the summed node time from
# the events (raw, and less the events' own cost per node, (instrumented - original span) /
# nodes, which a capture can measure without CUPTI) against CUPTI's, and whether every kernel
# node could be named without CUPTI.
# Results: $OUT/node_probe.txt.   usage (GPU machine, repo root): OUT=/dir bash profiler/device/node_probe.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/node_probe}
mkdir -p "$OUT"
F="$OUT/node_probe.txt"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$F" 2>&1
timeout 180 make -j8 bin/node_probe >> "$F" 2>&1 || { echo "BUILD FAILED" >> "$F"; tail -20 "$F"; exit 1; }
T=$(mktemp -d /tmp/node_probe.XXXXXX)
for n in ${SIZES:-400 100 1000}; do
  echo "### nodes $n" >> "$F"
  timeout 120 bin/node_probe "$n" "${REPLAYS:-200}" events > "$T/e$n" 2>&1; echo "rc events $n $?" >> "$F"
  timeout 120 bin/node_probe "$n" "${REPLAYS:-200}" cupti > "$T/c$n" 2>&1; echo "rc cupti $n $?" >> "$F"
  grep -v "^node[ec] " "$T/e$n" "$T/c$n" | sed "s#^$T/##" >> "$F"
  awk '
    FNR == 1 { f++ }
    f == 1 && /^sum span_us original/ { for (i = 1; i < NF; i++) if ($i == "per_node_us") o = $(i + 1) }
    # "nodee I NAME... events_us T preds P", "nodec I NAME... cupti_us T": names may hold blanks
    f == 1 && $1 == "nodee" { for (j = 3; j < NF; j++) if ($j == "events_us") { e[$2] = $(j + 1); nm[$2] = $3 } }
    f == 2 && $1 == "nodec" { for (j = 3; j < NF; j++) if ($j == "cupti_us") c[$2] = $(j + 1) }
    END {
      for (i in c) if (i in e) { m++; se += e[i]; sc += c[i]; ec = e[i] - o; if (ec < 0) ec = 0; sk += ec }
      for (i in c) if (i in e) {
        ec = e[i] - o; if (ec < 0) ec = 0
        er += (e[i] / se - c[i] / sc) < 0 ? c[i] / sc - e[i] / se : e[i] / se - c[i] / sc
        ek += (ec / sk - c[i] / sc) < 0 ? c[i] / sc - ec / sk : ec / sk - c[i] / sc
        if (c[i] > 5) { r = e[i] / c[i] - 1; r = r < 0 ? -r : r; if (r > mr) mr = r
                        r = ec / c[i] - 1; r = r < 0 ? -r : r; if (r > mk) mk = r }
        k = nm[i] ~ /spin/ ? "spin" : nm[i] ~ /copy/ ? "copy" : nm[i] == "-" ? "(unnamed)" : "library"
        kc[k] += c[i]; ke[k] += e[i]; kk[k] += ec
        printf "node %s %s cupti_us %.3f events_us %.3f events_less_cost_us %.3f\n", i, nm[i], c[i], e[i], ec
      }
      printf "sum joined %d nodes: node_sum_us cupti %.1f events %.1f events_less_cost %.1f (cost per node %.3f us)\n", m, sc, se, sk, o
      printf "sum share_abs_err_total raw %.4f less_cost %.4f; max_rel_err_over_5us raw %.3f less_cost %.3f\n", er / 2, ek / 2, mr, mk
      for (k in kc) printf "sum kind %s share cupti %.4f events %.4f less_cost %.4f\n", k, kc[k] / sc, ke[k] / se, kk[k] / sk
    }' "$T/e$n" "$T/c$n" > "$T/j$n"
  grep -v "^node " "$T/j$n" >> "$F"
  gzip -c "$T/j$n" > "$OUT/node_probe_nodes_$n.txt.gz"
done
rm -rf "$T"
grep -E "^(### |rc |sum |device )" "$F"
