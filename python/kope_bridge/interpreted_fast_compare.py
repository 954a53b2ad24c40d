"""For tests: fast_compare run by Triton's interpreter on the CPU. TRITON_INTERPRET is set before
its kernels are defined (they are defined again where an earlier import defined them for a
GPU); `fast_compare` is None where this PyTorch has no Triton."""
import importlib
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before the kernels are defined

try:
    if "kope_bridge.fast_compare" in sys.modules:
        fast_compare = importlib.reload(sys.modules["kope_bridge.fast_compare"])
    else:
        from . import fast_compare
except ImportError:  # no Triton with this PyTorch
    fast_compare = None
