#!/usr/bin/env python3
"""Writes the cases of compare.json, draw.json and protocol.json (README.md says what each
holds). Plain Python, no torch: the inputs and the laws are computed here from the rules as
include/kope/eval/compare.h, include/kope/task/task.h and src/runner/protocol.h state them; the
C++ implementation's own answers (comparison reports, drawn values, message bytes) are then
filled in by the C++ contract tests run with KOPE_CONTRACT_REGENERATE=1 (README.md)."""
import json
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FMT = {"f32": "f", "f64": "d", "f16": "e"}


def h(x):
    """A double as the files write it: a hex float, or nan / inf / -inf."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x).hex()


def bf16_bits(x):
    """x rounded to bfloat16 (nearest, ties to even) as its 16 bits."""
    (b,) = struct.unpack("=I", struct.pack("=f", x))
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def rounded(x, dtype):
    """x rounded to the dtype, back as a double."""
    if dtype == "bf16":
        return struct.unpack("=f", struct.pack("=I", bf16_bits(x) << 16))[0]
    if dtype in FMT:
        return struct.unpack("=" + FMT[dtype], struct.pack("=" + FMT[dtype], x))[0]
    return float(x)


def next_up(x, dtype):
    """The next value of the dtype above x (x >= 0)."""
    if dtype == "f64":
        return math.nextafter(x, math.inf)
    if dtype == "bf16":
        bits = bf16_bits(x) + 1
        return struct.unpack("=f", struct.pack("=I", bits << 16))[0]
    code, word = (FMT[dtype], "I" if dtype == "f32" else "H")
    (bits,) = struct.unpack("=" + word, struct.pack("=" + code, x))
    return struct.unpack("=" + code, struct.pack("=" + word, bits + 1))[0]


INTEGRAL = ("i32", "i64", "bool")


def exact(values, dtype):
    """The values as the files hold them: integers for integer dtypes, else hex floats (each
    exactly a value of the dtype); "bits:0x..." strings stand for raw element bits."""
    for v in values:
        if isinstance(v, str) or dtype in INTEGRAL:
            continue
        assert math.isnan(v) or math.isinf(v) or rounded(v, dtype) == v, (v, dtype)
    return [v if isinstance(v, str) or dtype in INTEGRAL else h(v) for v in values]


def fast_failing(e, a, rtol, atol):
    """Elements failing comparison.fast_test: not (finite expected and within the bound)."""
    n = 0
    for x, y in zip(e, a):
        ok = math.isfinite(x) and abs(y - x) <= atol + rtol * abs(x)
        n += 0 if ok else 1
    return n


def value_of(s):
    if isinstance(s, int):
        return float(s)
    return float.fromhex(s) if s not in ("nan", "inf", "-inf") else float(s)


def compare_case(name, note, dtype, shape, e, a, rtol, atol):
    ev, av = exact(e, dtype), exact(a, dtype)
    case = {"name": name, "note": note, "dtype": dtype, "shape": shape, "rtol": h(rtol),
            "atol": h(atol), "expected": ev, "actual": av}
    if not any(isinstance(s, str) and s.startswith("bits:") for s in ev + av):
        case["fast_test_failing"] = fast_failing([value_of(s) for s in ev],
                                                 [value_of(s) for s in av], rtol, atol)
    return case


def compare_cases():
    nan, inf = math.nan, math.inf
    c = []
    r, t = 2.0 ** -10, 2.0 ** -20  # powers of two: the bound is exact in every dtype
    b = 1.0 + r + t
    c.append(compare_case("f32_on_the_bound_passes", "|a - e| == atol + rtol * |e| passes",
                          "f32", [2], [1.0, -1.0], [b, -b], r, t))
    c.append(compare_case("f32_one_ulp_past_the_bound_fails", "the next float after the bound",
                          "f32", [2, 2], [0.5, 1.0, 2.0, 1.0], [0.5, next_up(b, "f32"), 2.0, 7.0],
                          r, t))
    e, rt, at = 1.5, 1e-5, 1e-8  # decimal tolerances: the largest passing float32 found by walking
    bound = at + rt * abs(e)
    inside = e
    while abs(next_up(inside, "f32") - e) <= bound:
        inside = next_up(inside, "f32")
    c.append(compare_case("f32_decimal_tolerance_edges", "the last passing float32 above 1.5 and "
                          "the first failing one", "f32", [2], [e, e],
                          [inside, next_up(inside, "f32")], rt, at))
    c.append(compare_case("f64_just_outside", "one ulp of double past the bound", "f64", [3],
                          [1.0, 3.0, 1e300], [1.0 + 2 ** -40 + 2 ** -41, 3.0, 1e300],
                          2 ** -40, 0.0))
    c.append(compare_case("nan_matches_nan_only", "NaN on both sides passes; on one side fails "
                          "(a NaN/Inf mismatch)", "f32", [4], [nan, 1.0, nan, 2.0],
                          [nan, nan, 0.0, 2.0], 0.5, 0.5))
    c.append(compare_case("infinities_match_themselves", "inf == inf passes, inf vs -inf and inf "
                          "vs a finite value fail", "f32", [4], [inf, -inf, inf, 1.0],
                          [inf, -inf, -inf, inf], 1.0, 1.0))
    c.append(compare_case("finite_expected_infinite_actual_first", "the first failure is a "
                          "NaN/Inf mismatch; a later finite failure is counted", "f64", [3],
                          [1.0, 5.0, 0.0], [inf, 5.0, 1.0], 0.0, 0.5))
    c.append(compare_case("negative_zero_equals_zero", "-0.0 and 0.0 compare equal, also with "
                          "no tolerance", "f32", [2], [0.0, -0.0], [-0.0, 0.0], 0.0, 0.0))
    d32 = 2.0 ** -149  # the smallest float32 denormal
    c.append(compare_case("f32_denormals", "denormals are values like any other: one denormal "
                          "apart fails with no tolerance, passes with atol 2^-149", "f32", [3],
                          [d32, 3 * d32, 0.0], [2 * d32, 3 * d32, d32], 0.0, 0.0))
    c.append(compare_case("f32_denormals_within_atol", "", "f32", [3],
                          [d32, 3 * d32, 0.0], [2 * d32, 3 * d32, d32], 0.0, d32))
    d16 = 2.0 ** -24
    c.append(compare_case("f16_denormal_and_max", "f16 denormals and 65504 widen exactly",
                          "f16", [4], [d16, 65504.0, 1.0, -2.0],
                          [2 * d16, 65504.0, 1.0 + 2 ** -10, -2.0], 0.0, d16))
    c.append(compare_case("f16_one_ulp_at_rtol", "1 and the next half (1 + 2^-10): rtol 2^-10 "
                          "passes, the element after fails", "f16", [3],
                          [1.0, 1.0, 1024.0], [1.0 + 2 ** -10, 1.0 + 2 ** -9, 1025.0],
                          2 ** -10, 0.0))
    c.append(compare_case("bf16_one_ulp_at_rtol", "1 and the next bfloat16 (1 + 2^-7); 256 and "
                          "258 (its ulp there is 2)", "bf16", [4],
                          [1.0, 1.0, 256.0, 256.0],
                          [1.0 + 2 ** -7, 1.0 + 2 ** -6, 258.0, 260.0], 2 ** -7, 0.0))
    c.append(compare_case("bf16_rounding_edge_fails_without_tolerance", "", "bf16", [2],
                          [1.0, -3.0], [1.0 + 2 ** -7, -3.0], 0.0, 0.0))
    c.append(compare_case("i32_exact", "integers compare exactly with no tolerance", "i32", [2, 2],
                          [0, -7, 2 ** 31 - 1, 5], [0, -7, 2 ** 31 - 1, 6], 0.0, 0.0))
    c.append(compare_case("i32_within_atol", "an integer output with an atol", "i32", [3],
                          [10, 20, 30], [11, 22, 30], 0.0, 1.0))
    c.append(compare_case("i64_beyond_2_pow_53", "both sides widen to double: 2^53 and 2^53 + 1 "
                          "compare equal (the shared loss of precision)", "i64", [2],
                          [2 ** 53, -(2 ** 40)], [2 ** 53 + 1, -(2 ** 40) - 1], 0.0, 0.0))
    c.append(compare_case("bool_bytes", "a bool is its byte: a poison byte 0xde never equals a "
                          "reference's 1", "bool", [3], [1, 0, 1], [1, 0, "bits:0xde"], 0.0, 0.0))
    c.append(compare_case("f32_poison_nan_pattern", "an unwritten output's poison (a NaN "
                          "pattern) fails against a finite reference", "f32", [2],
                          [1.0, 2.0], [1.0, "bits:0x7fc0dead"], 1e-5, 1e-8))
    c.append(compare_case("rtol_scales_with_expected", "rtol * |expected|, not |actual|", "f64",
                          [2], [100.0, -100.0], [110.0, -90.0], 0.1, 0.0))
    c.append(compare_case("rtol_with_actual_scale_fails", "the bound of |e| = 100 is 10: 111 "
                          "fails though 0.1 * 111 would pass", "f64", [1], [100.0], [111.0],
                          0.1, 0.0))
    c.append(compare_case("empty_output_passes", "", "f32", [0], [], [], 0.0, 0.0))
    n = (1 << 20) + 5  # past compare.cc's parallel block: the first failure of the second block
    c.append(compare_case_fill("f32_first_failure_in_second_block", "elements of two parallel "
                               "blocks; the report is the whole tensor's first failure",
                               "f32", [n], n, {(1 << 20) + 1: 3.0, (1 << 20) + 3: nan}, 0.0, 0.0))
    return c


def compare_case_fill(name, note, dtype, shape, count, changed, rtol, atol):
    """A tensor of zeros, the actual one with `changed` {index: value}."""
    actual = {str(i): h(v) for i, v in changed.items()}
    return {"name": name, "note": note, "dtype": dtype, "shape": shape, "rtol": h(rtol),
            "atol": h(atol), "expected": {"count": count, "fill": h(0.0)},
            "actual": {"count": count, "fill": h(0.0), "at": actual},
            "fast_test_failing": len(changed)}


KINDS = ("normal", "uniform", "wide", "negative", "ties", "positive")


def at_sizes(dist, sizes):
    """Distribution fields at a size set (task.cc's DistributionAt; defaults of task.h)."""
    d = {"kind": KINDS.index(dist["kind"]), "mean": 0.0, "stddev": 1.0, "low": 0.0,
         "high": 1.0, "low_exp": -6.0, "high_exp": 6.0, "num_distinct": 8}
    d.update({k: v for k, v in dist.items() if k not in ("kind", "fan_in")})
    if "fan_in" in dist:
        f = 1
        for name in dist["fan_in"].split("*"):
            f *= sizes[name.strip()]
        scale = 1.0 / math.sqrt(f)
        for k in ("mean", "stddev", "low", "high"):
            d[k] = d[k] * scale
    return d


def law(d, dtype, n):
    """What every draw of these fields in this dtype satisfies (README.md)."""
    kind = KINDS[d["kind"]]
    out = {}
    if dtype in ("i32", "i64", "bool"):
        lo, hi = math.floor(d["low"]), math.ceil(d["high"])
        if hi <= lo:
            lo, hi = 0, 100
        out.update(min=h(lo), max=h(hi - 1), integral=True)
        if hi - lo <= 16:
            out["values"] = [h(v) for v in range(lo, hi)]
        return out
    if kind in ("uniform", "positive"):
        lo, hi = d["low"], d["high"]
        sd = (hi - lo) / math.sqrt(12)
        out.update(min=h(rounded(lo, dtype)), max=h(rounded(hi, dtype)),
                   mean=[h((lo + hi) / 2 - 6 * sd / math.sqrt(n)),
                         h((lo + hi) / 2 + 6 * sd / math.sqrt(n))],
                   stddev=[h(0.9 * sd), h(1.1 * sd)])
    elif kind == "normal":
        m, s = d["mean"], d["stddev"]
        out.update(mean=[h(m - 6 * s / math.sqrt(n)), h(m + 6 * s / math.sqrt(n))],
                   stddev=[h(0.9 * s), h(1.1 * s)])
    elif kind == "negative":
        out.update(max=h(rounded(-1e-3, dtype)))
    elif kind == "wide":
        out.update(min_abs=h(rounded(10.0 ** d["low_exp"], dtype)),
                   max_abs=h(rounded(10.0 ** d["high_exp"], dtype)), both_signs=True)
    elif kind == "ties":
        k = max(1, d["num_distinct"])
        out["values"] = [h((j - k // 2) * 0.5) for j in range(k)]
    out["finite"] = True
    return out


def draw_case(name, seed, dtype, count, dist, sizes=None):
    d = at_sizes(dist, sizes or {})
    case = {"name": name, "seed": seed, "dtype": dtype, "count": count,
            "distribution": {k: (h(v) if isinstance(v, float) else v) for k, v in dist.items()}}
    if sizes:
        case["sizes"] = sizes
    case["at_sizes"] = {k: (h(v) if isinstance(v, float) else v) for k, v in d.items()}
    case["law"] = law(d, dtype, count)
    return case


def draw_cases():
    n = 4096
    c = [draw_case("normal_f32", 1, "f32", n, {"kind": "normal", "mean": 1.0, "stddev": 2.0}),
         draw_case("normal_f64", 2, "f64", n, {"kind": "normal", "mean": -3.0, "stddev": 0.5}),
         draw_case("normal_f16", 3, "f16", n, {"kind": "normal"}),
         draw_case("normal_bf16", 4, "bf16", n, {"kind": "normal", "mean": 0.0, "stddev": 4.0}),
         draw_case("uniform_f32", 5, "f32", n, {"kind": "uniform", "low": -1.0, "high": 3.0}),
         draw_case("uniform_f16", 6, "f16", n, {"kind": "uniform", "low": 0.0, "high": 1.0}),
         draw_case("uniform_bf16", 7, "bf16", n, {"kind": "uniform", "low": 0.25, "high": 0.75}),
         draw_case("positive_f32", 8, "f32", n, {"kind": "positive", "low": 0.1, "high": 10.0}),
         draw_case("positive_bf16", 9, "bf16", n, {"kind": "positive", "low": 0.5, "high": 2.0}),
         draw_case("wide_f32", 10, "f32", n, {"kind": "wide", "low_exp": -6.0, "high_exp": 6.0}),
         draw_case("wide_f16", 11, "f16", n, {"kind": "wide", "low_exp": -4.0, "high_exp": 4.0}),
         draw_case("negative_f32", 12, "f32", n, {"kind": "negative", "stddev": 1.0}),
         draw_case("negative_f16", 13, "f16", n, {"kind": "negative", "stddev": 0.1}),
         draw_case("ties_f32", 14, "f32", n, {"kind": "ties", "num_distinct": 8}),
         draw_case("ties_bf16_odd", 15, "bf16", n, {"kind": "ties", "num_distinct": 5}),
         draw_case("uniform_i32", 16, "i32", n, {"kind": "uniform", "low": -3.0, "high": 5.0}),
         draw_case("uniform_i64_wide_range", 17, "i64", n,
                   {"kind": "uniform", "low": 0.0, "high": 1000000.0}),
         draw_case("uniform_bool", 18, "bool", n, {"kind": "uniform", "low": 0.0, "high": 2.0}),
         draw_case("normal_fan_in", 19, "f32", n,
                   {"kind": "normal", "mean": 0.0, "stddev": 1.0, "fan_in": "K"}, {"K": 64}),
         draw_case("uniform_fan_in_product", 20, "f32", n,
                   {"kind": "uniform", "low": -1.0, "high": 1.0, "fan_in": "C * KH * KW"},
                   {"C": 16, "KH": 3, "KW": 3})]
    return c


def slot(dtype, shape, offset, strides=()):
    return {"dtype": dtype, "shape": list(shape), "strides": list(strides), "offset": offset}


# One arena's layout for every request about a call: x f32[2,4], w f16[4] (stride 2) and
# idx i64[3] in; y f32[2,4] and mask bool[5] out.
ARENA = 4096
CALL = {"inputs": [slot(0, [2, 4], 0), slot(2, [4], 64, [2]), slot(5, [3], 128)],
        "outputs": [slot(0, [2, 4], 1024), slot(6, [5], 2048)]}
OTHER_CALL = {"inputs": [slot(0, [8], 512)], "outputs": [slot(0, [8], 1536)]}
GUARD = bytes((0xA7 ^ (i * 31)) & 0xFF for i in range(16))  # inputs.cc's GuardBytes(16)
DRAWN = [dict(kind=1, mean=h(0.0), stddev=h(1.0), low=h(2.0), high=h(3.0), low_exp=h(-6.0),
              high_exp=h(6.0), num_distinct=8),
         dict(kind=4, mean=h(0.0), stddev=h(1.0), low=h(0.0), high=h(1.0), low_exp=h(-6.0),
              high_exp=h(6.0), num_distinct=3),
         dict(kind=1, mean=h(0.0), stddev=h(1.0), low=h(0.0), high=h(10.0), low_exp=h(-6.0),
              high_exp=h(6.0), num_distinct=8)]


def message(name, number, layout, fields):
    return {"type": name, "number": number, "layout": layout, "fields": fields}


def protocol_cases():
    spec = "call spec"
    m = [message("hello", 1, "u8 seccomp, u8 rlimits, string notes ('\\n'-separated)",
                 {"seccomp": True, "rlimits": True,
                  "notes": ["bubblewrap unavailable: no user namespaces", "seccomp on"]}),
         message("load", 2, "string path", {"path": "/scratch/kernels/kernel-1.so"}),
         message("map", 3, "u64 bytes", {"bytes": ARENA, "copies": True}),
         message("map", 3, "u64 bytes, u8 pin (0)", {"bytes": ARENA, "copies": False}),
         message("call", 4, spec, {"call": CALL}),
         message("time", 5, "u32 count, u8 flush, u32 n, n call specs",
                 {"count": 25, "flush": True, "rotation": [CALL, OTHER_CALL]}),
         message("quit", 6, "(empty)", {}),
         message("share", 7, "u64 bytes, u64 token", {"bytes": ARENA,
                                                     "token": 0x1122334455667788}),
         message("map_shared", 8, "u64 bytes", {"bytes": ARENA}),
         message("draw", 12, "call spec, u64 seed, u8 mode, per input: u8 kind, f64 mean, "
                 "stddev, low, high, low_exp, high_exp, i32 num_distinct",
                 {"call": CALL, "seed": 0xFEDCBA9876543210, "mode": 2, "distributions": DRAWN}),
         message("ref_call", 9, "call spec, u8 summarize", {"call": CALL, "summarize": True}),
         message("poison", 10, "string guard, u32 n, n (u64 offset, u64 bytes, string element)",
                 {"guard": GUARD.hex(),
                  "spans": [{"offset": 1024, "bytes": 32, "element": "addec07f"},
                            {"offset": 2048, "bytes": 5, "element": "de"}]}),
         message("check", 11, "call spec, per output f64 rtol, f64 atol",
                 {"call": CALL, "tolerances": [[h(1e-3), h(0.0)], [h(0.0), h(0.0)]]})]
    reply = "u32 status, i32 rc, u64 flushed_bytes, u64 copy_ns, u32 n, n i64 ns, string message"
    for status, rc, flushed, copy_ns, ns, text in (
            (0, 0, 123456789, 4242, [1000, 2000, 3000], ""),
            (0, 0, 0, 0, [], '{"input": -1, "guard": null, "outputs": []}'),
            (1, -3, 0, 7, [55], "the kernel returned -3"),
            (2, 0, 0, 0, [], "dlopen failed: no such file"),
            (3, 0, 0, 0, [], "malformed DRAW")):
        m.append(message("reply", 100, reply, {"status": status, "rc": rc,
                                                "flushed_bytes": flushed, "copy_ns": copy_ns,
                                                "ns": ns, "message": text}))
    constants = {"arena_bytes": ARENA,
                 "dtypes": {"0": ["f32", 4], "1": ["f64", 8], "2": ["f16", 2], "3": ["bf16", 2],
                            "4": ["i32", 4], "5": ["i64", 8], "6": ["bool", 1]},
                 "reply_status": {"ok": 0, "kernel_error": 1, "load_error": 2,
                                  "bad_request": 3},
                 "max_payload_bytes": 256 << 20, "max_tensors_per_call": 256,
                 "max_rotation": 64, "max_timed_calls": 10_000_000, "max_dims": 8}
    return {"constants": constants, "messages": m}


def write(name, data):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def main():
    write("compare.json", {"cases": compare_cases()})
    write("draw.json", {"cases": draw_cases()})
    write("protocol.json", protocol_cases())


if __name__ == "__main__":
    main()
