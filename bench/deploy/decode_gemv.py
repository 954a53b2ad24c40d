"""The decode step's matrix products alone, at a 1B model's shapes: cuBLAS (F.linear) beside a
Triton kernel (rows of the weight split over programs, M = 1 to 16), each projection alone and
merged (q, k and v; gate and up).

    python3 bench/deploy/decode_gemv.py

Each case runs in one CUDA graph of calls, each over another copy of the weights (the copies
together larger than the 50 MB L2, as a decode step's layers are), replayed 3 times; the median
replay over its calls is the time per call. Floor: the weight's and activations' bytes over
4.25 TB/s. maxerr: the largest difference from an fp32 product, Triton's / cuBLAS's. The last
lines are the table.
"""
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=s)
           for bn in (4, 8, 16, 32) for bk in (256, 512) for w in (4, 8) for s in (3, 4)
           if not (bn == 32 and bk == 512)]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def gemv(x, w, y, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[M, N] = x[M, K] @ w[N, K]^T; each program BLOCK_N rows of w over the whole of K (K a
    multiple of BLOCK_K). M = 1: products summed along K at the end; else tensor cores, M padded
    to 16."""
    pid = tl.program_id(0)
    rn = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.arange(0, BLOCK_M)
    if BLOCK_M == 1:
        acc = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        wt = tl.load(w + rn[:, None] * K + rk[None, :], mask=rn[:, None] < N, other=0.0)
        if BLOCK_M == 1:
            xt = tl.load(x + rk)
            acc += wt.to(tl.float32) * xt.to(tl.float32)[None, :]
        else:
            xt = tl.load(x + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
            acc = tl.dot(xt, tl.trans(wt), acc)
    if BLOCK_M == 1:
        out = tl.sum(acc, axis=1)
        tl.store(y + rn, out.to(y.dtype.element_ty), mask=rn < N)
    else:
        tl.store(y + rm[:, None] * N + rn[None, :], acc.to(y.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_linear(x, w):
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    bm = 1 if M == 1 else 16
    gemv[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]),)](x, w, y, M, N, K, BLOCK_M=bm)
    return y


def graph_time(fn, xs, ws, reps=3):
    """us per call: one graph of len(ws) calls, each on another weight copy."""
    for x, w in zip(xs, ws):
        fn(x, w)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for x, w in zip(xs, ws):
            fn(x, w)
    g.replay()
    torch.cuda.synchronize()
    best = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        best.append(a.elapsed_time(b) * 1e3 / len(ws))
    best.sort()
    return best[len(best) // 2]


SHAPES = [("q/o", 2048, 2048), ("k/v", 512, 2048), ("qkv", 3072, 2048), ("gate/up", 8192, 2048),
          ("gate_up", 16384, 2048), ("down", 2048, 8192), ("lm_head", 128256, 2048)]
BANDWIDTH = 4.25e12  # bytes/s: the H200's measured copy bandwidth


def row(name, N, K, M):
    nbytes = N * K * 2
    copies = max(2, min(64, (512 << 20) // nbytes))
    ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    xs = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
    ref = F.linear(xs[0].float(), ws[0].float())
    err = (triton_linear(xs[0], ws[0]).float() - ref).abs().max().item()
    err_cublas = (F.linear(xs[0], ws[0]).float() - ref).abs().max().item()
    floor = (nbytes + 2 * M * (N + K)) / BANDWIDTH * 1e6
    tc = graph_time(F.linear, xs, ws)
    tt = graph_time(triton_linear, xs, ws)
    return (f"{name:<8} {M:>3} {nbytes / 2**20:>7.1f} {floor:>8.2f} {tc:>9.2f} "
            f"{100 * floor / tc:>4.0f} {tt:>9.2f} {100 * floor / tt:>4.0f} "
            f"{err:>7.3f}/{err_cublas:.3f}")


def main():
    print(f"{'shape':<8} {'M':>3} {'MB':>7} {'floor us':>8} {'cublas us':>9} {'%':>4} "
          f"{'triton us':>9} {'%':>4} {'maxerr':>7}")
    for name, N, K in SHAPES:
        for M in (1, 4, 8, 16):
            print(row(name, N, K, M), flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
