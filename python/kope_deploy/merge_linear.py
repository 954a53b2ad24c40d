"""Projections that read the same input computed as one matrix product: a layer's q, k and v
projections, its MLP's gate and up projections.

In a decode step each projection is a matrix-vector product over a few megabytes of weights, too
small to keep the GPU's memory busy: a third of its time goes to starting and draining kernels.
One product over the concatenated weights reads the same bytes in one kernel. The outputs are the
same numbers up to the order a library sums them in (the gate measures what that changes).

`Merged(model)` finds every group of sibling nn.Linear modules that take the same input (same
in_features, dtype and device; all with a bias or none) and run no forward of their own already;
install() gives them the merged forward, remove() restores each module's forward exactly.
The first projection of a group called on an input computes all of them and hands the others
their slice when they are called on the same input; a call on any other input (one called alone)
runs its own product. Needs torch only: kope's patch artifacts carry this file as it is.
"""
import torch
import torch.nn.functional as F

GROUPS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class _Group:
    """One group's merged weights and the outputs of its last input, until every member has
    taken its slice."""

    def __init__(self, linears):
        self.weight = torch.cat([m.weight.detach() for m in linears])
        biases = [m.bias for m in linears]
        self.bias = None if biases[0] is None else torch.cat([b.detach() for b in biases])
        self.sizes = [m.out_features for m in linears]
        self.linears = linears
        self.input, self.outputs, self.pending = None, None, set()

    def forward(self, index, x):
        if self.input is not x or index not in self.pending:
            if self.pending:  # a member called on another input, or twice: its own product
                return F.linear(x, self.linears[index].weight, self.linears[index].bias)
            self.input = x
            self.outputs = F.linear(x, self.weight, self.bias).split(self.sizes, dim=-1)
            self.pending = set(range(len(self.sizes)))
        self.pending.discard(index)
        out = self.outputs[index]
        if not self.pending:
            self.input, self.outputs = None, None
        return out


def _mergeable(linears):
    if not all(isinstance(m, torch.nn.Linear) and "forward" not in m.__dict__ for m in linears):
        return False
    first = linears[0]
    return all(m.in_features == first.in_features and m.weight.dtype == first.weight.dtype and
               m.weight.device == first.weight.device and
               (m.bias is None) == (first.bias is None) for m in linears)


class Merged:
    """The model's mergeable groups, found once; install() and remove() put the same forwards in
    place and take them away, so that what was compiled or captured over them stays valid."""

    def __init__(self, model):
        self.groups, self.forwards = [], []
        for module in model.modules():
            for names in GROUPS:
                linears = [getattr(module, n, None) for n in names]
                if all(m is not None for m in linears) and _mergeable(linears):
                    group = _Group(linears)
                    self.groups.append(group)
                    self.forwards += [(m, _member(group, i)) for i, m in enumerate(linears)]

    def install(self):
        for m, forward in self.forwards:
            m.forward = forward

    def remove(self):
        for m, _ in self.forwards:
            m.__dict__.pop("forward", None)


def _member(group, index):
    def forward(x):
        return group.forward(index, x)
    return forward
