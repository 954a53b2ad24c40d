"""A runtime patch: the decode step over a static cache, replayed from a CUDA graph.

Where a profile says decode is host-bound (the GPU idle most of each step while Python launches
hundreds of small kernels), the step's kernels can be launched as one captured graph. This patch
changes how a transformers causal LM runs, not what it computes:

- a prefill (a forward with no cache, or an empty one, over more than one token) runs into a
  static cache of the patch's own (one per batch size, reset for every new sequence, kept across
  sequences so that its tensors stay where the graphs read them);
- a prefill, and a decode step (one token per sequence, over one of those caches), is captured
  once per batch size and argument shapes, on its second call (the first runs eagerly and warms
  the libraries up), and replayed after that: its inputs are copied into the graph's own, the
  graph replayed, and the logits returned as a copy (a prefill only where the caller keeps the
  last position's logits alone, as generate() does, for the first MAX_PREFILL_SHAPES shapes;
  nothing over a cache whose layers keep their length in Python, as sliding windows do);
- every other call runs the model's own forward (counted as a fallback).

With `loop` (the default), greedy `generate()` calls run a loop of the patch's own: the same
steps as generate()'s (its own input preparation, the caller's logits processors, argmax, eos and
padding), but without generate()'s synchronization after every step (its check whether every
sequence is done, which makes the host wait for each step's kernels before it launches the next
step's): the host runs ahead of the GPU, and where eos tokens can end the sequences it checks
every CHECK_EVERY steps, giving the same tokens. Any other generate() call (sampling, beams,
streamers, stopping criteria, options the loop does not know) runs generate() itself.

On a device without CUDA graphs (the CPU) the static cache still serves and steps run eagerly,
so that the same code is checked there. `remove()` restores the model's forward exactly and keeps
the caches and graphs for the next `apply()` to the same model; `release()` frees them. Needs
torch and transformers only: kope's patch artifacts carry this file as it is.
"""
import collections
import inspect

import torch

from . import merge_linear

CHECK_EVERY = 16  # decode steps between the loop's checks whether every sequence has ended
MAX_PREFILL_SHAPES = 8  # prefill shapes captured; longer-tailed prompt lengths run eagerly

# generate() arguments the loop runs as generate() would; any other one runs generate() itself.
LOOP_ARGUMENTS = {"attention_mask", "max_new_tokens", "min_new_tokens", "do_sample", "num_beams",
                  "pad_token_id", "eos_token_id", "logits_processor", "use_cache"}
# generation_config fields that add logits processors or change the search, with the value under
# which they do nothing: a model configured otherwise runs generate() itself.
NEUTRAL_CONFIG = {"num_beams": 1, "repetition_penalty": 1.0, "no_repeat_ngram_size": 0,
                  "encoder_repetition_penalty": 1.0, "bad_words_ids": None,
                  "forced_bos_token_id": None, "forced_eos_token_id": None,
                  "suppress_tokens": None, "begin_suppress_tokens": None, "sequence_bias": None,
                  "guidance_scale": None, "renormalize_logits": False, "min_length": 0,
                  "exponential_decay_length_penalty": None, "stop_strings": None,
                  "max_time": None, "cache_implementation": None, "num_return_sequences": 1,
                  "return_dict_in_generate": False, "output_scores": False,
                  "output_logits": False, "output_attentions": False,
                  "output_hidden_states": False, "assistant_model": None,
                  "prompt_lookup_num_tokens": None, "remove_invalid_values": False,
                  "watermarking_config": None, "prefill_chunk_size": None}


class DecodeGraph:
    """`max_cache_len`: the longest sequence (prompt and generated tokens) a cache holds;
    `loop`: greedy generate() calls run the patch's loop (above); `fuse`: the decode step is
    compiled by torch.compile (its small operations fused into fewer kernels, its matrix
    products left to the libraries) before it is captured, on its first call, and each layer's
    projections that read the same input run as one product (merge_linear); `fuse_prefill`
    (with `fuse`): so is the prefill of each shape that is captured (a compilation per shape;
    more rounding differences from eager than the step's alone)."""

    kind = "runtime"
    name = "decode_graph"

    def __init__(self, max_cache_len, loop=True, fuse=False, fuse_prefill=False):
        if fuse_prefill and not fuse:
            raise ValueError("decode_graph: fuse_prefill needs fuse")
        self.max_cache_len = int(max_cache_len)
        self.loop = bool(loop)
        self.fuse = bool(fuse)
        self.fuse_prefill = bool(fuse_prefill)
        self.calls = collections.Counter()      # "prefill (eager)", "decode (replayed)", ...
        self.fallbacks = collections.Counter()  # why -> calls the model's own forward ran
        self.model, self.installed = None, False
        self.release()

    def apply(self, model):
        if self.installed:
            raise ValueError("decode_graph: already applied")
        if not hasattr(model, "config") or not hasattr(model, "generate"):
            raise ValueError("decode_graph: the model is no transformers causal LM")
        if model is not self.model:  # caches and graphs are the model's: kept across re-applies
            self.release()
            self.model = model
            self.device = next(model.parameters()).device
            self.capture = self.device.type == "cuda"
            self.pool = torch.cuda.graph_pool_handle() if self.capture else None
            self.step = compiled_forward(model.forward) if self.fuse else None
            self.merged = merge_linear.shared(model) if self.fuse else None
        if self.merged is not None:
            self.merged.install()
        self.original = model.__dict__.get("forward")
        self.forward = model.forward

        def forward(*args, **kwargs):
            return self._call(*args, **kwargs)
        # The model's own signature: generate() asks it what the forward takes (logits_to_keep).
        forward.__signature__ = inspect.signature(self.forward)
        model.forward = forward
        if self.loop:
            self.original_generate = model.__dict__.get("generate")
            self.generate = model.generate
            model.generate = self._generate
        self.installed = True
        return 1

    def remove(self):
        """Restores the model's forward; its caches and graphs stay for the next apply."""
        if not self.installed:
            return
        restore = {"forward": self.original}
        if self.loop:
            restore["generate"] = self.original_generate
        for name, original in restore.items():
            if original is None:
                delattr(self.model, name)
            else:
                setattr(self.model, name, original)
        if self.merged is not None:
            self.merged.remove()
        self.installed = False

    def release(self):
        """Frees the caches and graphs."""
        self.remove()
        self.model, self.caches, self.lengths, self.graphs, self.pool = None, {}, {}, {}, None
        self.step, self.merged = None, None
        self.seen = collections.Counter()
        self.compiled = set()  # the prefill keys the compiled forward runs
        self.states = {}  # _state() -> its number, the first part of every key
        self.state = None

    def engagement(self):
        return {"task": self.name, "modules": ["forward"], "calls": dict(self.calls),
                "fallbacks": dict(self.fallbacks),
                "step_shapes": sum(1 for key in self.seen if key[1] == "decode"),
                "graphs": sum(1 for g in self.graphs.values() if g),
                "engaged": self.calls["decode (replayed)"] + self.calls["decode (eager)"] > 0}

    def _generate(self, *args, **kwargs):
        input_ids = args[0] if len(args) == 1 else None
        why = "positional arguments after the inputs" if len(args) > 1 else \
            _not_for_the_loop(self.model, input_ids, kwargs)
        if why is not None:
            self.fallbacks[f"generate(): {why}"] += 1
            return self.generate(*args, **kwargs)
        self.calls["generate (loop)"] += 1
        with torch.no_grad():
            return _greedy_loop(self.model, input_ids, kwargs, self.max_cache_len)

    def _call(self, input_ids=None, past_key_values=None, **kwargs):
        if input_ids is None or kwargs.get("inputs_embeds") is not None:
            self.fallbacks["inputs_embeds, not input_ids"] += 1
            return self.forward(input_ids=input_ids, past_key_values=past_key_values, **kwargs)
        batch, length = input_ids.shape[:2]
        ours = self.caches.get(batch)
        if past_key_values is not None and past_key_values is ours:
            if length == 1:
                return self._decode(input_ids, ours, kwargs)
            self.fallbacks["more than one token over a cache"] += 1
        elif length > 1 and kwargs.get("use_cache", True) is not False and \
                _empty(past_key_values) and length < self.max_cache_len:
            # Interned: every key of the sequence's steps holds it, and they are hashed per step.
            self.state = self.states.setdefault(_state(self.model), len(self.states))
            cache = self._cache(batch)
            self.lengths[batch] = length
            return self._run("prefill", input_ids, cache, kwargs)
        else:
            self.fallbacks["not a prefill into, or a step over, a static cache"] += 1
        return self.forward(input_ids=input_ids, past_key_values=past_key_values, **kwargs)

    def _cache(self, batch):
        """The batch size's static cache, reset; made on its first sequence."""
        cache = self.caches.get(batch)
        if cache is None:
            from transformers import StaticCache
            cache = StaticCache(config=self.model.config.get_text_config(decoder=True),
                                max_cache_len=self.max_cache_len)
            self.caches[batch] = cache
        else:
            cache.reset()
        return cache

    def _decode(self, input_ids, cache, kwargs):
        batch = input_ids.shape[0]
        if self.lengths[batch] >= self.max_cache_len:
            raise ValueError(f"decode_graph: a sequence outgrew max_cache_len "
                             f"{self.max_cache_len}")
        self.lengths[batch] += 1
        return self._run("decode", input_ids, cache, kwargs)

    def _run(self, phase, input_ids, cache, kwargs):
        """A prefill or decode step over `cache`: captured on the second call of its shapes (the
        first warms the libraries up), replayed after that, eager where it cannot be keyed or
        captured."""
        key = _key(input_ids, kwargs)
        if key is None:
            self.fallbacks[f"a {phase} argument that cannot be keyed"] += 1
            return self.forward(input_ids=input_ids, past_key_values=cache, **kwargs)
        key = (self.state, phase) + key
        self.seen[key] += 1
        step = self._step(phase, key, cache, kwargs)
        if self.capture and self.seen[key] == 2 and self._capturable(phase, cache, kwargs, key):
            self.graphs[key] = self._record(step, input_ids, cache, kwargs)
        if not self.graphs.get(key):
            self.calls[f"{phase} (eager)"] += 1
            return step(input_ids=input_ids, past_key_values=cache, **kwargs)
        graph, static, logits, output = self.graphs[key]
        static["input_ids"].copy_(input_ids)
        for k, v in kwargs.items():
            _copy_into(static[k], v)
        graph.replay()
        self.calls[f"{phase} (replayed)"] += 1
        return output(logits.clone())

    def _step(self, phase, key, cache, kwargs):
        """The forward a call runs: the compiled one for every decode step (with `fuse`) and,
        with `fuse_prefill`, for the prefill shapes that will be captured (a compilation per
        shape, on its first call), else the model's own."""
        if self.step is None or (phase == "prefill" and not self.fuse_prefill):
            return self.forward
        if phase == "prefill" and key not in self.compiled:
            if self.seen[key] > 1 or _why_not_captured(self, phase, cache, kwargs, key):
                return self.forward
            self.compiled.add(key)
        return self.step

    def _capturable(self, phase, cache, kwargs, key):
        """Whether this call may be captured; else it runs eagerly, counted as a fallback with
        its reason (_why_not_captured)."""
        why = _why_not_captured(self, phase, cache, kwargs, key)
        if why is not None:
            self.fallbacks[f"not captured: {why}"] += 1
        return why is None

    def _record(self, step, input_ids, cache, kwargs):
        """The step captured: (graph, its input tensors, its logits, a function making the
        output of logits); None where the step cannot be captured (it runs eagerly then)."""
        static = {k: _clone(v) for k, v in kwargs.items()}
        static["input_ids"] = input_ids.clone()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=self.pool):
                out = step(past_key_values=cache, **static)
        except RuntimeError as e:
            self.fallbacks[f"not capturable: {str(e).splitlines()[0][:120]}"] += 1
            return None

        def output(logits):
            out_type = type(out)
            return out_type(logits=logits, past_key_values=cache)
        return graph, static, out.logits, output


def _why_not_captured(patch, phase, cache, kwargs, key):
    """Why a call of `key` may not be captured, or None:
    - a cache that keeps its length in Python (a sliding window's layers do: a replayed graph
      runs no Python, so that length would stand still);
    - a prefill where the caller keeps more than the last position's logits (generate() keeps
      that one alone: a graph holds its outputs for as long as it lives);
    - a prefill past the first MAX_PREFILL_SHAPES shapes of the model's state (prompts come in
      many lengths), counted among the compiled ones with `fuse_prefill` (so that every
      captured prefill is a compiled one), else among the captured ones."""
    if any(hasattr(layer, "cumulative_length_int") for layer in cache.layers):
        return "a cache that keeps its length in Python (a sliding window)"
    if phase != "prefill":
        return None
    if kwargs.get("logits_to_keep") != 1:
        return "a prefill that returns the logits of every position"
    taken = patch.compiled if patch.fuse_prefill else \
        {k for k, graph in patch.graphs.items() if graph}
    taken = {k for k in taken if k[:2] == key[:2]}  # this state's prefills
    if key not in taken and len(taken) >= MAX_PREFILL_SHAPES:
        return f"a prefill shape past the first {MAX_PREFILL_SHAPES}"
    return None


RECOMPILE_LIMIT = 64  # compiled versions of one forward, as transformers' chunked prefill allows


def compiled_forward(forward):
    """`forward` compiled by torch.compile for fixed shapes. Every static cache (one per batch
    size, of each patch and of transformers' own compiled path) is a version of the model's one
    forward: torch's default limit of 8 would run later ones uncompiled, so it is raised."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), RECOMPILE_LIMIT))
    return torch.compile(forward, dynamic=False)


def _not_for_the_loop(model, input_ids, kwargs):
    """Why a generate() call is not one the loop runs as generate() would, or None."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        return "no input_ids of [batch, length]"
    unknown = sorted(set(kwargs) - LOOP_ARGUMENTS)
    if unknown:
        return f"the argument {unknown[0]}"
    if not isinstance(kwargs.get("max_new_tokens"), int):
        return "no max_new_tokens"
    config = model.generation_config
    if kwargs.get("use_cache", config.use_cache) is False:
        return "use_cache=False"
    if kwargs.get("do_sample", config.do_sample) or kwargs.get("num_beams", 1) != 1:
        return "not greedy"
    for field, neutral in NEUTRAL_CONFIG.items():
        value = getattr(config, field, neutral)
        if value is not None and value != neutral and value != []:
            return f"generation_config.{field}"
    if not isinstance(kwargs.get("attention_mask"), torch.Tensor):
        return "no attention_mask"
    prepare = getattr(model, "prepare_inputs_for_generation", None)
    if prepare is None or "next_sequence_length" not in inspect.signature(prepare).parameters or \
            not hasattr(model, "_update_model_kwargs_for_generation") or \
            not hasattr(model, "_supports_logits_to_keep") or \
            not hasattr(model, "_prepare_position_ids_for_generation") or \
            not hasattr(model, "_optimize_model_for_decode"):
        return "a transformers version whose generate() steps the loop does not know"
    return None


def _greedy_loop(model, ids, kwargs, limit):
    """generate()'s greedy steps (transformers 5's: its input preparation and model-keyword
    updates, the experts' decode implementation), its token ids [batch, prompt + new], with no
    synchronization unless eos tokens can end the sequences (then every CHECK_EVERY steps)."""
    from transformers import LogitsProcessorList
    config = model.generation_config
    eos = kwargs.get("eos_token_id", config.eos_token_id)
    eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    pad = kwargs.get("pad_token_id", config.pad_token_id)
    pad = eos[0] if pad is None and eos else pad
    least = kwargs.get("min_new_tokens", config.min_new_tokens) or 0
    processors = LogitsProcessorList(kwargs.get("logits_processor") or [])
    eos_ids = torch.tensor(eos, dtype=torch.long, device=ids.device)
    unfinished = torch.ones(ids.shape[0], dtype=torch.bool, device=ids.device)
    from transformers import DynamicCache
    # generate()'s model keywords, made as it makes them: the mask, the positions, its default
    # cache (the patch's prefill puts its own static one in its place), and the prefill's last
    # logits alone where the model can.
    state = {"attention_mask": kwargs["attention_mask"], "use_cache": True}
    if "position_ids" in inspect.signature(model.forward).parameters:
        state["position_ids"] = model._prepare_position_ids_for_generation(ids, state)
    state["past_key_values"] = DynamicCache(config=model.config.get_text_config(decoder=True))
    if model._supports_logits_to_keep():
        state["logits_to_keep"] = 1
    out = model(**model.prepare_inputs_for_generation(
        ids, next_sequence_length=None, is_first_iteration=True, **state), return_dict=True)
    ended = []  # per step: whether every sequence had ended by then (a device tensor)
    with model._optimize_model_for_decode():
        for step in range(kwargs["max_new_tokens"]):
            # A step past the cache's end that generate() would not take (every sequence
            # ended): told before the patch refuses it.
            if eos and step and ids.shape[1] - 1 >= limit and bool(ended[-1]):
                break
            if step:
                out = model(**model.prepare_inputs_for_generation(
                    ids, next_sequence_length=1, **state), return_dict=True)
            state = model._update_model_kwargs_for_generation(out, state)
            scores = out.logits[:, -1].to(copy=True, dtype=torch.float32)
            if eos and step < least:  # what generate()'s min_new_tokens processor does
                scores[:, eos_ids] = -float("inf")
            token = processors(ids, scores).argmax(-1)
            if eos:
                token = torch.where(unfinished, token, torch.full_like(token, pad))
                unfinished = unfinished & ~torch.isin(token, eos_ids)
                ended.append(~unfinished.any())
            ids = torch.cat([ids, token[:, None]], dim=-1)
            if eos and (step + 1) % CHECK_EVERY == 0 and bool(ended[-1]):
                break
    if ended:  # generate() stops after the step every sequence had ended in
        done = torch.stack(ended).nonzero()
        if done.numel():
            ids = ids[:, :ids.shape[1] - len(ended) + int(done[0]) + 1]
    return ids


def _state(model):
    """What a graph captured now replays beside its inputs: the modules that run a forward of
    their own (other patches; the functions themselves are held, so that none is freed and its
    identity reused) and where every parameter's data lies (a patch that moves weights, as
    merging projections does, leaves a graph captured before it reading freed memory). A graph
    captured under one state serves that state alone."""
    forwards = tuple((path, m.__dict__["forward"]) for path, m in model.named_modules()
                     if "forward" in m.__dict__ and m is not model)
    return forwards, tuple(p.data_ptr() for p in model.parameters())


def _empty(cache):
    return cache is None or int(cache.get_seq_length()) == 0


def _key(input_ids, kwargs):
    """What a captured step depends on: the shapes and dtypes of its tensors (also inside a
    dict, as a model with several attention kinds gets its masks) and the values of the rest;
    None where an argument is none of these (it cannot be keyed)."""
    parts = [("input_ids", tuple(input_ids.shape), input_ids.dtype)]
    for k in sorted(kwargs):
        v = kwargs[k]
        if isinstance(v, dict):
            inner = _key(input_ids, v)
            if inner is None:
                return None
            parts.append((k, inner[1:]))
        elif isinstance(v, torch.Tensor):
            parts.append((k, tuple(v.shape), v.dtype))
        elif v is None or isinstance(v, (bool, int, float, str)):
            parts.append((k, v))
        else:
            return None
    return tuple(parts)


def _clone(v):
    """The graph's own copy of an argument (tensors cloned, in dicts too)."""
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    return v.clone() if isinstance(v, torch.Tensor) else v


def _copy_into(static, v):
    """A step's argument copied into the graph's own (same structure: the key says so)."""
    if isinstance(v, dict):
        for k, x in v.items():
            _copy_into(static[k], x)
    elif isinstance(v, torch.Tensor):
        static.copy_(v)
