"""The decode-graph runtime patch on the tiny Llama (fp32, CPU: the static cache serves, steps run
eagerly, since capture needs CUDA): generate() and the gate's own loop give the unpatched model's
tokens, every decode step goes through the patch, a cache is kept across sequences and reset, a
sequence longer than the cache is refused, and remove() restores the model. Where CUDA is found,
the steps are captured and replayed, and give the same tokens. And the gate's bf16 rule where the
unpatched model misses min_token_match against itself. Run by ctest."""
import unittest

import torch

from . import decode_graph, gate
from .extract_test import tiny

WORKLOAD = {"run": {"dtype": "fp32"}, "accuracy": {"random_prompts": 3},
            "requests": [{"batch": 1, "prompt": 16, "decode": 3},
                         {"batch": 2, "prompt": 32, "decode": 2}]}


def generate(model, ids, steps):
    with torch.inference_mode():
        return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                              max_new_tokens=steps, min_new_tokens=steps, pad_token_id=0,
                              eos_token_id=None)


class DecodeGraphTest(unittest.TestCase):
    def setUp(self):
        self.model = tiny("tiny-llama")
        self.ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(3))

    def test_generate_through_the_patch_gives_the_same_tokens(self):
        expected = generate(self.model, self.ids, 6)
        patch = decode_graph.DecodeGraph(64)
        patch.apply(self.model)
        first = generate(self.model, self.ids, 6)
        cache = patch.caches[2]
        second = generate(self.model, self.ids, 6)
        self.assertTrue(torch.equal(first, expected))
        self.assertTrue(torch.equal(second, expected))
        self.assertIs(patch.caches[2], cache)  # kept and reset, not made again
        e = patch.engagement()
        self.assertEqual(e["calls"], {"generate (loop)": 2, "prefill (eager)": 2,
                                      "decode (eager)": 10})
        self.assertTrue(e["engaged"])
        self.assertEqual(e["step_shapes"], 1)
        patch.remove()
        self.assertNotIn("forward", self.model.__dict__)
        self.assertNotIn("generate", self.model.__dict__)
        self.assertTrue(torch.equal(generate(self.model, self.ids, 6), expected))

    def test_a_sequence_longer_than_the_cache_is_refused(self):
        patch = decode_graph.DecodeGraph(18)
        patch.apply(self.model)
        with self.assertRaisesRegex(ValueError, "outgrew max_cache_len 18"):
            generate(self.model, self.ids, 6)
        patch.remove()

    def test_other_calls_run_the_models_own_forward(self):
        patch = decode_graph.DecodeGraph(64)
        patch.apply(self.model)
        with torch.no_grad():
            self.model(self.ids, use_cache=False)
        e = patch.engagement()
        self.assertFalse(e["engaged"])
        self.assertEqual(sum(e["fallbacks"].values()), 1)
        patch.release()
        self.assertNotIn("forward", self.model.__dict__)

    def test_what_is_never_captured(self):
        from transformers import MistralConfig, StaticCache
        sliding = MistralConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                                sliding_window=8)
        patch = decode_graph.DecodeGraph(32)
        plain = StaticCache(config=self.model.config, max_cache_len=32)
        decode, prefill = (None, "decode"), (None, "prefill")
        self.assertTrue(patch._capturable("decode", plain, {}, decode))
        self.assertTrue(patch._capturable("prefill", plain, {"logits_to_keep": 1}, prefill))
        self.assertFalse(patch._capturable("prefill", plain, {}, prefill))  # every position's
        self.assertFalse(patch._capturable("decode", StaticCache(config=sliding, max_cache_len=32),
                                           {}, decode))
        self.assertEqual(patch.fallbacks, {
            "not captured: a prefill that returns the logits of every position": 1,
            "not captured: a cache that keeps its length in Python (a sliding window)": 1})

    def test_a_graph_captured_before_the_weights_moved_is_not_replayed_after(self):
        from . import merge_linear
        patch = decode_graph.DecodeGraph(64)
        patch.apply(self.model)
        generate(self.model, self.ids, 2)
        patch.remove()
        merged = merge_linear.Merged(self.model)  # the projections' weights move into one tensor
        patch.apply(self.model)
        generate(self.model, self.ids, 2)
        states = {key[0] for key in patch.seen}
        patch.release()
        del merged
        self.assertEqual(len(states), 2)  # each step shape keyed once per place of the weights

    def test_two_fused_patches_move_the_weights_once(self):
        weight = self.model.model.layers[0].self_attn.q_proj.weight
        first = decode_graph.DecodeGraph(64, fuse=True)
        first.apply(self.model)
        merged_at = weight.data_ptr()
        first.remove()
        second = decode_graph.DecodeGraph(64, fuse=True, fuse_prefill=True)
        second.apply(self.model)
        self.assertEqual(weight.data_ptr(), merged_at)
        self.assertIs(second.merged, first.merged)
        second.release()
        first.release()

    def test_fused_compiles_every_decode_step_and_with_the_prefill_its_first_shapes(self):
        compiled = []  # the phase of every call the compiled forward ran

        def counting(forward):
            def step(input_ids=None, **kwargs):
                compiled.append("decode" if input_ids.shape[1] == 1 else "prefill")
                return forward(input_ids=input_ids, **kwargs)
            return step
        shapes = decode_graph.MAX_PREFILL_SHAPES + 2
        original, decode_graph.compiled_forward = decode_graph.compiled_forward, counting
        try:
            for prefill in (False, True):
                compiled.clear()
                patch = decode_graph.DecodeGraph(64, fuse=True, fuse_prefill=prefill)
                patch.apply(self.model)
                for length in range(2, 2 + shapes):
                    for _ in range(2):  # a shape's second call is captured where CUDA is
                        generate(self.model, self.ids[:1, :length], 2)
                patch.release()
                self.assertEqual(compiled.count("decode"), 2 * shapes)
                self.assertEqual(compiled.count("prefill"),
                                 2 * decode_graph.MAX_PREFILL_SHAPES if prefill else 0)
        finally:
            decode_graph.compiled_forward = original
        with self.assertRaises(ValueError):
            decode_graph.DecodeGraph(64, fuse_prefill=True)

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA graphs need a CUDA device")
    def test_on_cuda_the_replayed_steps_compute_what_the_eager_ones_do(self):
        model = self.model.cuda()
        ids = self.ids.cuda()
        eager = decode_graph.DecodeGraph(64)
        eager.apply(model)
        eager.capture = False  # the same static cache, every step run eagerly
        expected = generate(model, ids, 6)
        eager.release()
        patch = decode_graph.DecodeGraph(64)
        patch.apply(model)
        got = [generate(model, ids, 6) for _ in range(2)]
        e = patch.engagement()
        patch.release()
        for g in got:
            self.assertTrue(torch.equal(g, expected))
        # One prefill and one step eager (the warm-ups), the rest replayed, from two graphs.
        self.assertEqual(e["calls"], {"generate (loop)": 2, "prefill (eager)": 1,
                                      "prefill (replayed)": 1, "decode (eager)": 1,
                                      "decode (replayed)": 9})
        self.assertEqual(e["graphs"], 2)
        self.assertEqual(e["fallbacks"], {})

    def test_the_gate_passes_it_in_fp32(self):
        report = gate.run(self.model, [decode_graph.DecodeGraph(64)], WORKLOAD)
        self.assertTrue(report["passed"], report["reasons"])
        self.assertEqual(report["greedy_agreement"], 1.0)
        self.assertGreater(report["engagement"][0]["calls"]["decode (eager)"], 0)
        self.assertEqual(report["loop_tokens_differing"], 0)
        self.assertGreater(report["engagement"][0]["calls"]["generate (loop)"], 0)

    def test_the_gate_rejects_a_loop_that_picks_other_tokens(self):
        right = decode_graph._greedy_loop

        def off_by_one(model, ids, kwargs, limit):
            out = right(model, ids, kwargs, limit)
            out[:, -1] = (out[:, -1] + 1) % model.config.vocab_size
            return out
        decode_graph._greedy_loop = off_by_one
        try:
            report = gate.run(self.model, [decode_graph.DecodeGraph(64)], WORKLOAD)
        finally:
            decode_graph._greedy_loop = right
        self.assertFalse(report["passed"])
        self.assertIn("other than generate()'s own loop", report["reasons"][0])


class BanToken:
    """A caller's logits processor: token 5 is never chosen."""

    def __call__(self, input_ids, scores):
        scores[:, 5] = -float("inf")
        return scores


class LoopTest(unittest.TestCase):
    """The patch's generate() loop gives generate()'s own tokens, eos and padding included, or
    runs generate() itself for a call it does not know."""

    def setUp(self):
        self.model = tiny("tiny-llama")
        self.ids = torch.randint(0, 256, (3, 16), generator=torch.Generator().manual_seed(5))
        with torch.inference_mode():
            plain = self.model.generate(self.ids, do_sample=False, max_new_tokens=12,
                                        min_new_tokens=12, pad_token_id=0, eos_token_id=None)
        self.eos = int(plain[0, 16 + 3])  # sequence 0 picks it at its fourth step

    def calls(self):
        eos, batch = self.eos, self.ids
        return {
            "eos ends one sequence": dict(eos_token_id=eos, pad_token_id=0),
            "eos ends the only one": dict(ids=batch[:1], eos_token_id=eos, pad_token_id=0),
            "min_new_tokens holds eos back": dict(eos_token_id=eos, pad_token_id=0,
                                                  min_new_tokens=6),
            "eos lists, pad from eos": dict(eos_token_id=[eos, 7]),
            "a caller's logits processor": dict(eos_token_id=None, pad_token_id=0,
                                                logits_processor=[BanToken()]),
            "min_new_tokens from the model's generation_config":
                dict(eos_token_id=eos, pad_token_id=0, config_min_new_tokens=6),
        }

    def test_it_gives_generates_tokens(self):
        from transformers import LogitsProcessorList
        for name, call in self.calls().items():
            ids = call.pop("ids", self.ids)
            if "logits_processor" in call:
                call["logits_processor"] = LogitsProcessorList(call["logits_processor"])
            self.model.generation_config.min_new_tokens = call.pop("config_min_new_tokens", None)
            args = dict(do_sample=False, max_new_tokens=40, attention_mask=torch.ones_like(ids),
                        **call)
            with torch.inference_mode():
                expected = self.model.generate(ids, **args)
                patch = decode_graph.DecodeGraph(64)
                patch.apply(self.model)
                try:
                    got = self.model.generate(ids, **args)
                finally:
                    patch.release()
            with self.subTest(name):
                self.assertEqual(patch.engagement()["calls"]["generate (loop)"], 1)
                self.assertEqual(got.shape, expected.shape)
                self.assertTrue(torch.equal(got, expected))

    def test_its_forward_calls_are_generates_own(self):
        """Every forward call the loop makes has generate()'s arguments (their names, shapes,
        dtypes, values, the cache's kind and length): in bf16 on a GPU, another mask or cache at
        the prefill picks other kernels, and other tokens."""
        patch = decode_graph.DecodeGraph(64)
        patch.apply(self.model)
        seen, call = [], patch._call

        def recording(input_ids=None, past_key_values=None, **kwargs):
            cache = None if past_key_values is None else (
                type(past_key_values).__name__, int(past_key_values.get_seq_length()))
            seen[-1].append((decode_graph._key(input_ids, kwargs), cache))
            return call(input_ids=input_ids, past_key_values=past_key_values, **kwargs)
        patch._call = recording
        args = dict(attention_mask=torch.ones_like(self.ids), do_sample=False, max_new_tokens=5,
                    pad_token_id=0, eos_token_id=None)
        try:
            with torch.inference_mode():
                for generate in (patch.generate, self.model.generate):  # generate()'s, the loop's
                    seen.append([])
                    generate(self.ids, **args)
        finally:
            patch.release()
        self.assertEqual(len(seen[0]), 5)
        self.assertEqual(seen[1], seen[0])

    def test_sequences_that_end_near_the_caches_end_stop_there(self):
        # Every sequence ends at its fourth step, the cache's last position two steps later: the
        # loop must not take the steps past it that generate() would not take.
        args = dict(attention_mask=torch.ones_like(self.ids[:1]), do_sample=False,
                    max_new_tokens=40, eos_token_id=self.eos, pad_token_id=0)
        with torch.inference_mode():
            expected = self.model.generate(self.ids[:1], **args)
            patch = decode_graph.DecodeGraph(16 + 6)
            patch.apply(self.model)
            try:
                got = self.model.generate(self.ids[:1], **args)
            finally:
                patch.release()
        self.assertTrue(torch.equal(got, expected))

    def test_an_early_end_shortens_the_output_as_generate_does(self):
        with torch.inference_mode():
            expected = self.model.generate(self.ids[:1], do_sample=False, max_new_tokens=40,
                                           attention_mask=torch.ones_like(self.ids[:1]),
                                           eos_token_id=self.eos, pad_token_id=0)
        self.assertEqual(expected.shape[1], 16 + 4)  # the case the loop's trimming is for

    def test_a_call_it_does_not_know_runs_generate(self):
        patch = decode_graph.DecodeGraph(64)
        patch.apply(self.model)
        try:
            with torch.inference_mode():
                torch.manual_seed(0)
                got = self.model.generate(self.ids, do_sample=True, max_new_tokens=4)
                self.model.generate(self.ids, max_new_tokens=4, repetition_penalty=1.3)
                self.model.generate(inputs=self.ids, max_new_tokens=2)
                self.model.generate(self.ids, self.model.generation_config, max_new_tokens=2)
                self.model.generate(self.ids, max_new_tokens=2, use_cache=False,
                                    attention_mask=torch.ones_like(self.ids))
        finally:
            patch.release()
        with torch.inference_mode():
            torch.manual_seed(0)
            expected = self.model.generate(self.ids, do_sample=True, max_new_tokens=4)
        self.assertTrue(torch.equal(got, expected))
        fallbacks = patch.engagement()["fallbacks"]
        self.assertEqual({k: n for k, n in fallbacks.items() if k.startswith("generate()")},
                         {"generate(): not greedy": 1, "generate(): the argument "
                          "repetition_penalty": 1,
                          "generate(): no input_ids of [batch, length]": 1,
                          "generate(): positional arguments after the inputs": 1,
                          "generate(): use_cache=False": 1})


def bf16_report(patched, noise_top1):
    noise = {"one_at_a_time": {"top1_agreement": noise_top1, "kl": 1e-5, "max_logit_diff": 0.04},
             "attention_eager": {"top1_agreement": 0.95, "kl": 9e-5, "max_logit_diff": 0.09}}
    return {"dtype": "bf16", "engagement": [], "greedy_agreement": 0.5, "noise": noise,
            "patched": patched, "logit_resolution": gate._resolution(5.0, "bf16")}


class GateRuleTest(unittest.TestCase):
    ACCURACY = {"min_token_match": 0.99}

    def test_where_the_model_misses_the_threshold_against_itself_divergence_decides(self):
        within = {"top1_agreement": 0.89, "kl": 4e-5, "max_logit_diff": 0.07}
        self.assertEqual(gate._reasons(bf16_report(within, 0.93), self.ACCURACY), [])
        beyond = {"top1_agreement": 0.82, "kl": 2.5e-3, "max_logit_diff": 0.41}
        reasons = gate._reasons(bf16_report(beyond, 0.93), self.ACCURACY)
        self.assertEqual(len(reasons), 2)
        self.assertIn("kl 0.0025 beyond the unpatched model's own noise", reasons[0])

    def test_a_logit_difference_one_rounding_past_the_noise_is_within_it(self):
        self.assertEqual(gate._resolution(5.0, "bf16"), 2 ** -5)  # bf16 steps of 1/32 in [4, 8)
        one_step = {"top1_agreement": 0.9, "kl": 4e-5, "max_logit_diff": 0.09 + 2 ** -5}
        self.assertEqual(gate._reasons(bf16_report(one_step, 0.93), self.ACCURACY), [])
        two_steps = dict(one_step, max_logit_diff=0.09 + 2 ** -4)
        reasons = gate._reasons(bf16_report(two_steps, 0.93), self.ACCURACY)
        self.assertEqual(len(reasons), 1)
        self.assertIn("plus one step of the logits, 0.03125", reasons[0])

    def test_where_the_model_meets_it_the_threshold_decides(self):
        close = {"top1_agreement": 0.98, "kl": 1e-6, "max_logit_diff": 0.01}
        reasons = gate._reasons(
            dict(bf16_report(close, 0.995), noise={"one_at_a_time": {
                "top1_agreement": 0.995, "kl": 1e-6, "max_logit_diff": 0.01}}), self.ACCURACY)
        self.assertEqual(len(reasons), 1)
        self.assertIn("top-1 agreement 0.9800 < accuracy.min_token_match 0.99", reasons[0])


if __name__ == "__main__":
    unittest.main()
