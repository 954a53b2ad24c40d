"""A small language model written in plain PyTorch, profiled through kope_deploy's script API:
build() returns the model, run(model, request) runs one request and marks its phases. It keeps
no KV cache (each decode step runs the last token alone), which is enough to show the API."""
import torch
import torch.nn as nn

import kope_deploy

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
VOCAB, HIDDEN, LAYERS = 256, 64, 2


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, 4 * HIDDEN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, 4 * HIDDEN, bias=False)
        self.down_proj = nn.Linear(4 * HIDDEN, HIDDEN, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(HIDDEN, eps=1e-6)
        self.mlp = MLP()

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def build(run):
    """`run` is the workload's run table: dtype, device, attention, mode."""
    torch.manual_seed(0)
    return TinyLM().to(device=run["device"], dtype=DTYPES[run["dtype"]]).eval()


def run(model, request):
    device = next(model.parameters()).device
    ids = torch.randint(0, VOCAB, (request["batch"], request["prompt"]), device=device)
    with kope_deploy.phase("prefill"):
        token = model(ids)[:, -1:].argmax(-1)
    for _ in range(request["decode"]):
        with kope_deploy.phase("decode"):
            token = model(token)[:, -1:].argmax(-1)
