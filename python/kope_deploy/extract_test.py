"""The extracted problem of a decoder layer or attention module computes what the model computes:
its prefill and one decode step, on the tiny Llama of examples/deploy/tiny-llama.toml, against the
same layer inside the whole model's forward (its inputs, its KV cache and its outputs taken with
hooks). Run by ctest: python3 -m unittest kope_deploy.extract_test."""
import os
import tomllib
import unittest

import torch
import transformers

from kope_bridge import problem
from . import extract, templates

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "deploy")


def tiny(name, attention="sdpa"):
    with open(os.path.join(EXAMPLES, f"{name}.toml"), "rb") as f:
        spec = tomllib.load(f)["model"]
    cls = getattr(transformers, spec["architecture"])
    config = cls.config_class(**spec["config"])
    config._attn_implementation = attention
    torch.manual_seed(0)
    return cls(config).eval()


def tiny_llama(attention):
    return tiny("tiny-llama", attention)


def layer_zero_call(model, path, ids, past=None):
    """(input hidden states, output, layer 0's cache keys and values before and after) of the
    module at `path` while the model runs `ids` (one forward) on the cache `past`."""
    seen = {}
    before = None
    if past is not None:
        before = (past.layers[0].keys.clone(), past.layers[0].values.clone())

    def hook(module, args, kwargs, out):
        seen["in"] = kwargs.get("hidden_states", args[0] if args else None)
        seen["out"] = out[0] if isinstance(out, tuple) else out

    handle = model.get_submodule(path).register_forward_hook(hook, with_kwargs=True)
    with torch.no_grad():
        result = model(ids, past_key_values=past, use_cache=True)
    handle.remove()
    return seen["in"], seen["out"], before, result.past_key_values


def extracted(model, module_type, phase, sizes, kind=None):
    types = {p or extract.ROOT: type(m).__name__ for p, m in model.named_modules()}
    kind = kind or ("layer" if module_type.endswith("Layer") else "attention_module")
    o = {"grain": "subgraph", "kind": kind, "module_type": module_type, "phases": [phase],
         "dtype": "fp32"}
    kind, path, constants = extract.plan(o, model, types)
    source = templates.source(kind, sizes, constants, "test", "tiny", "a test")
    loaded = problem.load_module(source, "problem.py", sizes)
    built = problem.build_model(loaded)
    built.module.load_state_dict(model.get_submodule(path).state_dict())
    return kind, path, built.eval(), loaded


class StepModuleTest(unittest.TestCase):
    def test_prefill_matches_the_layer_inside_the_model(self):
        for attention in ("sdpa", "eager"):
            for module_type, path in (("LlamaDecoderLayer", "model.layers.0"),
                                      ("LlamaAttention", "model.layers.0.self_attn")):
                with self.subTest(attention=attention, module=module_type):
                    model = tiny_llama(attention)
                    ids = torch.randint(0, 256, (2, 7))
                    x, y, _, _ = layer_zero_call(model, path, ids)
                    kind, found, built, _ = extracted(model, module_type, "prefill",
                                                   {"batch_size": 2, "seq_len": 7})
                    self.assertEqual((kind, found), ("step_prefill", path))
                    with torch.no_grad():
                        torch.testing.assert_close(built(x), y)

    def test_a_decode_step_matches_the_model_and_appends_its_key_and_value(self):
        for attention in ("sdpa", "eager"):
            with self.subTest(attention=attention):
                model = tiny_llama(attention)
                prompt = torch.randint(0, 256, (2, 5))
                _, _, _, cache = layer_zero_call(model, "model.layers.0", prompt)
                step = torch.randint(0, 256, (2, 1))
                x, y, (k, v), after = layer_zero_call(model, "model.layers.0", step, cache)
                kind, _, built, _ = extracted(model, "LlamaDecoderLayer", "decode",
                                           {"batch_size": 2, "past_len": 5})
                self.assertEqual(kind, "step_decode")
                with torch.no_grad():
                    out, new_k, new_v = built(x, k, v)
                torch.testing.assert_close(out, y)
                torch.testing.assert_close(new_k, after.layers[0].keys[:, :, 5:])
                torch.testing.assert_close(new_v, after.layers[0].values[:, :, 5:])


class ExpertsTest(unittest.TestCase):
    def test_experts_match_the_model_given_its_routers_choices(self):
        model = tiny("tiny-moe")
        path = "model.layers.0.mlp.experts"
        seen = {}

        def hook(module, args, out):
            seen.setdefault("call", (args, out))

        handle = model.get_submodule(path).register_forward_hook(hook)
        with torch.no_grad():
            model(torch.randint(0, 256, (2, 6)))
        handle.remove()
        (x, index, weights), y = seen["call"]
        kind, found, built, loaded = extracted(model, "Qwen2MoeExperts", "prefill",
                                               {"tokens": x.shape[0]}, kind="experts")
        self.assertEqual((kind, found), ("experts", path))
        inputs = loaded.get_inputs()
        self.assertEqual([(list(t.shape), t.dtype) for t in inputs],
                         [(list(t.shape), t.dtype) for t in (x, index, weights)])
        with torch.no_grad():
            torch.testing.assert_close(built(x, index, weights), y)


if __name__ == "__main__":
    unittest.main()
