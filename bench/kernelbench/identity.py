# A KernelBench-format candidate that is the problem's own code: evaluating it measures the
# bridge, not a kernel (docs/PERFORMANCE.md, "Bridge overhead per candidate").
class ModelNew(Model):  # noqa: F821 (the problem's Model, in the same module)
    pass
