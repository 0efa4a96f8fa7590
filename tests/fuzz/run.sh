#!/bin/sh
# run.sh SECONDS TARGET...: runs each libFuzzer harness (build-fuzz/fuzz/fuzz_TARGET, built
# by `make fuzz`) for SECONDS from its corpus: the seeds tests/fuzz/TARGET/, the regression
# inputs tests/fuzz/regress/TARGET/ and what earlier runs found (build-fuzz/corpus/TARGET/,
# kept between runs, so a longer campaign is several runs). Timeouts are 10 s per input,
# memory 2 GB. Writes build-fuzz/summary.txt (runs, coverage, corpus, findings per target)
# and exits 1 if any harness found a crash, a sanitizer report, a leak or a timeout: the
# input is in build-fuzz/artifacts/TARGET/ (copy it to tests/fuzz/regress/TARGET/ once fixed).
# Runs from the repository root (the config target reads models/example-llama8b.json).
S=$1; shift
mkdir -p build-fuzz/logs
SUM=build-fuzz/summary.txt
{
  printf '# make fuzz: %s s per target, %s\n' "$S" "$(date -u +%Y-%m-%dT%H:%MZ)"
  printf '#%-9s %12s %10s %8s %8s %8s %9s\n' target runs runs_per_s cov ft corpus findings
  printf '#%-9s %12s %10s %8s %8s %8s %9s\n' - count 1/s edges features inputs files
} > "$SUM"
fail=0
for t in "$@"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t" "tests/fuzz/regress/$t"
  log=build-fuzz/logs/$t.log
  echo "  FUZZ    $t ($S s)"
  build-fuzz/fuzz/fuzz_$t -max_total_time="$S" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t/" \
    "build-fuzz/corpus/$t" "tests/fuzz/$t" "tests/fuzz/regress/$t" > "$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
  corp=$(ls "build-fuzz/corpus/$t" | wc -l)
  found=$(ls "build-fuzz/artifacts/$t" | wc -l)
  printf '%-10s %12s %10s %8s %8s %8s %9s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
    "$corp" "$found" >> "$SUM"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    fail=1
    echo "  FOUND   $t: exit $rc; see $log and build-fuzz/artifacts/$t/:"
    grep -E "ERROR: |SUMMARY: |runtime error|fuzz invariant" "$log" | head -5 | sed 's/^/          /'
  fi
done
cat "$SUM"
[ "$fail" -eq 0 ]
