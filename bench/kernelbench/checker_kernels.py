"""The reference runner's check and draw kernels on a GPU (python/kope_bridge/fast_compare.py,
fast_draw.py), each timed on one tensor of a large problem's size against the bytes it must move,
beside a plain device copy of the same bytes (the bandwidth ceiling measured in the same run).

    PYTHONPATH=python python3 bench/kernelbench/checker_kernels.py [--gb 6.4] [--repeat 10]

Prints one row per kernel: median milliseconds (CUDA events, after two warm-up calls), the
bytes it must read and write, and the achieved bandwidth as a % of the copy's. A kernel far
under the copy is compute-bound or badly shaped: a bench-size evaluation calls each one tens of
times (docs/PERFORMANCE.md).
"""
import argparse
import statistics

import torch

from kope_bridge import fast_compare, fast_draw


def timed(fn, repeat):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=6.4, help="bytes of one tensor, in GB")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    n = int(args.gb * 1e9) // 8 * 2  # float32 elements, a whole number of 8-byte words
    nbytes = n * 4
    a = torch.randn(n, device="cuda")
    b = a.clone()
    dst = torch.empty_like(a)
    words_a, words_b, words_dst = (t.view(torch.int64) for t in (a, b, dst))
    key = fast_compare.new_key(0x1234_5678_9ABC_DEF0_1357_9BDF_0246)
    bounds = torch.tensor([1e-5, 1e-5], dtype=torch.float64, device="cuda")
    cases = [
        ("copy (ceiling)", 2, lambda: dst.copy_(a)),
        ("keyed_hash", 1, lambda: fast_compare.keyed_hash(words_a, key)),
        ("keyed_hash + copy", 2, lambda: fast_compare.keyed_hash(words_a, key, words_dst)),
        ("failing (f32)", 2, lambda: fast_compare.failing(a, b, bounds)),
        ("differ", 2, lambda: fast_compare.differ(words_a, words_b)),
        ("checksum_and_constant", 1, lambda: fast_compare._checksum_launch(words_a, True)),
        ("normal_ (f32 draw)", 1, lambda: dst.normal_()),
        ("uniform_ (f32 draw)", 1, lambda: dst.uniform_(-1.0, 1.0)),
        # A trial's draw: both copies written and hashed in one kernel (the checker's DRAW).
        ("fast_draw normal, given", 2,
         lambda: fast_draw.draw(dst, 7, 0, 0.0, 1.0, 0.0, 0.0, peer=b, key=key)),
        ("fast_draw uniform, given", 2,
         lambda: fast_draw.draw(dst, 7, 1, 0.0, 0.0, -1.0, 1.0, peer=b, key=key)),
        ("fast_draw normal, own", 1, lambda: fast_draw.draw(dst, 7, 0, 0.0, 1.0, 0.0, 0.0)),
        ("fill_ (poison)", 1, lambda: dst.fill_(float("nan"))),
    ]
    rows = [(name, moved * nbytes, timed(fn, args.repeat)) for name, moved, fn in cases]
    ceiling = rows[0][1] / rows[0][2]
    print(f"{torch.cuda.get_device_name()}: one tensor of {nbytes / 1e9:.2f} GB, "
          f"median of {args.repeat}")
    print(f"{'kernel':26} {'ms':>8} {'GB moved':>9} {'TB/s':>6} {'% of copy':>9}")
    for name, moved, ms in rows:
        rate = moved / ms
        print(f"{name:26} {ms:8.3f} {moved / 1e9:9.2f} {rate / 1e9:6.2f} "
              f"{100 * rate / ceiling:8.0f}%")


if __name__ == "__main__":
    main()
