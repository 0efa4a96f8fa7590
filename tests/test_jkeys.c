/* test_jkeys: the key given twice (models/jkeys): each member against the ones before it, and
 * the two readers that refuse it, a workload model (wmodel) and a link file (allreduce),
 * naming the file and the key. */
#include "check.h"
#include "allreduce.h"
#include "jkeys.h"
#include "wmodel.h"

#include <stdlib.h>
#include <string.h>

static void jkeys_dup_finds_the_second_of_two_keys(void)
{
    cJSON *o = cJSON_Parse("{\"a\": 1, \"b\": 2, \"a\": 3, \"ab\": 4, \"b\": {\"a\": 5}}");
    static const int want[] = {0, 0, 1, 0, 1};
    int i = 0;
    const cJSON *m;
    CHECK(o != NULL, "parse");
    cJSON_ArrayForEach(m, o) {
        CHECK(i < 5 && jkeys_dup(o, m) == want[i], "member %d (%s): %d, want %d", i, m->string, jkeys_dup(o, m),
              i < 5 ? want[i] : -1);
        i++;
    }
    const cJSON *inner = cJSON_GetArrayItem(o, 4);
    CHECK(inner && !jkeys_dup(inner, inner->child), "a key of a nested object is its own");
    cJSON_Delete(o);
}

static void readers_refuse_a_key_given_twice(void)
{
    char *file = NULL, *text = NULL, err[512] = "";
    FILE *f = fopen("models/example-llama8b.json", "rb");
    long n = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (file = malloc((size_t)n + 1)) && fread(file, 1, (size_t)n, f) == (size_t)n) {
        file[n] = 0;
        /* the top-level "ranks" again, before the one the file has */
        const char *brace = strchr(file, '{');
        if (brace && (text = malloc((size_t)n + 32)))
            sprintf(text, "{\"ranks\": 64, %s", brace + 1);
    }
    if (f)
        fclose(f);
    free(file);
    static wm_model m;
    CHECK(text && wm_parse(&m, text, "twice.json", err, sizeof err) == -1 && strstr(err, "twice.json") &&
          strstr(err, "field ranks") && strstr(err, "given twice"), "model: '%s'", err);
    free(text);
    ar_link l;
    err[0] = 0;
    CHECK(ar_link_from_text("{\"specsim_link\": 1, \"latency_us\": 5, \"bw_gbps\": 40, \"floor_us\": 10, "
                            "\"latency_us\": 50}", "twice-link.json", &l, err, sizeof err) == -1 &&
          strstr(err, "twice-link.json: field latency_us: given twice"), "link: '%s'", err);
}

int main(void)
{
    RUN(jkeys_dup_finds_the_second_of_two_keys);
    RUN(readers_refuse_a_key_given_twice);
    return check_done();
}
