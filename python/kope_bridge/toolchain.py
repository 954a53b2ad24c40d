"""What a candidate's extension build needs in the sandbox, and how its failure is told.

A ModelNew may build C++/CUDA code as it is imported (`torch.utils.cpp_extension.load_inline`,
which runs ninja, the host compiler and nvcc) or compile Triton kernels as it runs. The runner's
environment is kope's own list (nothing of the parent's passes), so the parent names the
toolchain in `--env NAME=VALUE` arguments (src/torch_bridge/bridge.cc, UseTorchBridge: PATH with
the Python environment's bin folder and nvcc's, CC, CXX, CUDA_HOME where the parent has them),
and the build folders are in the runner's scratch folder. The build is part of LOAD: its time
is the outcome's load phase, never kernel time.
"""
import os
import re

# A compiler's error line: gcc and clang `file:line:col: error: text`, nvcc `file(line): error:`,
# ninja's and the linker's own `error:`.
_ERROR_LINE = re.compile(r"(^|[\s:)])(fatal )?error:", re.IGNORECASE)


def apply_environment(assignments):
    """Sets each `NAME=VALUE` of the parent's --env arguments in this process's environment."""
    for item in assignments or []:
        name, sep, value = item.partition("=")
        if sep and name:
            os.environ[name] = value


def scratch_folders(work, device):
    """The build and cache folders of a bridge process, in its scratch folder `work` (a task's
    runner is given persistent ones for torch.compile and Triton instead, kernels.py). On the
    CPU a Triton kernel can only run in Triton's interpreter."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(work, "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(work, "triton"))
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(work, "extensions"))
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")


def first_compiler_error(text):
    """The first line of a build's output that is a compiler's (or ninja's) error, its file's
    folders left out; else the first line the failed command printed (ninja's `FAILED:` line,
    the command, then its output: `/bin/sh: 1: c++: not found`); None where there is none."""
    lines = [line.strip() for line in text.splitlines()]
    for line in lines:
        if _ERROR_LINE.search(line) and not line.startswith("FAILED:"):
            head, sep, rest = line.partition(": ")
            if sep and "/" in head and " " not in head:
                line = f"{os.path.basename(head)}: {rest}"
            return line
    failed = next((k for k, line in enumerate(lines) if line.startswith("FAILED:")), None)
    if failed is not None:
        printed = [line for line in lines[failed + 2:] if line and not line.startswith("ninja:")]
        if printed:
            return printed[0]
    return None


def describe_build_error(e):
    """For a failed extension build (torch's "Error building extension 'NAME': OUTPUT"), a
    first line that says so with the compiler's first error, then the build's whole output;
    else None."""
    text = str(e)
    if "Error building extension" not in text:
        return None
    first = first_compiler_error(text)
    head = text.split(":", 1)[0] if ":" in text else text
    if first is None:
        return None
    return f"{type(e).__name__}: {head}: {first}\n{text}"
