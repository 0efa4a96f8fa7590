#!/bin/bash
# call31.sh: one device call (2026-12-06, tenth session) for issues 13 and 20: call30.sh (does
# CUPTI's cost per launch depend on what the host does between launches? the calibration's swept
# arms against torchbench's eager plain decode at 80 rows) and then call29.sh's design again
# (each torchbench preset's calibration subset captured by specprof --mode always, the held-out
# grid unprofiled, the same call), so that the always captures carry the swept arms beside the
# grid they are to predict; last, while time is left, torchbench's GEMM sweep on this GPU
# (torch_gemm_sweep.sh: specsim fit --gemm-sweep, the GEMM tile steps between the calibration's
# token counts).
# $OUT (8 files): extra.tar.gz (call30/: call30's run.log, probe.csv, calib.csv, torch.csv;
# gemm/: gemm_<preset>.csv, smi_<preset>.csv, torch_gemm_sweep.log), and
# call29.sh's seven: run.log, device.txt, calib_torch-{dense,moe}_always.json.gz,
# calib_measured_torch-{dense,moe}_always.csv, measured.csv.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call31.sh   (~540 s; with
#   PRESETS=torch-dense GRID_S=90 GEMM_BY_S=360 ~340 s)
#   env: GRID_S (100): seconds of grid per preset; PRESETS (torch-dense torch-moe); C30_S (160): call30's budget; ROUNDS (3);
#        GEMM_BY_S (470): the GEMM sweep runs only when it can start by then
set -u
O=${OUT:-/tmp/call31}
mkdir -p "$O"
T=$(mktemp -d /tmp/call31.XXXXXX)
mkdir -p "$T/call30"
OUT=$T/call30 RUN_LIMIT_S=${C30_S:-160} ROUNDS=${ROUNDS:-3} bash "$(dirname "$0")/call30.sh" > "$T/call30/stdout.txt" 2>&1
echo "call30 rc=$? ($SECONDS s)"
tail -5 "$T/call30/stdout.txt"; rm -f "$T/call30/stdout.txt"
tar -C "$T" -czf "$O/extra.tar.gz" call30   # again below with the sweep: this one survives a cut
OUT=$O GRID_S=${GRID_S:-100} bash "$(dirname "$0")/call29.sh"   # PRESETS passes through
echo "call29 design rc=$? ($SECONDS s)"
if [ "$SECONDS" -lt "${GEMM_BY_S:-470}" ]; then
  OUT=$T/gemm timeout $((585 - SECONDS)) bash "$(dirname "$0")/torch_gemm_sweep.sh" > "$T/gemm.out" 2>&1
  echo "gemm sweep rc=$? ($SECONDS s)"; grep "rc=\|===" "$T/gemm/torch_gemm_sweep.log"
else
  echo "gemm sweep skipped ($SECONDS s)"
fi
tar -C "$T" -czf "$O/extra.tar.gz" call30 $( [ -d "$T/gemm" ] && echo gemm)
ls -la "$O"
