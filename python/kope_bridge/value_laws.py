"""The value laws a task declares for a PyTorch problem's inputs and parameters, measured on a
small real instance of it (the importer's; importer.py)."""
import math

import torch

from . import problem


def value_distribution(t):
    """The distribution a kope task declares for values like those of tensor `t`."""
    if t.dtype == torch.bool:  # both values, whatever the small instance measured happened to hold
        return {"kind": "uniform", "low": 0, "high": 2}
    if not t.is_floating_point():
        lo, hi = int(t.min()), int(t.max())
        return {"kind": "uniform", "low": lo, "high": hi + 1}
    t = t.double()
    lo, hi = float(t.min()), float(t.max())
    if lo >= 0 and hi <= 1:
        # Probabilities and the like. Strictly positive ones (a softmax's) stay so: a problem
        # may take their log, and a draw of exactly 0 (one in 2^24 for float32) makes it
        # infinite on every trial at a large size (98_KLDivLoss). Their lower end is 2^-24,
        # not the least value measured (which depends on how many were): a subnormal of
        # float16, never rounded to 0 in any float type.
        return {"kind": "uniform", "low": 2.0 ** -24 if lo > 0 else 0.0, "high": 1.0}
    if lo == hi:
        return {"kind": "uniform", "low": lo - 0.5, "high": hi + 0.5}
    mean, std = float(t.mean()), float(t.std())
    if abs(mean) < 3 * std / math.sqrt(t.numel()):
        # Within three standard errors of 0: a mean measured on a few values (a small instance's
        # weights), which a large size would multiply by its fan-in (a GEMM's outputs all of
        # one sign).
        mean = 0.0
    if abs(mean) < 0.1 * std and abs(lo + hi) < 0.05 * (hi - lo) and \
            abs(t.abs().max() - hi) < 1e-12 and std < 0.7 * hi:  # symmetric, flat: a uniform init
        b = max(abs(lo), abs(hi))
        return {"kind": "uniform", "low": -b, "high": b}
    return {"kind": "normal", "mean": round(mean, 6), "stddev": round(std, 6)}


def input_distributions(values, family):
    """The distributions an input like `values` cycles through in a problem of `family` (None
    for a parameter): value_distribution's, and for an elementwise problem's floating input
    measured non-negative, values of both signs too (an activation checked only on [0, 1)
    cannot tell itself from the identity)."""
    dist = [value_distribution(values)]
    if family == "elementwise" and values.is_floating_point() and \
            dist[0]["kind"] == "uniform" and dist[0]["low"] >= 0:
        dist.append({"kind": "uniform", "low": -1.0, "high": 1.0})
    return dist


# Layers whose parameters PyTorch initializes as U(-1/sqrt(fan_in), 1/sqrt(fan_in)), weight and
# bias alike (kaiming_uniform_ with a = sqrt(5), and the bias's bound from the weight's fan-in).
_FAN_IN_LAYERS = (torch.nn.Linear, torch.nn.modules.conv._ConvNd)


def fan_in_distributions(model, names, shapes):
    """For each of the module's parameters (`names`, their symbolic `shapes` from the task), the
    distribution `{uniform, -1, 1, fan_in}` where its layer's default initialization scales it by
    its fan-in (a fan-in the same at every size: uniform in +-1/sqrt(fan_in)), else None: the
    fan-in as torch computes it (the weight's dimensions after the first), as an expression of
    the task's sizes. Only where `model`'s values are what that initialization gives: a problem
    that initializes its parameters its own way keeps its measured law."""
    params = dict(model.named_parameters())
    out = []
    for name in names:
        layer_name, _, kind = name.rpartition(".")
        try:
            layer = model.get_submodule(layer_name)
        except AttributeError:
            layer = None
        weight = f"{layer_name}.weight" if layer_name else "weight"
        dims = shapes[names.index(weight)][1:] if weight in names else []
        if not isinstance(layer, _FAN_IN_LAYERS) or kind not in ("weight", "bias") or not dims:
            out.append(None)
            continue
        expression = " * ".join([str(d) for d in dims if str(d) != "1"] or ["1"])
        fan_in = math.prod(params[weight].shape[1:])  # what `expression` is at the measured sizes
        values = params[name].detach().double() * math.sqrt(fan_in)
        rms = float(values.square().mean().sqrt()) if values.numel() else 0.0
        # U(-1, 1) scaled: nothing beyond the bound, and (given enough values) its spread.
        if not values.numel() or float(values.abs().max()) > 1 + 1e-6 or \
                (values.numel() >= 16 and not 0.4 < rms < 0.75):
            out.append(None)
        elif all(str(d).isdigit() for d in dims):
            bound = round(1 / math.sqrt(fan_in), 9)  # the same at every size
            out.append({"kind": "uniform", "low": -bound, "high": bound})
        else:
            out.append({"kind": "uniform", "low": -1.0, "high": 1.0, "fan_in": expression})
    return out


def scalar_distribution(value):
    """The distribution of a forward argument that is a Python number: an int keeps its value
    (often a size or a dimension); a float is drawn within 0.5 of it and never changes sign
    (hardtanh's min_val stays below its max_val)."""
    if isinstance(value, int):
        return {"kind": "uniform", "low": value, "high": value + 1}
    if value == 0:
        return {"kind": "uniform", "low": -0.5, "high": 0.5}
    if value > 0:
        return {"kind": "uniform", "low": max(value - 0.5, value / 2), "high": value + 0.5}
    return {"kind": "uniform", "low": value - 0.5, "high": min(value + 0.5, value / 2)}


def integer_ranges(source, name, size_sets, draws=64):
    """For each forward input that is an integer tensor, the least and greatest value that
    every one of `size_sets` (their globals) takes, as one task draws them for all: at each,
    over `draws` calls of get_inputs (each with its own seed), since one call at a small size
    can miss most of a range (95_CrossEntropyLoss's targets at batch size 1 are one class of
    4096, which a task then drew for every trial); then the sets' common part (a class index
    below the smallest set's number of classes), where they have one."""
    ranges = {}
    for globals_ in size_sets:
        module = problem.load_module(source, name, globals_)
        seen = {}
        for seed in range(draws):
            torch.manual_seed(seed)
            for i, t in enumerate(module.get_inputs()):
                if isinstance(t, torch.Tensor) and t.numel() and not t.is_floating_point() and \
                        t.dtype != torch.bool:
                    lo, hi = int(t.min()), int(t.max())
                    old = seen.get(i, (lo, hi))
                    seen[i] = (min(old[0], lo), max(old[1], hi))
        for i, (lo, hi) in seen.items():
            old = ranges.get(i, (lo, hi))
            common = (max(old[0], lo), min(old[1], hi))
            ranges[i] = common if common[0] <= common[1] else old
    return ranges


def measure_values(source, name, globals_):
    """Real inputs and parameters at `globals_` (small), for their value distributions, and the
    model they were measured on."""
    module = problem.load_module(source, name, globals_)
    torch.manual_seed(0)
    inputs = module.get_inputs()
    model = problem.build_model(module)
    return inputs, [p.detach() for _, p in model.named_parameters()], model
