#!/bin/sh
# torchbench_smoke.sh: a CPU smoke test of profiler/bench/torchbench.py (no GPU, no C): the
# tiny presets run eagerly, and what they write is checked against the formats the rest of
# specsim reads: the CSV header (specbench's columns first), every specprof range name
# (phase word, then key=integer words; the token counts of each phase), SGLang's span names,
# the Decode batch log lines, server_args.json's speculative shape, and the torch.profiler
# file names. Not part of `make test` (it needs torch; ~10 s); skips (exit 0) without it.
# usage: sh profiler/bench/torchbench_smoke.sh   (env PYTHON: an interpreter with torch)
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for p in python3 /usr/bin/python3; do
    if "$p" -c 'import torch' 2>/dev/null; then PY=$p; break; fi
  done
fi
if [ -z "$PY" ]; then
  echo "torchbench_smoke: skipped (no python3 with torch)"
  exit 0
fi
W=$(mktemp -d /tmp/tbsmoke.XXXXXX)
trap 'rm -rf "$W"' EXIT
TB="$PY profiler/bench/torchbench.py --device cpu"
fail=0
run() { echo "+ $*"; "$@" > "$W/out.txt" 2>&1 || { cat "$W/out.txt"; echo "FAIL: exit status $?"; fail=1; }; }
run $TB --check --preset tiny,tiny-moe
run $TB --preset tiny,tiny-moe --mode spec,baseline --steps 1,3 --alpha 0.7 --concurrency 1,5 \
  --seconds 0.02 --min-iters 3 --prompt-len 40:60 --output-len 20 --csv "$W/a.csv" \
  --ranges-out "$W/ranges.txt" --server-log "$W/server.log" --decode-log-interval 3 --repeats 2
run $TB --preset tiny --mode spec,baseline --steps 2 --alpha 0.7 --concurrency 3 --seconds 0.02 \
  --min-iters 3 --prompt-len 40 --output-len 20 --spans sglang --roofline --ranges-out "$W/spans.txt" \
  --torch-profile "$W/kp" --profile-steps 3 --decode-log-interval 2 --csv "$W/k.csv"
$PY - "$W" <<'PY' || fail=1
import csv, glob, json, os, re, sys
w = sys.argv[1]
bad = []
def need(ok, what):
    if not ok:
        bad.append(what)
spec_cols = ("preset,mode,steps,topk,draft_tokens,alpha,concurrency,rep,tok_s,tok_s_req,iter_us,"
             "accept_len,draft_us,verify_us,accept_us,extend_us,decode_us,sample_us,host_us,ctx_mean,"
             "iters,rows,graph,cuda_graph_bs,layers,tp,gpus,prompt_len,output_len,seconds").split(",")
rows = list(csv.DictReader(open(os.path.join(w, "a.csv"))))
need(list(rows[0].keys())[:len(spec_cols)] == spec_cols, "CSV: specbench's columns first")
need(len(rows) == 2 * 2 * (2 * 2 + 2), "CSV: %d rows, want 24" % len(rows))
for r in rows:
    need(float(r["tok_s"]) > 0, "CSV: tok_s > 0 in %s" % r)
    if r["mode"] == "spec":
        need(1 <= float(r["accept_len"]) <= int(r["steps"]) + 1, "CSV: accept_len in 1..steps+1")
ok_words = {"tokens", "bs", "rows", "ctx", "graph", "steps", "topk", "forwards", "experts", "moe_topk"}
n = 0
for line in open(os.path.join(w, "ranges.txt")):
    name = line.rstrip("\n")
    wds = name.split(" ")
    kv = dict(x.split("=") for x in wds[1:])
    need(wds[0] in ("draft", "verify", "accept", "extend", "decode", "sample"), "range phase: " + name)
    need(set(kv) <= ok_words and all(re.fullmatch(r"-?[0-9]+", v) for v in kv.values()), "range words: " + name)
    t, b, ro, st = int(kv["tokens"]), int(kv["bs"]), int(kv["rows"]), int(kv["steps"])
    want = {"draft": ro, "verify": ro * (st + 1), "extend": ro * (st + 1), "accept": b * (st + 1),
            "decode": ro, "sample": b}[wds[0]]
    need(t == want, "range tokens: " + name)
    if wds[0] == "draft":
        need(int(kv["forwards"]) == st - 1 and st > 1, "draft forwards: " + name)
    n += 1
need(n > 50, "ranges: %d names" % n)
logre = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\] Decode batch, #running-req: \d+, #token: \d+, "
                   r"token usage: \d+\.\d\d, (accept len: \d+\.\d\d, accept rate: \d+\.\d\d, )?"
                   r"cuda graph: (True|False), gen throughput \(token/s\): \d+\.\d\d, #queue-req: 0$")
lines = open(os.path.join(w, "server.log")).read().splitlines()
need(lines and all(logre.match(l) for l in lines), "server log format")
need(any("accept len" in l for l in lines), "server log: accept len lines")
spanre = re.compile(r"^(draft|verify|draft_extend|step\[(DECODE|TARGET_VERIFY|DRAFT_EXTEND) bs=\d+"
                    r"( [cg]_sq=\d+ [cg]_sqsq=\d+ [cg]_sqsk=\d+ [cg]_sk=\d+)?\])$")
sp = open(os.path.join(w, "spans.txt")).read().splitlines()
need(sp and all(spanre.match(x) for x in sp), "sglang span names")
need(any(x.startswith("step[TARGET_VERIFY bs=3 c_sq=9 c_sqsq=27 ") for x in sp), "TARGET_VERIFY roofline")
dirs = sorted(glob.glob(os.path.join(w, "kp", "*")))
need([os.path.basename(d) for d in dirs] == ["tiny-baseline-bs3", "tiny-spec-s2-bs3"], "profile dirs %s" % dirs)
for d in dirs:
    fs = sorted(os.listdir(d))
    tr = [f for f in fs if f.endswith(".trace.json.gz")]
    need(len(tr) == 1 and re.fullmatch(r"\d+\.\d+-TP-0-DECODE\.trace\.json\.gz", tr[0]), "trace name %s" % fs)
    sa = json.load(open(os.path.join(d, "server_args.json")))
    spec = "spec" in d
    need(sa["speculative_num_steps"] == (2 if spec else None) and sa["tp_size"] == 1 and
         sa["speculative_num_draft_tokens"] == (3 if spec else None) and "cuda_graph_bs" in sa,
         "server_args.json in " + d)
    need(os.path.getsize(os.path.join(d, "server.log")) > 0, "server.log in " + d)
k = list(csv.DictReader(open(os.path.join(w, "k.csv"))))
need([r["profiler"] for r in k] == ["none", "kineto", "none", "kineto"], "kineto rows")
for b in bad:
    print("FAIL: " + b)
print("torchbench_smoke: %d checks failed" % len(bad))
sys.exit(1 if bad else 0)
PY
[ $fail = 0 ] && echo "torchbench_smoke: ok" || echo "torchbench_smoke: FAILED"
exit $fail
