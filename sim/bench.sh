#!/bin/sh
# sim/bench.sh BIN [GEN]: how fast the simulator runs (`make bench`). Prints, for single runs on
# one core, events per second (events popped from the queue) and simulated seconds per wall
# second, then times a 10,000-configuration sweep (TP=8, each run ended by --precision 0.01,
# the default) on every core, and what the prediction intervals cost (the 1,000-configuration
# grid with --intervals 0 and 1). BENCH_QUICK=1 runs the 1,000-configuration sweep instead
# of the 10,000; BENCH_NOREUSE=1 also times the sweep with every baseline run separately
# (--baseline-reuse 0); BENCH_FIXED=1 also times it at a fixed 2,000 iterations
# (--iterations 2000, what make bench ran before --precision). sim/precision_check.sh checks
# the precision runs against runs 10x as long.
# With GEN (the test_pkineto binary, which writes synthetic Kineto traces), first the trace
# importer: MB/s of JSON per CPU second and peak memory on two sizes (the reader's memory must
# not grow with the file; BENCH_IMPORT_MB sets the larger size, default 400; BENCH_IMPORT=0
# skips it).
set -eu
bin=${1:-bin/specsim}
gen=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# A Kimi-K2.5-shaped rank at TP=8: 61 layers with 2 all-reduces each of 7168*2 B per token
# (shared/FACTS.md), MoE expert term, 1-layer EAGLE draft with its own 2 all-reduces.
# Costs are illustrative (this file times the simulator, it predicts nothing).
cat > "$tmp/tp8.json" <<'JSON'
{
  "specsim_model": 1,
  "name": "bench-moe-tp8",
  "source": "sim/bench.sh: Kimi-K2.5-shaped rank at TP=8 for timing the simulator; costs illustrative",
  "device": "bench", "ranks": 8,
  "moe": {"experts": 384, "topk": 8},
  "launch": {"graph_launch_us": 8.0, "eager_launch_us": 5.0},
  "phases": {
    "draft": {"host_gap_us": 15, "host_gap_sd_us": 3,
      "groups": [{"name": "draft_layer", "count": 12, "base_us": 60, "per_token_us": 0.05, "knee_tokens": 64, "per_expert_us": 0, "per_kv_ktoken_us": 0.2, "sd_frac": 0.03}],
      "collectives": [{"op": "allreduce", "count": 2, "bytes_per_token": 14336}]},
    "verify": {"host_gap_us": 30, "host_gap_sd_us": 5,
      "groups": [{"name": "dense", "count": 400, "base_us": 2500, "per_token_us": 2.0, "knee_tokens": 64, "per_expert_us": 0, "per_kv_ktoken_us": 1.5, "sd_frac": 0.02},
                 {"name": "moe", "count": 240, "base_us": 500, "per_token_us": 0.5, "knee_tokens": 0, "per_expert_us": 40, "per_kv_ktoken_us": 0, "sd_frac": 0.03}],
      "collectives": [{"op": "allreduce", "count": 122, "bytes_per_token": 14336}]},
    "accept": {"host_gap_us": 10, "host_gap_sd_us": 2,
      "groups": [{"name": "sample", "count": 6, "base_us": 20, "per_token_us": 0.02, "knee_tokens": 0, "per_expert_us": 0, "per_kv_ktoken_us": 0, "sd_frac": 0.05}],
      "collectives": []},
    "extend": {"host_gap_us": 10, "host_gap_sd_us": 2,
      "groups": [{"name": "draft_layer", "count": 12, "base_us": 70, "per_token_us": 0.05, "knee_tokens": 64, "per_expert_us": 0, "per_kv_ktoken_us": 0.2, "sd_frac": 0.03}],
      "collectives": [{"op": "allreduce", "count": 2, "bytes_per_token": 14336}]}
  }
}
JSON

echo "# specsim bench on $(nproc) CPUs ($(uname -m)); wall times vary with load: $(cut -d' ' -f1-3 /proc/loadavg) (loadavg)"
if [ -n "$gen" ] && [ "${BENCH_IMPORT:-1}" = 1 ]; then
    big=${BENCH_IMPORT_MB:-400}
    echo "# trace importer (models/timport.c, profiler/core/pkineto.c): synthetic Kineto traces in"
    echo "# Kineto's layout (cpu_op, launches, kernels, flows, step spans; tests/test_pkineto.c"
    echo "# --write-big), read on one core; --scan-only: the reader alone, records counted not kept"
    for mb in 50 "$big"; do
        "$gen" --write-big "$tmp/k$mb.json" "$mb"
        echo "## ${mb} MB plain"
        "$bin" import "$tmp/k$mb.json" --scan-only | grep '^# perf' | sed 's/^# perf /   /'
        "$bin" import "$tmp/k$mb.json" --perf | grep '^# perf' | sed 's/^# perf /   /'
        if [ "$mb" = "$big" ]; then
            gzip -1 -c "$tmp/k$mb.json" > "$tmp/k$mb.json.gz"
            echo "## ${mb} MB as .json.gz ($(($(wc -c < "$tmp/k$mb.json.gz") / 1000000)) MB compressed)"
            "$bin" import "$tmp/k$mb.json.gz" --scan-only | grep '^# perf' | sed 's/^# perf /   /'
            rm -f "$tmp/k$mb.json.gz"
        fi
        rm -f "$tmp/k$mb.json"
    done
fi
echo "# single runs, one core, 100,000 measured iterations each (spec run, then its baseline)"
run() {
    label=$1; shift
    echo "## $label"
    "$bin" run "$@" --iterations 100000 --quiet --perf 2>&1 >/dev/null | sed 's/^# perf /   /'
}
if [ -f models/example-llama8b.json ]; then
    run "example-llama8b, TP=1, concurrency 1" --model models/example-llama8b.json --bs 1
    run "example-llama8b, TP=1, concurrency 16" --model models/example-llama8b.json --bs 16
fi
run "bench-moe-tp8, TP=8 (PCIe, NCCL), concurrency 1" --model "$tmp/tp8.json" --link pcie5-8gpu --bs 1
run "bench-moe-tp8, TP=8 (PCIe, NCCL), concurrency 32" --model "$tmp/tp8.json" --link pcie5-8gpu --bs 32

conc="1,2,4,8,16,24,32,48,64,96"
alphas="0.5,0.55,0.6,0.65,0.7,0.75,0.8,0.85,0.9,0.95"
qconc="1,8,32"
qalphas="0.6,0.7,0.8"
if [ "${BENCH_QUICK:-0}" = 1 ]; then conc=$qconc; alphas=$qalphas; fi
grid="--grid link=pcie5-8gpu,nvlink4-8gpu --grid allreduce=nccl,ring,tree,oneshot,twoshot
      --grid concurrency=$conc --grid steps=1..10 --grid alpha=$alphas"
echo "# sweep: TP=8, every run ended by --precision 0.01 (the default; +20 warmup), $(nproc) workers"
echo "#   grid: $(echo $grid | tr '\n' ' ')"
# sweep GRID KNOBS...: times one sweep; prints its perf line, rows, wall, mean iterations
sweep() {
    g=$1; shift
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin" sweep --model "$tmp/tp8.json" --warmup 20 $g --quiet --perf \
        --out "$tmp/sweep.csv" "$@" 2>&1 | sed 's/^# perf /   /'
    end=$(date +%s.%N)
    rows=$(($(wc -l < "$tmp/sweep.csv") - 1))
    echo "   $rows CSV rows; wall $(echo "$end - $start" | bc) s for the whole command"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             { it += $c["iterations"]; if ($c["precision"] > p) p = $c["precision"]; n++ }
             END { printf "   measured iterations per configuration: %.0f on average; largest stated precision +-%.3f%%\n", it / n, p }' "$tmp/sweep.csv"
    wall=$(echo "$end - $start" | bc)
}
echo "## baselines shared between configurations that differ only in speculative knobs (default)"
sweep "$grid"
if [ "${BENCH_NOREUSE:-0}" = 1 ]; then
    echo "## every configuration runs its own baseline (--baseline-reuse 0)"
    sweep "$grid" --baseline-reuse 0
fi
if [ "${BENCH_FIXED:-0}" = 1 ]; then
    echo "## a fixed 2,000 measured iterations per configuration (--iterations 2000)"
    sweep "$grid" --iterations 2000
fi
qgrid="--grid link=pcie5-8gpu,nvlink4-8gpu --grid allreduce=nccl,ring,tree,oneshot,twoshot
       --grid concurrency=$qconc --grid steps=1..10 --grid alpha=$qalphas"
echo "# what the prediction intervals cost: the 1,000-configuration grid at a fixed 2,000 iterations"
echo "#   (the same runs), without and with intervals, twice each, alternating"
for rep in 1 2; do
    echo "## --intervals 0 (run $rep)"
    sweep "$qgrid" --iterations 2000 --intervals 0
    w0=$wall
    echo "## --intervals 1 (run $rep)"
    sweep "$qgrid" --iterations 2000 --intervals 1
    echo "   with / without: $(echo "scale=3; $wall / $w0" | bc)"
done
