# KernelBench level 1, 36_RMSNorm_: RMSNorm over dim 1 in one pass. Each program normalizes BLOCK
# spatial positions of one batch entry with all features of them in registers (the feature count
# rounded up to a power of two, as tl.arange needs, the rest masked).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_kernel(x_ptr, out_ptr, S, F, eps, F_POW2: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(1)
    s = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    f = tl.arange(0, F_POW2)
    mask = (f[:, None] < F) & (s[None, :] < S)
    offs = b.to(tl.int64) * F * S + f[:, None] * S + s[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    r = tl.sqrt(tl.sum(x * x, axis=0) / F + eps)
    tl.store(out_ptr + offs, x / r[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        B, F = x.shape[0], x.shape[1]
        S = x.numel() // max(B * F, 1)
        BLOCK = 128  # kope:tune BLOCK = 64, 128, 256
        grid = (triton.cdiv(S, BLOCK), B)
        rms_kernel[grid](x, out, S, F, self.eps, F_POW2=triton.next_power_of_2(F), BLOCK=BLOCK,
                         num_warps=8)
        return out
