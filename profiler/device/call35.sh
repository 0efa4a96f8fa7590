#!/bin/bash
# call35.sh: specprof's new default (lite mode with both probes at 3: `specprof -o DIR -- CMD`,
# no CUPTI in the program) measured where issues 15 and 20 ask, in device commands:
#   PART=overhead  what the default costs: overhead_run.sh's specbench loops (decode at
#     concurrency 1, spec steps 3 at 16), torchbench's graph loop (tb: decode and spec at 1 and 13
#     rows) and its eager loop (tbe: --disable-cuda-graph, 1 row, decode and spec), processes
#     alternating none / specprof (the default, from the program's start: no capture range); on
#     the eager loop also floor (bin/libfloor.so: a bare CUPTI subscriber, kernel activity only,
#     records dropped) and always (--mode always): the floor table. The graph loop hung under
#     both probes without a capture range in call 34 (fixed since on the CPU): its rows here say
#     whether it runs. One default-mode trace of each loop (samples.tar.gz).
#   PART=sbgrid    specbench fitted from the default mode's probes alone: call10.sh (per preset,
#     one specbench process runs the grid under `--mode lite --capture-range profiler-api`, which
#     now has both probes on by default, the calibration points captured; node-level captures
#     of the same subset in other processes), for traces/lite/specbench-call35.
#   PART=both      the two in one command: overhead in 3 rounds of 3 timed runs a process
#     (OV_LIMIT_S 320), then sbgrid for SB_PRESETS (default llama8b; SB_LIMIT_S 240).
#   PART=ab        the default's recording inside one process (torchbench --capture-ab, the eager
#     loop at 1 row, 3 processes of 7 repeats): ab_eager_1..3.csv, run.log. Written 2026-12-07,
#     not run yet (the session had no device time left).
# Files to $OUT: overhead: run.log, rows.csv, stats.jsonl, floor.txt, corr.txt, samples.tar.gz;
#   sbgrid: call10.sh's; both: run.log, ov.tar.gz, sb.tar.
# usage (GPU machine, repo root): PART=overhead OUT=/dir bash profiler/device/call35.sh
set -u
cd "$(dirname "$0")/../.."
PART=${PART:-overhead}
OUT=${OUT:-/tmp/call35}
mkdir -p "$OUT"
case $PART in
  overhead)
    MODES_sb_decode_c1="none specprof" MODES_sb_spec_c16="none specprof" MODES_tb="none specprof" \
      MODES_tbe="none specprof floor always" LOOPS="${LOOPS:-sb_decode_c1 sb_spec_c16 tb tbe}" \
      ROUNDS=${ROUNDS:-4} SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SAMPLES=1 SAMPLE_MODE=specprof \
      TB_REPEATS=${TB_REPEATS:-4} TB_TIMEOUT_S=${TB_TIMEOUT_S:-50} RUN_LIMIT_S=${RUN_LIMIT_S:-540} \
      OUT="$OUT" bash profiler/device/overhead_run.sh ;;
  sbgrid)
    RUN_LIMIT_S=${RUN_LIMIT_S:-540} OUT="$OUT" bash profiler/device/call10.sh ;;
  both)   # one device command (<= 600 s): the overhead tables in 3 rounds, then llama8b's grid
    mkdir -p "$OUT/ov" "$OUT/sb"
    PART=overhead OUT="$OUT/ov" ROUNDS=${ROUNDS:-3} TB_REPEATS=3 SB_REPEATS=3 RUN_LIMIT_S=${OV_LIMIT_S:-320} bash "$0"
    SB_PRESETS=${SB_PRESETS:-llama8b} PART=sbgrid OUT="$OUT/sb" RUN_LIMIT_S=${SB_LIMIT_S:-240} bash "$0"
    cat "$OUT/ov/run.log" "$OUT/sb/run.log" > "$OUT/run.log"
    (cd "$OUT" && tar czf ov.tar.gz ov && tar cf sb.tar sb && rm -rf ov sb) ;;
  ab)     # what the default's recording costs inside one process: torchbench's eager loop at 1
          # row, every point twice per repeat (--capture-ab: recorded between cudaProfilerStart and
          # Stop, and not, the order alternating), 3 processes; ab_tables.py on the CPU
    SP=$PWD/bin/specprof; TB="python3 $PWD/profiler/bench/torchbench.py"; LOG=$OUT/run.log
    for i in 1 2 3; do
      timeout 60 $SP -o /tmp/ab$i --quiet --capture-range profiler-api -- $TB --preset torch-dense --disable-cuda-graph \
        --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1 --prompt-len 1024 --output-len 256 --seed 1 \
        --warmup 3 --seconds 0.4 --repeats 7 --capture-ab --csv $OUT/ab_eager_$i.csv > /tmp/ab$i.out 2>&1
      echo "eager A/B $i rc=$? rows $(($(wc -l < $OUT/ab_eager_$i.csv 2>/dev/null || echo 1) - 1))" | tee -a "$LOG"
      tail -3 /tmp/ab$i.out >> "$LOG"
    done
    f=$(ls /tmp/ab1/specprof.rank*.json* 2>/dev/null | head -1)
    [ -n "$f" ] && $SP check "$f" 2>&1 | grep -E "^lite|probe|range" | tee -a "$LOG" ;;
  *) echo "call35.sh: PART=$PART: overhead, sbgrid, both or ab" >&2; exit 2 ;;
esac
