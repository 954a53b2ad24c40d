"""The validation step of `kope deploy` on the tiny Llama of examples/deploy/tiny-llama.toml
(fp32, CPU): an RMSNorm task at the workload's shapes and a plan of two candidates, the first
right on the unit task's random inputs but wrong on the model's own activations, the second
right; and the decode-graph runtime decision. The first candidate is rejected in the model, the
second accepted; the runtime patch is accepted too, goes first when they are combined, and is
packaged with the kernel: the artifact applied in a fresh Python generates the unpatched model's
tokens. Run by ctest: python3 -m unittest kope_deploy.validate_test."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

from . import extract, models, patching, validate
from .patch_test import RIGHT, SETS, load_package
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
                    {"attempt": 8, "source": cls.sources["right"], "speedup": 1.5}]}],
                "runtime": [{"name": "decode_graph", "reason": "decode is host-bound",
                             "max_cache_len": 64, "variants": [
                                 {"name": "too short", "fuse": False},
                                 {"name": "captured", "fuse": False}]}]}
        # The first variant's cache is shorter than any prompt: never called, rejected, and the
        # next one tried.
        make = validate.RUNTIME_PATCHES["decode_graph"]
        validate.RUNTIME_PATCHES["decode_graph"] = lambda d, v: make(
            dict(d, max_cache_len=4) if v["name"] == "too short" else d, v)
        try:
            # Speed is measured and reported, but judges nothing here: a test asserts no timing.
            cls.result = validate.run(plan, rounds=1, judge_speed=False)
        finally:
            validate.RUNTIME_PATCHES["decode_graph"] = make

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
        tried = self.result["tasks"][1]["tried"]
        self.assertEqual([t["attempt"] for t in tried], [7, 8])
        self.assertFalse(tried[0]["accepted"])
        self.assertIn("fails in the model", tried[0]["reason"])
        self.assertTrue(tried[0]["gate"]["engagement"][0]["engaged"])
        self.assertNotIn("e2e", tried[0])  # the gate came first
        self.assertTrue(tried[1]["accepted"], tried[1]["reason"])
        self.assertEqual(tried[1]["gate"]["greedy_agreement"], 1.0)
        self.assertEqual(self.result["tasks"][1]["accepted"], 8)
        self.assertEqual(self.result["patches"], ["decode_graph", "rmsnorm"])

    def test_the_runtime_decision_passes_the_same_gate(self):
        runtime = self.result["tasks"][0]
        self.assertEqual(runtime["task"], "decode_graph")
        self.assertEqual(runtime["accepted"], "runtime")
        self.assertEqual([t["variant"] for t in runtime["tried"]], ["too short", "captured"])
        self.assertFalse(runtime["tried"][0]["accepted"])
        self.assertIn("decode_graph was never called", runtime["tried"][0]["reason"])
        record = runtime["tried"][1]
        self.assertEqual(record["kind"], "runtime")
        self.assertEqual(record["gate"]["greedy_agreement"], 1.0)
        self.assertTrue(record["gate"]["engagement"][0]["engaged"])
        self.assertIn("e2e", record)
        together = self.result["gate"]["engagement"]
        self.assertEqual([e["task"] for e in together], ["decode_graph", "rmsnorm"])
        self.assertTrue(all(e["engaged"] for e in together))

    def test_the_accepted_patch_is_measured_packaged_and_reported(self):
        self.assertEqual([e["entry"] for e in self.result["e2e"]],
                         list(range(len(self.workload["requests"]))))
        with open(os.path.join(self.result["artifact"], "patches.json")) as f:
            patches = json.load(f)["patches"]
        self.assertEqual([(p["name"], p["kind"], p.get("candidate")) for p in patches],
                         [("decode_graph", "runtime", None), ("rmsnorm", "modelnew", "right.py")])
        self.assertEqual(patches[0]["options"], {"max_cache_len": 64, "loop": True, "fuse": False,
                                                 "fuse_prefill": False})
        page = validate.report_html.page(self.result, {})
        self.assertIn("fails in the model", page)
        self.assertIn("<svg", page)

    def test_the_artifact_generates_the_unpatched_tokens_in_a_fresh_python(self):
        config = self.workload["model"]["config"]
        script = FRESH.format(config=json.dumps(config))
        env = dict(os.environ, PYTHONPATH=os.path.dirname(self.result["artifact"]))
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["same", "decode_graph:engaged", "rmsnorm:engaged",
                                            "restored"])

    def test_a_runtime_file_changed_since_validation_is_refused(self):
        folder = os.path.join(self.tmp.name, "changed", os.path.basename(self.result["artifact"]))
        shutil.copytree(self.result["artifact"], folder)
        with open(os.path.join(folder, "merge_linear.py"), "a") as f:
            f.write("\n# changed\n")
        package = load_package(folder, "kope_patch_changed_runtime")
        with self.assertRaisesRegex(ValueError, "merge_linear.py: changed since it was validated"):
            package.patches()


def figure(speedup, loss):
    return {"speedup": speedup, "noise": 0.05, "win": not loss and speedup > 1.05, "loss": loss}


class EndToEndRuleTest(unittest.TestCase):
    """A patch that trades a slower prefill for a faster decode wins the request; one whose whole
    request is slower loses."""

    def test_a_slower_phase_is_said_and_a_slower_request_rejects(self):
        trade = [{"entry": 1, "prefill_ms": figure(0.87, True),
                  "decode_tokens_per_s": figure(2.8, False), "request_ms": figure(2.7, False)}]
        self.assertEqual(validate._loses(trade), [])
        self.assertEqual(validate._phase_losses(trade), ["entry 1 prefill_ms 0.870x"])
        slower = [dict(trade[0], request_ms=figure(0.9, True))]
        self.assertEqual(validate._loses(slower), ["entry 1 request_ms 0.900x (noise 0.050)"])


# The user's own generate() loop with the artifact applied; kope is not importable there.
FRESH = """
import json, torch, transformers
import kope_patch_tiny_llama as kp
config = transformers.LlamaConfig(**json.loads({config!r}))
torch.manual_seed(0)
model = transformers.LlamaForCausalLM(config).eval()
ids = torch.randint(0, config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(5))
def generate():
    with torch.inference_mode():
        return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                              max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                              eos_token_id=None)
expected = generate()
patches = kp.apply(model)
got = generate()
print("same" if torch.equal(got, expected) else "different")
for p in patches:
    print(p.name + ":" + ("engaged" if p.engagement()["engaged"] else "idle"))
kp.remove(model)
print("restored" if "forward" not in model.__dict__ and
      all("forward" not in m.__dict__ for m in model.modules()) else "patched")
"""


if __name__ == "__main__":
    unittest.main()
