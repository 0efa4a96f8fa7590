/* sglog: reads SGLang server logs, the "Decode batch" lines that the scheduler writes every
 * decode_log_interval decode steps (managers/scheduler_metrics_mixin.py,
 * report_decode_stats): running requests, KV tokens, accept length, CUDA graph, generation
 * throughput. Every variant seen in releases is read: `Decode batch,` / `Decode batch.` /
 * `Decode batch [iter],`, `#token:` or `#full token:` (HiSparse's `#gpu token:` gives no KV
 * count), with or without accept rate, `cuda graph:` or `cpu graph:` / `npu graph:` or none
 * (before mid-2025), fields added before or after them (`#cached-token:`, `fwd occupancy:`),
 * prefixes such as `(SGLangEngine pid=..)` and `[time DP6 TP6 EP6]`; other lines are
 * counted and ignored. Why: the log is what every production server already has; it gives
 * acceptance per batch size and a check of a model against production, without a GPU.
 * Workload: logs of 10^3..10^7 lines, plain or gzip (streamed). */
#ifndef SGLOG_H
#define SGLOG_H
#include <stddef.h>
#include <stdint.h>

/* One logged interval (one "Decode batch" line). Absent fields are < 0. */
typedef struct {
    int     file;                 /* index of the file in the read order */
    size_t  line;                 /* 1-based line in that file */
    int     running_req;          /* #running-req: the batch at the end of the interval */
    double  kv_tokens;            /* #token (or #full token): KV slots in use */
    double  token_usage;          /* fraction of the KV pool */
    double  accept_len;           /* accept len: tokens per verify, bonus token included */
    double  accept_rate;
    int     cuda_graph;           /* cuda (cpu, npu) graph: 1 True, 0 False, -1 absent */
    double  gen_tok_s;            /* gen throughput (token/s) over the interval */
    int     queue_req;            /* #queue-req */
    int     dp, pp, tp;           /* from the [... DPn PPn TPn] prefix; -1 absent */
    int64_t iter;                 /* Decode batch [iter]; -1 absent */
} sglog_interval;

/* Everything read from one or more logs. Caller-owned: sglog_init / sglog_free. */
typedef struct {
    sglog_interval *iv;
    size_t n, cap;
    size_t lines, decode_lines, other_lines;
    size_t bad_lines;             /* "Decode batch" lines whose fields do not parse, or cut */
    size_t cut_lines;             /* lines over 1 MiB (sglog.c), cut and read as other lines */
    size_t nul_bytes;             /* NUL bytes skipped before lines (a log truncated in place) */
    /* Set by the caller before sglog_read: a gzip log whose stream ends without its trailer (a
     * .log.gz copied while gzip was writing it, or cut short) is read as the plain log cut
     * where its text ends, up to its last whole line (the line cut short is left out: where a
     * plain log's last line lacks only its newline, this one lost its end), and gz_cut says
     * so. 0: such a file is refused (pgz_read_to_cut), for a caller that cannot warn. */
    int    read_to_cut;
    size_t gz_cut_files;          /* such files read so far; the last one's numbers: */
    struct {
        int    file;              /* its index (fi) */
        size_t lines;             /* its whole lines, read */
        unsigned long long text_bytes;    /* its text up to the end of its last whole line */
        unsigned long long file_bytes;    /* its compressed bytes: where the file ends */
        unsigned long long dropped_bytes; /* the line cut short at the end, left out */
        int    dropped_decode;    /* that line was a Decode batch line */
    } gz_cut;
    size_t rank_copies;           /* intervals left out by sglog_drop_rank_copies */
    size_t first_bad_line;
    char   first_bad[400];
    /* the `server_args=ServerArgs(...)` line the server logs at start-up (entrypoints/
     * engine.py): the first line whose message starts with it (as a Decode batch line's does:
     * not a prompt that quotes it), NUL-terminated, freed by sglog_free; NULL when none */
    char  *server_args;
    size_t server_args_len, server_args_lines;
    char   server_args_at[300];   /* "FILE: line N", for messages */
    /* the variants met (a count of lines each) */
    size_t v_comma, v_period, v_iter, v_full_token, v_no_accept_rate, v_no_accept,
           v_engine_prefix, v_rank_prefix;
} sglog;

void sglog_init(sglog *g);
void sglog_free(sglog *g);

/* Parses one line. 1: a Decode batch line (its message, after SGLang's "[time ..] " prefix or
 * at the line's start, is "Decode batch"), *iv filled (file/line left to the caller); 0: not
 * one (also a line that only quotes one: a logged prompt); -1: a Decode batch line whose
 * fields do not parse (why in err). */
int  sglog_parse_line(const char *line, size_t len, sglog_interval *iv, char *err, size_t errlen);

/* Reads a whole log (plain or gzip) and appends its intervals with file index fi. Returns
 * 0, or -1 with err: unreadable (a gzip stream cut short too, unless g->read_to_cut), or a
 * file with no Decode batch line at all (naming the file, the lines read and what a Decode
 * batch line looks like). */
int  sglog_read(sglog *g, const char *path, int fi, char *err, size_t errlen);

/* Leaves out the copies of one batch that several ranks log, once every file is read. SGLang
 * logs a batch from its DP rank's attention-TP rank 0 (is_stats_logging_rank), but every TP rank
 * logs it too where log_decode_stats was gated on current_scheduler_metrics_enabled() (late-2025
 * releases, with --enable-metrics-for-all-schedulers), and every PP stage processes each batch
 * result (PP > 1). Per DP rank (DPn, or none) the intervals of its lowest (PPn, TPn) are kept;
 * intervals without PPn and TPn (a TP 1 server) are always kept. Returns how many were left out
 * (added to g->rank_copies). */
size_t sglog_drop_rank_copies(sglog *g);
#endif
