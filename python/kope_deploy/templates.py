"""KernelBench-form problem files for the subgraphs and operators a profile ranks: the module's
forward as the workload's model computes it, its parameters, and its sizes as module-level
integers (one problem file; the size sets are the values of those integers).

Each template is (the integers it takes, forward's inputs, the file's body); `source()` fills in
the bench set's values and the constants of the instance profiled."""

HEADER = '''"""{title}

Extracted by `kope deploy profile` from the workload {workload!r}: {where}.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

{sizes}
{constants}
'''

RMSNORM = ("batch_size seq_len hidden_size", "hidden_states", '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(hidden_size, dtype=DTYPE))

    def forward(self, hidden_states):
        x = hidden_states.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + EPS)
        return self.weight * x.to(hidden_states.dtype)


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size, dtype=DTYPE)]
''')

ADD_NORM = ("batch_size seq_len hidden_size", "residual hidden_states", '''
class Model(nn.Module):
    """The residual add and the RMSNorm after it: (normalized, the sum carried on)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(hidden_size, dtype=DTYPE))

    def forward(self, residual, hidden_states):
        h = residual + hidden_states
        x = h.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        return self.weight * x.to(h.dtype), h


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size, dtype=DTYPE),
            torch.randn(batch_size, seq_len, hidden_size, dtype=DTYPE)]
''')

ACT_MUL = ("batch_size seq_len intermediate_size", "gate up", '''
class Model(nn.Module):
    """act(gate_proj(x)) * up_proj(x) of the MLP, given both projections."""

    def forward(self, gate, up):
        return ACT(gate) * up


def get_inputs():
    return [torch.randn(batch_size, seq_len, intermediate_size, dtype=DTYPE),
            torch.randn(batch_size, seq_len, intermediate_size, dtype=DTYPE)]
''')

ROTARY = ("batch_size num_heads num_kv_heads seq_len head_dim", "q k cos sin", '''
def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    """apply_rotary_pos_emb: the rotary embedding of queries and keys."""

    def forward(self, q, k, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def get_inputs():
    return [torch.randn(batch_size, num_heads, seq_len, head_dim, dtype=DTYPE),
            torch.randn(batch_size, num_kv_heads, seq_len, head_dim, dtype=DTYPE),
            torch.randn(batch_size, seq_len, head_dim, dtype=DTYPE),
            torch.randn(batch_size, seq_len, head_dim, dtype=DTYPE)]
''')

ATTENTION = ("batch_size num_heads num_kv_heads q_len kv_len head_dim", "query key value", '''
class Model(nn.Module):
    """The attention core (after the projections and the rotary embedding): causal where the
    queries are the whole sequence, over every key otherwise (a decode step)."""

    def forward(self, query, key, value):
        groups = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
        causal = query.shape[2] > 1 and query.shape[2] == key.shape[2]
        return F.scaled_dot_product_attention(query, key, value, is_causal=causal, scale=SCALE)


def get_inputs():
    return [torch.randn(batch_size, num_heads, q_len, head_dim, dtype=DTYPE),
            torch.randn(batch_size, num_kv_heads, kv_len, head_dim, dtype=DTYPE),
            torch.randn(batch_size, num_kv_heads, kv_len, head_dim, dtype=DTYPE)]
''')

LINEAR = ("batch_size seq_len in_features out_features", "x", '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=BIAS, dtype=DTYPE)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features, dtype=DTYPE)]
''')

# The model's own module class built from its config (its weights drawn anew): the head of the
# problems that wrap a transformers module whole.
FROM_CONFIG = '''
import transformers


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()
        config = getattr(transformers, CONFIG_CLASS)(**CONFIG)
        module = getattr(__import__(MODULE_PATH, fromlist=[MODULE_CLASS]), MODULE_CLASS)
        self.module = module(config, **MODULE_KWARGS).to(DTYPE)
        with torch.no_grad():
            for p in self.module.parameters():
                p.normal_(0.0, 0.02)
'''

MODULE = ("batch_size seq_len", "hidden_states", FROM_CONFIG.format(
    doc="The model's own module class, built from its config, its weights drawn anew.") + '''
    def forward(self, hidden_states):
        out = self.module(hidden_states)
        return out[0] if isinstance(out, tuple) else out


def get_inputs():
    return [torch.randn(batch_size, seq_len, CONFIG["hidden_size"], dtype=DTYPE)]
''')

EXPERTS = ("tokens", "hidden_states top_k_index top_k_weights", FROM_CONFIG.format(
    doc="""The model's own experts module, built from its config, its weights drawn anew: every
    token through the experts the router chose for it, weighted as the router weighed them.""") +
    '''
    def forward(self, hidden_states, top_k_index, top_k_weights):
        return self.module(hidden_states, top_k_index, top_k_weights)


def get_inputs():
    experts, k = ROUTING
    return [torch.randn(tokens, CONFIG["hidden_size"], dtype=DTYPE),
            torch.randint(0, experts, (tokens, k)),
            torch.rand(tokens, k, dtype=DTYPE)]
''')

# One prefill, or one decode step over a KV cache, of the model's own decoder layer or attention
# module: the rotary embedding and the cache as the workload's model builds them.
STEP_MODULE = '''
import transformers


class Model(nn.Module):
    """{what} of the model's own module class, built from its config, its weights drawn anew
    (norm weights around 1): the rotary embedding is the model's, positions follow the cache."""

    def __init__(self):
        super().__init__()
        config = getattr(transformers, CONFIG_CLASS)(**CONFIG)
        config._attn_implementation = ATTENTION
        modeling = __import__(MODULE_PATH, fromlist=[MODULE_CLASS])
        self.module = getattr(modeling, MODULE_CLASS)(config, layer_idx=0).to(DTYPE)
        self.rotary = getattr(modeling, ROTARY_CLASS)(config)
        with torch.no_grad():
            for name, p in self.module.named_parameters():
                if "norm" in name:
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                else:
                    p.normal_(0.0, 0.02)

    def step(self, hidden_states, positions, mask, cache):
        cos_sin = self.rotary(hidden_states, positions)
        out = self.module(hidden_states, attention_mask=mask, position_ids=positions,
                          past_key_values=cache, position_embeddings=cos_sin)
        return out[0] if isinstance(out, tuple) else out
'''

STEP_PREFILL = ("batch_size seq_len", "hidden_states", STEP_MODULE.format(
    what="The prefill of a prompt through one layer") + '''
    def forward(self, hidden_states):
        b, s = hidden_states.shape[:2]
        positions = torch.arange(s, device=hidden_states.device).expand(b, s)
        mask = None  # SDPA masks causally itself where no mask is given
        if ATTENTION == "eager":
            lowest = torch.finfo(hidden_states.dtype).min
            mask = torch.full((s, s), lowest, dtype=hidden_states.dtype,
                              device=hidden_states.device).triu(1)[None, None]
        return self.step(hidden_states, positions, mask, None)


def get_inputs():
    return [torch.randn(batch_size, seq_len, CONFIG["hidden_size"], dtype=DTYPE)]
''')

STEP_DECODE = ("batch_size past_len", "hidden_states past_key past_value", STEP_MODULE.format(
    what="One decode step (one new token per sequence) through one layer") + '''
    def forward(self, hidden_states, past_key, past_value):
        """(the step's output, the key and value it appends to the cache)."""
        from transformers import DynamicCache
        cache = DynamicCache()
        cache.update(past_key, past_value, 0)
        b, past = hidden_states.shape[0], past_key.shape[2]
        positions = torch.full((b, 1), past, device=hidden_states.device)
        out = self.step(hidden_states, positions, None, cache)
        layer = cache.layers[0]
        return out, layer.keys[:, :, past:], layer.values[:, :, past:]


def get_inputs():
    return [torch.randn(batch_size, 1, CONFIG["hidden_size"], dtype=DTYPE),
            torch.randn(batch_size, KV_SHAPE[0], past_len, KV_SHAPE[1], dtype=DTYPE),
            torch.randn(batch_size, KV_SHAPE[0], past_len, KV_SHAPE[1], dtype=DTYPE)]
''')

TEMPLATES = {"norm": RMSNORM, "add_norm": ADD_NORM, "act_mul": ACT_MUL, "rotary": ROTARY,
             "attention": ATTENTION, "linear": LINEAR, "mlp": MODULE, "moe": MODULE,
             "experts": EXPERTS, "step_prefill": STEP_PREFILL, "step_decode": STEP_DECODE}
ACTS = {"silu": "F.silu", "swish": "F.silu", "gelu": "F.gelu", "relu": "F.relu",
        "gelu_pytorch_tanh": "lambda x: F.gelu(x, approximate='tanh')",
        "gelu_new": "lambda x: F.gelu(x, approximate='tanh')"}
FAMILIES = {"norm": "norm", "add_norm": "norm", "act_mul": "elementwise", "rotary": "elementwise",
            "attention": "attention", "linear": "matmul", "mlp": "mlp", "moe": "moe",
            "experts": "moe", "step_prefill": "layer", "step_decode": "layer",
            "layer": "layer", "attention_module": "attention"}
DTYPE_NAMES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}


def inputs_of(kind):
    return TEMPLATES[kind][1].split()


def source(kind, sizes, constants, title, workload, where):
    names, _, body = TEMPLATES[kind]
    size_lines = "\n".join(f"{n} = {sizes[n]}" for n in names.split())
    const_lines = "\n".join(f"{k} = {v}" for k, v in constants.items())
    return HEADER.format(title=title, workload=workload, where=where, sizes=size_lines,
                         constants=const_lines) + body + '''

def get_init_inputs():
    return []
'''
