"""kope's Python bridge: PyTorch problems (KernelBench format) behind kope's runner protocol.

The bridge is started by kope exactly like `kope-runner`, inside the same sandbox, and speaks the
same control protocol (src/runner/protocol.h): LOAD, MAP, CALL, TIME, QUIT. What it loads is not a
shared object but a JSON artifact describing a PyTorch problem and how to run it (eager,
torch.compile, or a KernelBench `ModelNew` candidate). See docs/KERNELBENCH.md.
"""
