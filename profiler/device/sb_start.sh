# sb_start.sh: the start every specbench device script shares (sourced, bash): the log
# $LOG emptied, note() for its step lines, nvidia-smi into $OUT/nvidia-smi.txt, and
# bin/specbench built (retried without NCCL: one GPU is all these scripts need; exits 1
# when neither build works). Needs OUT and LOG set.
: > "$LOG"
note() { echo "=== $* ($(date -u +%FT%TZ))" | tee -a "$LOG"; }
note "device"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
head -15 "$OUT/nvidia-smi.txt" >> "$LOG"
note "build"
if ! make -j"$(nproc)" bin/specbench >> "$LOG" 2>&1; then
  note "build failed; retrying without NCCL (one GPU is all this script needs)"
  rm -rf build/profiler/bench
  make -j"$(nproc)" SB_NCCL=-DSB_NO_NCCL bin/specbench >> "$LOG" 2>&1 || { note "build failed"; tail -30 "$LOG"; exit 1; }
fi
