#!/bin/bash
# multigpu.sh: issue 7's runs on one machine of several H200s (nvidia-h200-x2, -x4, -x8),
# in device calls of at most 600 s each. N = the GPUs nvidia-smi -L lists; GPU counts n =
# 2, 4, 8 up to N (CUDA_VISIBLE_DEVICES=0..n-1 for the sweeps). Parts (one per call, or a
# comma list when the time allows; each part stops before BUDGET_S and logs what it skipped):
#   sweeps  bin/arsweep 1 KB..256 MB, eager and graph, at every n with default NCCL settings,
#           NCCL_P2P_DISABLE=1, NCCL_ALGO=Ring, NCCL_ALGO=Tree (bf16; float at default)
#           -> allreduce.csv (specsim fit-allreduce), sweeps.log (topology + tables)
#   tp      bin/specbench --gpus n --tp n, both presets, steps 1,3,5 x alpha 0.7 x
#           concurrency 1,16,80 + baselines, 3 repeats, with default NCCL settings and with
#           NCCL_P2P_DISABLE=1 (the interconnect what-if)
#           -> tp_measured.csv, tp_measured_nop2p.csv, tp_extra.tar.gz, tp.log
#   prof    specprof on all ranks of the calibration subset (steps 1,5 + baselines at
#           concurrency 1,16,80) at TP = PROF_TP (default N), `specprof merge`, the per-rank
#           t0 shifts and the clock alignment of the ranks' all-reduce kernel ends
#           -> prof.log, alignment.txt, calib_tp<n>.tar.gz, prof_measured_tp<n>.csv
# At most 8 files come back from a call: sweeps (2) + tp (4) + the main log fit one call,
# prof (4) + the main log another.
# Time (estimates; nothing here has run on several GPUs yet): build ~1-2 min; sweeps ~20 s
# per (n, setting) -> ~5 min on x8; tp ~30-45 s per (n, preset, setting) -> ~7 min on x8
# (the BUDGET_S guard skips the rest, the nop2p runs last); prof ~1 min per preset.
# docs/multigpu.md says how each output feeds specsim fit-allreduce, specsim fit and
# make validate.
# usage (GPU machine, repo root): OUT=/dir bash profiler/device/multigpu.sh sweeps|tp|prof[,..]
#   env: BUDGET_S (default 560: the call's limit is 600 s), PROF_TP (default N),
#        KIMI_LAYERS (default 6: kimi-tp8 at TP=2 holds 1/2 of the experts per GPU, and 12
#        layers would need ~190 GB), SECONDS_PER_POINT (0.3), REPEATS (3), MAX_BYTES (256M);
#        for a dry run of the plumbing on a CPU machine: SKIP_BUILD=1 and ARSWEEP, SPECBENCH,
#        SPECPROF naming stand-ins (docs/multigpu.md, "Dry run")
set -u
cd "$(dirname "$0")/../.." || exit 1
PARTS=${1:-}
OUT=${OUT:-/tmp/multigpu}
BUDGET=${BUDGET_S:-560}
SEC=${SECONDS_PER_POINT:-0.3}
REPEATS=${REPEATS:-3}
KIMI_LAYERS=${KIMI_LAYERS:-6}
MAX_BYTES=${MAX_BYTES:-256M}
CG=1,2,8,24,64                     # the captured sizes of the issue-4 grid (grid.sh)
AR=${ARSWEEP:-bin/arsweep}
SB=${SPECBENCH:-bin/specbench}
SP=${SPECPROF:-bin/specprof}
# The GPU machines' rule: NVLink multicast off in NCCL, PyTorch and NVSHMEM (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NCCL_ALGO NCCL_PROTO NCCL_P2P_DISABLE NCCL_SHM_DISABLE   # each run sets its own
case ",$PARTS," in
  *,sweeps,*|*,tp,*|*,prof,*) ;;
  *) echo "usage: OUT=/dir bash $0 sweeps|tp|prof[,...]  (see the header)" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
W=$(mktemp -d /tmp/multigpu.XXXXXX)
MAIN_LOG=$W/main.log
note() { echo "=== $* (${SECONDS}s)" | tee -a "$MAIN_LOG"; }
left() { echo $((BUDGET - SECONDS)); }
# fits SECS: 0 if SECS seconds are left before the budget, else logs the skip and returns 1
fits() {
  local need=$1; shift
  if [ "$(left)" -lt "$need" ]; then
    note "SKIPPED (time budget: $(left) s left, ~$need s needed): $*"
    return 1
  fi
  return 0
}
rc=0

note "device"
N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
nvidia-smi -L 2>&1 | tee -a "$MAIN_LOG"
if [ "$N" -lt 2 ]; then
  note "only $N GPU(s): this script is for nvidia-h200-x2/x4/x8 (arsweep --gpus 1 still runs)"
fi
COUNTS=""
for n in 2 4 8; do [ "$n" -le "$N" ] && COUNTS="$COUNTS $n"; done
COUNTS=${COUNTS# }
note "GPU counts: ${COUNTS:-none}"

BUILD_LOG=$W/build.log
: > "$BUILD_LOG"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  note "build"
  make -j"$(nproc)" bin/arsweep bin/specbench bin/libspecprof.so > "$BUILD_LOG" 2>&1 || rc=1
  # bin/specprof through make wants GSL/cJSON flags; build it from profiler/ alone when make
  # cannot (as capture_run.sh does)
  make bin/specprof >> "$BUILD_LOG" 2>&1 || cc -O2 -std=c11 -D_GNU_SOURCE -Iprofiler/core -Imodels \
    -o bin/specprof profiler/specprof.c profiler/core/*.c models/bounds.c models/ofile.c -lz -lpthread -ldl -lm >> "$BUILD_LOG" 2>&1
  tail -5 "$BUILD_LOG" | tee -a "$MAIN_LOG"
  for b in arsweep specbench specprof libspecprof.so; do
    [ -e "bin/$b" ] || { note "bin/$b missing after the build (see the build log)"; rc=1; }
  done
fi
first_n() { seq -s, 0 $(($1 - 1)); }    # CUDA_VISIBLE_DEVICES for n GPUs

# ---- sweeps ---------------------------------------------------------------------------------
part_sweeps() {
  local log=$W/sweeps.log csv=$W/allreduce.csv
  rm -f "$csv"
  {                                  # how the GPUs are linked (not yet seen on these kinds)
    nvidia-smi -L; echo; nvidia-smi topo -m; echo; nvidia-smi nvlink -s 2>&1 | head -80
    echo; nvidia-smi
  } > "$log" 2>&1
  # settings in order of importance (a budget cut loses the last ones)
  local settings=("" "NCCL_P2P_DISABLE=1" "NCCL_ALGO=Ring" "NCCL_ALGO=Tree")
  for s in "${settings[@]}"; do
    for n in $COUNTS; do
      local dt=bf16
      [ -z "$s" ] && dt=bf16,float
      fits 40 "arsweep n=$n ${s:-default}" || continue
      note "arsweep n=$n ${s:-default} dtype $dt" 
      local lim=$(( $(left) - 10 )); [ "$lim" -gt 240 ] && lim=240
      # shellcheck disable=SC2086
      env $s CUDA_VISIBLE_DEVICES="$(first_n "$n")" timeout "$lim" "$AR" --gpus "$n" \
        --graph --dtype "$dt" --max-bytes "$MAX_BYTES" --csv "$csv" >> "$log" 2>&1
      local st=$?
      [ "$st" = 0 ] || { note "arsweep n=$n ${s:-default}: exit $st"; rc=1; }
      grep -E "^ +(1024|16384|262144|4194304|268435456) " "$log" | tail -6 >> "$MAIN_LOG"
    done
  done
  cp "$log" "$OUT/"
  [ -f "$csv" ] && cp "$csv" "$OUT/allreduce.csv"
  note "sweeps: $(($(wc -l < "$csv" 2>/dev/null || echo 1) - 1)) rows in allreduce.csv"
}

# ---- tp ------------------------------------------------------------------------------------
part_tp() {
  local log=$W/tp.log
  : > "$log"
  mkdir -p "$W/tp"
  rm -f "$W"/tp/*
  # default settings first (what make validate needs), then the P2P-off what-if; the larger
  # TP first (TP=8 is the seed's setting)
  for tag in default nop2p; do
    local envs="" sfx=""
    [ "$tag" = nop2p ] && { envs="NCCL_P2P_DISABLE=1"; sfx=_nop2p; }
    for n in $(echo "$COUNTS" | tr ' ' '\n' | sort -rn); do
      for p in llama8b kimi-tp8; do
        local extra="" est=40
        [ "$p" = kimi-tp8 ] && { extra="--layers $KIMI_LAYERS"; est=55; }
        fits "$est" "specbench tp=$n $p $tag" || continue
        note "specbench tp=$n $p $tag"
        local lim=$(( $(left) - 10 )); [ "$lim" -gt 300 ] && lim=300
        # shellcheck disable=SC2086
        env $envs timeout "$lim" "$SB" --preset "$p" --tp "$n" --gpus "$n" $extra \
          --mode spec,baseline --steps 1,3,5 --alpha 0.7 --concurrency 1,16,80 \
          --cuda-graph-bs "$CG" --prompt-len 1024 --output-len 256 --warmup 3 \
          --seconds "$SEC" --min-iters 5 --repeats "$REPEATS" --seed 1 \
          --csv "$W/tp_measured$sfx.csv" --summary-csv "$W/tp/summary$sfx.csv" \
          --json "$W/tp/measured_${p}_tp${n}$sfx.json" --facts "$W/tp/device_facts_tp$n.json" \
          >> "$log" 2>&1
        local st=$?
        [ "$st" = 0 ] || { note "specbench tp=$n $p $tag: exit $st"; rc=1; }
        grep -E "^# ([0-9]+ points|init|memory)" "$log" | tail -3 >> "$MAIN_LOG"
      done
    done
  done
  cp "$log" "$OUT/"
  for f in tp_measured.csv tp_measured_nop2p.csv; do [ -f "$W/$f" ] && cp "$W/$f" "$OUT/"; done
  (cd "$W" && tar czf "$OUT/tp_extra.tar.gz" tp)
}

# ---- prof ----------------------------------------------------------------------------------
# Clock alignment: an all-reduce ends on every rank at about the same moment, so on one
# clock the k-th all-reduce kernel of each rank should end within a few us of the others'.
# Reads merged.json (one event per line), prints per rank the count and the median offset of
# its ends from rank 0's, and the spread (max - min end) over all collectives.
ALIGN_PY='
import json, sys, statistics as st
ends = {}
for line in open(sys.argv[1]):
    if "AllReduce" not in line and "\"op\":\"allreduce\"" not in line:
        continue
    e = json.loads(line.rstrip().rstrip(","))
    op = (e.get("args", {}).get("nccl") or {}).get("op", "")
    if e.get("cat") != "kernel" or ("AllReduce" not in e.get("name", "") and op != "allreduce"):
        continue
    ends.setdefault(e["pid"], []).append(e["ts"] + e["dur"])
if len(ends) < 2:
    print("alignment: fewer than 2 ranks with all-reduce kernels:", sorted(ends)); sys.exit(1)
for r in ends: ends[r].sort()
ranks = sorted(ends); n = min(len(ends[r]) for r in ranks)
print("ranks", ranks, "all-reduce kernels per rank", [len(ends[r]) for r in ranks])
if len(set(len(ends[r]) for r in ranks)) > 1:
    print("WARNING: counts differ; pairing the first", n, "of each rank")
spread = sorted(max(ends[r][k] for r in ranks) - min(ends[r][k] for r in ranks) for k in range(n))
print("spread of the k-th all-reduce end over ranks (us): median %.2f p90 %.2f p99 %.2f max %.2f" %
      (st.median(spread), spread[int(0.9 * (n - 1))], spread[int(0.99 * (n - 1))], spread[-1]))
for r in ranks:
    off = [ends[r][k] - ends[ranks[0]][k] for k in range(n)]
    print("rank %s: median end offset from rank %s %.2f us (p10 %.2f, p90 %.2f)" %
          (r, ranks[0], st.median(off), sorted(off)[int(0.1 * (n - 1))], sorted(off)[int(0.9 * (n - 1))]))
ok = st.median(spread) < 20
print("ALIGNED" if ok else "NOT ALIGNED", "(criterion: median spread < 20 us)")
sys.exit(0 if ok else 1)
'
part_prof() {
  local log=$W/prof.log n=${PROF_TP:-$N} al=$W/alignment.txt
  : > "$log"; : > "$al"
  [ "$n" -ge 2 ] || { note "prof: PROF_TP=$n: needs >= 2 GPUs"; rc=1; return; }
  mkdir -p "$W/calib"
  rm -f "$W"/calib/* "$W/prof_measured_tp$n.csv"
  echo "file,preset,mode,steps,topk,concurrency" > "$W/calib/manifest.csv"
  for p in llama8b kimi-tp8; do
    local extra="" d=$W/cap_$p
    [ "$p" = kimi-tp8 ] && extra="--layers $KIMI_LAYERS"
    fits 80 "specprof tp=$n $p" || continue
    note "specprof capture tp=$n $p"
    rm -rf "$d"
    local lim=$(( $(left) - 20 )); [ "$lim" -gt 240 ] && lim=240
    # WORLD_SIZE: the traces' world_size; each rank's file gets its CUDA device as its rank
    # shellcheck disable=SC2086
    WORLD_SIZE=$n timeout "$lim" "$SP" -o "$d" --quiet -- "$SB" --preset "$p" \
      --tp "$n" --gpus "$n" $extra --mode spec,baseline --steps 1,5 --alpha 0.7 \
      --concurrency 1,16,80 --cuda-graph-bs "$CG" --prompt-len 1024 --output-len 256 \
      --warmup 3 --seconds 0.12 --min-iters 6 --repeats 1 --seed 1 \
      --csv "$W/prof_measured_tp$n.csv" >> "$log" 2>&1
    local st=$?
    [ "$st" = 0 ] || { note "specprof tp=$n $p: exit $st"; rc=1; }
    ls -la "$d" >> "$log" 2>&1
    note "merge $p"
    echo "== $p tp=$n" >> "$al"
    "$SP" merge "$d" 2>&1 | tee -a "$log" | grep -E "shift|merged" >> "$al"
    if [ -f "$d/merged.json" ]; then
      python3 -c "$ALIGN_PY" "$d/merged.json" >> "$al" 2>&1 || { note "alignment $p: not aligned or no data"; rc=1; }
    else
      note "merge $p: no merged.json"; rc=1
    fi
    # one file per rank; should a rank have two (the launcher process also opening a CUDA
    # context), the larger one is the rank's worker
    for r in $(seq 0 $((n - 1))); do
      local f; f=$(ls -S "$d"/specprof.rank"$r".pid*.json* 2>/dev/null | head -1)
      [ "$(ls "$d"/specprof.rank"$r".pid*.json* 2>/dev/null | wc -l)" -gt 1 ] && \
        note "rank $r: several files, keeping the largest: $f"
      [ -n "$f" ] || { note "$p: no trace of rank $r"; rc=1; continue; }
      "$SP" check "$f" 2>&1 | head -4 >> "$log"
      local ext=json; case "$f" in *.part) ext=json.part ;; esac
      gzip -9 -c "$f" > "$W/calib/${p}_tp${n}.rank$r.$ext.gz"
    done
    for m in spec baseline; do
      for c in 1 16 80; do
        if [ $m = spec ]; then
          for s in 1 5; do echo "${p}_tp${n}.rank0.json.gz,$p,spec,$s,1,$c" >> "$W/calib/manifest.csv"; done
        else
          echo "${p}_tp${n}.rank0.json.gz,$p,baseline,,,$c" >> "$W/calib/manifest.csv"
        fi
      done
    done
    rm -f "$d/merged.json"                # recomputed on the CPU by specprof merge
  done
  tee -a "$MAIN_LOG" < "$al"
  cp "$log" "$al" "$OUT/"
  [ -f "$W/prof_measured_tp$n.csv" ] && cp "$W/prof_measured_tp$n.csv" "$OUT/"
  (cd "$W" && tar cf "$OUT/calib_tp$n.tar" calib)
  local sz; sz=$(stat -c %s "$OUT/calib_tp$n.tar")
  if [ "$sz" -gt 16000000 ]; then          # the device tool returns files up to 16 MiB
    note "calib_tp$n.tar is $sz B: keeping rank 0 and rank $((n - 1)) only"
    rm -f "$OUT/calib_tp$n.tar"
    (cd "$W" && tar cf "$OUT/calib_tp$n.tar" calib/manifest.csv calib/*.rank0.* calib/*.rank$((n - 1)).*)
  fi
  ls -la "$OUT/calib_tp$n.tar" | tee -a "$MAIN_LOG"
}

case ",$PARTS," in *,sweeps,*) note "part sweeps"; part_sweeps ;; esac
case ",$PARTS," in *,tp,*) note "part tp"; part_tp ;; esac
case ",$PARTS," in *,prof,*) note "part prof"; part_prof ;; esac
note "done rc=$rc"
cat "$BUILD_LOG" >> "$MAIN_LOG"
cp "$MAIN_LOG" "$OUT/${PARTS//,/_}.main.log"
exit $rc
