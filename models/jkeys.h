/* jkeys: the key given twice in a JSON object. cJSON keeps both members and its lookups return
 * the first, so a second "bw_gbps" or "base_us" in a hand-edited file would be ignored in
 * silence; the readers of user files (models/wmodel.c's model, models/allreduce.c's link file)
 * refuse it, naming the key. Workload: objects of a few to ~60 members, checked once a load. */
#ifndef JKEYS_H
#define JKEYS_H
#include <cjson/cJSON.h>

/* 1 when a member of obj before member (one of obj's) has member's key, else 0. */
int jkeys_dup(const cJSON *obj, const cJSON *member);
#endif
