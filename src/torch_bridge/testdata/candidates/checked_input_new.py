# The problem's own code as a ModelNew (a candidate sees the problem's names, as in KernelBench):
# valid only if no process is ever called on inputs of zeros.
class ModelNew(Model):  # noqa: F821
    pass
