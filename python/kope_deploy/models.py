"""The workload's model: a transformers causal LM from a config with random weights, a local
checkpoint folder, or a user script's build(); on the device, in the dtype and with the
attention implementation the workload runs it with."""
import importlib.util
import inspect
import os

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class WorkloadError(Exception):
    """A workload that cannot run as written: reported as an error line, exit status 2."""


class Model:
    """The built model and how to drive it: `kind` is "hf" (generate()) or "script"."""

    def __init__(self, module, kind, script=None):
        self.module = module
        self.kind = kind
        self.script = script


def check_device(run):
    if run["device"] == "cuda" and not torch.cuda.is_available():
        raise WorkloadError("run.device is cuda, but PyTorch finds no CUDA device here")
    if run["mode"] == "cuda-graphs" and run["device"] != "cuda":
        raise WorkloadError(f"run.mode cuda-graphs needs CUDA (run.device is {run['device']})")


def build(workload):
    run, spec = workload["run"], workload["model"]
    check_device(run)
    dtype, device = DTYPES[run["dtype"]], torch.device(run["device"])
    if spec["source"] == "script":
        return _from_script(spec["path"], run)
    import transformers
    if spec["source"] == "checkpoint":
        try:
            module = transformers.AutoModelForCausalLM.from_pretrained(
                spec["path"], dtype=dtype, attn_implementation=run["attention"])
        except Exception as e:
            raise WorkloadError(f"model.checkpoint: {spec['path']}: {type(e).__name__}: {e}")
    else:
        with torch.device(device):  # random weights drawn where the model runs
            module = _from_config(transformers, spec, run["attention"])
    return Model(module.to(device=device, dtype=dtype).eval(), "hf")


def _from_config(transformers, spec, attention):
    cls = getattr(transformers, spec["architecture"], None)
    if cls is None or not hasattr(cls, "config_class"):
        raise WorkloadError(f"model.architecture: {spec['architecture']!r} is no transformers "
                            "model class")
    try:
        config = cls.config_class(**spec.get("config", {}))
        config._attn_implementation = attention
        torch.manual_seed(spec.get("seed", 0))
        return cls(config)
    except Exception as e:
        raise WorkloadError(f"model.config: {spec['architecture']} does not build: "
                            f"{type(e).__name__}: {e}")


def _from_script(path, run):
    if not os.path.isfile(path):
        raise WorkloadError(f"model.script: {path}: no such file")
    spec = importlib.util.spec_from_file_location("kope_deploy_user_script", path)
    script = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(script)
    except Exception as e:
        raise WorkloadError(f"model.script: {path}: {type(e).__name__}: {e}")
    for name in ("build", "run"):
        if not callable(getattr(script, name, None)):
            raise WorkloadError(f"model.script: {path} defines no {name}()")
    try:
        takes_run = len(inspect.signature(script.build).parameters) > 0
        module = script.build(dict(run)) if takes_run else script.build()
    except Exception as e:
        raise WorkloadError(f"model.script: {path}: build() failed: {type(e).__name__}: {e}")
    if not isinstance(module, torch.nn.Module):
        raise WorkloadError(f"model.script: {path}: build() returned "
                            f"{type(module).__name__}, not a torch.nn.Module")
    return Model(module, "script", script)
