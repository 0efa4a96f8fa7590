#!/bin/sh
# check_clang.sh CC: `make fuzz` needs clang with libFuzzer's runtime; says which Debian
# package to install when it is missing.
CC=${1:-clang}
t=$(mktemp -d)
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$t/h.c"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "make fuzz: $CC not found: apt-get install clang (Debian 12: clang-14)"; rm -rf "$t"; exit 1
fi
if ! "$CC" -fsanitize=fuzzer,address,undefined "$t/h.c" -o "$t/h" >/dev/null 2>&1; then
  echo "make fuzz: $CC cannot link -fsanitize=fuzzer: libFuzzer's runtime is missing:"
  echo "  apt-get install libclang-rt-14-dev   (Debian 12; or libfuzzer-14-dev; match your clang version)"
  rm -rf "$t"; exit 1
fi
rm -rf "$t"
