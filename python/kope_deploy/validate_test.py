"""The validation step of `kope deploy` on the tiny Llama of examples/deploy/tiny-llama.toml
(fp32, CPU): an RMSNorm task at the workload's shapes and a plan of two candidates, the first
right on the unit task's random inputs but wrong on the model's own activations, the second
right. The first is rejected in the model, the second accepted, packaged and reported. Run by
ctest: python3 -m unittest kope_deploy.validate_test."""
import json
import os
import tempfile
import unittest

import torch

from . import extract, models, patching, validate
from .patch_test import RIGHT, SETS
from .profile_test import EXAMPLES, normalized

# Right wherever a row's RMS is near 1, as the unit task's normal inputs are; it leaves rows of
# small magnitude unnormalized, and the first layer's norm sees the embeddings' rows (initialized
# at a standard deviation of 0.02).
WRONG_ON_ACTIVATIONS = '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, hidden_states):
        x = hidden_states.float()
        rms = x.square().mean(-1, keepdim=True)
        x = torch.where(rms > 0.01, x * torch.rsqrt(rms + EPS), x)
        return self.weight * x.to(hidden_states.dtype)
'''


class ValidateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.workload = normalized(os.path.join(EXAMPLES, "tiny-llama.toml"))
        cls.workload_path = os.path.join(cls.tmp.name, "workload.json")
        with open(cls.workload_path, "w") as f:
            json.dump(cls.workload, f)
        model = models.build(cls.workload).module
        types = {p or extract.ROOT: type(m).__name__ for p, m in model.named_modules()}
        planned = extract.plan({"grain": "subgraph", "kind": "norm", "module_type":
                                "LlamaRMSNorm", "phases": ["prefill"], "dtype": "fp32"},
                               model, types)
        cls.task = os.path.join(cls.tmp.name, "rmsnorm")
        hidden = model.config.hidden_size
        sets = [(label, {"batch_size": b, "seq_len": s, "hidden_size": hidden})
                for label, (b, s) in SETS]
        extract.write_unit_task(cls.task, "rmsnorm", planned, sets, ("LlamaRMSNorm", None),
                                "tiny-llama", "norm")
        cls.sources = {}
        for name, text in (("wrong", WRONG_ON_ACTIVATIONS), ("right", RIGHT)):
            cls.sources[name] = os.path.join(cls.tmp.name, f"{name}.py")
            with open(cls.sources[name], "w") as f:
                f.write(text)
        cls.out = os.path.join(cls.tmp.name, "deploy")
        os.makedirs(cls.out)
        plan = {"workload": cls.workload_path, "out": cls.out, "provenance": {"test": True},
                "tasks": [{"name": "rmsnorm", "folder": cls.task, "share": 0.2, "candidates": [
                    {"attempt": 7, "source": cls.sources["wrong"], "speedup": 2.0},
                    {"attempt": 8, "source": cls.sources["right"], "speedup": 1.5}]}]}
        # Speed is measured and reported, but judges nothing here: a test asserts no timing.
        cls.result = validate.run(plan, rounds=1, judge_speed=False)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_wrong_kernel_is_right_on_the_unit_tasks_random_inputs(self):
        patch = patching.Patch(self.task, self.sources["wrong"])
        right = patching.Patch(self.task, self.sources["right"])
        x = torch.randn(2, 32, self.workload["model"]["config"]["hidden_size"])
        own = {"weight": torch.rand(x.shape[-1])}
        got = patch.kernel.bind("wrong", own, ["weight"], x.device)("bench", (x,))
        want = right.kernel.bind("right", own, ["weight"], x.device)("bench", (x,))
        self.assertTrue(torch.equal(got, want))

    def test_the_model_rejects_the_first_candidate_and_accepts_the_second(self):
        tried = self.result["tasks"][0]["tried"]
        self.assertEqual([t["attempt"] for t in tried], [7, 8])
        self.assertFalse(tried[0]["accepted"])
        self.assertIn("fails in the model", tried[0]["reason"])
        self.assertTrue(tried[0]["gate"]["engagement"][0]["engaged"])
        self.assertNotIn("e2e", tried[0])  # the gate came first
        self.assertTrue(tried[1]["accepted"], tried[1]["reason"])
        self.assertEqual(tried[1]["gate"]["greedy_agreement"], 1.0)
        self.assertEqual(self.result["tasks"][0]["accepted"], 8)
        self.assertEqual(self.result["patches"], ["rmsnorm"])

    def test_the_accepted_patch_is_measured_packaged_and_reported(self):
        self.assertEqual([e["entry"] for e in self.result["e2e"]],
                         list(range(len(self.workload["requests"]))))
        with open(os.path.join(self.result["artifact"], "patches.json")) as f:
            patches = json.load(f)["patches"]
        self.assertEqual([(p["name"], p["kind"], p["candidate"]) for p in patches],
                         [("rmsnorm", "modelnew", "right.py")])
        page = validate.report_html.page(self.result, {})
        self.assertIn("fails in the model", page)
        self.assertIn("<svg", page)


if __name__ == "__main__":
    unittest.main()
