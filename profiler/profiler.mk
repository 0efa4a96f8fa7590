# Included by the top Makefile.
#  bin/specprof        launcher + merge (plain C, always built)
#  bin/libspecprof.so  CUPTI injection library (profiler/inject/*.c), needs CUDA/CUPTI
#  bin/specbench       GPU speculative-decoding workload (profiler/bench/*.cu), needs nvcc
CUDA_INC   := $(CUDA_HOME)/targets/x86_64-linux/include
CUDA_LIBD  := $(CUDA_HOME)/targets/x86_64-linux/lib
NCCL_LIBD  ?= /usr/lib/x86_64-linux-gnu
NVCCFLAGS  ?= -O2 -g -arch=sm_90 -std=c++17
INJ_SRC    := $(wildcard profiler/inject/*.c)
INJ_OBJ    := $(INJ_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC  := $(wildcard profiler/bench/*.cu)

.PHONY: profiler
ifeq ($(HAVE_NVCC),yes)
profiler: $(BIN)/specprof $(BIN)/libspecprof.so $(BIN)/specbench
else
profiler: $(BIN)/specprof
	@echo "  NOTE    nvcc not found at $(NVCC): building the simulator only (no libspecprof.so, no specbench)"
endif

$(BIN)/specprof: $(BUILD)/profiler/specprof.o $(LIB)
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/profiler/inject/%.o: profiler/inject/%.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) -I$(CUDA_INC) $(CFLAGS) -c $< -o $@

# The injection library carries its own copy of the trace writer (profiler/core) so that
# it depends on nothing but libcupti and libc at run time.
$(BIN)/libspecprof.so: $(INJ_OBJ) $(filter $(BUILD)/profiler/core/%,$(LIB_OBJ))
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $^ -L$(CUDA_LIBD) -Wl,-rpath,$(CUDA_LIBD) -lcupti -lpthread -ldl

$(BIN)/specbench: $(BENCH_SRC) $(wildcard profiler/bench/*.h)
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -Iprofiler/bench -o $@ $(BENCH_SRC) \
	  -L$(CUDA_LIBD) -L$(NCCL_LIBD) -lcublas -lnccl -lcudart -lnvToolsExt 2>/dev/null || \
	  $(NVCC) $(NVCCFLAGS) -Iprofiler/bench -o $@ $(BENCH_SRC) -L$(CUDA_LIBD) -L$(NCCL_LIBD) -lcublas -lnccl -lcudart
