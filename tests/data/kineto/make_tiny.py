# make_tiny.py: writes sglang-eagle-tiny.trace.json, a hand-made Kineto trace shaped like
# PyTorch 2.x output (layout of pytorch/kineto libkineto/src/output_json.cpp; field names of
# CuptiActivity.h) with SGLang EAGLE span names: two speculative rounds (draft, verify >
# step[TARGET_VERIFY bs=3], verify_sample, draft_extend > step[DRAFT_EXTEND bs=3]), CUDA
# graph launches, an NCCL kernel with its collective metadata, a copy and a set, flows,
# cpu_op and python_function events. Times are invented; tests/test_pkineto.c checks them.
# Run: python3 tests/data/kineto/make_tiny.py (from the repository root).
import json
out=[]
def fmt(ns): return "%d.%03d" % (ns//1000, ns%1000)
def X(cat,name,pid,tid,ts,dur,args=None):
    a=""
    if args:
        a=',\n    "args": {\n      ' + ", ".join('"%s": %s'%(k,json.dumps(v)) for k,v in args.items()) + '\n    }'
    out.append('\n  {\n    "ph": "X", "cat": "%s", "name": "%s", "pid": %s, "tid": %s,\n    "ts": %s, "dur": %s%s\n  },' % (cat,name,json.dumps(pid),json.dumps(tid),fmt(ts),fmt(dur),a))
def M(name,pid,tid,key,val):
    out.append('\n  {\n    "name": "%s", "ph": "M", "ts": %s, "pid": %s, "tid": %s,\n    "args": {\n      "%s": %s\n    }\n  },' % (name,fmt(0),pid,tid,key,json.dumps(val)))
def F(ph,id,pid,tid,ts):
    out.append('\n  {\n    "ph": "%s", "id": %d, "pid": %s, "tid": %s, "ts": %s,\n    "cat": "ac2g", "name": "ac2g"%s\n  },' % (ph,id,pid,tid,fmt(ts),', "bp": "e"' if ph=='f' else ''))
PID=4242; TID=4242; DEV=0; ST=7
M("process_name",PID,0,"name","python3"); M("process_labels",PID,0,"labels","CPU")
M("process_name",DEV,0,"name","python3"); M("process_labels",DEV,0,"labels","GPU 0")
M("thread_name",PID,TID,"name","thread 4242 (python3)"); M("thread_name",DEV,ST,"name","stream 7 ")
corr=[100]; ext=[500]
def kern(name,t,d,c,extra=None,grid=(132,1,1),block=(256,1,1)):
    args={"External id":ext[0],"queued":0,"device":DEV,"context":1,"stream":ST,"correlation":c,
          "registers per thread":128,"shared memory":49152,"blocks per SM":1.0,"warps per SM":8.0,
          "grid":list(grid),"block":list(block),"est. achieved occupancy %":25}
    if extra: args.update(extra)
    X("kernel",name,DEV,ST,t,d,args)
def launch(api,t,d):
    corr[0]+=1; ext[0]+=1
    X("cuda_runtime",api,PID,TID,t,d,{"External id":ext[0],"cbid":311 if api=="cudaGraphLaunch" else 211,"correlation":corr[0]})
    F('s',corr[0],PID,TID,t)
    return corr[0]
t=1000000  # ns
for it in range(2):
    bs=3
    # draft stage: one graph of 2 kernels
    d0=t; t+=2000
    c=launch("cudaGraphLaunch",t,8000); gk=t+9000
    kern("void draft_attn_kernel<128>(__nv_bfloat16*, int)",gk,5000,c); F('f',c,DEV,ST,gk)
    kern("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_draft",gk+5500,7000,c)
    X("gpu_user_annotation","draft",DEV,ST,gk-1,12500+2)
    t+=9000; X("user_annotation","draft",PID,TID,d0,t-d0,{"External id":ext[0]})
    # verify stage with its step span; a cudaStreamSynchronize (not a launch) on the way
    v0=t; t+=1500; s0=t; t+=500
    X("cpu_op","aten::copy_",PID,TID,t,2000,{"External id":ext[0],"Record function id":0,"Ev Idx":1}); t+=2500
    c=launch("cudaGraphLaunch",t,9000); gk=max(gk+13000,t+10000)
    kern("void attn_kernel<128>(__nv_bfloat16*, int)",gk,20000,c); F('f',c,DEV,ST,gk)
    kern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",gk+20500,24000,c,
         {"Collective name":"allreduce","In msg nelems":12*4096,"Out msg nelems":12*4096,"Group size":2,"dtype":"BFloat16",
          "Process Group Name":"0","Process Group Description":"default_pg"})
    kern("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_lm_head",gk+45000,30000,c)
    t+=9000
    X("user_annotation","step[TARGET_VERIFY bs=%d]"%bs,PID,TID,s0,t-s0,{"External id":ext[0]})
    t+=500; X("user_annotation","verify",PID,TID,v0,t-v0,{"External id":ext[0]})
    X("gpu_user_annotation","step[TARGET_VERIFY bs=%d]"%bs,DEV,ST,gk-1,75000+2)
    # verify_sample: eager kernel + DtoH copy, then the host waits
    a0=t; t+=1000
    c=launch("cudaLaunchKernel",t,4000); k0=max(gk+76000,t+5000)
    kern("void verify_tree_greedy_kernel<int>(int*, int)",k0,3000,c,grid=(3,1,1),block=(32,1,1)); t+=5000
    corr[0]+=1; c=corr[0]
    X("cuda_runtime","cudaMemcpyAsync",PID,TID,t,3000,{"External id":ext[0],"cbid":41,"correlation":c})
    X("gpu_memcpy","Memcpy DtoH (Device -> Pinned)",DEV,ST,k0+4000,1500,{"External id":ext[0],"device":DEV,"context":1,"stream":ST,"correlation":c,"bytes":48,"memory bandwidth (GB/s)":0.032})
    t+=3500; X("cuda_runtime","cudaStreamSynchronize",PID,TID,t,(k0+5500)-t+200,{"External id":ext[0],"cbid":131,"correlation":c+1}); corr[0]+=1
    t=k0+5500+400
    X("user_annotation","verify_sample",PID,TID,a0,t-a0,{"External id":ext[0]})
    # draft_extend stage with its step span
    e0=t; t+=800; s0=t; t+=300
    c=launch("cudaGraphLaunch",t,8000); gk=t+9000
    kern("void draft_attn_kernel<128>(__nv_bfloat16*, int)",gk,6000,c)
    kern("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_draft",gk+6500,8000,c)
    memset_c=launch("cudaMemsetAsync",t+8500,2500)
    X("gpu_memset","Memset (Device)",DEV,ST,gk+15000,800,{"External id":ext[0],"device":DEV,"context":1,"stream":ST,"correlation":memset_c,"bytes":4096})
    t+=11500
    X("user_annotation","step[DRAFT_EXTEND bs=%d]"%bs,PID,TID,s0,t-s0,{"External id":ext[0]})
    t+=300; X("user_annotation","draft_extend",PID,TID,e0,t-e0,{"External id":ext[0]})
    X("python_function","sglang/srt/managers/scheduler.py(1234): event_loop_normal",PID,TID,d0,t-d0,{"Python parent id":1,"Python id":2,"Python thread":0})
    t=max(t,gk+16000)+3000
# an IDLE and a prefill step outside the window of interest
X("user_annotation","step[EXTEND bs=1 toks=17]",PID,TID,t,40000,{"External id":ext[0]}); t+=41000
X("user_annotation","IDLE",PID,TID,t,1000,{"External id":ext[0]}); t+=2000
head='''{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150110011392,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}], "nccl_version": "2.21.5"},
  "record_shapes": 0,
  "with_stack": 0,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1759000000000000000,
  "traceEvents": ['''
tail='''
  {
    "ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": %s
  }
  ],
  "traceName": "/tmp/sglang/1759000000-TP-0.trace.json"
}
''' % fmt(t)
open('tests/data/kineto/sglang-eagle-tiny.trace.json','w').write(head+''.join(out)+tail)
