"""The in-model accuracy gate: the patched model against the unpatched one, on random prompts at
the workload's request shapes (batch and prompt length of every entry, greedy decode steps), so
that every patch meets the shapes it was validated on.

- Greedy agreement: the share of greedy tokens the patched model picks as the unpatched one did.
- Teacher-forced: both models over the unpatched model's sequences; top-1 agreement, the mean KL
  divergence from the unpatched model's next-token distribution, the largest logit difference.
- Noise: the same figures for the unpatched model itself under harmless perturbations (the
  other attention implementation; the prompts one at a time, another reduction order; on CUDA,
  its decode steps compiled by torch.compile, transformers' own fast path), printed
  beside the patched ones so that a reader sees what a difference of that size means.
- A patch that runs generate() through a loop of its own (decode_graph) must pick the tokens
  generate()'s own loop picks over the same patched forward. Where a sequence parts from
  generate()'s, the two had the same tokens so far, and there the loop's token must be the top
  of the scores it chose from, those scores generate()'s within the noise's largest logit
  difference, and the token tied with generate()'s choice: its logit, in generate()'s own run,
  no further below the top than that (bf16 kernels are not bitwise repeatable from run to run,
  so two runs of the same forward part at near ties; a loop that decides otherwise picks other
  than its own top, or parts where nothing is tied).
- Rules: every patch called (engaged); fp32: greedy tokens identical; bf16/fp16: teacher-forced
  top-1 agreement >= accuracy.min_token_match, or, where the unpatched model misses that
  threshold against itself under the perturbations (a nearly flat next-token distribution, as
  with random weights), KL no larger than the noise's and the largest logit difference no larger
  than the noise's by more than one step of the dtype at the largest logit (two logits one
  rounding apart are as alike as the format can tell); and,
  where given, the largest logit difference <= accuracy.max_logit_diff.
"""
import math

import torch

from . import decode_graph

MAX_DECODE = 16  # greedy steps per prompt batch (the gate's cost grows with them)
MANTISSA_BITS = {"bf16": 7, "fp16": 10, "fp32": 23}


class GateError(Exception):
    """A gate that cannot run as the workload asks."""


def prompt_batches(workload, vocab, seed=0):
    """[(entry, token ids [batch, prompt], decode steps)]: every request entry's shape, in
    rounds until accuracy.random_prompts sequences are drawn."""
    accuracy = workload["accuracy"]
    if accuracy.get("prompts"):
        raise GateError("accuracy.prompts: text prompts need the model's tokenizer and are not "
                        "supported by the gate yet; give accuracy.random_prompts")
    requests = workload["requests"]
    per_round = sum(r["batch"] for r in requests)
    rounds = max(1, math.ceil(accuracy.get("random_prompts", 8) / per_round))
    g = torch.Generator().manual_seed(seed)
    return [(i, torch.randint(0, vocab, (r["batch"], r["prompt"]), generator=g),
             min(r["decode"], MAX_DECODE)) for _ in range(rounds) for i, r in enumerate(requests)]


@torch.no_grad()
def trace(model, ids, steps, forced=None, cache=None, step=None):
    """(tokens [batch, steps], logits [batch, steps, vocab]) of `steps` next tokens through the
    model's own cache, or `cache` (the prompt's prefill, then one decode step per token, as
    generate() runs it, by `step` where given, else the model): each step's token is the model's
    greedy choice, or with `forced` (teacher forcing) the token given there."""
    device = next(model.parameters()).device
    out = model(ids.to(device), past_key_values=cache, use_cache=True)
    tokens, logits = [], []
    for k in range(steps):
        logits.append(out.logits[:, -1].float().cpu())
        tokens.append(logits[-1].argmax(-1) if forced is None else forced[:, k])
        if k + 1 < steps:
            out = (step or model)(tokens[-1][:, None].to(device),
                                  past_key_values=out.past_key_values, use_cache=True)
    return torch.stack(tokens, 1), torch.stack(logits, 1)


def compare(reference, logits):
    """Teacher-forced figures: top-1 agreement, mean KL from the reference's distribution, the
    largest logit difference."""
    top1 = (reference.argmax(-1) == logits.argmax(-1)).float().mean().item()
    kl = torch.nn.functional.kl_div(logits.log_softmax(-1), reference.log_softmax(-1),
                                    log_target=True, reduction="none").sum(-1).mean().item()
    return {"top1_agreement": top1, "kl": max(kl, 0.0),
            "max_logit_diff": (reference - logits).abs().max().item()}


def _mean(rows):
    out = {k: sum(r[k] for r in rows) / len(rows) for k in ("top1_agreement", "kl")}
    out["max_logit_diff"] = max(r["max_logit_diff"] for r in rows)
    return out


def reference(model, workload):
    """The unpatched model's side of the gate (its prompts, traces and noise), which every gate
    of the same model and workload can share."""
    batches = prompt_batches(workload, model.config.vocab_size)
    refs = [trace(model, ids, steps) for _, ids, steps in batches]
    return batches, refs, _noise(model, batches, refs)


def run(model, patches, workload, unpatched=None):
    """The gate's report: {"passed", "reasons", "patched", "noise", "greedy_agreement",
    "engagement"}. The patches are applied for the patched runs and removed after; `unpatched`
    is reference(model, workload), computed here when not given."""
    batches, refs, noise = unpatched or reference(model, workload)
    for p in patches:
        p.apply(model)
    try:
        agree, total, rows, partings = 0, 0, [], []
        loops = [p for p in patches if getattr(p, "loop", False)]
        for (_, ids, steps), (tokens, logits) in zip(batches, refs):
            mine, _ = trace(model, ids, steps)
            agree += (mine == tokens).sum().item()
            total += tokens.numel()
            rows.append(compare(logits, trace(model, ids, steps, forced=tokens)[1]))
            for p in loops:  # its loop against generate()'s own, over the same forward
                _generated(model.generate, model, ids, steps)  # both compared runs replay
                scores = _Scores()
                mine = _generated(model.generate, model, ids, steps, scores)
                partings += _partings(mine, scores.stacked(),
                                      *_generated_with_logits(p.generate, model, ids, steps))
        engagement = [p.engagement() for p in patches]
    finally:
        for p in reversed(patches):  # the last applied first: each restores what it found
            p.remove()
    report = {"dtype": workload["run"]["dtype"], "prompts": sum(b[1].shape[0] for b in batches),
              "greedy_agreement": agree / total if total else 1.0, "patched": _mean(rows),
              "noise": noise, "engagement": engagement}
    largest = max(logits.abs().max().item() for _, logits in refs)
    report["logit_resolution"] = _resolution(largest, workload["run"]["dtype"])
    if loops:
        tie = max(n["max_logit_diff"] for n in noise.values()) + report["logit_resolution"]
        report["loop_partings"] = partings
        report["loop_tie"] = tie
        report["loop_tokens_differing"] = sum(
            1 for p in partings if not (p["gap"] <= tie and p["own_choice"] and
                                        p["scores_diff"] <= tie))
    report["reasons"] = _reasons(report, workload["accuracy"])
    report["passed"] = not report["reasons"]
    return report


@torch.no_grad()
def _generate(generate, model, ids, steps, **options):
    """(prompt length, output) of `generate` (the model's generate(), or a patch's loop) asked
    for `steps` greedy tokens with `options`."""
    ids = ids.to(next(model.parameters()).device)
    return ids.shape[1], generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                  max_new_tokens=steps, min_new_tokens=steps, pad_token_id=0,
                                  eos_token_id=None, **options)


def _generated(generate, model, ids, steps, scores=None):
    """The `steps` greedy tokens `generate` gives; `scores`, a logits processor, sees what it
    chose from at each step."""
    from transformers import LogitsProcessorList
    options = {} if scores is None else {"logits_processor": LogitsProcessorList([scores])}
    prompt, out = _generate(generate, model, ids, steps, **options)
    return out[:, prompt:].cpu()


class _Scores:
    """A logits processor that keeps the scores of every step, unchanged."""

    def __init__(self):
        self.steps = []

    def __call__(self, input_ids, scores):
        self.steps.append(scores.float().cpu())
        return scores

    def stacked(self):
        return torch.stack(self.steps, 1)


def _generated_with_logits(generate, model, ids, steps):
    """The `steps` greedy tokens generate() gives, and its logits at every step."""
    prompt, out = _generate(generate, model, ids, steps, output_logits=True,
                            return_dict_in_generate=True)
    return out.sequences[:, prompt:].cpu(), torch.stack(out.logits, 1).float().cpu()


def _partings(mine, my_scores, theirs, logits):
    """Where each sequence of `mine` (the loop's, with the scores it chose from) first differs
    from `theirs` (generate()'s, with its `logits`): [{"row", "step", "gap", "own_choice",
    "scores_diff"}]. The gap is how far below generate()'s choice the logit of the token picked
    instead was; own_choice whether that token was the top of the loop's own scores; scores_diff
    the largest difference between the two runs' logits there (the same tokens so far)."""
    out = []
    for row in range(mine.shape[0]):
        differ = (mine[row] != theirs[row]).nonzero()
        if differ.numel():
            k = int(differ[0])
            step, own = logits[row, k], my_scores[row, k]
            out.append({"row": row, "step": k,
                        "gap": (step[theirs[row, k]] - step[mine[row, k]]).item(),
                        "own_choice": bool(own[mine[row, k]] >= own.max()),
                        "scores_diff": (own - step).abs().max().item()})
    return out


def _compiled_trace(model, step, ids, steps, forced):
    """The teacher-forced logits of trace(), with the decode steps run by `step` (the model's
    forward compiled by torch.compile) over a static cache: transformers' own fast path."""
    from transformers import StaticCache
    cache = StaticCache(config=model.config.get_text_config(decoder=True),
                        max_cache_len=ids.shape[1] + steps)
    return trace(model, ids, steps, forced, cache=cache, step=step)[1]


def _noise(model, batches, refs):
    """The unpatched model's own figures with the sequences one at a time, under the other
    attention implementation, and, on CUDA, with its decode steps compiled by torch.compile
    over a static cache (the fast path transformers offers: fused kernels, another rounding)."""
    def forced(one_at_a_time=False):
        rows = []
        for (_, ids, steps), (tokens, logits) in zip(batches, refs):
            if one_at_a_time:
                got = torch.cat([trace(model, ids[i:i + 1], steps, tokens[i:i + 1])[1]
                                 for i in range(ids.shape[0])])
            else:
                got = trace(model, ids, steps, tokens)[1]
            rows.append(compare(logits, got))
        return _mean(rows)

    out = {"one_at_a_time": forced(one_at_a_time=True)}
    if next(model.parameters()).device.type == "cuda":
        step = decode_graph.compiled_forward(model.forward)
        out["compiled"] = _mean([compare(logits, _compiled_trace(model, step, ids, steps, tokens))
                                 for (_, ids, steps), (tokens, logits) in zip(batches, refs)])
    current = getattr(model.config, "_attn_implementation", None)
    other = {"sdpa": "eager", "eager": "sdpa"}.get(current)
    if other is not None and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(other)
        try:
            out[f"attention_{other}"] = forced()
        finally:
            model.set_attn_implementation(current)
    return out


def _resolution(value, dtype):
    """The step between neighbouring values of `dtype` at the magnitude of `value`."""
    exponent = math.floor(math.log2(value)) if value > 0 else 0
    return 2.0 ** (exponent - MANTISSA_BITS[dtype])


def _reasons(report, accuracy):
    reasons = [f"patch {e['task']} was never called (its modules ran their own forward "
               f"{sum(e['fallbacks'].values())} times)" for e in report["engagement"]
               if not e["engaged"]]
    if report.get("loop_tokens_differing"):
        gap = max(p["gap"] for p in report["loop_partings"])
        reasons.append(f"generate() through the patch's loop picked "
                       f"{report['loop_tokens_differing']} tokens other than generate()'s own "
                       f"loop over the same patched forward where nothing was tied (logit gap "
                       f"up to {gap:.4g}, ties within {report['loop_tie']:.4g})")
    patched = report["patched"]
    threshold = accuracy.get("min_token_match", 0.99)
    noise = list(report["noise"].values())
    if report["dtype"] == "fp32":
        if report["greedy_agreement"] < 1.0:
            reasons.append(f"fp32 greedy tokens differ: {report['greedy_agreement']:.4f} agree")
    elif noise and (own := min(n["top1_agreement"] for n in noise)) < threshold:
        # The threshold is one the unpatched model misses against itself (its next-token
        # distribution nearly flat: random weights): top-1 agreement is noise there, and the
        # patched model must stay within the noise's divergence instead.
        for figure, margin in (("kl", 0.0), ("max_logit_diff", report["logit_resolution"])):
            worst = max(n[figure] for n in noise)
            if patched[figure] > worst + margin:
                plus = f" plus one step of the logits, {margin:.4g}" if margin else ""
                reasons.append(f"{figure} {patched[figure]:.4g} beyond the unpatched model's own "
                               f"noise ({worst:.4g}{plus}; its top-1 agreement with itself, "
                               f"{own:.4f}, is under accuracy.min_token_match {threshold})")
    elif patched["top1_agreement"] < threshold:
        reasons.append(f"teacher-forced top-1 agreement {patched['top1_agreement']:.4f} < "
                       f"accuracy.min_token_match {threshold}")
    limit = accuracy.get("max_logit_diff")
    if limit is not None and patched["max_logit_diff"] > limit:
        reasons.append(f"largest logit difference {patched['max_logit_diff']:.4g} > "
                       f"accuracy.max_logit_diff {limit}")
    return reasons
