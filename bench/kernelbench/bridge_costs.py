"""What the bridge's requests are made of on a GPU, each cost measured alone: a round trip
between two Python processes, a synchronization, GPU work that alternates between two processes
(every verification step does: the reference's request, then the candidate's, then the
reference's), a small CHECK's kernels and its one synchronization, the L2 flush before a timed
call, and exporting, importing and releasing the memory the reference shares with a candidate.

    PYTHONPATH=python python3 bench/kernelbench/bridge_costs.py

Prints one row per cost, in microseconds of wall time per operation (docs/PERFORMANCE.md,
"Where a next evaluation's time goes").
"""
import os
import socket
import statistics
import subprocess
import sys
import time

import torch

DEVICE = torch.device("cuda:0")
SYNC = getattr(torch._C, "_cuda_synchronize", None) or torch.cuda.synchronize


def per_call_us(fn, n=2000, warm=50):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - start) / n / 1e3


def peer(fd, n_elems, use_gpu):
    """The other process of alternate(): on each byte received, GPU work (or none), then a
    byte back."""
    sock = socket.socket(fileno=fd)
    y = torch.ones(n_elems, device=DEVICE) if use_gpu else None
    sock.sendall(b"r")
    while sock.recv(1):
        if use_gpu:
            y.add_(1)
            SYNC()
        sock.sendall(b"k")


def alternate(n_elems, iters=2000):
    """Microseconds per turn: this process's kernel and synchronize, then the peer's (two
    processes, two CUDA contexts), against the same two kernels in this process with a round
    trip to a peer that does nothing."""
    x = torch.ones(n_elems, device=DEVICE)
    y = torch.ones(n_elems, device=DEVICE)
    out = []
    for use_gpu in (True, False):
        a, b = socket.socketpair()
        child = subprocess.Popen([sys.executable, __file__, "--peer", str(b.fileno()),
                                  str(n_elems), str(int(use_gpu))], pass_fds=[b.fileno()])
        b.close()
        a.recv(1)

        def turn():
            x.add_(1)
            SYNC()
            if not use_gpu:
                y.add_(1)
                SYNC()
            a.sendall(b"g")
            a.recv(1)
        out.append(per_call_us(turn, iters, 100))
        a.close()
        child.wait()
    return out


class Table:
    """The rows, each printed as it is measured and all again at the end."""

    def __init__(self):
        self.rows = []

    def row(self, name, value):
        self.rows.append((name, value))
        print(f"{name:64s} {value:10.1f}", flush=True)

    def print_all(self):
        print()
        print("\n".join(f"{name:64s} {value:10.1f}" for name, value in self.rows))


def measure_round_trip(table):
    a, b = socket.socketpair()
    echo = subprocess.Popen([sys.executable, "-c",
                             "import socket, sys\n"
                             "s = socket.socket(fileno=int(sys.argv[1]))\n"
                             "while True:\n"
                             "    m = s.recv(64)\n"
                             "    if not m: break\n"
                             "    s.sendall(m)\n", str(b.fileno())], pass_fds=[b.fileno()])
    b.close()
    table.row("socket round trip between two Python processes (us)",
              per_call_us(lambda: (a.sendall(b"x" * 16), a.recv(64)), 5000))
    a.close()
    echo.wait()


def measure_sync_and_launch(table):
    table.row("torch.cuda.synchronize(), GPU idle (us)", per_call_us(torch.cuda.synchronize))
    table.row("torch._C._cuda_synchronize(), GPU idle (us)", per_call_us(SYNC))
    table.row("a pair of timing events made (us)",
              per_call_us(lambda: (torch.cuda.Event(enable_timing=True),
                                   torch.cuda.Event(enable_timing=True))))
    x = torch.ones(256, device=DEVICE)
    table.row("a tiny torch operation launched (us)", per_call_us(lambda: x.add_(1)))
    table.row("a tiny operation and .item() (us)", per_call_us(lambda: x.sum().item()))


def measure_alternation(table):
    for n in (256, 16 << 20):
        two, one = alternate(n)
        table.row(f"turn, two processes alternating, {n * 4 >> 10} KB kernels (us)", two)
        table.row(f"turn, the same work in one process (us)", one)


def measure_checks(table, fc, Comparer):
    c = Comparer()
    w = torch.randint(0, 1 << 30, (1024,), dtype=torch.int32, device=DEVICE)
    e = torch.randn(1024, device=DEVICE)
    act = e.clone()
    key = fc.new_key(12345)
    bounds = c.bounds((1e-3, 1e-3), DEVICE)
    guard = torch.randint(0, 255, (65536,), dtype=torch.uint8, device=DEVICE)
    g2 = guard.clone()
    c.triton_usable(torch.float32, DEVICE)
    c.keyed_usable(torch.int32, DEVICE)
    table.row("keyed_hash of 1K words launched (us)", per_call_us(lambda: fc.keyed_hash(w, key)))
    table.row("failing of 1K elements launched (us)",
              per_call_us(lambda: fc.failing(e, act, bounds)))

    def small_check():
        h = fc.keyed_hash(w, key)
        flags = [h != h, (g2 != guard).any(), fc.failing(e, act, bounds) != 0]
        return torch.stack(flags).tolist()
    table.row("a small CHECK's kernels and its one synchronization (us)",
              per_call_us(small_check))


def measure_l2_flush(table):
    l2 = torch.cuda.get_device_properties(DEVICE).L2_cache_size
    buf = torch.empty(2 * l2, dtype=torch.uint8, device=DEVICE)
    table.row("L2 flush (twice the L2 written) and a synchronize (us)",
              per_call_us(lambda: (buf.zero_(), SYNC())))
    del buf


def measure_shared_memory(table, sd):
    for nbytes in (2 << 20, 6 << 30):
        def cycle():
            t0 = time.perf_counter_ns()
            exported = sd.export(nbytes)
            t1 = time.perf_counter_ns()
            imported = sd.import_fd(exported.fd, nbytes)
            t2 = time.perf_counter_ns()
            imported.close()
            t3 = time.perf_counter_ns()
            exported.close()
            t4 = time.perf_counter_ns()
            return (t1 - t0) / 1e3, (t2 - t1) / 1e3, (t3 - t2) / 1e3, (t4 - t3) / 1e3
        cycle()
        runs = [cycle() for _ in range(5)]
        for i, what in enumerate(("export", "import", "release of the import",
                                  "release of the export")):
            table.row(f"shared memory of {nbytes >> 20} MB: {what} (us)",
                      statistics.median(r[i] for r in runs))


def main():
    from kope_bridge import fast_compare as fc, shared_device as sd
    from kope_bridge.comparison import Comparer

    torch.empty(1, device=DEVICE)
    table = Table()
    measure_round_trip(table)
    measure_sync_and_launch(table)
    measure_alternation(table)
    measure_checks(table, fc, Comparer)
    measure_l2_flush(table)
    measure_shared_memory(table, sd)
    table.print_all()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--peer":
        peer(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
    else:
        main()
