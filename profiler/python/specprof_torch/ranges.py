"""ranges.py: the NVTX range names specprof_torch emits, and the --torch-annotate spec parser.

Pure Python (no torch), so that `make test` checks them on any machine. The names follow
traces/FORMAT.md "Phases": a phase word, then key=value words that `specsim fit` reads
(models/fit.c fr_parse_range): tokens= (tokens in the forward), bs= and rows= (batch rows;
eager, so no padding: equal), ctx= (KV tokens already in the cache, summed over the rows),
graph=0 (eager). Workload assumed: Hugging Face-style decoder forwards called with
input_ids [rows, q] or inputs_embeds [rows, q, hidden] and a KV cache.
"""

# The roles annotate() knows. Any other lower-case word is emitted as the phase as it is.
#   target: the verifying model: prefill (empty cache), decode (1 token per row), verify
#   draft:  the assistant: draft_prefill (empty cache), else draft
ROLE_TARGET = "target"
ROLE_DRAFT = "draft"

# Range words for forwards the fit must not take for decode-loop phases: the prompt's
# forward. Not phase words (traces/FORMAT.md), so `specsim fit` ignores their kernels.
PREFILL = "prefill"
DRAFT_PREFILL = "draft_prefill"


def phase_for(role, q_tokens_per_row, past_tokens):
    """The range's first word for a forward of `role` over q tokens per row with
    past_tokens already cached per row."""
    if role == ROLE_TARGET:
        if past_tokens == 0:
            return PREFILL
        return "decode" if q_tokens_per_row == 1 else "verify"
    if role == ROLE_DRAFT:
        return DRAFT_PREFILL if past_tokens == 0 else "draft"
    return role


def range_name(phase, tokens, rows, ctx, graph=0):
    """'verify tokens=5 bs=1 rows=1 ctx=517 graph=0': tokens = rows * tokens per row,
    ctx = rows * cached tokens per row (the KV context the forward attends to besides
    its own tokens)."""
    return "%s tokens=%d bs=%d rows=%d ctx=%d graph=%d" % (phase, tokens, rows, rows, ctx, graph)


def forward_range(role, rows, q_tokens_per_row, past_tokens):
    """The whole name for one forward: phase chosen by phase_for, shape from the input."""
    return range_name(phase_for(role, q_tokens_per_row, past_tokens), rows * q_tokens_per_row,
                      rows, rows * past_tokens)


def _is_word(s):
    return bool(s) and all(c.islower() or c == "_" for c in s)


class SpecError(ValueError):
    """A --torch-annotate spec that does not parse; the message names the item."""


def parse_spec(spec):
    """'LlamaForCausalLM#1=target,LlamaForCausalLM=draft' -> [(pattern, nth, role)].

    pattern: a class name (LlamaForCausalLM), a qualified one
    (transformers.models.llama.modeling_llama.LlamaForCausalLM) or an fnmatch pattern of
    either; nth: the instance number among the modules this item matches, in
    construction order (1 = the first built), or 0 for every instance; role: target,
    draft or a phase word. Each item counts the modules its pattern matches; of the items
    that match a new module and name its number (or every instance), the first decides."""
    items = []
    if not spec or not spec.strip():
        raise SpecError("--torch-annotate: empty spec; expected PATTERN=ROLE[,PATTERN=ROLE...]")
    for raw in spec.split(","):
        item = raw.strip()
        if item.count("=") != 1:
            raise SpecError("--torch-annotate: item \"%s\": expected PATTERN=ROLE "
                            "(e.g. LlamaForCausalLM#1=target)" % item)
        pat, role = (s.strip() for s in item.split("="))
        if not _is_word(role):
            raise SpecError("--torch-annotate: item \"%s\": role \"%s\": expected target, "
                            "draft or a lower-case phase word" % (item, role))
        nth = 0
        if "#" in pat:
            pat, num = pat.rsplit("#", 1)
            if not num.isdigit() or int(num) < 1:
                raise SpecError("--torch-annotate: item \"%s\": instance \"#%s\": expected "
                                "#N with N >= 1 (construction order)" % (item, num))
            nth = int(num)
        if not pat or " " in pat or "#" in pat:
            raise SpecError("--torch-annotate: item \"%s\": pattern \"%s\": expected a class "
                            "name or module.path.Class (fnmatch wildcards allowed)" % (item, pat))
        items.append((pat, nth, role))
    return items
