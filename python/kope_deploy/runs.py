"""Running one request entry of the workload, as the workload runs it, with its phases recorded.

A transformers model runs through generate(): the prompt's forward is the prefill, each later
forward one decode step; a logits processor (called once after every forward, outside any
compiled region) marks the boundaries, so the same recorder serves every mode. A user script's
run(model, request) marks its own phases with kope_deploy.phase().
"""
import torch

from .phases import Recorder, recording

PROMPT_SEED = 1234


def _boundaries(recorder, steps):
    from transformers import LogitsProcessor

    class Boundaries(LogitsProcessor):
        """Ends the phase that just ran its forward and begins the next decode step."""

        def __init__(self):
            self.calls = 0

        def __call__(self, input_ids, scores):
            recorder.end()
            if self.calls < steps:
                recorder.begin("decode")
            self.calls += 1
            return scores

    return Boundaries()


def prompt_ids(model, request, device):
    vocab = getattr(model.config, "vocab_size", 1000)
    g = torch.Generator().manual_seed(PROMPT_SEED)
    ids = torch.randint(0, vocab, (request["batch"], request["prompt"]), generator=g)
    return ids.to(device)


def generate_options(mode, eager):
    """generate()'s options for a run mode; `eager` keeps the mode's cache but compiles nothing
    (operators are attributed in eager mode: a compiled or replayed kernel loses its context)."""
    options = {}
    if mode != "generate":
        options["cache_implementation"] = "static"
        if eager:
            options["disable_compile"] = True
        else:
            from transformers import CompileConfig
            options["compile_config"] = CompileConfig(
                fullgraph=False, mode="reduce-overhead" if mode == "cuda-graphs" else "default")
    return options


def run_entry(model, workload, request, steps, eager=False):
    """Runs `request` with `steps` decode steps; returns its Recorder."""
    run = workload["run"]
    recorder = Recorder(run["device"])
    with torch.inference_mode(), recording(recorder):
        if model.kind == "script":
            model.script.run(model.module, dict(request, decode=steps))
        else:
            _generate(model.module, run, request, steps, recorder, eager)
    return recorder


def _generate(module, run, request, steps, recorder, eager):
    from transformers import LogitsProcessorList
    ids = prompt_ids(module, request, run["device"])
    options = generate_options(run["mode"], eager)
    if run["mode"] != "generate" and run["device"] != "cuda" and not eager:
        options["compile_config"]._compile_all_devices = True
    recorder.begin("prefill")
    module.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                    max_new_tokens=steps + 1, min_new_tokens=steps + 1, pad_token_id=0,
                    eos_token_id=None, logits_processor=LogitsProcessorList(
                        [_boundaries(recorder, steps)]), **options)
