"""Merged projections on the tiny Llama and Qwen (fp32, CPU): the model computes what it did, each
group runs one product per input, a member called on another input while its group waits runs
its own, and remove() restores every module. Run by ctest."""
import unittest

import torch

from . import merge_linear
from .extract_test import tiny


def tiny_qwen():
    """A Qwen2 of the tiny Llama's size: its q, k and v projections have biases."""
    from transformers import Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=256, max_position_embeddings=256)).eval()


class MergeLinearTest(unittest.TestCase):
    def test_the_model_computes_what_it_did(self):
        for name, build in (("llama", lambda: tiny("tiny-llama")), ("qwen", tiny_qwen)):
            model = build()
            ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(1))
            with torch.no_grad():
                expected = model(ids).logits
                merged = merge_linear.Merged(model)
                merged.install()
                got = model(ids).logits
                merged.remove()
                after = model(ids).logits
            layers = model.config.num_hidden_layers
            with self.subTest(name):
                self.assertEqual(len(merged.groups), 2 * layers)  # qkv and gate-up, per layer
                torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
                self.assertTrue(torch.equal(after, expected))
                self.assertFalse(any("forward" in m.__dict__ for m in model.modules()))

    def test_one_product_per_input(self):
        model = tiny("tiny-llama")
        merged = merge_linear.Merged(model)
        group = merged.groups[0]
        calls = []
        real = torch.nn.functional.linear

        def counting(x, weight, bias=None):
            calls.append(weight.shape[0])
            return real(x, weight, bias)
        merged.install()
        x = torch.randn(3, group.weight.shape[1])
        try:
            merge_linear.F.linear = counting
            with torch.no_grad():
                q, k, v = (m(x) for m in group.linears)
                again = group.linears[1](x)   # after the whole group: a new round, merged
                q2 = group.linears[0](x + 1)  # another input while that round waits: its own
            q3 = group.linears[0](x)  # with gradients: its own (the merged weights have none)
        finally:
            merge_linear.F.linear = real
            merged.remove()
        self.assertEqual(calls, [sum(group.sizes), sum(group.sizes)] + [group.sizes[0]] * 2)
        self.assertIsNotNone(q3.grad_fn)
        for out, m, inp in ((q, group.linears[0], x), (k, group.linears[1], x),
                            (v, group.linears[2], x), (again, group.linears[1], x),
                            (q2, group.linears[0], x + 1)):
            torch.testing.assert_close(out, real(inp, m.weight, m.bias))

    def test_one_copy_of_the_weights_kept_current(self):
        model = tiny("tiny-llama")
        merged = merge_linear.Merged(model)
        group = merged.groups[0]
        q = group.linears[0]
        self.assertEqual(q.weight.data_ptr(), group.weight.data_ptr())  # a view, not a copy
        with torch.no_grad():
            q.weight.mul_(2)  # an update in place reaches the merged weights
        self.assertTrue(torch.equal(group.weight[:q.out_features], q.weight))
        model.double()  # tensors of its own: merged again when next installed
        merged.install()
        self.assertEqual(group.weight.dtype, torch.float64)
        self.assertEqual(q.weight.data_ptr(), group.weight.data_ptr())
        merged.remove()

    def test_remove_leaves_another_patchs_forward(self):
        model = tiny("tiny-llama")
        merged = merge_linear.Merged(model)
        merged.install()
        q = merged.groups[0].linears[0]

        def theirs(x):
            return x
        q.forward = theirs  # another patch, installed after the merge
        merged.remove()
        self.assertIs(q.__dict__.get("forward"), theirs)
        merged.install()  # the group keeps that forward whole: none of it merged
        self.assertFalse(any("forward" in m.__dict__ for m in merged.groups[0].linears[1:]))
        merged.remove()


if __name__ == "__main__":
    unittest.main()
