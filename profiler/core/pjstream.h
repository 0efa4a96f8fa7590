/* pjstream.h: splits a JSON document read from a byte source (psrc.h) into its top-level
 * members and, for one named array member, into that array's elements, each handed to a
 * callback as its own text (parse it with pjson). Why: a Kineto trace is one object
 * {"traceEvents": [...10^6..10^7 events...], "deviceProperties": [...], ...} of up to
 * gigabytes; only one event at a time needs to be in memory. Memory: one read chunk plus
 * the largest single value. Throughput: about 1 GB/s of scanning on one core (make bench). */
#ifndef PJSTREAM_H
#define PJSTREAM_H
#include <stddef.h>
#include "psrc.h"

typedef struct {
    /* A top-level member other than the split array: its key and its value's text
     * (valid during the call). Return non-zero to stop. NULL: members are skipped. */
    int (*member)(void *user, const char *key, const char *val, size_t len);
    /* One element of the split array, or of the document itself when it is an array. */
    int (*element)(void *user, const char *text, size_t len);
    void *user;
} pjstream_cb;

typedef struct {
    int    doc_array;        /* the document is an array: its elements were handed out */
    int    found_array;      /* the named array member was seen */
    int    complete;         /* the document ended with its closing bracket */
    int    stopped;          /* a callback returned non-zero */
    size_t elements;
    size_t max_value_bytes;  /* the largest element or member value handed out */
    unsigned long long bytes;/* bytes of JSON read (after decompression) */
    unsigned long long cut_bytes; /* a cut document: the bytes after its last whole value (a
                                     value cut short, not handed out); 0 when complete */
} pjstream_info;

/* Reads src to its end. array_key names the member to split ("traceEvents"). A value longer
 * than max_value_bytes is an error (a sign of a wrong file). Returns 0 (also for a document
 * cut off before its end: info->complete is 0), or -1 with err naming the source, the byte
 * offset and what was expected. */
int pjstream_run(psrc *src, const char *array_key, const pjstream_cb *cb,
                 size_t max_value_bytes, pjstream_info *info, char *err, size_t errlen);
#endif
