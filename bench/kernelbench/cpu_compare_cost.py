"""What the reference's comparison of one output costs on the CPU (comparison.Comparer.compare,
the path a CHECK takes without a GPU): 8M float32 elements that pass, and the same with one
element wrong, in milliseconds per comparison. Run it with the bridge's Python; give another
checkout's `python` folder as the argument to compare two versions side by side.

    .venv/bin/python3 bench/kernelbench/cpu_compare_cost.py [PYTHON_DIR]
"""
import os
import sys
import time

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

from kope_bridge.comparison import Comparer  # noqa: E402


def per_call_ms(comparer, expected, actual, n):
    start = time.perf_counter()
    for _ in range(n):
        result = comparer.compare(expected, actual, 1e-3, 1e-3)
    return (time.perf_counter() - start) / n * 1e3, result


def main():
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(0)
    expected = torch.randn(8 << 20, generator=g)
    actual = expected + torch.randn(8 << 20, generator=g) * 1e-6
    comparer = Comparer()
    per_call_ms(comparer, expected, actual, 2)  # warm
    ms, r = per_call_ms(comparer, expected, actual, 5)
    print(f"{'8M float32 elements, passing (ms)':44s} {ms:8.1f}  mismatches {r['mismatches']}")
    wrong = actual.clone()
    wrong[123456] += 1.0
    ms, r = per_call_ms(comparer, expected, wrong, 3)
    print(f"{'the same, one element wrong (ms)':44s} {ms:8.1f}  mismatches {r['mismatches']}, "
          f"first {r['first']}")


if __name__ == "__main__":
    main()
