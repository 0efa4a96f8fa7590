# preamble.sh: the start a device call's script shares (sourced, bash): OUT (default
# /tmp/$CALL) and its run.log, a work folder W, LIMIT (RUN_LIMIT_S, default $CALL_LIMIT_S),
# step and left, the device's line in the log, specprof built (SP) and torchbench (TB).
# Set CALL and CALL_LIMIT_S before sourcing it.
OUT=${OUT:-/tmp/$CALL}
mkdir -p "$OUT"
W=$(mktemp -d "/tmp/$CALL.XXXXXX")
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-$CALL_LIMIT_S}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
left() { echo $(( LIMIT - SECONDS )); }
step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
nproc | tee -a "$LOG"
make -j"$(nproc)" bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
SP=$PWD/bin/specprof
TB="python3 $PWD/profiler/bench/torchbench.py"
