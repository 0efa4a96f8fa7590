/* pjson.h: a small JSON parser (libc only) for reading specprof traces line by line.
 * Why: the trace reader lives in libspecsim.a and in libspecprof.so, which must not need
 * cJSON; traces are one event object per line, so values are small and short-lived.
 * Workload: ~10^5..10^7 lines of < 1 KB each; all values of one file go into one arena
 * that the caller frees at once (no per-value free). */
#ifndef PJSON_H
#define PJSON_H
#include <stddef.h>
#include <stdint.h>

typedef enum { PJSON_NULL, PJSON_BOOL, PJSON_NUM, PJSON_STR, PJSON_ARR, PJSON_OBJ } pjson_type;

typedef struct pjson pjson;
typedef struct pjson_member { const char *key; pjson *val; } pjson_member;

struct pjson {
    pjson_type type;
    int is_int;          /* NUM written without fraction/exponent and fits int64 */
    int64_t i;           /* NUM as integer (exact when is_int), BOOL as 0/1 */
    double num;          /* NUM as double */
    int64_t milli;       /* NUM x 1000, rounded (a count of us as ns, of ms as us): a plain
                            decimal by pjson_dec_milli, exactly; an exponent form from num */
    int milli_exact;     /* milli is exact: an integer, or at most 3 decimals, no exponent */
    const char *str;     /* STR: NUL-terminated UTF-8 (escapes decoded) */
    size_t len;          /* STR: bytes; ARR/OBJ: element count */
    pjson **items;       /* ARR */
    pjson_member *members; /* OBJ, in file order */
};

/* Arena that owns every value parsed into it. Created by pjson_arena_create, freed
 * (with all values) by pjson_arena_destroy, which accepts NULL. */
typedef struct pjson_arena pjson_arena;
pjson_arena *pjson_arena_create(void);
void pjson_arena_destroy(pjson_arena *a);
/* Forgets every value but keeps one block for reuse (per-line parsing). */
void pjson_arena_reset(pjson_arena *a);
void *pjson_arena_alloc(pjson_arena *a, size_t bytes);
char *pjson_arena_strdup(pjson_arena *a, const char *s);
size_t pjson_arena_bytes(const pjson_arena *a);

/* Parses exactly one JSON value from text[0..len) (whitespace around it allowed; a single
 * trailing ',' is allowed when allow_trailing_comma). Returns 0 and *out, or -1 with
 * err filled ("offset N: why"). Nesting deeper than 64 is refused. */
int pjson_parse(pjson_arena *a, const char *text, size_t len, int allow_trailing_comma,
                pjson **out, char *err, size_t errlen);

/* The plain decimal at the start of text[0..len) ('-'? digits ('.' digits*)?, no exponent: how
 * Kineto, Python and most writers print a time in us) times 1000 (us -> ns), rounded from its
 * digits to the nearest integer, halves away from zero, exact whatever their count (a double
 * holds 16 digits; an absolute time in us with 4+ decimals has 20+). The one rounding of such a
 * number, for the parse (pjson_number: milli) and for readers that take a time from an event's
 * text without a parse (pkineto.c), so both read the same ns. 1 with *milli and *used (the
 * bytes read: the caller judges what follows them); 0 when text holds no such decimal; -1 when
 * its value is past int64. */
int pjson_dec_milli(const char *text, size_t len, int64_t *milli, size_t *used);

/* Writes v as compact JSON into buf; returns the length or -1 when cap is too small.
 * Integers stay exact; other numbers use %.17g. */
int pjson_write(const pjson *v, char *buf, size_t cap);

/* Lookups; NULL/default when missing or of another type. */
const pjson *pjson_get(const pjson *obj, const char *key);
int64_t pjson_get_int(const pjson *obj, const char *key, int64_t dflt);
double pjson_get_num(const pjson *obj, const char *key, double dflt);
const char *pjson_get_str(const pjson *obj, const char *key, const char *dflt);
int pjson_get_bool(const pjson *obj, const char *key, int dflt);
const pjson *pjson_at(const pjson *arr, size_t i);

#endif
