# Included by the top Makefile.
#  bin/specprof        launcher + merge (plain C, always built)
#  bin/libspecprof.so  CUPTI injection library (profiler/inject/*.c), needs CUDA/CUPTI
#  bin/specbench       GPU speculative-decoding workload (profiler/bench/*.cu), needs nvcc
#  bin/arsweep         NCCL all-reduce sweep (profiler/bench/arsweep.cu), needs nvcc + NCCL
#  bin/libfloor.so     a bare CUPTI subscriber, kernel activity only (profiler/bench/floor.c): the cost floor
CUDA_INC   := $(CUDA_HOME)/targets/x86_64-linux/include
CUDA_LIBD  := $(CUDA_HOME)/targets/x86_64-linux/lib
NCCL_LIBD  ?= /usr/lib/x86_64-linux-gnu
NVCCFLAGS  ?= -O2 -g -arch=sm_90 -std=c++17
INJ_SRC    := $(wildcard profiler/inject/*.c)
INJ_OBJ    := $(INJ_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC  := $(filter-out profiler/bench/arsweep.cu,$(wildcard profiler/bench/*.cu))

.PHONY: profiler
ifeq ($(HAVE_NVCC),yes)
profiler: $(BIN)/specprof $(BIN)/libspecprof.so $(BIN)/libfloor.so $(BIN)/specbench \
          $(if $(findstring SB_NO_NCCL,$(SB_NCCL)),,$(BIN)/arsweep)
else
profiler: $(BIN)/specprof
	@echo "  NOTE    nvcc not found at $(NVCC): building the simulator only (no libspecprof.so, no specbench)"
endif

# The trace code's libc-only helpers from models/: the ranges every reader checks and the
# output-file rule (bounds.h, ofile.h).
PROF_CORE_OBJ := $(filter $(BUILD)/profiler/core/%,$(LIB_OBJ)) $(BUILD)/models/bounds.o \
                 $(BUILD)/models/ofile.o

# libc and zlib only (no GSL/cJSON), so that it builds on a GPU box that has nothing else
$(BIN)/specprof: $(BUILD)/profiler/specprof.o $(BUILD)/profiler/pclean.o $(PROF_CORE_OBJ)
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lz -lpthread -ldl -lm

$(BUILD)/profiler/inject/%.o: profiler/inject/%.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) -I$(CUDA_INC) $(CFLAGS) -c $< -o $@

# The injection library carries its own copy of the trace writer (profiler/core) so that
# it depends on nothing but libcupti and libc at run time.
$(BIN)/libspecprof.so: $(INJ_OBJ) $(PROF_CORE_OBJ)
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $^ -L$(CUDA_LIBD) -Wl,-rpath,$(CUDA_LIBD) -lcupti -lz -lpthread -ldl

# The floor of always-on tracing (docs/profiler.md): CUPTI and libc only.
$(BIN)/libfloor.so: profiler/bench/floor.c
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -I$(CUDA_INC) -shared -o $@ $< -L$(CUDA_LIBD) -Wl,-rpath,$(CUDA_LIBD) -lcupti

# specbench: one object per .cu (make -j compiles them in parallel); NCCL found by
# profiler/bench/nccl_flags.sh (CUDA tree, system, or the nvidia-nccl pip package), or the
# build is single-GPU (-DSB_NO_NCCL). NVTX is nvtx3, header-only (-ldl for its loader).
BENCH_OBJ  := $(BENCH_SRC:%.cu=$(BUILD)/%.o)
SB_NCCL     = $(shell sh profiler/bench/nccl_flags.sh $(CUDA_HOME))

$(BUILD)/profiler/bench/%.o: profiler/bench/%.cu $(wildcard profiler/bench/*.h)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -Iprofiler/bench $(filter -I% -D%,$(SB_NCCL)) -c $< -o $@

$(BIN)/specbench: $(BENCH_OBJ)
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -o $@ $(BENCH_OBJ) -L$(CUDA_LIBD) $(filter-out -I% -D%,$(SB_NCCL)) \
	  -cudart shared -Xlinker -rpath,$(CUDA_LIBD) -lcublas -lcudart -ldl

# arsweep: the all-reduce sweep that `specsim fit-allreduce` fits (docs/multigpu.md); one
# file, NCCL found like specbench's (it refuses to build without NCCL).
$(BIN)/arsweep: profiler/bench/arsweep.cu profiler/bench/sbcheck.h
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -Iprofiler/bench -o $@ $< $(SB_NCCL) \
	  -L$(CUDA_LIBD) -lcudart -lpthread

# specprof's GPU demo (profiler/demo/graph_demo.cu): CUDA graphs, NVTX (nvtx3, header-only)
# and 1-rank NCCL, found like specbench's NCCL (or built without: -DDEMO_NO_NCCL).
#   make bin/specprof_demo
DEMO_NCCL = $(subst -DSB_NO_NCCL,-DDEMO_NO_NCCL,$(shell test -f profiler/bench/nccl_flags.sh && \
              sh profiler/bench/nccl_flags.sh $(CUDA_HOME) || echo -DSB_NO_NCCL))
$(BIN)/specprof_demo: profiler/demo/graph_demo.cu
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -cudart shared -I$(CUDA_INC) -o $@ $< $(DEMO_NCCL) -ldl

# specprof under faults (profiler/demo/fault_demo.cu, profiler/device/faults.sh): crashes,
# fork + exec, 32 launching threads.   make bin/fault_demo
$(BIN)/fault_demo: profiler/demo/fault_demo.cu
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -cudart shared -o $@ $< -lpthread

# What CUPTI does to correlation ids and a graph launch's cost when tracing is switched off
# and on (profiler/demo/corr_probe.cu, docs/profiler.md).   make bin/corr_probe
$(BIN)/corr_probe: profiler/demo/corr_probe.cu
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -cudart shared -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIBD) -Xlinker -rpath,$(CUDA_LIBD) -lcupti -ldl

# Per-node times of a CUDA graph without CUPTI: an instrumented clone with event nodes, against
# CUPTI's records (profiler/demo/node_probe.cu, docs/profiler.md).   make bin/node_probe
$(BIN)/node_probe: profiler/demo/node_probe.cu
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -cudart shared -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIBD) -Xlinker -rpath,$(CUDA_LIBD) -lcupti -lcublas -L$(CUDA_LIBD)/stubs -lcuda

# tests/test_ptrace_cupti.c feeds synthetic CUPTI records through the injection library's
# record converter; it needs CUPTI's headers and library, else it only reports a skip.
HAVE_CUPTI := $(shell test -f $(CUDA_INC)/cupti.h && test -e $(CUDA_LIBD)/libcupti.so && echo yes)
ifeq ($(HAVE_CUPTI),yes)
$(BUILD)/tests/test_ptrace_cupti: private CPPFLAGS += -I$(CUDA_INC) -Iprofiler/inject -DPTRACE_HAVE_CUPTI
$(BUILD)/tests/test_ptrace_cupti: private LDLIBS += -L$(CUDA_LIBD) -Wl,-rpath,$(CUDA_LIBD) -lcupti -ldl
$(BUILD)/tests/test_ptrace_cupti: profiler/inject/precord.c profiler/inject/precord.h
endif

# tests/test_ptrace_inject.c runs the injection engine (profiler/inject/*.c, included)
# against a fake CUPTI defined in the test: it needs CUPTI's headers only.
HAVE_CUPTI_H := $(shell test -f $(CUDA_INC)/cupti.h && test -f $(CUDA_INC)/cuda.h && echo yes)
ifeq ($(HAVE_CUPTI_H),yes)
$(BUILD)/tests/test_ptrace_inject: private CPPFLAGS += -I$(CUDA_INC) -Iprofiler/inject -DPTRACE_HAVE_CUPTI_H
$(BUILD)/tests/test_ptrace_inject: private LDLIBS += -rdynamic -ldl -lpthread
$(BUILD)/tests/test_ptrace_inject: $(INJ_SRC) $(wildcard profiler/inject/*.h)
endif

# tests/test_plite.c runs itself as a child with libspecprof.so preloaded in lite mode over a
# scripted CUDA runtime (tests/fakecudart.c, a shared library so that the preloaded interposer
# finds it as it finds libcudart): it needs libspecprof.so (nvcc and CUPTI's headers), else
# it only reports a skip.
ifeq ($(HAVE_NVCC)$(HAVE_CUPTI_H),yesyes)
$(BUILD)/tests/libfakecudart.so: tests/fakecudart.c tests/fakecudart.h
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -shared -o $@ $< -lpthread
$(BUILD)/tests/test_plite: private CPPFLAGS += -I$(CUDA_INC) -DPLITE_LIB='"$(abspath $(BIN))/libspecprof.so"' \
                                               -DSPECPROF_BIN='"$(abspath $(BIN))/specprof"'
$(BUILD)/tests/test_plite: private LDLIBS += -L$(BUILD)/tests -lfakecudart -Wl,-rpath,$(abspath $(BUILD))/tests -ldl
$(BUILD)/tests/test_plite: $(BUILD)/tests/libfakecudart.so $(BIN)/libspecprof.so $(BIN)/specprof tests/fakecudart.h
endif

# What one kernel launch costs the host by the kind of kernel (parameters, distinct functions,
# runtime calls around it), with and without CUPTI (profiler/demo/launch_probe.cu,
# profiler/device/call26.sh).   make bin/launch_probe
$(BIN)/launch_probe: profiler/demo/launch_probe.cu
	@mkdir -p $(BIN)
	$(if $(Q),@echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCCFLAGS) -cudart shared -o $@ $<
