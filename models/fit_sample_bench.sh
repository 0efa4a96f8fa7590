#!/bin/sh
# models/fit_sample_bench.sh BIN GEN [OUT]: what a long capture costs `specsim fit` (make bench):
# the synthetic always-mode trace of tests/test_fit_sample.c (GEN: its binary; --write) at
# 1M and 4M records (4M: ~1 GB of JSON, the 1 GB-equivalent of issue 20), fitted with the
# default cap on instances and without one (FIT_INSTANCES_MAX=0), one core each: wall time
# and peak resident memory (ru_maxrss of the fit's process). OUT (default
# traces/fitmem/fit_memory.csv) gets the table; BENCH_FITMEM_RECORDS sets the sizes.
set -eu
bin=${1:-bin/specsim}
gen=${2:-build/tests/test_fit_sample}
out=${3:-traces/fitmem/fit_memory.csv}
sizes=${BENCH_FITMEM_RECORDS:-1000000 4000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
{
    echo "# specsim fit on the synthetic always-mode trace of tests/test_fit_sample.c (models/fit_sample_bench.sh)"
    echo "# $(nproc) CPUs ($(uname -m)), load $(cut -d' ' -f1-3 /proc/loadavg); cap: instances kept per trace, phase and configuration (0: all)"
    echo "records,json_mb,gzip_mb,cap,fit_s,peak_mib"
    echo "#count,MB,MB,instances,s,MiB"
} > "$tmp/t.csv"
for n in $sizes; do
    f="$tmp/t$n.json.gz"
    line=$("$gen" --write "$f" "$n")   # "N records, B bytes of JSON, G of gzip"
    rec=$(echo "$line" | cut -d' ' -f1)
    jmb=$(echo "$line" | awk '{printf "%.0f", $3 / 1e6}')
    gmb=$(echo "$line" | awk '{printf "%.0f", $7 / 1e6}')
    for cap in default 0; do
        if [ "$cap" = default ]; then
            r=$(env -u FIT_INSTANCES_MAX SPECSIM="$bin" "$gen" --measure "$f")
            c=$(grep -o 'FIT_INSTANCES_MAX_DEFAULT [0-9]*' models/fit.h | cut -d' ' -f2)
        else
            r=$(FIT_INSTANCES_MAX=0 SPECSIM="$bin" "$gen" --measure "$f")
            c=0
        fi
        echo "$rec,$jmb,$gmb,$c,$r" >> "$tmp/t.csv"
    done
    rm -f "$f"
done
cat "$tmp/t.csv"
cp "$tmp/t.csv" "$out"
echo "# wrote $out"
