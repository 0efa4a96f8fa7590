#!/bin/bash
# call33.sh: the node probe (specprof --mode lite --probe-nodes N: each graph executable's
# first N replays run an instrumented clone that times every node without CUPTI; docs/
# profiler.md "The node probe") on real programs, in two device commands:
#   PART=shares   does a PyTorch program compute the same under the probe, and do the probe's
#                 node times agree with CUPTI's?
#     1. torchbench --check (every phase's graph replay against the same phase run eagerly)
#        under --mode lite --probe-nodes 3: the first replays of each executable are the
#        instrumented clones, so the check compares the clone with eager;
#     2. torchbench torch-dense with graphs (cuBLAS kernels, PyTorch's copy and memset nodes),
#        decode and chain spec steps 3 at 1 and 13 rows, captured under --mode lite
#        --probe-nodes 3 and, in another process, --mode always (CUPTI's kernel records);
#     3. specbench llama8b the same way (decode at concurrency 1, spec steps 3 at 16);
#     joined on the CPU by profiler/device/probe_compare.py (range name, node index).
#   PART=moe      the same for MoE graphs: torchbench torch-moe --check under the probe, and
#                 specbench kimi-tp8 (decode c1, spec steps 3 c16) lite+probe against always;
#                 files check_moe.txt, kimi_probe.tar.gz, kimi_always.tar.gz, run.log.
#   PART=overhead what the probe costs: overhead_run.sh's loops sb_decode_c1, sb_spec_c16
#                 and tb, processes alternating none / lite / probe (--mode lite
#                 --probe-nodes 5), first run of each process dropped (overhead_tables.py).
# Files to $OUT: shares: run.log, tb_probe.json.gz, tb_always.json.gz, sb_probe.tar.gz
#   (decode and spec lite+probe traces), sb_always.tar.gz, check.txt; overhead: run.log,
#   rows.csv, stats.jsonl (overhead_run.sh's).
# usage (GPU machine, repo root): PART=shares OUT=/dir bash profiler/device/call33.sh
set -u
cd "$(dirname "$0")/../.."
PART=${PART:-shares}
OUT=${OUT:-/tmp/call33}
mkdir -p "$OUT"
if [ "$PART" = overhead ]; then
  M="${MODES:-none lite probe}"
  MODES_sb_decode_c1="$M" MODES_sb_spec_c16="$M" MODES_tb="$M" \
  LOOPS="${LOOPS:-sb_decode_c1 sb_spec_c16 tb}" ROUNDS=${ROUNDS:-4} SKIP_CALIB=1 \
    SKIP_EAGER_SMOKE=1 SAMPLES=0 SB_REPEATS=${SB_REPEATS:-4} TB_REPEATS=${TB_REPEATS:-4} RUN_LIMIT_S=${RUN_LIMIT_S:-540} \
    OUT="$OUT" bash profiler/device/overhead_run.sh
  exit $?
fi
# sb_pair PRESET D NAME T LABEL: specbench PRESET's decode (concurrency 1) and spec (steps 3,
# alpha 0.7, concurrency 16), each under the probe and under always (T s a process), into
# $W/Dprobe/{d,s} and $W/Dalways/{d,s}, packed as $OUT/NAME_probe.tar.gz and NAME_always.tar.gz
sb_pair() {
  local common="--preset $1 --prompt-len 1024 --output-len 256 --cuda-graph-bs 1,2,8,24,64 --seed 1 --warmup 10 --seconds 0.5"
  local m opt f
  mkdir -p $W/$2probe $W/$2always
  for m in probe always; do
    opt="--mode always"; [ $m = probe ] && opt="--mode lite --probe-nodes 3"
    timeout $4 $SP -o $W/$2$m/d $opt -- $SB $common --mode baseline --concurrency 1 > $W/$2$m.d.out 2>&1; echo "$5 $m decode rc $?" | tee -a "$LOG"
    timeout $4 $SP -o $W/$2$m/s $opt -- $SB $common --mode spec --steps 3 --alpha 0.7 --concurrency 16 > $W/$2$m.s.out 2>&1; echo "$5 $m spec rc $?" | tee -a "$LOG"
    for f in $W/$2$m/*/specprof.rank*.json*; do $SP check "$f" 2>&1 | grep -E "^node probe|^kernels|^INCOMPLETE|^file" | tee -a "$LOG"; done
  done
  (cd $W && tar czf $OUT/$3_probe.tar.gz $2probe && tar czf $OUT/$3_always.tar.gz $2always)
}
if [ "$PART" = moe ]; then   # MoE graphs: the check and the node times, torch-moe and specbench kimi-tp8
  LOG=$OUT/run.log; W=$(mktemp -d /tmp/call33m.XXXXXX)
  SP=$PWD/bin/specprof; SB=$PWD/bin/specbench; TB="python3 $PWD/profiler/bench/torchbench.py"
  echo "=== torch-moe --check under the probe" | tee -a "$LOG"
  timeout 150 $SP -o $W/chk --mode lite --probe-nodes 3 -- $TB --preset torch-moe --check > $OUT/check_moe.txt 2>&1
  echo "rc $?" >> $OUT/check_moe.txt
  grep -E "^# check|FAIL|Error" $OUT/check_moe.txt | head | tee -a "$LOG"
  f=$(ls $W/chk/specprof.rank*.json* 2>/dev/null | head -1); [ -n "$f" ] && $SP check "$f" 2>&1 | grep -E "^node probe" | tee -a "$LOG"
  sb_pair kimi-tp8 k kimi 90 kimi
  ls -la $OUT | tee -a "$LOG"
  exit 0
fi
W=$(mktemp -d /tmp/call33.XXXXXX)
LOG=$OUT/run.log
export PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$LOG"
step "build"
for b in bin/specprof bin/libspecprof.so bin/specbench; do
  [ -f $b ] && ldd $b 2>&1 | grep -q "not found" && rm -f $b
  [ -f $b ] || make -j"$(nproc)" $b >> $W/build.log 2>&1 || { echo "BUILD $b FAILED" | tee -a "$LOG"; tail -20 $W/build.log | tee -a "$LOG"; }
done
SP=$PWD/bin/specprof; SB=$PWD/bin/specbench
TB="python3 $PWD/profiler/bench/torchbench.py"
TBARGS="--preset torch-dense --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1,13 --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 3 --seconds 0.25 --repeats 2"

step "1. torchbench --check under the probe (the clone against eager)"
timeout 120 $SP -o $W/chk --mode lite --probe-nodes 3 -- $TB --preset torch-dense --check > $OUT/check.txt 2>&1
echo "rc $?" >> $OUT/check.txt
grep -E "^# check|FAIL|failed|Error|error" $OUT/check.txt | head -20 | tee -a "$LOG"
f=$(ls $W/chk/specprof.rank*.json* 2>/dev/null | head -1)
[ -n "$f" ] && $SP check "$f" 2>&1 | grep -E "^node probe|^lite|^INCOMPLETE|^complete" | tee -a "$LOG"

step "2. torchbench: lite + probe, then always"
timeout 150 $SP -o $W/tbp --mode lite --probe-nodes 3 -- $TB $TBARGS --csv $W/tbp.csv > $W/tbp.out 2>&1; echo "rc $?" | tee -a "$LOG"
tail -3 $W/tbp.out | tee -a "$LOG"
f=$(ls $W/tbp/specprof.rank*.json* 2>/dev/null | head -1)
[ -n "$f" ] && { $SP check "$f" 2>&1 | grep -E "^node probe|^lite|^INCOMPLETE|^complete|^file" | tee -a "$LOG"; cp "$f" $OUT/tb_probe.json.gz; }
timeout 150 $SP -o $W/tba --mode always -- $TB $TBARGS --csv $W/tba.csv > $W/tba.out 2>&1; echo "rc $?" | tee -a "$LOG"
f=$(ls $W/tba/specprof.rank*.json* 2>/dev/null | head -1)
[ -n "$f" ] && { $SP check "$f" 2>&1 | grep -E "^kernels|^INCOMPLETE|^complete|^file" | tee -a "$LOG"; cp "$f" $OUT/tb_always.json.gz; }
cat $W/tbp.csv $W/tba.csv 2>/dev/null | cut -d, -f1-12 | tee -a "$LOG"

step "3. specbench llama8b: lite + probe, then always"
sb_pair llama8b sb sb 60 sb
ls -la $OUT | tee -a "$LOG"
step "done"
