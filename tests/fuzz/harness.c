/* harness.c: one libFuzzer harness; `make fuzz` builds it once per target with
 * -DFUZZ_TARGET=fz_<name> (tests/fuzz/targets.c) and -fsanitize=fuzzer,address,undefined. */
#include "targets.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    return FUZZ_TARGET(data, size);
}
