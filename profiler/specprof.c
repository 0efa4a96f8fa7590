/* specprof.c: the specprof command.
 *   specprof -o DIR [options] -- CMD...   run CMD with libspecprof.so injected (CUDA, NVTX
 *                                         and, for NCCL sizes, LD_PRELOAD); every process
 *                                         that creates a CUDA context writes
 *                                         DIR/specprof.rank<R>.pid<P>.json.gz
 *   specprof merge DIR [-o FILE]          join the rank files onto one clock
 *   specprof check [--json] FILE...       load traces, print a summary or a clear error
 * The launcher stays the parent of CMD so that it can forward signals and say, once CMD
 * has ended, what was written and, if nothing was, why. Plain C, libc only. */
#include "pclean.h"
#include "pkineto.h"
#include "pnvtx.h"
#include "ptrace_merge.h"
#include "ptrace_out.h"
#include "ptrace_read.h"
#include "ptrace_sum.h"
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SP_FAIL(...) do { fprintf(stderr, "specprof: " __VA_ARGS__); fputc('\n', stderr); exit(2); } while (0)

static void usage(FILE *f) {
    fprintf(f,
        "usage: specprof -o DIR [options] -- CMD [ARGS...]\n"
        "       specprof merge DIR [-o FILE]\n"
        "       specprof check [--json] FILE...\n"
        "options for a capture:\n"
        "  -o, --output DIR        directory for the per-process trace files (created)\n"
        "      --delay S           start recording S seconds after launch (default: at the first CUDA context)\n"
        "      --duration S        stop recording S seconds after it started (default: at exit)\n"
        "      --signal-start[=SIG] start recording when SIG arrives (default SIGUSR1); send it to specprof\n"
        "      --signal-stop[=SIG]  stop recording when SIG arrives (default SIGUSR2)\n"
        "      --phases a,b,c      NVTX phase words (default draft,verify,accept,extend,decode,sample)\n"
        "      --flush-ms N        flush CUPTI buffers to the file every N ms (default 500)\n"
        "      --buffer-mb N       CUPTI buffer pool per process, MB (default 64)\n"
        "      --no-nccl           do not preload the NCCL interposer (no NCCL sizes)\n"
        "      --quiet             no per-process messages from the library\n"
        "what is recorded (docs/profiler.md):\n"
        "      --mode M            lite (default): no CUPTI in the program: graph launches timed by CUDA event pairs,\n"
        "                          copies and syncs of the shared CUDA runtime, kernel launches counted, NVTX ranges,\n"
        "                          and both probes below on (3 each): a trace that specsim fit takes alone\n"
        "                          (docs/specprof.md); a program that holds CUDA code but does not load libcudart.so\n"
        "                          (a static runtime) is recorded in always mode instead, with a note;\n"
        "                          always: every kernel, copy and launch record with CUPTI all the time (costs the\n"
        "                          program 10-40%%); windows: node-level records only in short windows (experimental:\n"
        "                          CUPTI 13.0.1 reuses correlation ids across windows)\n"
        "      --capture-range R   lite mode: none (default), or profiler-api: record only between the program's\n"
        "                          cudaProfilerStart and cudaProfilerStop (torch.cuda.profiler.start/stop), as\n"
        "                          nsys --capture-range=cudaProfilerApi; outside them every call goes straight through\n"
        "      --probe-nodes N     lite mode: each CUDA graph executable's first N replays in the capture run an\n"
        "                          instrumented clone (an event after each node) that times every node without\n"
        "                          CUPTI (graph_probe events, traces/FORMAT.md \"Node probe\"); default 3, 0: off\n"
        "      --probe-eager N     lite mode: the first N instances of each eager phase shape run with their stream\n"
        "                          held and an event pair around each kernel launch, which times the kernels\n"
        "                          without CUPTI (eager_probe events, traces/FORMAT.md \"Eager probe\"); default 3, 0: off\n"
        "      --window-ms N       a window's length (default 50)\n"
        "      --period-ms M       one time window every M ms (default 1000)\n"
        "      --shape-replays K   windows also until each graph executable and NVTX phase shape was recorded K times (default 3)\n"
        "      --window-max-ms N   no window longer than this (default 1000)\n"
        "      --shape-ignore k,.. range-name keys whose values do not make a new shape (default ctx)\n"
        "      --between B         none (default): CUPTI attached with recording off between windows;\n"
        "                          detach: CUPTI detached (cuptiFinalize) after each window, attached again for the\n"
        "                          next; graph: one graph-level record per graph launch (detach and graph are\n"
        "                          experimental: programs crashed with them on the H200, CUPTI 13.0.1)\n"
        "      --records R         fit (default): launch, copy and sync API records; all: every runtime/driver API\n"
        "      --gz-level N        zlib level of the .json.gz trace (default 6); --no-compress: plain .json\n"
        "      --no-calibrate      skip the launch-cost calibration at the start\n"
        "      --torch-annotate SPEC  name PyTorch model forwards with NVTX phase ranges as the models are\n"
        "                          built: PATTERN=ROLE[,...], PATTERN a class name (or module.Class,\n"
        "                          fnmatch wildcards) with an optional #N (the N-th such module built),\n"
        "                          ROLE target, draft or a phase word; e.g.\n"
        "                          LlamaForCausalLM#1=target,LlamaForCausalLM#2=draft (docs/pytorch.md)\n");
}

static int parse_signal(const char *s) {
    static const struct { const char *n; int v; } t[] = {
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"URG", SIGURG}, {"WINCH", SIGWINCH},
        {"RTMIN", 0}, {"PROF", SIGPROF}, {"CONT", SIGCONT},
    };
    if (!strncmp(s, "SIG", 3)) s += 3;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].n)) return t[i].v ? t[i].v : SIGRTMIN;
    char *e;
    long v = strtol(s, &e, 10);
    if (*e || v <= 0 || v >= NSIG) return -1;
    return (int)v;
}

/* --signal-start/--signal-stop: a signal specprof can catch and that has no other role:
 * NULL, or why not. */
static const char *signal_refused(int sig) {
    switch (sig) {
    case SIGKILL: case SIGSTOP: return "it cannot be caught";
    case SIGINT: case SIGQUIT: case SIGTERM: case SIGHUP: return "specprof forwards it to the command as it is";
    case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGABRT: case SIGTRAP: case SIGSYS:
        return "a fault: the library ends the capture and lets the program die on it";
    case SIGCHLD: case SIGPIPE: case SIGTSTP: case SIGTTIN: case SIGTTOU: case SIGXCPU: case SIGXFSZ:
        return "the system sends it for its own reasons";
    default: return NULL;
    }
}

/* strtod/strtol take "" as 0 and strtod takes "nan": both refused */
static double parse_seconds(const char *opt, const char *s) {
    char *e;
    double v = strtod(s, &e);
    if (!*s || *e || !(v >= 0 && v <= 1e7)) SP_FAIL("%s: value \"%s\": expected seconds in 0..1e7", opt, s);
    return v;
}

static long parse_long(const char *opt, const char *s, long lo, long hi) {
    char *e;
    long v = strtol(s, &e, 10);
    if (!*s || *e || v < lo || v > hi) SP_FAIL("%s: value \"%s\": expected an integer in %ld..%ld", opt, s, lo, hi);
    return v;
}

/* ---------- check ---------- */

static int sum_cb(void *user, const ptrace_event *e, const ptrace_info *info) {
    (void)info;
    ptrace_sum_add(user, e);
    return 0;
}

/* 1 when the file (gzip or plain) opens like a torch.profiler (Kineto) trace: check's reader
 * refuses it, and a user holding one wants specsim import / fit instead. */
static int check_is_kineto(const char *path) {
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) return 0;   /* a FIFO would block here */
    gzFile g = gzopen(path, "rb");
    if (!g) return 0;
    static char head[65536];
    int n = gzread(g, head, sizeof head);
    gzclose(g);
    return n > 0 && pkineto_probe(head, (size_t)n);
}

static int cmd_check(int argc, char **argv) {
    int json = 0, worst = 0;
    static const struct option lo[] = { {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0} };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jh", lo, NULL)) != -1) {
        if (c == 'j') json = 1;
        else { usage(c == 'h' ? stdout : stderr); return c == 'h' ? 0 : 2; }
    }
    if (optind >= argc) { fprintf(stderr, "specprof check: no trace file given (specprof check [--json] FILE...)\n"); return 2; }
    for (int i = optind; i < argc; i++) {
        char err[1024];
        ptrace_sum s;
        ptrace_info info;
        ptrace_sum_init(&s);
        int rc = ptrace_scan_file(argv[i], sum_cb, &s, &info, err, sizeof err);
        if (rc) {
            fprintf(stderr, "specprof check: %s\n", err);
            if (check_is_kineto(argv[i]))
                fprintf(stderr, "specprof check: %s is a torch.profiler (Kineto) trace: `specsim import %s` "
                        "shows what the fit reads from it, `specsim fit %s -o MODEL.json` fits it "
                        "(docs/importers.md)\n", argv[i], argv[i], argv[i]);
            worst = 2;
            ptrace_sum_free(&s);
            continue;
        }
        ptrace_sum_finish(&s);
        if (json) ptrace_sum_print_json(stdout, &s, &info, argv[i]);
        else ptrace_sum_print(stdout, &s, &info, argv[i]);
        if ((!info.complete || info.bad_lines || info.cut_compressed) && worst < 1) worst = 1;
        ptrace_sum_free(&s);
    }
    return worst;
}

/* ---------- merge ---------- */

static int cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    static const struct option lo[] = { {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0} };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else { usage(c == 'h' ? stdout : stderr); return c == 'h' ? 0 : 2; }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "specprof merge: expected one directory (specprof merge DIR [-o FILE]), got %d arguments\n",
                argc - optind);
        return 2;
    }
    const char *dir = argv[optind];
    char def[PATH_MAX];
    if (!out) {   /* compressed when the rank files are */
        int gz = 0;
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
            if (!strncmp(de->d_name, "specprof.rank", 13) && strstr(de->d_name, ".json.gz")) gz = 1;
        if (d) closedir(d);
        snprintf(def, sizeof def, "%s/merged.json%s", dir, gz ? ".gz" : "");
        out = def;
    }
    fprintf(stderr, "# specprof merge: dir %s -> %s\n", dir, out);
    ptrace_merge_result r;
    char err[1024];
    if (ptrace_merge_dir(dir, out, stderr, &r, err, sizeof err)) {
        fprintf(stderr, "specprof merge: %s\n", err);
        return 2;
    }
    fprintf(stderr, "specprof merge: wrote %s: %d files (%d truncated, %d skipped), %lld events\n", out, r.files,
            r.truncated, r.skipped, r.events);
    /* a rank file left out (unreadable, another format version, a copy) is not a clean merge */
    if (r.skipped) {
        fprintf(stderr, "specprof merge: %d file%s in %s skipped (the lines \"skip\" above say why): exit 1\n", r.skipped,
                r.skipped == 1 ? "" : "s", dir);
        return 1;
    }
    return 0;
}

/* ---------- launch ---------- */

static volatile sig_atomic_t pending[NSIG];
static pid_t child_pid;

static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    /* Ctrl-C reaches the whole foreground group, CMD included: forward only what was sent
     * to specprof alone (kill(2) sets SI_USER) */
    if ((sig == SIGINT || sig == SIGQUIT) && si && si->si_code != SI_USER) return;
    pending[sig] = 1;
}

/* Every descendant of root that has libspecprof.so mapped gets sig. Returns the count. */
static int signal_descendants(pid_t root, int sig) {
    enum { MAXP = 65536 };
    static pid_t pids[MAXP], ppids[MAXP];
    int n = 0, sent = 0;
    DIR *d = opendir("/proc");
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < MAXP) {
        char *e;
        long p = strtol(de->d_name, &e, 10);
        if (*e || p <= 0) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", p);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t r = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[r] = 0;
        char *rp = strrchr(buf, ')');   /* comm may contain spaces */
        int ppid;
        if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1) continue;
        pids[n] = (pid_t)p; ppids[n] = ppid; n++;
    }
    closedir(d);
    static pid_t queue[MAXP];
    int qh = 0, qt = 0;
    queue[qt++] = root;
    while (qh < qt) {
        pid_t p = queue[qh++];
        char path[64], line[1024];
        snprintf(path, sizeof path, "/proc/%d/maps", (int)p);
        FILE *f = fopen(path, "r");
        int has = 0;
        while (f && fgets(line, sizeof line, f)) if (strstr(line, "libspecprof.so")) { has = 1; break; }
        if (f) fclose(f);
        if (has && kill(p, sig) == 0) sent++;
        for (int i = 0; i < n && qt < MAXP; i++) if (ppids[i] == p) queue[qt++] = pids[i];
    }
    return sent;
}

/* After CMD ended: what is in DIR from this run. A run of many processes writes one note
 * each, mostly the same (every process of a machine without device facts says so): a note
 * is said once with the number of processes, the trace files listed up to REPORT_FILES. */
enum { REPORT_NOTES = 32, REPORT_FILES = 16 };
static void report(const char *dir, struct timespec since) {
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "specprof: %s: cannot read: %s\n", dir, strerror(errno)); return; }
    int complete = 0, part = 0, notes = 0, n_seen = 0;
    static struct { char text[1024], file[256]; int n; } seen[REPORT_NOTES];
    struct dirent *de;
    char path[PATH_MAX + 300];
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (strncmp(n, "specprof.", 9)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, n);
        struct stat st;
        /* this run's files only: a trace of an earlier run into DIR within the same second was
         * listed as this run's (a run that wrote nothing said "1 complete") */
        if (stat(path, &st) || st.st_mtim.tv_sec < since.tv_sec ||
            (st.st_mtim.tv_sec == since.tv_sec && st.st_mtim.tv_nsec < since.tv_nsec)) continue;
        size_t len = strlen(n);
        if ((len > 5 && !strcmp(n + len - 5, ".json")) || (len > 8 && !strcmp(n + len - 8, ".json.gz"))) {
            if (complete + part < REPORT_FILES) fprintf(stderr, "specprof: trace %s\n", path);
            complete++;
        } else if ((len > 10 && !strcmp(n + len - 10, ".json.part")) || (len > 13 && !strcmp(n + len - 13, ".json.gz.part"))) {
            if (complete + part < REPORT_FILES)
                fprintf(stderr, "specprof: trace %s (cut off: the process did not end cleanly; it loads, see specprof check)\n",
                        path);
            part++;
        } else if (len > 5 && !strcmp(n + len - 5, ".note")) {
            notes++;
            FILE *f = fopen(path, "r");
            char line[1024];
            while (f && fgets(line, sizeof line, f)) {
                int i = 0;
                while (i < n_seen && strcmp(seen[i].text, line)) i++;
                if (i < n_seen) { seen[i].n++; continue; }
                if (n_seen == REPORT_NOTES) { fprintf(stderr, "specprof: note from %s: %s", n, line); continue; }
                snprintf(seen[i].text, sizeof seen[i].text, "%s", line);
                snprintf(seen[i].file, sizeof seen[i].file, "%s", n);
                seen[n_seen++].n = 1;
            }
            if (f) fclose(f);
        }
    }
    closedir(d);
    for (int i = 0; i < n_seen; i++) {
        char more[64] = "";
        if (seen[i].n > 1) snprintf(more, sizeof more, " and %d more", seen[i].n - 1);
        fprintf(stderr, "specprof: note from %s%s: %s", seen[i].file, more, seen[i].text);
    }
    if (complete + part > REPORT_FILES)
        fprintf(stderr, "specprof: ... and %d more trace files (ls %s)\n", complete + part - REPORT_FILES, dir);
    if (complete + part == 0)
        fprintf(stderr,
                "specprof: no trace file was written in %s. %s"
                "Possible reasons: the program never created a CUDA context (no GPU, CUDA not initialised, "
                "or it failed before); libspecprof.so was not loaded (CUDA_INJECTION64_PATH overridden by another "
                "tool, or a static CUDA build that ignores injection); the capture window never opened "
                "(--delay longer than the run, or the start signal never sent).\n",
                dir, notes ? "The notes above say why. " : "");
    else
        fprintf(stderr, "specprof: %d complete and %d cut-off trace files in %s; merge with: specprof merge %s\n",
                complete, part, dir, dir);
}

static int exe_dir(char *out, size_t cap) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    snprintf(out, cap, "%s", self);
    return 0;
}

/* --torch-annotate: the spec's syntax (profiler/python/specprof_torch/ranges.py parse_spec
 * says the same, for programs started without specprof). Returns 0, or -1 with err set. */
static int torch_spec_check(const char *spec, char *err, size_t errlen) {
    if (!*spec) { snprintf(err, errlen, "--torch-annotate: empty spec; expected PATTERN=ROLE[,PATTERN=ROLE...]"); return -1; }
    const char *s = spec;
    for (;;) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        const char *eq = memchr(s, '=', n), *hash = NULL;
        int bad = !eq || memchr(eq + 1, '=', n - (size_t)(eq + 1 - s)) != NULL || eq == s;
        for (const char *p = s; !bad && p < eq; p++) {
            if (*p == ' ') bad = 1;
            if (*p == '#') { if (hash) bad = 1; hash = p; }
        }
        if (!bad && hash) {
            long nth = 0;
            bad = hash == s || hash + 1 == eq;
            for (const char *p = hash + 1; !bad && p < eq; p++) {
                if (*p < '0' || *p > '9') bad = 1;
                else if (nth < 1000000) nth = nth * 10 + (*p - '0');
            }
            bad = bad || nth < 1;
        }
        if (!bad) {
            bad = eq + 1 == s + n;
            for (const char *p = eq + 1; !bad && p < s + n; p++) if (!(*p >= 'a' && *p <= 'z') && *p != '_') bad = 1;
        }
        if (bad) {
            snprintf(err, errlen, "--torch-annotate: item \"%.*s\": expected PATTERN[#N]=ROLE: PATTERN a class name "
                     "without spaces, N >= 1, ROLE target, draft or a lower-case phase word "
                     "(e.g. LlamaForCausalLM#1=target,LlamaForCausalLM#2=draft)", (int)n, s);
            return -1;
        }
        if (!end) return 0;
        s = end + 1;
    }
}

/* The directory that holds specprof_torch/ and site/sitecustomize.py: $SPECPROF_PYTHON_DIR,
 * else the first of <dir of specprof>/../profiler/python (bin/specprof in the source tree),
 * <dir>/../../profiler/python (build-asan/bin/specprof) and <dir>/../share/specprof/python. */
static int torch_helper_dir(char *out, char *err, size_t errlen) {
    static const char *const rel[] = {"/../profiler/python", "/../../profiler/python", "/../share/specprof/python"};
    const char *env = getenv("SPECPROF_PYTHON_DIR");
    char here[PATH_MAX], cand[PATH_MAX + 64], probe[PATH_MAX + 128], tried[3 * PATH_MAX] = "";
    int n = env && *env ? 1 : 3;
    if (!(env && *env) && exe_dir(here, sizeof here)) {
        snprintf(err, errlen, "--torch-annotate: cannot find specprof's own directory; set SPECPROF_PYTHON_DIR");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (env && *env) snprintf(cand, sizeof cand, "%s", env);
        else snprintf(cand, sizeof cand, "%s%s", here, rel[i]);
        snprintf(probe, sizeof probe, "%s/site/sitecustomize.py", cand);
        int ok = access(probe, R_OK) == 0;
        snprintf(probe, sizeof probe, "%s/specprof_torch/__init__.py", cand);
        if (ok && access(probe, R_OK) == 0 && realpath(cand, out)) return 0;
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", cand);
    }
    snprintf(err, errlen, "--torch-annotate: %.2048s: no specprof_torch/__init__.py and site/sitecustomize.py there "
             "(the Python helper, profiler/python in the source tree); set SPECPROF_PYTHON_DIR to its directory", tried);
    return -1;
}

/* The file a command name runs: itself when it holds a '/', else the first executable of
 * that name on PATH (as execvp finds it). 0 found, -1 not. */
static int command_path(const char *name, char *out, size_t cap) {
    if (strchr(name, '/')) {
        snprintf(out, cap, "%s", name);
        return access(out, X_OK) ? -1 : 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if ((int)snprintf(out, cap, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", name) < (int)cap &&
            access(out, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    return -1;
}

/* Whether lite mode would see nothing of the program at PATH: a 64-bit ELF that holds CUDA
 * device code (a .nv_fatbin section) but does not load the shared CUDA runtime (no
 * libcudart.so among its DT_NEEDED): nvcc's default -cudart static, or the driver API with its
 * own module. Lite mode interposes libcudart.so only. Scripts, interpreters (python3) and
 * programs that load libcudart.so are 0; so is anything that cannot be read as ELF. */
static int elf_cuda_without_shared_runtime(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
    struct stat st;
    if (fd < 0) return 0;
    if (fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) { close(fd); return 0; }
    size_t size = (size_t)st.st_size;
    const unsigned char *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum) {
        munmap((void *)m, size);
        return 0;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
    const Elf64_Shdr *names = &sh[eh->e_shstrndx];
    int fatbin = 0, cudart = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (names->sh_offset < size && sh[i].sh_name < size - names->sh_offset &&
            !strncmp((const char *)m + names->sh_offset + sh[i].sh_name, ".nv_fatbin",
                     size - names->sh_offset - sh[i].sh_name))
            fatbin = 1;
        /* the dynamic section's DT_NEEDED names, in the string table its sh_link names */
        if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > size ||
            sh[i].sh_size > size - sh[i].sh_offset)
            continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (str->sh_offset > size || str->sh_size > size - str->sh_offset) continue;
        const Elf64_Dyn *d = (const Elf64_Dyn *)(m + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++)
            if (d[k].d_tag == DT_NEEDED && d[k].d_un.d_val < str->sh_size &&
                !strncmp((const char *)m + str->sh_offset + d[k].d_un.d_val, "libcudart.so",
                         str->sh_size - d[k].d_un.d_val < 12 ? str->sh_size - d[k].d_un.d_val : 12))
                cudart = 1;
    }
    found = fatbin && !cudart;
    munmap((void *)m, size);
    return found;
}

static int cmd_run(int argc, char **argv) {
    const char *out = NULL, *phases = NULL, *torch_spec = NULL;
    double delay = 0, duration = 0;
    int start_sig = 0, stop_sig = 0, no_nccl = 0, quiet = 0;
    long flush_ms = 500, buffer_mb = 64;
    /* recording mode (docs/profiler.md); the defaults are the library's */
    /* mode NULL: the default, lite with both probes (lite cannot see a program with a static
     * CUDA runtime: always for those); probes -1: the mode's default */
    const char *mode = NULL, *between = "none", *records = "fit", *shape_ignore = NULL, *crange = "none";
    long window_ms = 50, period_ms = 1000, shape_replays = 3, window_max_ms = 1000, gz_level = 6, probe_nodes = -1, probe_eager = -1;
    int calibrate = 1;
    enum { O_DELAY = 256, O_DURATION, O_SSTART, O_SSTOP, O_PHASES, O_FLUSH, O_BUF, O_NONCCL, O_QUIET, O_MODE,
           O_WINDOW, O_PERIOD, O_REPLAYS, O_WMAX, O_BETWEEN, O_RECORDS, O_GZ, O_NOGZ, O_NOCAL, O_IGNORE, O_TORCH, O_CRANGE, O_PROBE, O_PEAGER };
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'}, {"delay", required_argument, 0, O_DELAY},
        {"duration", required_argument, 0, O_DURATION}, {"signal-start", optional_argument, 0, O_SSTART},
        {"signal-stop", optional_argument, 0, O_SSTOP}, {"phases", required_argument, 0, O_PHASES},
        {"flush-ms", required_argument, 0, O_FLUSH}, {"buffer-mb", required_argument, 0, O_BUF},
        {"no-nccl", no_argument, 0, O_NONCCL}, {"quiet", no_argument, 0, O_QUIET}, {"help", no_argument, 0, 'h'},
        {"mode", required_argument, 0, O_MODE}, {"window-ms", required_argument, 0, O_WINDOW},
        {"period-ms", required_argument, 0, O_PERIOD}, {"shape-replays", required_argument, 0, O_REPLAYS},
        {"window-max-ms", required_argument, 0, O_WMAX}, {"between", required_argument, 0, O_BETWEEN},
        {"records", required_argument, 0, O_RECORDS}, {"gz-level", required_argument, 0, O_GZ},
        {"no-compress", no_argument, 0, O_NOGZ}, {"no-calibrate", no_argument, 0, O_NOCAL},
        {"shape-ignore", required_argument, 0, O_IGNORE}, {"torch-annotate", required_argument, 0, O_TORCH},
        {"capture-range", required_argument, 0, O_CRANGE}, {"probe-nodes", required_argument, 0, O_PROBE},
        {"probe-eager", required_argument, 0, O_PEAGER}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_DELAY: delay = parse_seconds("--delay", optarg); break;
        case O_DURATION: duration = parse_seconds("--duration", optarg); break;
        case O_SSTART:
        case O_SSTOP: {
            const char *opt = c == O_SSTART ? "--signal-start" : "--signal-stop";
            int sig = optarg ? parse_signal(optarg) : c == O_SSTART ? SIGUSR1 : SIGUSR2;
            if (sig < 0) SP_FAIL("%s: value \"%s\": not a signal name or number", opt, optarg);
            if (signal_refused(sig))
                SP_FAIL("%s: value \"%s\": %s (%s): %s; use USR1, USR2, a real-time signal or another free one", opt,
                        optarg, strsignal(sig), sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", signal_refused(sig));
            *(c == O_SSTART ? &start_sig : &stop_sig) = sig;
            break;
        }
        case O_PHASES: {   /* the library's own rule (pnvtx), said here once, not by every process */
            char perr[256];
            pnvtx *pn = pnvtx_create(1, 1, optarg, perr, sizeof perr);
            if (!pn) SP_FAIL("--%s", perr);
            pnvtx_destroy(pn);
            phases = optarg;
            break;
        }
        case O_FLUSH: flush_ms = parse_long("--flush-ms", optarg, 10, 600000); break;
        case O_BUF: buffer_mb = parse_long("--buffer-mb", optarg, 8, 65536); break;
        case O_NONCCL: no_nccl = 1; break;
        case O_QUIET: quiet = 1; break;
        case O_MODE:
            if (strcmp(optarg, "windows") && strcmp(optarg, "always") && strcmp(optarg, "lite"))
                SP_FAIL("--mode: value \"%s\": always, windows or lite", optarg);
            mode = optarg;
            break;
        case O_WINDOW: window_ms = parse_long("--window-ms", optarg, 1, 3600000); break;
        case O_PERIOD: period_ms = parse_long("--period-ms", optarg, 1, 86400000); break;
        case O_REPLAYS: shape_replays = parse_long("--shape-replays", optarg, 0, 1000000); break;
        case O_WMAX: window_max_ms = parse_long("--window-max-ms", optarg, 1, 86400000); break;
        case O_BETWEEN:
            if (strcmp(optarg, "graph") && strcmp(optarg, "none") && strcmp(optarg, "detach"))
                SP_FAIL("--between: value \"%s\": none, detach or graph", optarg);
            between = optarg;
            break;
        case O_RECORDS:
            if (strcmp(optarg, "fit") && strcmp(optarg, "all")) SP_FAIL("--records: value \"%s\": fit or all", optarg);
            records = optarg;
            break;
        case O_GZ: gz_level = parse_long("--gz-level", optarg, 0, 9); break;
        case O_NOGZ: gz_level = 0; break;
        case O_NOCAL: calibrate = 0; break;
        case O_IGNORE: shape_ignore = optarg; break;
        case O_TORCH: torch_spec = optarg; break;
        case O_CRANGE:
            if (strcmp(optarg, "none") && strcmp(optarg, "profiler-api"))
                SP_FAIL("--capture-range: value \"%s\": none or profiler-api", optarg);
            crange = optarg;
            break;
        case O_PROBE: probe_nodes = parse_long("--probe-nodes", optarg, 0, 1000); break;
        case O_PEAGER: probe_eager = parse_long("--probe-eager", optarg, 0, 1000); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!out) { usage(stderr); SP_FAIL("-o DIR is required"); }
    if (optind >= argc) { usage(stderr); SP_FAIL("no command given after --"); }
    /* the default mode: lite, which interposes the shared CUDA runtime; a program that holds
     * CUDA code but does not load libcudart.so would record nothing in it */
    char cmd_file[PATH_MAX];
    const char *static_note = NULL;
    if (!mode) {
        mode = "lite";
        if (command_path(argv[optind], cmd_file, sizeof cmd_file) == 0 && elf_cuda_without_shared_runtime(cmd_file)) {
            if (probe_nodes > 0 || probe_eager > 0 || !strcmp(crange, "profiler-api"))
                SP_FAIL("%s: holds CUDA code but does not load libcudart.so (its CUDA runtime is linked in statically): "
                        "lite mode, which --probe-nodes, --probe-eager and --capture-range need, cannot see it; "
                        "give --mode always, or link the program with -cudart shared", cmd_file);
            mode = "always";
            static_note = cmd_file;
        }
    }
    int lite = !strcmp(mode, "lite");
    if (probe_nodes < 0) probe_nodes = lite ? 3 : 0;
    if (probe_eager < 0) probe_eager = lite ? 3 : 0;
    /* options that need lite mode: refused before anything is printed or loaded */
    if (!lite && !strcmp(crange, "profiler-api"))
        SP_FAIL("--capture-range profiler-api: lite mode only (--mode lite); --delay, --duration and the signals "
                "bound the other modes' capture");
    if (!lite && probe_nodes)
        SP_FAIL("--probe-nodes %ld: lite mode only (--mode lite); the other modes record every node with CUPTI", probe_nodes);
    if (!lite && probe_eager)
        SP_FAIL("--probe-eager %ld: lite mode only (--mode lite); the other modes record every kernel with CUPTI", probe_eager);
    if (start_sig && delay > 0) SP_FAIL("--delay and --signal-start: choose one way to start");
    if (start_sig && start_sig == stop_sig) SP_FAIL("--signal-start and --signal-stop: value %d: must differ", start_sig);
    if (period_ms < window_ms) SP_FAIL("--period-ms: value %ld: must be at least --window-ms (%ld)", period_ms, window_ms);
    char **cmd = argv + optind;

    char err[PATH_MAX + 512], lib[PATH_MAX + 32], dir[PATH_MAX], here[PATH_MAX], pydir[PATH_MAX];
    if (torch_spec && (torch_spec_check(torch_spec, err, sizeof err) || torch_helper_dir(pydir, err, sizeof err)))
        SP_FAIL("%s", err);
    if (ptrace_out_mkdirs(out, err, sizeof err)) SP_FAIL("-o: %s", err);
    if (!realpath(out, dir)) SP_FAIL("%s: %s", out, strerror(errno));
    /* every process would say "cannot write the trace" and the run record nothing */
    if (access(dir, W_OK | X_OK)) SP_FAIL("-o %s: cannot write there: %s", out, strerror(errno));
    /* each process writes DIR/specprof.rank<R>.pid<P>[-K].json.gz.part (ptrace_out.h): a DIR
     * too long for those names found here, not by every process */
    size_t dir_max = PTRACE_OUT_PATH_BUF - 1 - strlen(PTRACE_OUT_NAME_WIDEST);
    if (strlen(dir) > dir_max)
        SP_FAIL("-o %s: its absolute path is %zu bytes, too long for the trace files' names under it (at most %zu)",
                out, strlen(dir), dir_max);
    const char *env_lib = getenv("SPECPROF_LIB");
    if (env_lib && *env_lib) snprintf(lib, sizeof lib, "%s", env_lib);
    else if (exe_dir(here, sizeof here) == 0) snprintf(lib, sizeof lib, "%s/libspecprof.so", here);
    else lib[0] = 0;
    /* load it once here (before SPECPROF_* is set, so its constructor does nothing) to
     * learn now, not silently in every process, whether it and libcupti can be loaded */
    int inject = 1;
    if (!lib[0] || access(lib, R_OK)) {
        fprintf(stderr, "specprof: %s not found (it is built only where nvcc and CUPTI are: make bin/libspecprof.so); "
                        "running the program without profiling\n", lib[0] ? lib : "libspecprof.so");
        inject = 0;
    } else {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "specprof: cannot load %s: %s\nspecprof: (is CUPTI installed? it ships with the CUDA toolkit "
                            "as libcupti.so; set LD_LIBRARY_PATH to its directory) running the program without profiling\n",
                    lib, dlerror());
            inject = 0;
        } else dlclose(h);
    }
    const char *other = getenv("CUDA_INJECTION64_PATH");
    if (inject && other && *other && strcmp(other, lib))
        fprintf(stderr, "specprof: CUDA_INJECTION64_PATH was %s (another CUDA tool); specprof replaces it\n", other);

    fprintf(stderr, "# specprof: output %s\n# specprof: library %s%s\n", dir, lib[0] ? lib : "(none)", inject ? "" : " (not used)");
    fprintf(stderr, "# specprof: start %s", start_sig ? "on signal" : delay > 0 ? "after delay" : "at the first CUDA context");
    if (start_sig) fprintf(stderr, " %d (%s)", start_sig, strsignal(start_sig));
    if (delay > 0) fprintf(stderr, " %.3f s", delay);
    fprintf(stderr, "; stop");
    if (duration > 0) fprintf(stderr, " after %.3f s", duration);
    if (stop_sig) fprintf(stderr, "%s on signal %d (%s)", duration > 0 ? " or" : "", stop_sig, strsignal(stop_sig));
    if (duration <= 0 && !stop_sig) fprintf(stderr, " at exit");
    fprintf(stderr, "\n# specprof: phases %s, flush %ld ms, buffer %ld MB, nccl sizes %s\n",
            phases ? phases : "draft,verify,accept,extend,decode,sample", flush_ms, buffer_mb, no_nccl ? "off" : "on");
    if (!strcmp(mode, "windows"))
        fprintf(stderr, "# specprof: mode windows: node-level records %ld ms every %ld ms and for the first %ld replays "
                        "of each graph and phase shape (windows up to %ld ms), %s between them; API records %s; %s\n",
                window_ms, period_ms, shape_replays, window_max_ms,
                !strcmp(between, "graph") ? "graph-level records" : !strcmp(between, "none") ? "nothing (CUPTI attached)"
                : "CUPTI detached",
                records, gz_level ? "gzip" : "plain JSON");
    else if (lite)
        fprintf(stderr, "# specprof: mode lite: no CUPTI in the program; graph launches, copies and syncs of the shared CUDA "
                        "runtime interposed (LD_PRELOAD), graph launches timed by CUDA event pairs, kernel launches counted; "
                        "%s\n", gz_level ? "gzip" : "plain JSON");
    else
        fprintf(stderr, "# specprof: mode always: every record all the time; API records %s; %s\n", records,
                gz_level ? "gzip" : "plain JSON");
    if (static_note)
        fprintf(stderr, "specprof: note: %s holds CUDA code but does not load libcudart.so (a static CUDA runtime): the "
                        "default, lite mode, would see nothing of it; recording in --mode always (CUPTI) instead\n",
                static_note);
    if (probe_nodes)
        fprintf(stderr, "# specprof: node probe: each graph executable's first %ld replays in the capture run instrumented "
                        "(an event after each node)\n", probe_nodes);
    if (probe_eager)
        fprintf(stderr, "# specprof: eager probe: the first %ld instances of each eager phase shape run held, an event "
                        "pair around each kernel launch\n", probe_eager);
    if (!strcmp(crange, "profiler-api"))
        fprintf(stderr, "# specprof: capture range profiler-api: recorded only between the program's cudaProfilerStart "
                        "and cudaProfilerStop (torch.cuda.profiler.start/stop)\n");
    if (lite && no_nccl)
        fprintf(stderr, "# specprof: --no-nccl: ignored in lite mode (the interposer is the preloaded library itself)\n");
    if (torch_spec) fprintf(stderr, "# specprof: torch-annotate %s (Python helper %s)\n", torch_spec, pydir);
    fprintf(stderr, "# specprof: command");
    for (char **a = cmd; *a; a++) fprintf(stderr, " %s", *a);
    fprintf(stderr, "\n");

    if (inject && !lite && calibrate) {
        /* the calibration's clean arm: the empty kernel's launch in a process without CUPTI
         * (pclean.h); the library writes it beside its in-process calibration */
        char why[128], v[32];
        double swept = 0, us = pclean_launch_us(30, &swept, why, sizeof why);
        if (us > 0) {
            snprintf(v, sizeof v, "%.3f", us);
            setenv("SPECPROF_CLEAN_LAUNCH_US", v, 1);
            if (swept > 0) {
                snprintf(v, sizeof v, "%.3f", swept);
                setenv("SPECPROF_CLEAN_SWEPT_US", v, 1);
            } else {
                unsetenv("SPECPROF_CLEAN_SWEPT_US");
            }
            fprintf(stderr, "# specprof: an empty kernel launch without CUPTI: %.3f us, %.3f us with host work between "
                            "launches (the launch calibration's clean arm)\n", us, swept);
        } else {
            unsetenv("SPECPROF_CLEAN_LAUNCH_US");
            unsetenv("SPECPROF_CLEAN_SWEPT_US");
            fprintf(stderr, "specprof: note: the launch calibration's clean arm did not run (%s): the trace holds the "
                            "in-process calibration alone\n", why);
        }
    }
    if (inject) {
        char v[64];
        setenv("SPECPROF_DIR", dir, 1);
        /* lite: CUDA must not load the library as its injection (CUPTI would come with it) */
        if (lite) unsetenv("CUDA_INJECTION64_PATH");
        else setenv("CUDA_INJECTION64_PATH", lib, 1);
        /* SPECPROF_NVTX_LIB (for experiments): another NVTX injection library, e.g. libcupti.so */
        const char *nvlib = getenv("SPECPROF_NVTX_LIB");
        setenv("NVTX_INJECTION64_PATH", nvlib && *nvlib ? nvlib : lib, 1);
        if (!no_nccl || lite) {
            const char *pre = getenv("LD_PRELOAD");
            char *np = malloc(strlen(lib) + (pre ? strlen(pre) : 0) + 2);
            if (!np) SP_FAIL("out of memory");
            sprintf(np, "%s%s%s", lib, pre && *pre ? ":" : "", pre ? pre : "");
            setenv("LD_PRELOAD", np, 1);
            free(np);
        }
        snprintf(v, sizeof v, "%.6f", delay); setenv("SPECPROF_DELAY_S", v, 1);
        snprintf(v, sizeof v, "%.6f", duration); setenv("SPECPROF_DURATION_S", v, 1);
        snprintf(v, sizeof v, "%d", start_sig); setenv("SPECPROF_START_SIGNAL", v, 1);
        snprintf(v, sizeof v, "%d", stop_sig); setenv("SPECPROF_STOP_SIGNAL", v, 1);
        snprintf(v, sizeof v, "%ld", flush_ms); setenv("SPECPROF_FLUSH_MS", v, 1);
        snprintf(v, sizeof v, "%ld", buffer_mb); setenv("SPECPROF_BUFFER_MB", v, 1);
        if (phases) setenv("SPECPROF_PHASES", phases, 1);
        if (quiet) setenv("SPECPROF_QUIET", "1", 1);
        setenv("SPECPROF_MODE", mode, 1);
        snprintf(v, sizeof v, "%ld", probe_nodes); setenv("SPECPROF_PROBE_REPLAYS", v, 1);
        snprintf(v, sizeof v, "%ld", probe_eager); setenv("SPECPROF_PROBE_EAGER", v, 1);
        if (!strcmp(crange, "none")) unsetenv("SPECPROF_CAPTURE_RANGE");
        else setenv("SPECPROF_CAPTURE_RANGE", crange, 1);
        setenv("SPECPROF_BETWEEN", between, 1);
        setenv("SPECPROF_RECORDS", records, 1);
        snprintf(v, sizeof v, "%ld", window_ms); setenv("SPECPROF_WINDOW_MS", v, 1);
        snprintf(v, sizeof v, "%ld", period_ms); setenv("SPECPROF_PERIOD_MS", v, 1);
        snprintf(v, sizeof v, "%ld", shape_replays); setenv("SPECPROF_SHAPE_REPLAYS", v, 1);
        snprintf(v, sizeof v, "%ld", window_max_ms); setenv("SPECPROF_WINDOW_MAX_MS", v, 1);
        snprintf(v, sizeof v, "%ld", gz_level); setenv("SPECPROF_GZ_LEVEL", v, 1);
        setenv("SPECPROF_CALIBRATE", calibrate ? "1" : "0", 1);
        if (shape_ignore) setenv("SPECPROF_SHAPE_IGNORE", shape_ignore, 1);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        snprintf(v, sizeof v, "%lld", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
        setenv("SPECPROF_LAUNCH_MONO_MS", v, 1);
    }
    if (torch_spec) {   /* profiler/python/site/sitecustomize.py reads these at Python's start */
        const char *pp = getenv("PYTHONPATH");
        char *np = malloc(2 * strlen(pydir) + (pp ? strlen(pp) : 0) + 16);
        if (!np) SP_FAIL("out of memory");
        sprintf(np, "%s/site:%s%s%s", pydir, pydir, pp && *pp ? ":" : "", pp ? pp : "");
        setenv("PYTHONPATH", np, 1);
        free(np);
        setenv("SPECPROF_TORCH_ANNOTATE", torch_spec, 1);
        if (quiet) setenv("SPECPROF_QUIET", "1", 1);
    }
    /* the coarse clock is the one file times come from: a file written after this has an
     * mtime at or after it */
    struct timespec launched;
    clock_gettime(CLOCK_REALTIME_COARSE, &launched);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    int fwd[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, start_sig, stop_sig };
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) if (fwd[i] > 0) sigaction(fwd[i], &sa, NULL);
    /* the child's errno comes back through a close-on-exec pipe when exec fails: then CMD never
     * ran, and the list of reasons why no trace was written would mislead */
    int ep[2];
    if (pipe2(ep, O_CLOEXEC)) SP_FAIL("pipe: %s", strerror(errno));
    child_pid = fork();
    if (child_pid < 0) SP_FAIL("fork: %s", strerror(errno));
    if (child_pid == 0) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) if (fwd[i] > 0) sigaction(fwd[i], &dfl, NULL);
        close(ep[0]);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(ep[1], &e, sizeof e);
        (void)w;
        _exit(e == ENOENT ? 127 : 126);
    }
    close(ep[1]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(ep[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
    close(ep[0]);
    if (got != (ssize_t)sizeof exec_errno) exec_errno = 0;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(child_pid, &status, 0);
        if (w == child_pid) break;
        if (w < 0 && errno != EINTR) { fprintf(stderr, "specprof: waitpid: %s\n", strerror(errno)); status = 127 << 8; break; }
        for (int s = 1; s < NSIG; s++) {
            if (!pending[s]) continue;
            pending[s] = 0;
            if (s == start_sig || s == stop_sig) {
                int n = signal_descendants(child_pid, s);
                fprintf(stderr, "specprof: sent %s to %d profiled process%s\n", strsignal(s), n, n == 1 ? "" : "es");
            } else kill(child_pid, s);
        }
    }
    if (exec_errno) {
        fprintf(stderr, "specprof: cannot run %s: %s%s\n", cmd[0], strerror(exec_errno),
                exec_errno == ENOENT && !strchr(cmd[0], '/') ? " (not found in PATH)" : "");
        return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
    }
    if (inject) report(dir, launched);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "specprof: the command was killed by signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "merge")) return cmd_merge(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "check")) return cmd_check(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) { usage(stdout); return 0; }
    return cmd_run(argc, argv);
}
