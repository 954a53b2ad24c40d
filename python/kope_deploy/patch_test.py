"""Patches and the accuracy gate on the tiny Llama of examples/deploy/tiny-llama.toml (fp32, CPU):
an RMSNorm task extracted at the workload's shapes, a right candidate (engaged on every RMSNorm
and accepted), a wrong one (rejected), one never called (rejected), and the model restored
exactly after each. Run by ctest: python3 -m unittest kope_deploy.patch_test."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

from . import artifact, e2e, extract, gate, models, patching
from .extract_test import tiny

RIGHT = '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, hidden_states):
        x = hidden_states.float()
        x = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + EPS)
        return self.weight * x.to(hidden_states.dtype)
'''
WRONG = '''
class ModelNew(nn.Module):
    """Forgets to normalize."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, hidden_states):
        return self.weight * hidden_states
'''
# A fresh Python (no kope on its path) applies the artifact to the same model, built again.
FRESH = '''
import importlib.util, json, torch, transformers
print("no-kope" if importlib.util.find_spec("kope_deploy") is None else "kope")
import kope_patch_tiny_llama as kp
config = transformers.LlamaConfig(**json.loads({config!r}))
torch.manual_seed(0)
model = transformers.LlamaForCausalLM(config).eval()
saved = torch.load("expected.pt")
patches = kp.apply(model)
with torch.no_grad():
    got = model(saved["ids"]).logits
print("engaged" if all(p.engagement()["engaged"] for p in patches) else "idle")
print("equal" if torch.equal(got, saved["expected"]) else "different")
kp.remove(model)
print("restored" if all("forward" not in m.__dict__ for m in model.modules()) else "patched")
'''
REQUESTS = [{"batch": 1, "prompt": 16, "decode": 3, "weight": 0.75},
            {"batch": 2, "prompt": 32, "decode": 2, "weight": 0.25}]
SETS = [("entry 0 prefill", (1, 16)), ("entry 0 decode", (1, 1)), ("entry 1 prefill", (2, 32)),
        ("entry 1 decode", (2, 1))]


def workload(requests=REQUESTS):
    return {"run": {"dtype": "fp32"}, "requests": requests,
            "accuracy": {"random_prompts": 3, "min_token_match": 0.99}}


class PatchGateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = tiny("tiny-llama")
        types = {p or extract.ROOT: type(m).__name__ for p, m in cls.model.named_modules()}
        planned = extract.plan({"grain": "subgraph", "kind": "norm", "module_type":
                                "LlamaRMSNorm", "phases": ["prefill"], "dtype": "fp32"},
                               cls.model, types)
        cls.task = os.path.join(cls.tmp.name, "rmsnorm")
        sets = [(label, {"batch_size": b, "seq_len": s, "hidden_size": 64})
                for label, (b, s) in SETS]
        extract.write_unit_task(cls.task, "rmsnorm", planned, sets, ("LlamaRMSNorm", None),
                                "tiny-llama", "norm")
        cls.ids = torch.randint(0, 256, (2, 9))
        with torch.no_grad():
            cls.before = cls.model(cls.ids).logits.clone()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def candidate(self, text):
        path = os.path.join(self.tmp.name, f"c{abs(hash(text))}.py")
        with open(path, "w") as f:
            f.write(text)
        return patching.Patch(self.task, path)

    def assert_restored(self):
        for path, m in self.model.named_modules():
            self.assertNotIn("forward", m.__dict__, path)
        with torch.no_grad():
            self.assertTrue(torch.equal(self.model(self.ids).logits, self.before))

    def test_a_right_kernel_is_engaged_on_every_norm_and_accepted(self):
        report = gate.run(self.model, [self.candidate(RIGHT)], workload())
        self.assertTrue(report["passed"], report["reasons"])
        engagement = report["engagement"][0]
        self.assertEqual(len(engagement["modules"]), 5)  # 2 per layer and the final norm
        self.assertEqual(set(engagement["calls"]),
                         {f"batch_size={b} seq_len={s} hidden_size=64" for _, (b, s) in SETS})
        self.assertEqual(report["greedy_agreement"], 1.0)
        self.assertLess(report["noise"]["one_at_a_time"]["max_logit_diff"], 1e-3)
        self.assert_restored()

    def test_a_wrong_kernel_is_rejected(self):
        report = gate.run(self.model, [self.candidate(WRONG)], workload())
        self.assertFalse(report["passed"])
        self.assertTrue(report["engagement"][0]["engaged"])
        noise = max(n["max_logit_diff"] for n in report["noise"].values())
        self.assertGreater(report["patched"]["max_logit_diff"], 100 * noise)
        self.assert_restored()

    def test_a_kernel_never_called_is_rejected(self):
        other = [{"batch": 3, "prompt": 12, "decode": 2, "weight": 1.0}]  # no validated shape
        report = gate.run(self.model, [self.candidate(RIGHT)], workload(other))
        self.assertFalse(report["passed"])
        self.assertIn("never called", " ".join(report["reasons"]))
        self.assert_restored()

    def test_end_to_end_figures_come_from_both_sides_interleaved_through_generate(self):
        patch = self.candidate(RIGHT)
        w = dict(workload(), run={"dtype": "fp32", "device": "cpu", "mode": "generate"})
        entries = e2e.measure(models.Model(self.model, "hf"), [patch], w, rounds=2)
        self.assertEqual([e["entry"] for e in entries], [0, 1])
        for e in entries:
            for figure in ("prefill_ms", "decode_tokens_per_s"):
                for side in ("unpatched", "patched"):
                    self.assertEqual(e[figure][side]["samples"], 2, (e["entry"], figure))
                    self.assertGreater(e[figure][side]["median"], 0)
                self.assertFalse(e[figure]["win"] and e[figure]["loss"])
        self.assertTrue(patch.engagement()["calls"])  # generate() met the validated shapes
        self.assert_restored()

    def test_the_artifact_reproduces_the_validated_outputs_in_a_python_without_kope(self):
        patch = self.candidate(RIGHT)
        report = gate.run(self.model, [patch], workload())
        folder = artifact.write(self.tmp.name, "tiny-llama", [patch], report,
                                {"workload": "tiny-llama"})
        patch.apply(self.model)
        try:
            with torch.no_grad():
                ids = torch.randint(0, 256, (1, 16))  # a validated shape
                expected = self.model(ids).logits
        finally:
            patch.remove()
        torch.save({"ids": ids, "expected": expected},
                   os.path.join(self.tmp.name, "expected.pt"))
        script = FRESH.format(config=json.dumps(self.model.config.to_dict()))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run([sys.executable, "-c", script], cwd=self.tmp.name, env=env,
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split(), ["no-kope", "engaged", "equal", "restored"])
        with open(os.path.join(folder, "kernels", "rmsnorm.py"), "a") as f:
            f.write("\n# changed\n")
        package = load_package(folder, "kope_patch_changed")
        with self.assertRaisesRegex(ValueError, "changed since it was validated"):
            package.apply(self.model)
        self.assert_restored()

    def test_bad_patches_are_refused_with_their_reason(self):
        with self.assertRaisesRegex(patching.PatchError, "no class ModelNew"):
            self.candidate("x = 1\n")
        with self.assertRaisesRegex(patching.PatchError, "not a task extracted"):
            patching.Patch(self.tmp.name, __file__)


def load_package(folder, name):
    """The artifact package in `folder`, imported as `name`."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package
    spec.loader.exec_module(package)
    return package


if __name__ == "__main__":
    unittest.main()
