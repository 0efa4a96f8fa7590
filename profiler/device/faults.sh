#!/bin/bash
# faults.sh: specprof under faults (issue 17), on one GPU: the application dies by SIGSEGV
# and by abort() (the trace must be complete up to the fault and say how it ended), the
# output directory cannot be written and the disk fills (the application must run on and
# specprof say once why it stopped), the application forks (with and without exec: each
# process its own file, neither corrupted), 32 host threads launch at once (no record lost
# or mixed up). The programs are profiler/demo/fault_demo.cu; each prints what it launched
# (FAULT_EXPECT) and the checker compares the trace with it, count for count.
# Writes $OUT/faults.txt (the table: case, what the application did, what the trace holds,
# the verdict), $OUT/faults.log (everything), $OUT/traces.tar.gz (the traces, gzipped).
# Needs root for the tmpfs cases (a read-only and a 128 KB tmpfs); without it, a directory
# under a file (cannot be made) and `ulimit -f` (with SIGXFSZ ignored: writes fail with
# EFBIG, as with ENOSPC) stand in, and the table says which was used. ~1-2 minutes.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/faults.sh
set -u
OUT=${OUT:-/tmp/specprof-faults}
mkdir -p "$OUT"
LOG=$OUT/faults.log
TAB=$OUT/faults.txt
W=$(mktemp -d /tmp/specprof-faults.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # the machines' rule
step() { echo "=== $* ($(date +%T), ${SECONDS}s)" | tee -a "$LOG"; }
say() { echo "$*" | tee -a "$LOG"; }
: > "$LOG"

step "device and build"
nvidia-smi -L 2>&1 | tee -a "$LOG"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
make -j8 bin/libspecprof.so bin/fault_demo >> "$LOG" 2>&1
make bin/specprof >> "$LOG" 2>&1 || cc -O2 -std=c11 -D_GNU_SOURCE -Iprofiler/core -Imodels -o bin/specprof \
    profiler/specprof.c profiler/core/*.c models/bounds.c models/ofile.c -lz -lpthread -ldl -lm >> "$LOG" 2>&1
SP=$PWD/bin/specprof; LIB=$PWD/bin/libspecprof.so; FD=$PWD/bin/fault_demo
ls -la bin/specprof bin/libspecprof.so bin/fault_demo 2>&1 | tee -a "$LOG"
[ -x "$SP" ] && [ -f "$LIB" ] && [ -x "$FD" ] || say "BUILD FAILED"
# every record, all the time: the default --mode windows records kernels only inside short
# windows (docs/specprof.md), so counting them against what the programs launched needs
# --mode always (the first H200 run of this script, with windows, had 5749 of 6400 kernels
# in the 32-thread case, and a compressed windowed trace of 6 KB never filled the 128 KB
# disk: traces/faults/); the full-disk case writes plain JSON so that the disk fills
SPM="--mode always"
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1
ulimit -c 0   # the crash cases must not leave GB-sized core dumps of a CUDA process

# run NAME DIR CMD...: runs CMD with stdout/stderr to $W/NAME.out/.err, rc to $W/NAME.rc
run() {
  local name=$1; shift
  step "case $name: $*"
  timeout 120 "$@" > "$W/$name.out" 2> "$W/$name.err"
  echo $? > "$W/$name.rc"
  say "rc=$(cat "$W/$name.rc")"
  tail -15 "$W/$name.err" | tee -a "$LOG"
  cat "$W/$name.out" | tee -a "$LOG"
}
how() { local n=$1; shift; echo "$*" > "$W/$n.how"; }   # how a case was set up (for the table)

# crashes: the reference exit status without specprof, then under it
run segv_ref "$FD" --mode segv --kernels 200
run segv "$SP" $SPM -o "$W/segv" -- "$FD" --mode segv --kernels 200
run abort_ref "$FD" --mode abort --kernels 200
run abort "$SP" $SPM -o "$W/abort" -- "$FD" --mode abort --kernels 200

# an output directory that cannot be written: the library's own case (the launcher makes
# its -o first), with the injection set up by hand
how nodir "SPECPROF_DIR=/dev/null/specprof (a directory under a file: cannot be made)"
run nodir env SPECPROF_DIR=/dev/null/specprof CUDA_INJECTION64_PATH="$LIB" NVTX_INJECTION64_PATH="$LIB" \
    "$FD" --mode long --secs 3
mkdir -p "$W/ro"
if [ $ROOT = 1 ] && mount -t tmpfs -o ro,size=1m tmpfs "$W/ro" 2>> "$LOG"; then
  how rodir "a read-only tmpfs"
elif [ $ROOT = 0 ]; then chmod 555 "$W/ro"; how rodir "chmod 555 (not root)"
else how rodir "SKIPPED: root but no mount (container?); nodir covers the case"; fi
if ! grep -q SKIPPED "$W/rodir.how"; then
  run rodir "$SP" $SPM -o "$W/ro" -- "$FD" --mode long --secs 3
fi

# a full disk: a 128 KB tmpfs, else a 128 KB file size limit with SIGXFSZ ignored
mkdir -p "$W/full"
if [ $ROOT = 1 ] && mount -t tmpfs -o size=128k tmpfs "$W/full" 2>> "$LOG"; then
  how full "a 128 KB tmpfs (ENOSPC)"
  run full "$SP" $SPM --no-compress -o "$W/full" -- "$FD" --mode long --secs 5
else
  how full "ulimit -f 128 with SIGXFSZ ignored (EFBIG, as ENOSPC would)"
  run full bash -c "trap '' XFSZ; ulimit -f 128; exec \"$SP\" $SPM --no-compress -o \"$W/full\" -- \"$FD\" --mode long --secs 5"
fi

# fork + exec, fork alone
run fork "$SP" $SPM -o "$W/fork" -- "$FD" --mode fork --kernels 100 --child-kernels 50
run forkonly "$SP" $SPM -o "$W/forkonly" -- "$FD" --mode forkonly --kernels 100

# 32 host threads launching at once
run threads "$SP" $SPM -o "$W/threads" -- "$FD" --mode threads --threads 32 --kernels 200

step "check"
for d in segv abort full fork forkonly threads ro; do
  for f in "$W/$d"/specprof.rank*.json*; do
    [ -e "$f" ] || continue
    # the check's output beside the cases, not in their directories: the full disk's is full
    mkdir -p "$W/checks/$d"; c="$W/checks/$d/$(basename "$f").check"
    "$SP" check "$f" > "$c" 2>&1; echo "check rc=$?" >> "$c"
    head -6 "$c" | sed "s|^|$d: |" | tee -a "$LOG"
  done
done
python3 - "$W" > "$TAB" 2>> "$LOG" <<'PY'
import json, os, sys, glob, collections, zlib
W = sys.argv[1]
def text_of(p):
    """A trace's text: plain, or gzip (also cut off mid-stream: what decompresses)."""
    data = open(p, "rb").read()
    if data[:2] != b"\x1f\x8b":
        return data.decode(errors="replace")
    out, d = [], zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        while data:
            out.append(d.decompress(data))
            data = d.unused_data
            if data: d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    except zlib.error:
        pass
    return b"".join(out).decode(errors="replace")
def rd(p, d=""):
    try: return open(p, errors="replace").read()
    except OSError: return d
def expect(name):
    return [json.loads(l[len("FAULT_EXPECT "):]) for l in rd(f"{W}/{name}.out").splitlines() if l.startswith("FAULT_EXPECT ")]
def rc(name):
    v = rd(f"{W}/{name}.rc").strip()
    return int(v) if v else None
def traces(d):
    out = []
    for p in sorted(glob.glob(f"{W}/{d}/specprof.rank*.json*")):
        if p.endswith(".check"): continue
        evs, cut = [], False
        for line in text_of(p).splitlines():
            line = line.strip().rstrip(",")
            if line in ("[", "]", ""): continue
            try: evs.append(json.loads(line))
            except ValueError: cut = True
        hdr = [e for e in evs if e.get("name") == "specprof_header"]
        end = [e for e in evs if e.get("name") == "specprof_end"]
        recs = [e for e in evs if e.get("ph") != "M"]
        chk = rd(f"{W}/checks/{d}/{os.path.basename(p)}.check")
        out.append(dict(path=os.path.basename(p), part=p.endswith(".part"), cut=cut,
                        pid=hdr[0]["args"].get("pid_os") if hdr else None,
                        end=end[0]["args"] if end else None, records=len(recs),
                        kernels=[e for e in recs if e.get("cat") == "kernel"],
                        api=[e for e in recs if e.get("cat") == "api"],
                        check_rc=chk.strip().rsplit("rc=", 1)[-1] if "rc=" in chk else "?"))
    return out
def lines(name, needle):
    return sum(1 for l in rd(f"{W}/{name}.err").splitlines() if l.startswith("specprof: pid") and needle in l)
rows = []
def row(case, app, trace, want, ok):
    rows.append((case, app, trace, want, "ok" if ok else "MISMATCH"))
def tdesc(t):
    if not t: return "no trace file"
    s = []
    for x in t:
        e = x["end"]
        s.append("%s: %s, %d records%s%s, %d kernels, check rc %s" % (
            x["path"], "cut off (.part)" if x["part"] else "complete", x["records"],
            (" of %s promised" % e.get("records")) if e else "", (", end \"%s\"" % e.get("reason")) if e else ", no end record",
            len(x["kernels"]), x["check_rc"]))
    return "; ".join(s)

for case, sig in (("segv", 11), ("abort", 6)):
    ex = expect(case); t = traces(case); r = rc(case); ref = rc(case + "_ref")
    n = ex[0]["kernels"] if ex else None
    ok = (r == ref == 128 + sig and len(t) == 1 and not t[0]["part"] and t[0]["end"] and
          t[0]["end"].get("reason") == "signal " + ("SIGSEGV" if sig == 11 else "SIGABRT") and
          len(t[0]["kernels"]) == n and t[0]["records"] == t[0]["end"].get("records"))
    row(case, "exit %s (without specprof %s), launched %s kernels" % (r, ref, n), tdesc(t),
        "dies by its signal as without specprof; one complete trace with all %s kernels, end reason the signal" % n, ok)

for case in ("nodir", "rodir"):
    h = rd(f"{W}/{case}.how").strip()
    if "SKIPPED" in h or not os.path.exists(f"{W}/{case}.rc"):
        rows.append((case, h, "-", "-", "skipped")); continue
    ex = expect(case); r = rc(case); said = lines(case, "cannot write the trace")
    t = traces("ro") if case == "rodir" else []
    done = "DONE" in rd(f"{W}/{case}.out")
    row(case + " (" + h + ")", "exit %s, %s, specprof said 'cannot write the trace' %d time(s)" % (r, "ran to its end (DONE)" if done else "did NOT finish", said),
        tdesc(t), "exit 0, runs to its end, said once, no trace", r == 0 and done and said == 1 and not t)

h = rd(f"{W}/full.how").strip()
ex = expect("full"); t = traces("full"); r = rc("full"); said = lines("full", "failed")
done = "DONE" in rd(f"{W}/full.out")
row("full (" + h + ")", "exit %s, %s, specprof said 'writing ... failed' %d time(s)" % (r, "ran to its end (DONE)" if done else "did NOT finish", said),
    tdesc(t), "exit 0, runs to its end, said once; a .part file that loads (check rc 1) with the records up to there",
    r == 0 and done and said == 1 and len(t) == 1 and t[0]["part"] and t[0]["records"] > 0 and t[0]["check_rc"] == "1")

ex = expect("fork"); t = traces("fork"); r = rc("fork")
par = [e for e in ex if e["mode"] == "fork"]; chl = [e for e in ex if e["mode"] == "child"]
bypid = {x["pid"]: x for x in t}
ok = (r == 0 and len(t) == 2 and par and chl and par[0]["pid"] in bypid and chl[0]["pid"] in bypid and
      all(not x["part"] and not x["cut"] and x["end"] and x["records"] == x["end"].get("records") and x["check_rc"] == "0" for x in t) and
      len(bypid[par[0]["pid"]]["kernels"]) == par[0]["kernels"] and len(bypid[chl[0]["pid"]]["kernels"]) == chl[0]["kernels"])
row("fork+exec", "exit %s; parent pid %s launched %s, child pid %s launched %s" % (r, par[0]["pid"] if par else "?", par[0]["kernels"] if par else "?",
    chl[0]["pid"] if chl else "?", chl[0]["kernels"] if chl else "?"), tdesc(t),
    "two complete files, one per pid, each with its own kernels, check rc 0", ok)

ex = expect("forkonly"); t = traces("forkonly"); r = rc("forkonly")
ok = (r == 0 and ex and len(t) == 1 and not t[0]["part"] and t[0]["end"] and len(t[0]["kernels"]) == ex[0]["kernels"] and
      t[0]["check_rc"] == "0" and ex[0]["child_status"] == 0)
row("fork (no exec)", "exit %s; launched %s, child exit %s" % (r, ex[0]["kernels"] if ex else "?", ex[0]["child_status"] if ex else "?"),
    tdesc(t), "one complete file (the child writes none), all kernels", ok)

ex = expect("threads"); t = traces("threads"); r = rc("threads")
if ex and len(t) == 1:
    T, K = ex[0]["threads"], ex[0]["kernels_per_thread"]
    ks = t[0]["kernels"]
    grid = collections.Counter(e["args"]["grid"][0] for e in ks)
    launch = {e["args"]["corr"]: e["args"].get("thread") for e in t[0]["api"] if "Launch" in e["name"]}
    owner = collections.defaultdict(set)
    for e in ks: owner[e["args"]["grid"][0]].add(launch.get(e["args"]["corr"]))
    per_thread = collections.Counter(v for v in launch.values())
    distinct = len({next(iter(v)) for v in owner.values() if len(v) == 1})
    e = t[0]["end"] or {}
    ok = (r == 0 and len(ks) == T * K and all(grid[g] == K for g in range(1, T + 1)) and
          all(len(owner[g]) == 1 for g in range(1, T + 1)) and distinct == T and
          e.get("dropped_records", 1) == 0 and e.get("dropped_host_events", 1) == 0 and t[0]["check_rc"] == "0")
    row("32 threads", "exit %s; %d threads x %d kernels = %d" % (r, T, K, T * K),
        tdesc(t) + "; kernels per grid (= thread) min %d max %d; %d launch threads own one grid each; dropped %s/%s" % (
            min(grid.values()) if grid else 0, max(grid.values()) if grid else 0, distinct, e.get("dropped_records"), e.get("dropped_host_events")),
        "every kernel once, each thread's %d under its own launch thread, none dropped" % K, ok)
else:
    row("32 threads", "exit %s" % r, tdesc(t), "one trace with every kernel", False)

w = [max(len(str(x[i])) for x in rows + [("case", "application", "trace", "expected", "verdict")]) for i in range(5)]
print("# specprof under faults (issue 17): profiler/device/faults.sh on %s" % os.popen("nvidia-smi -L 2>/dev/null | head -1").read().strip())
print("# case | what the application did | what the trace holds (specprof check rc: 0 complete, 1 cut off) | expected | verdict")
for x in rows:
    print(" | ".join(str(v) for v in x))
print("# %d of %d cases as expected" % (sum(x[4] == "ok" for x in rows), sum(x[4] != "skipped" for x in rows)))
PY
cat "$TAB" | tee -a "$LOG"
# the traces before the tmpfs go (the full disk's trace lives on it)
(cd "$W" && tar czf "$OUT/traces.tar.gz" segv abort fork forkonly threads full checks *.out *.err *.rc *.how 2>/dev/null)
[ $ROOT = 1 ] && { umount "$W/ro" 2>/dev/null; umount "$W/full" 2>/dev/null; }
ls -la "$OUT" | tee -a "$LOG"
