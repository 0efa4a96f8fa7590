#!/bin/sh
# gemm_from_llama8b.sh: torch-dense's GEMM sweep for `specsim fit --gemm-sweep`, taken from
# specbench's llama8b sweep (traces/calib/gemm_llama8b.csv, H200, docs/fit.md section 3b).
# Why it may stand in: torch-dense's target layer IS Llama-3.1-8B's (hidden 4096, qkv 6144,
# MLP 2 x 14336 fused gate|up, vocab 128256; docs/torchbench.md "Presets"), 8 of its 32
# layers, on the same GPU model; torchbench's own verify/decode GEMMs in call 4's capture
# cost 0.967-1.015x this sweep's sum at every calibration token count, 3 to 480
# (docs/torchbench.md, "Verify at 24 and 52 rows"). What differs: torch's cuBLAS build and
# heuristics (the nvjet kernels it picks), and another device call; a sweep of torchbench's
# own shapes through torch is profiler/device/torch_gemm_sweep.sh (not run yet).
# Kept: the target sites (qkv, o, gu, down: per_forward 32 -> 8 layers; lm_head: 1) for the
# phases verify and decode. Not kept: the draft's sites (torch-dense's draft has a 32000-row
# LM head, llama8b's 128256), so draft and extend keep the smooth fit.
# usage: sh traces/torch/gemm_from_llama8b.sh [IN] > traces/torch/call4/always/gemm_torch-dense.csv
set -eu
IN=${1:-traces/calib/gemm_llama8b.csv}
awk -F, 'BEGIN { OFS = "," }
  NR == 1 { print; next }
  $1 == "llama8b" && ($2 == "qkv" || $2 == "o" || $2 == "gu" || $2 == "down" || $2 == "lm_head") {
    $1 = "torch-dense"
    if ($4 == 32) $4 = 8          # layers: torch-dense runs 8 of Llama-3.1-8B 32
    print }' "$IN"
