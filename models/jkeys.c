/* jkeys.c: the duplicate-key check of jkeys.h, once for every reader of a JSON object. */
#include "jkeys.h"

#include <string.h>

int jkeys_dup(const cJSON *obj, const cJSON *member)
{
    for (const cJSON *p = obj->child; p && p != member; p = p->next)
        if (p->string && member->string && strcmp(p->string, member->string) == 0)
            return 1;
    return 0;
}
