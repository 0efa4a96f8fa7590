#!/bin/sh
# nccl_flags.sh CUDA_HOME: prints the nvcc flags that find NCCL for specbench, looking in
# the CUDA tree, the system library folders, then the nvidia-nccl pip package (the GPU
# machines' image carries NCCL that way). With no NCCL anywhere it prints -DSB_NO_NCCL:
# specbench then builds for one GPU only (--gpus > 1 is refused).
cuda=${1:-/usr/local/cuda}
inc=""
for d in "$cuda/include" "$cuda/targets/x86_64-linux/include" /usr/include; do
  [ -f "$d/nccl.h" ] && { inc=$d; break; }
done
lib=""
for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu /usr/lib64; do
  [ -e "$d/libnccl.so" ] && { lib=$d; break; }
done
if [ -n "$inc" ] && [ -n "$lib" ]; then
  echo "-I$inc -L$lib -lnccl -Xlinker -rpath=$lib"
  exit 0
fi
py=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
if [ -n "$py" ] && [ -f "$py/include/nccl.h" ] && [ -e "$py/lib/libnccl.so.2" ]; then
  echo "-I$py/include -L$py/lib -l:libnccl.so.2 -Xlinker -rpath=$py/lib"
  exit 0
fi
echo "-DSB_NO_NCCL"
