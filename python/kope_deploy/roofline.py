"""Roofline floors of profiled operators: the bytes an operator must move and the flops it must
do, against the H200's bandwidth and peak (the floor kope reports on every device, so that a
ranking made on the CPU reads like one made on the H200)."""
import math

BANDWIDTH = 4.25e12  # bytes/s, H200 HBM3e (measured stream bandwidth used across kope)
PEAK_FLOPS = {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12}  # dense, H200 SXM
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
FLOOR = {"device": "NVIDIA H200", "bandwidth_bytes_per_s": BANDWIDTH,
         "peak_flops": PEAK_FLOPS}


def op_work(row):
    """(bytes, flops) of one call of a profile row's operator, from its input shapes (outputs
    estimated as the largest input for elementwise operators)."""
    shapes = [s for s in row["shapes"] if isinstance(s, list) and s]
    size = ELEMENT_BYTES.get(row["dtype"], 2)
    elems = [math.prod(s) for s in shapes]
    op = row["op"]
    if op in ("aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::bmm") and \
            len(shapes) >= 2:
        a, b = (shapes[-2], shapes[-1]) if op == "aten::addmm" else (shapes[0], shapes[1])
        k = a[-1]
        n = b[0] if op == "aten::linear" else b[-1]
        m = math.prod(a[:-1])
        return size * (m * k + k * n + m * n), 2 * m * k * n
    if "attention" in op and len(shapes) >= 3:
        q, k = shapes[0], shapes[1]
        out = math.prod(q)
        return size * (sum(elems[:3]) + out), 4 * math.prod(q[:-1]) * k[-2] * q[-1]
    if not elems:
        return 0, 0
    return size * (sum(elems) + max(elems)), max(elems)


def floor_ms(nbytes, flops, dtype, device):
    return 1e3 * max(nbytes / BANDWIDTH, flops / PEAK_FLOPS.get(dtype, PEAK_FLOPS["fp32"]))
