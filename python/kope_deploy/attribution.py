"""Module attribution: profiler ranges around every module's forward, and the profile's events
read back as GPU (or, on the CPU, operator) time by phase, module, operator, shapes and dtype.

Every module's forward runs inside a range `kope_module::<path>|<type>` (forward hooks), so that
a kernel is attributed to the module that launched it even where no dispatcher operator carries it
(an SDPA backend's or a Triton kernel: the innermost range names its module). `Hooks.captures`
keeps the first few inputs of chosen modules for activations.safetensors.
"""
import torch

from .phases import RANGE_PREFIX, current_phase

MODULE_PREFIX = "kope_module::"
ROOT = "<model>"  # the path of the model itself (its submodules' paths are relative to it)


class Hooks:
    """Forward hooks on every submodule of `model`, and ranges around the attention functions
    of its modeling module (rotary embedding, attention core: pseudo-modules `<path>.rotary` of
    type RotaryApply and `<path>.attention_core` of type AttentionCore); `remove()` undoes both.

    `calls[(phase, path)]` holds the first call's tensor shapes per phase; `captures` the first
    call's tensors (detached CPU copies) per phase for the paths in `capture`.
    """

    def __init__(self, model, capture=()):
        self.capture = set(capture)
        self.calls, self.captures, self.types = {}, {}, {}
        self._stack, self._handles, self._patched = [], [], []
        for path, module in model.named_modules():
            path = path or ROOT
            self.types[path] = type(module).__name__
            self._handles.append(module.register_forward_pre_hook(
                lambda m, a, k, path=path: self.enter(path, self.types[path], a, k),
                with_kwargs=True))
            self._handles.append(module.register_forward_hook(
                lambda m, a, k, out, path=path: self.exit(out), with_kwargs=True))
        self._patch(model)

    def enter(self, path, kind, args, kwargs):
        scope = torch.profiler.record_function(f"{MODULE_PREFIX}{path}|{kind}")
        scope.__enter__()
        phase = current_phase()
        self.types.setdefault(path, kind)
        key = (phase, path)
        if key not in self.calls:
            self.calls[key] = (_shapes_of(args), _shapes_of(kwargs))
        keep = path in self.capture and (phase, path) not in self.captures
        self._stack.append((scope, key, keep, (args, kwargs)))

    def exit(self, output):
        scope, key, keep, (args, kwargs) = self._stack.pop()
        scope.__exit__(None, None, None)
        if keep:
            self.captures[key] = (_detached(args), _detached(kwargs), _detached(output))

    def path(self):
        return self._stack[-1][1][1] if self._stack else ROOT

    def _patch(self, model):
        """Ranges around the modeling module's apply_rotary_pos_emb and attention functions."""
        import sys
        modeling = sys.modules.get(type(model).__module__)
        wrap = {"apply_rotary_pos_emb": ("rotary", "RotaryApply"),
                "eager_attention_forward": ("attention_core", "AttentionCore")}
        for name, (suffix, kind) in wrap.items():
            if modeling is not None and callable(getattr(modeling, name, None)):
                self._replace(modeling, name, suffix, kind)
        try:
            from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
            mapping = ALL_ATTENTION_FUNCTIONS._global_mapping
            for name in list(mapping):
                self._replace(mapping, name, "attention_core", "AttentionCore", item=True)
        except (ImportError, AttributeError):
            pass

    def _replace(self, owner, name, suffix, kind, item=False):
        original = owner[name] if item else getattr(owner, name)

        def wrapped(*args, **kwargs):
            self.enter(f"{self.path()}.{suffix}", kind, args, kwargs)
            out = original(*args, **kwargs)
            self.exit(out)
            return out
        if item:
            owner[name] = wrapped
        else:
            setattr(owner, name, wrapped)
        self._patched.append((owner, name, original, item))

    def remove(self):
        for h in self._handles:
            h.remove()
        for owner, name, original, item in reversed(self._patched):
            if item:
                owner[name] = original
            else:
                setattr(owner, name, original)
        self._handles, self._patched = [], []


def _shapes_of(value):
    if isinstance(value, torch.Tensor):
        return list(value.shape)
    if isinstance(value, (tuple, list)):
        return [_shapes_of(v) for v in value]
    if isinstance(value, dict):
        return {k: _shapes_of(v) for k, v in value.items() if isinstance(v, (torch.Tensor, tuple))}
    return None


def _detached(value):
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v) for v in value) if isinstance(value, tuple) else \
            [_detached(v) for v in value]
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items() if _keeps(v)}
    return value if isinstance(value, (int, float, bool, str, type(None))) else None


def _keeps(v):
    return isinstance(v, (torch.Tensor, tuple, list, int, float, bool, type(None)))


def _context(event):
    """(phase name or None, [(module path, type)] innermost first) of a CPU event (itself
    included where it is a module's range)."""
    modules, phase = [], None
    e = event if event.name.startswith(MODULE_PREFIX) else event.cpu_parent
    while e is not None:
        if e.name.startswith(MODULE_PREFIX):
            path, _, kind = e.name[len(MODULE_PREFIX):].partition("|")
            modules.append((path, kind))
        elif e.name.startswith(RANGE_PREFIX):
            phase = e.name[len(RANGE_PREFIX):]
            break
        e = e.cpu_parent
    return phase, modules


# Operators that only make views or metadata: never the operator a call is named after while
# another one in it computes.
VIEW_OPS = {"aten::t", "aten::transpose", "aten::view", "aten::reshape", "aten::expand",
            "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select", "aten::as_strided",
            "aten::alias", "aten::_unsafe_view", "aten::permute", "aten::contiguous",
            "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::resolve_conj",
            "aten::resolve_neg", "aten::detach", "aten::lift_fresh", "aten::_reshape_alias"}


def _is_op(event):
    return event.name.startswith("aten::")


def _device_us(event, cuda):
    if cuda:
        return sum(k.duration for k in event.kernels)
    return event.self_cpu_time_total if _is_op(event) else 0.0


def _subtree(event):
    out, todo = [], [event]
    while todo:
        e = todo.pop()
        out.append(e)
        todo.extend(e.cpu_children)
    return out


def _top(event):
    """Whether `event` is an operator called from outside any operator (a module's own call)."""
    p = event.cpu_parent
    return _is_op(event) and (p is None or not _is_op(p))


def _shapes(event):
    return [list(s) for s in (event.input_shapes or [])]


def read(prof, cuda, dtype):
    """The profile's rows and ranges.

    rows: {(phase, module path, op, shapes): row}, a row holding module type, the modules around
    it (innermost first), dtype, count, device_us (GPU time; operator time on the CPU) and host_us
    (the CPU time of the calls that caused it).
    ranges: {phase: {"host_us": CPU time inside the phase ranges, "device_us": busy time}};
    modules: {(phase, path): {"type", "host_us", "count"}}.
    """
    rows, phases, modules = {}, {}, {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CPU:
            continue
        if e.name.startswith(RANGE_PREFIX):
            p = phases.setdefault(e.name[len(RANGE_PREFIX):], {"host_us": 0.0, "device_us": 0.0})
            p["host_us"] += e.cpu_time_total
        elif e.name.startswith(MODULE_PREFIX):
            phase, _ = _context(e)
            path, _, kind = e.name[len(MODULE_PREFIX):].partition("|")
            m = modules.setdefault((phase, path), {"type": kind, "host_us": 0.0, "count": 0})
            m["host_us"] += e.cpu_time_total
            m["count"] += 1
            if cuda and e.kernels:  # launched inside the module's forward, by no operator
                _add_call(rows, phases, e, cuda, dtype)
        elif _top(e) or (cuda and e.kernels and not _has_op_above(e)):
            _add_call(rows, phases, e, cuda, dtype)
    return rows, phases, modules


def _has_op_above(event):
    p = event.cpu_parent
    while p is not None:
        if _is_op(p):
            return True
        p = p.cpu_parent
    return False


def _add_call(rows, phases, top, cuda, dtype):
    phase, chain = _context(top)
    if phase is None:
        return
    tree = _subtree(top) if _is_op(top) else [top]
    times = [(_device_us(e, cuda), e) for e in tree]
    device_us = sum(t for t, _ in times)
    computing = [x for x in times if x[1].name not in VIEW_OPS] or times
    key_event = max(computing, key=lambda x: x[0])[1] if device_us > 0 else top
    if not _is_op(key_event) and cuda and key_event.kernels:
        op = "kernel:" + key_event.kernels[0].name[:80]
    else:
        op = key_event.name
    path, kind = chain[0] if chain else ("", "")
    key = (phase, path, op, str(_shapes(key_event)))
    row = rows.setdefault(key, {
        "phase": phase, "module": path, "module_type": kind, "modules": chain, "op": op,
        "top_op": top.name, "shapes": _shapes(key_event), "dtype": dtype, "count": 0,
        "device_us": 0.0, "host_us": 0.0})
    row["count"] += 1
    row["device_us"] += device_us
    row["host_us"] += top.cpu_time_total if _is_op(top) else 0.0
    phases.setdefault(phase, {"host_us": 0.0, "device_us": 0.0})["device_us"] += device_us
