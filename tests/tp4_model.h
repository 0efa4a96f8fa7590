/* tp4_model.h: a small 4-rank model with all-reduces in every forward phase, independent of
 * the shipped example (named "cli-tp4": test_cli's messages name it), for the tests that run
 * bin/specsim on a TP model (test_cli, test_props). */
#ifndef TP4_MODEL_H
#define TP4_MODEL_H
static const char *tp4_model_json =
    "{\"specsim_model\": 1, \"name\": \"cli-tp4\", \"source\": \"test_cli\", \"ranks\": 4,\n"
    " \"launch\": {\"graph_launch_us\": 7, \"eager_launch_us\": 4},\n"
    " \"phases\": {\n"
    "  \"draft\": {\"host_gap_us\": 5, \"host_gap_sd_us\": 1, \"groups\": [{\"name\": \"d\", \"count\": 10,"
    " \"base_us\": 40, \"per_token_us\": 0.1, \"knee_tokens\": 0, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0.1, \"sd_frac\": 0.03}], \"collectives\": [{\"op\": \"allreduce\","
    " \"count\": 2, \"bytes_per_token\": 8192}]},\n"
    "  \"verify\": {\"host_gap_us\": 20, \"host_gap_sd_us\": 3, \"groups\": [{\"name\": \"v\", \"count\": 200,"
    " \"base_us\": 900, \"per_token_us\": 1.0, \"knee_tokens\": 32, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0.5, \"sd_frac\": 0.02}], \"collectives\": [{\"op\": \"allreduce\","
    " \"count\": 64, \"bytes_per_token\": 8192}]},\n"
    "  \"accept\": {\"host_gap_us\": 8, \"host_gap_sd_us\": 1, \"groups\": [{\"name\": \"a\", \"count\": 5,"
    " \"base_us\": 15, \"per_token_us\": 0.01, \"knee_tokens\": 0, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0, \"sd_frac\": 0.05}], \"collectives\": []},\n"
    "  \"extend\": {\"host_gap_us\": 8, \"host_gap_sd_us\": 1, \"groups\": [{\"name\": \"e\", \"count\": 10,"
    " \"base_us\": 50, \"per_token_us\": 0.1, \"knee_tokens\": 0, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0.1, \"sd_frac\": 0.03}], \"collectives\": [{\"op\": \"allreduce\","
    " \"count\": 2, \"bytes_per_token\": 8192}]}\n"
    " }}\n";
#endif
