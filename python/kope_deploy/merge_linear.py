"""Projections that read the same input computed as one matrix product: a layer's q, k and v
projections, its MLP's gate and up projections.

In a decode step each projection is a matrix-vector product over a few megabytes of weights, too
small to keep the GPU's memory busy: a third of its time goes to starting and draining kernels.
One product over the concatenated weights reads the same bytes in one kernel. The outputs are the
same numbers up to the order a library sums them in (the gate measures what that changes). The
modules' weights become views of the merged ones: no second copy is kept.

`Merged(model)` finds every group of sibling nn.Linear modules that take the same input (same
in_features, dtype and device; all with a bias or none) and run no forward of their own already;
install() gives them the merged forward, remove() restores each module's forward exactly.
The first projection of a group called on an input computes all of them and hands the others
their slice when they are called on the same input; a call on any other input (one called alone)
runs its own product. Needs torch only: kope's patch artifacts carry this file as it is.
"""
import itertools
import weakref

import torch
import torch.nn.functional as F

GROUPS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class _Group:
    """One group's merged weights, and the outputs of its last input until every member has
    taken its slice. The members' weights and biases become views of the merged ones, so that
    the model holds one copy and an update in place reaches both."""

    def __init__(self, linears):
        self.linears = linears
        self.sizes = [m.out_features for m in linears]
        ends = list(itertools.accumulate(self.sizes))
        self.spans = list(zip([0] + ends[:-1], ends))  # each member's rows of the merged weights
        self.merge()

    def merge(self):
        with torch.no_grad():
            self.weight = torch.cat([m.weight.detach() for m in self.linears])
            has_bias = self.linears[0].bias is not None
            self.bias = torch.cat([m.bias.detach() for m in self.linears]) if has_bias else None
            for m, (start, end) in zip(self.linears, self.spans):
                m.weight.data = self.weight[start:end]
                if has_bias:
                    m.bias.data = self.bias[start:end]
        self.reset()

    def current(self):
        """Whether every member still reads its view of the merged weights (a .to(), .half()
        or an assigning load gives a module tensors of its own)."""
        return all(m.weight.dtype == self.weight.dtype and
                   m.weight.data_ptr() == self.weight[start:end].data_ptr() and
                   (m.bias is None or m.bias.data_ptr() == self.bias[start:end].data_ptr())
                   for m, (start, end) in zip(self.linears, self.spans))

    def reset(self):
        self.input, self.outputs, self.pending = None, None, set()

    def forward(self, index, x):
        m = self.linears[index]
        if torch.is_grad_enabled() and m.weight.requires_grad:
            return F.linear(x, m.weight, m.bias)  # the merged weights carry no gradient
        if self.input is not x or index not in self.pending:
            if self.pending:  # a member called on another input, or twice: its own product
                return F.linear(x, m.weight, m.bias)
            self.input = x
            self.outputs = F.linear(x, self.weight, self.bias).split(self.sizes, dim=-1)
            self.pending = set(range(len(self.sizes)))
        self.pending.discard(index)
        out = self.outputs[index]
        if not self.pending:
            self.reset()
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
        self.groups, self.forwards = [], {}
        for module in model.modules():
            for names in GROUPS:
                linears = [getattr(module, n, None) for n in names]
                if all(m is not None for m in linears) and _mergeable(linears):
                    group = _Group(linears)
                    self.groups.append(group)
                    self.forwards.update((m, _member(group, i)) for i, m in enumerate(linears))

    def install(self):
        """Gives each group's members the merged forward: a group whose modules were given a
        forward of their own meanwhile (another patch) keeps it whole; one whose modules were
        given tensors of their own is merged again."""
        for group in self.groups:
            if any("forward" in m.__dict__ for m in group.linears):
                continue
            if not group.current():
                group.merge()
            group.reset()
            for m in group.linears:
                m.forward = self.forwards[m]

    def remove(self):
        """Takes the merged forwards away, and only those."""
        for group in self.groups:
            group.reset()
            for m in group.linears:
                if m.__dict__.get("forward") is self.forwards[m]:
                    del m.forward


_SHARED = weakref.WeakKeyDictionary()  # model -> its Merged


def shared(model):
    """The model's one Merged: patches that merge its projections share it, so that the weights
    move once (a second Merged would merge them again, moving them under the graphs captured
    over the first)."""
    merged = _SHARED.get(model)
    if merged is None:
        merged = _SHARED[model] = Merged(model)
    return merged


def _member(group, index):
    def forward(x):
        return group.forward(index, x)
    return forward
