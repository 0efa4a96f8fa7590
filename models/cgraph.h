/* cgraph: the CUDA-graph batch-size list of a server and the choice a batch makes: the
 * smallest captured size >= bs (padded rows cost like real ones), eager above the max.
 * Default: SGLang's speculative list (1..8, 10..32/2, 40..64/4, 72..256/8, 272../16). */
#ifndef CGRAPH_H
#define CGRAPH_H
#include <stddef.h>

#define CG_MAX_SIZES 512
typedef struct {
    int n;
    int bs[CG_MAX_SIZES];   /* ascending, unique */
} cg_list;

/* SGLang's list capped at max_bs; returns how many sizes that list holds (above CG_MAX_SIZES,
 * max_bs over 7632, l keeps the first CG_MAX_SIZES and cg_parse refuses it). */
int  cg_default(cg_list *l, int max_bs);
/* "1,2,4,8,16" or "sglang:160". Returns 0 or -1 with err naming the value. */
int  cg_parse(cg_list *l, const char *spec, char *err, size_t errlen);
int  cg_bucket(const cg_list *l, int bs);                 /* padded size, or 0: eager */
/* Also accepted by cg_parse (models/cgraph.c, docs/cgraph.md): "sglang" (= sglang:512) and
 * "none" (no graphs: n = 0, every batch eager); lists are sorted and deduplicated. */
#endif
