"""Tests of `kope_deploy.profile` on tiny CPU workloads (examples/deploy/tiny-*.toml): one
process profiles each workload once (setUpClass) and the tests read what it wrote. Run by ctest:
python3 -m unittest kope_deploy.profile_test."""
import contextlib
import io
import json
import math
import os
import subprocess
import tempfile
import tomllib
import unittest
import xml.etree.ElementTree as ET

import torch

from kope_bridge import problem
from . import profile

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "deploy")
CONTRACT = {  # profile.json's fields (docs/PROFILE_JSON.md) and their types
    "phases": {"entry": int, "phase": str, "weight": float, "wall_ms": float,
               "gpu_busy_ms": float, "idle_fraction": float, "steps": int},
    "weighted": {"prefill_share": float, "decode_share": float, "gpu_idle_fraction": float},
    "ops": {"phase": str, "module": str, "module_type": str, "op": str, "shapes": list,
            "dtype": str, "count": float, "gpu_ms": float},
    "opportunities": {"rank": int, "name": str, "grain": str, "module_type": str,
                      "phases": list, "share": float, "headroom": float, "score": float,
                      "amdahl_ceiling": float, "floor_ms": float},
}


def normalized(path):
    """workload.json's object for the workload file at `path`, as `kope deploy profile` writes
    it (the binary in $KOPE: ctest sets it)."""
    kope = os.environ.get("KOPE")
    if not kope:
        raise unittest.SkipTest("KOPE (the kope binary) is not set")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([kope, "deploy", "profile", path, "--out", out, "--dry-run"], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "workload.json")) as f:
            return json.load(f)


def profiled(name, folder):
    """(lines on stdout, exit status, profile.json) of profiling examples/deploy/<name>.toml."""
    workload = normalized(os.path.join(EXAMPLES, f"{name}.toml"))
    out = os.path.join(folder, name)
    os.makedirs(out)
    path = os.path.join(out, "workload.json")
    with open(path, "w") as f:
        json.dump(workload, f)
    lines, status = run_main(["--workload", path, "--out", out])
    data = None
    if status == 0:
        with open(os.path.join(out, "profile.json")) as f:
            data = json.load(f)
    return lines, status, data, out


def run_main(argv):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = profile.main(argv)
    return [json.loads(line) for line in stdout.getvalue().splitlines()], status


class TinyWorkloadsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.runs = {n: profiled(n, cls.tmp.name) for n in ("tiny-llama", "tiny-moe",
                                                          "tiny-script")}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_stdout_is_progress_lines_then_done(self):
        for name, (lines, status, _, out) in self.runs.items():
            with self.subTest(name):
                self.assertEqual(status, 0, lines)
                self.assertEqual(lines[-1], {"type": "done",
                                             "profile": os.path.join(out, "profile.json")})
                steps = {l["step"] for l in lines[:-1]}
                self.assertTrue(all(l["type"] == "progress" for l in lines[:-1]))
                self.assertEqual(steps, {"build", "prefill", "decode", "extract"})

    def test_profile_json_has_the_contract_fields(self):
        for name, (_, _, data, _) in self.runs.items():
            self.assertEqual(data["schema"], 1)
            self.assertIn("torch", data["environment"])
            for section, fields in CONTRACT.items():
                items = data[section] if isinstance(data[section], list) else [data[section]]
                self.assertTrue(items, f"{name}: {section} is empty")
                for item in items:
                    for field, kind in fields.items():
                        with self.subTest(name=name, section=section, field=field):
                            value = item[field]
                            self.assertIsInstance(value, (int, float) if kind is float else kind)
                for o in data["opportunities"]:
                    self.assertIn(o["task"], (None, f"tasks/{o['name']}"))

    def test_every_entry_has_both_phases_weighted_by_the_mix(self):
        for name, (_, _, data, _) in self.runs.items():
            with self.subTest(name):
                requests = data["workload"]["requests"]
                seen = {(p["entry"], p["phase"]): p for p in data["phases"]}
                self.assertEqual(set(seen), {(i, p) for i in range(len(requests))
                                             for p in ("prefill", "decode")})
                for i, r in enumerate(requests):
                    self.assertEqual(seen[(i, "decode")]["steps"], r["decode"])
                    self.assertEqual(seen[(i, "prefill")]["steps"], 1)
                self.assertAlmostEqual(sum(p["weight"] for p in data["phases"]), 1.0)
                w = data["weighted"]
                self.assertAlmostEqual(w["prefill_share"] + w["decode_share"], 1.0)
                for p in data["phases"]:
                    self.assertTrue(0.0 <= p["idle_fraction"] <= 1.0)
                    self.assertLessEqual(p["gpu_busy_ms"], p["wall_ms"] + 1e-9)

    def test_projections_see_one_token_per_sequence_in_decode(self):
        for name, (_, _, data, _) in self.runs.items():
            requests = data["workload"]["requests"]
            rows = [r for r in data["ops"] if r["op"] == "aten::mm" and
                    r["module"].endswith(("q_proj", "gate_proj"))]
            self.assertTrue(rows, name)
            for r in rows:
                request = requests[r["entry"]]
                tokens = request["batch"] * (1 if r["phase"] == "decode" else request["prompt"])
                with self.subTest(name=name, module=r["module"], phase=r["phase"]):
                    self.assertEqual(r["shapes"][0][0], tokens)

    def test_opportunities_are_ranked_by_score_with_their_ceilings(self):
        for name, (_, _, data, _) in self.runs.items():
            ops = data["opportunities"]
            self.assertEqual([o["rank"] for o in ops], list(range(1, len(ops) + 1)))
            self.assertEqual(len({o["name"] for o in ops}), len(ops))
            for a, b in zip(ops, ops[1:]):
                self.assertGreaterEqual(a["score"], b["score"])
            for o in ops:
                self.assertAlmostEqual(o["score"], o["share"] * o["headroom"])
                self.assertAlmostEqual(o["amdahl_ceiling"], 1 / (1 - o["share"]))
            self.assertEqual({"op", "subgraph"}, {o["grain"] for o in ops})

    def test_subgraphs_of_each_model_are_found(self):
        expected = {"tiny-llama": {"LlamaRMSNorm", "LlamaMLP", "AttentionCore", "RotaryApply",
                                   "LlamaDecoderLayer"},
                    "tiny-moe": {"Qwen2MoeSparseMoeBlock", "Qwen2MoeExperts", "AttentionCore"},
                    "tiny-script": {"RMSNorm", "MLP"}}
        for name, types in expected.items():
            data = self.runs[name][2]
            found = {o["module_type"] for o in data["opportunities"] if o["grain"] == "subgraph"}
            self.assertLessEqual(types, found, name)

    def test_extracted_tasks_run_on_the_activations_captured_at_their_sizes(self):
        for name, (_, _, data, out) in self.runs.items():
            tasks = [o for o in data["opportunities"] if o["task"]]
            self.assertEqual(len(tasks), data["workload"]["extract"]["top"], name)
            for o in tasks:
                with self.subTest(name=name, task=o["name"]):
                    self.check_task(os.path.join(out, o["task"]), o)

    def check_task(self, folder, o):
        from safetensors.torch import load_file
        with open(os.path.join(folder, "task.toml"), "rb") as f:
            task = tomllib.load(f)
        self.assertEqual(task["name"], o["name"])
        checks = task["sizes"]["check"]
        for s in o["size_sets"]:  # every workload set is checked at its exact sizes
            self.assertIn(dict(task["sizes"]["bench"], **s["sizes"]), checks)
        with open(os.path.join(folder, "problem.py")) as f:
            source = f.read()
        captured = load_file(os.path.join(folder, "activations.safetensors"))
        self.assertTrue(captured)
        names = [t["name"] for t in task["inputs"]][:len(task["torch"]["parameters"]) * -1 or None]
        for s in o["size_sets"]:
            entry, phase = s["label"].split()[1:]
            inputs = [captured.get(f"entry{entry}.{phase}.{n}") for n in names]
            if any(t is None for t in inputs):
                continue
            module = problem.load_module(source, "problem.py", s["sizes"])
            expected = [list(t.shape) for t in module.get_inputs()]
            self.assertEqual([list(t.shape) for t in inputs], expected, s["label"])
            model = problem.build_model(module)
            with torch.no_grad():
                out = model(*inputs)
            first = out[0] if isinstance(out, tuple) else out
            self.assertTrue(torch.isfinite(first).all())

    def test_decode_size_sets_have_sequence_length_one(self):
        for name, (_, _, data, _) in self.runs.items():
            for o in data["opportunities"]:
                for s in o.get("size_sets") or []:
                    length = s["sizes"].get("seq_len", s["sizes"].get("q_len"))
                    if "decode" in s["label"] and length is not None:
                        self.assertEqual(length, 1, (name, o["name"], s))

    def test_svg_is_a_chart_of_every_phase(self):
        for name, (_, _, data, out) in self.runs.items():
            root = ET.parse(os.path.join(out, "profile.svg")).getroot()
            rects = root.findall("{http://www.w3.org/2000/svg}rect")
            texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
            self.assertGreater(len(rects), len(data["phases"]))
            for p in data["phases"]:
                self.assertTrue(any(t and t.startswith(f"entry {p['entry']} {p['phase']}")
                                    for t in texts))


class ErrorTest(unittest.TestCase):
    CASES = [  # (run table override or script text, expected message part)
        ({"device": "cpu", "mode": "cuda-graphs"}, "run.mode cuda-graphs needs CUDA"),
        ("def build():\n    return None\n", "defines no run()"),
        ("def build():\n    return 3\n\ndef run(model, request):\n    pass\n",
         "not a torch.nn.Module"),
        ({"architecture": "NoSuchForCausalLM"}, "model.architecture"),
    ]

    def test_each_workload_that_cannot_run_gets_an_error_line_and_status_2(self):
        if not torch.cuda.is_available():
            self.CASES = self.CASES + [({"device": "cuda"}, "no CUDA device")]
        with tempfile.TemporaryDirectory() as tmp:
            for k, (change, message) in enumerate(self.CASES):
                workload = normalized(os.path.join(EXAMPLES, "tiny-llama.toml"))
                if isinstance(change, str):
                    script = os.path.join(tmp, f"s{k}.py")
                    with open(script, "w") as f:
                        f.write(change)
                    workload["model"] = {"source": "script", "path": script}
                elif "architecture" in change:
                    workload["model"]["architecture"] = change["architecture"]
                else:
                    workload["run"].update(change)
                path = os.path.join(tmp, f"w{k}.json")
                with open(path, "w") as f:
                    json.dump(workload, f)
                with self.subTest(message):
                    lines, status = run_main(["--workload", path, "--out", tmp])
                    self.assertEqual(status, 2)
                    self.assertEqual(lines[-1]["type"], "error")
                    self.assertIn(message, lines[-1]["message"])


if __name__ == "__main__":
    unittest.main()
