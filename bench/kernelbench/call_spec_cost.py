"""What a request's call spec costs the bridge to read: protocol.Reader.call_spec on a spec of
two inputs and an output (4-D float32 tensors and a vector), then the 14 byte-range lookups a
check request makes, per request, in microseconds. Needs no GPU.

    PYTHONPATH=python python3 bench/kernelbench/call_spec_cost.py
"""
import struct
import time

from kope_bridge import protocol as p


def slot(dtype, shape, offset):
    return (struct.pack("=iI", dtype, len(shape)) + struct.pack(f"={len(shape)}q", *shape) +
            struct.pack("=IQ", 0, offset))


def per_request_us(payload, arena_bytes, n=20000):
    start = time.perf_counter()
    for _ in range(n):
        spec = p.Reader(payload).call_spec(arena_bytes)
        for _ in range(14):
            [x.byte_range(arena_bytes) for x in spec.inputs]
    return (time.perf_counter() - start) / n * 1e6


def main():
    payload = struct.pack("=II", 2, 1) + slot(0, [112, 64, 512, 512], 0) + \
        slot(0, [64], 1 << 33) + slot(0, [112, 64, 512, 512], 1 << 34)
    arena = 1 << 36
    print(f"{'call spec and 14 range lookups, the same spec each request (us)':66s} "
          f"{per_request_us(payload, arena):8.1f}")
    cold = []
    for _ in range(2000):  # a spec never seen: parsed and checked in full
        getattr(p, "_SPECS", {}).clear()  # (absent before specs were remembered)
        getattr(p, "_SPEC_LENGTHS", []).clear()
        cold.append(per_request_us(payload, arena, n=1))
    print(f"{'the same, a spec not seen before (us)':66s} {sorted(cold)[len(cold) // 2]:8.1f}")


if __name__ == "__main__":
    main()
