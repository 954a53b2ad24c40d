"""Tests of the ranking on profiles written out as tables (no model runs). Run by ctest:
python3 -m unittest kope_deploy.ranking_test."""
import unittest

from . import ranking


def row(phase, module, kind, op, shapes, device_us, host_us, chain=None):
    return {"phase": phase, "module": module, "module_type": kind, "op": op, "shapes": shapes,
            "dtype": "bf16", "count": 1, "device_us": device_us, "host_us": host_us,
            "modules": chain or [(module, kind)]}


MLP = [("model.layers.0.mlp.down_proj", "Linear"), ("model.layers.0.mlp", "LlamaMLP"),
       ("model.layers.0", "LlamaDecoderLayer")]
NORM = [("model.layers.0.input_layernorm", "LlamaRMSNorm"), ("model.layers.0", "LlamaDecoderLayer")]


def entry(weight, decode_wall_ms, rows, prefill_wall_ms=1.0, steps=10):
    """One request entry: `rows` profiled over one decode step (device and host time in us)."""
    return {"entry": 0, "weight": weight, "profiled": {"prefill": 1, "decode": 1},
            "timing": {"prefill": (1, prefill_wall_ms), "decode": (steps, steps * decode_wall_ms)},
            "ranges": {"decode": {"host_us": sum(r["host_us"] for r in rows),
                                  "device_us": sum(r["device_us"] for r in rows)},
                       "prefill": {"host_us": 1.0, "device_us": 1.0}},
            "rows": {k: r for k, r in enumerate(rows)}, "types": {}}


# (case, decode rows, decode wall per step in ms, names expected in this order among the ops)
CASES = [
    ("GPU-bound: device time decides",
     [row("decode", MLP[0][0], "Linear", "aten::mm", [[1, 8192], [8192, 2048]], 900, 10, MLP),
      row("decode", NORM[0][0], "LlamaRMSNorm", "aten::mul", [[1, 1, 2048]], 100, 10, NORM)],
     1.0, ["mm_mlp_down_proj_decode", "mul_input_layernorm_decode"]),
    ("host-bound: the GPU's waiting goes by host time",
     [row("decode", MLP[0][0], "Linear", "aten::mm", [[1, 8192], [8192, 2048]], 300, 10, MLP),
      row("decode", NORM[0][0], "LlamaRMSNorm", "aten::mul", [[1, 1, 2048]], 100, 990, NORM)],
     10.0, ["mul_input_layernorm_decode", "mm_mlp_down_proj_decode"]),
]


class RankingTest(unittest.TestCase):
    def test_cases(self):
        for name, rows, wall, order in CASES:
            with self.subTest(name):
                entries = [entry(1.0, wall, rows)]
                _, _, total = ranking.weigh_phases(entries)
                ranked = ranking.rank(entries, total, "cuda")
                ops = [o["name"] for o in ranked if o["grain"] == "op"]
                self.assertEqual([n for n in ops if n in order], order)
                shares = sum(o["share"] for o in ranked if o["grain"] == "op")
                decode = 10 * wall / total
                self.assertAlmostEqual(shares, decode, places=6)  # units add up to the phase

    def test_subgraphs_hold_their_operators(self):
        rows = CASES[0][1]
        entries = [entry(1.0, 1.0, rows)]
        _, _, total = ranking.weigh_phases(entries)
        ranked = ranking.rank(entries, total, "cuda")
        kinds = {o["kind"] for o in ranked if o["grain"] == "subgraph"}
        self.assertEqual(kinds, {"mlp", "norm", "layer", "add_norm"})
        by_type = {o["module_type"]: o for o in ranked if o["kind"] in ("mlp", "norm", "layer")}
        layer = by_type["LlamaDecoderLayer"]
        self.assertAlmostEqual(layer["share"], by_type["LlamaMLP"]["share"] +
                               by_type["LlamaRMSNorm"]["share"])
        self.assertAlmostEqual(layer["amdahl_ceiling"], 1 / (1 - layer["share"]))

    def test_phase_weights_follow_the_request_mix(self):
        a, b = entry(0.75, 2.0, CASES[0][1]), dict(entry(0.25, 2.0, CASES[0][1]), entry=1)
        phases, weighted, total = ranking.weigh_phases([a, b])
        self.assertAlmostEqual(total, 21.0)  # 1 ms prefill + 10 steps of 2 ms, either entry
        self.assertAlmostEqual(sum(p["weight"] for p in phases), 1.0)
        self.assertAlmostEqual(weighted["decode_share"], 20 / 21)
        decode = [p for p in phases if p["phase"] == "decode"]
        self.assertAlmostEqual(decode[0]["weight"] / decode[1]["weight"], 3.0)
        self.assertAlmostEqual(decode[0]["idle_fraction"], 0.5)  # 1 ms busy of 2 ms


if __name__ == "__main__":
    unittest.main()
