#!/bin/sh
# Runs each test program given, sums their "@@ passed failed" lines, and ends with the
# line "N passed, N failed". A program that crashes or prints no totals counts as failed.
# Tests run from the repository root (they read traces/ and models/ by relative path).
passed=0; failed=0
for t in "$@"; do
  echo "# $t"
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^@@ '
  line=$(printf '%s\n' "$out" | grep '^@@ ' | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $t: exited with status $rc before printing its totals"
    failed=$((failed + 1)); continue
  fi
  p=$(echo "$line" | cut -d' ' -f2); f=$(echo "$line" | cut -d' ' -f3)
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $t: exit status $rc"; failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
