"""A workload.toml read into workload.json's form with the defaults filled in, for tests and for
running the Python side alone (`python3 -m kope_deploy.testing WORKLOAD.toml OUT_DIR [FIELD=VALUE
...]` writes OUT_DIR/workload.json, FIELD=VALUE replacing the run table's fields, e.g.
mode=static-compile). It validates nothing: `kope deploy profile` is what checks a workload."""
import json
import os
import sys
import tomllib

RUN = {"dtype": "bf16", "device": "cuda", "attention": "sdpa", "mode": "generate"}
ACCURACY = {"prompts": [], "random_prompts": 8, "min_token_match": 0.99, "max_logit_diff": None}


def normalized(path, **run):
    """workload.json's object for the TOML file at `path`; `run` overrides run table fields."""
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    folder = os.path.dirname(os.path.abspath(path))
    spec = raw["model"]
    source = next(k for k in ("architecture", "checkpoint", "script") if k in spec)
    model = {"source": {"architecture": "config"}.get(source, source),
             "architecture": spec.get("architecture"), "config": spec.get("config", {}),
             "seed": spec.get("seed", 0),
             "path": os.path.join(folder, spec[source]) if source != "architecture" else None}
    total = sum(r["weight"] for r in raw["requests"])
    requests = [dict(r, weight=r["weight"] / total) for r in raw["requests"]]
    return {"schema": 1, "name": raw.get("name", os.path.splitext(os.path.basename(path))[0]),
            "file": os.path.abspath(path), "model": model,
            "run": {**RUN, **raw.get("run", {}), **run}, "requests": requests,
            "accuracy": dict(ACCURACY, **raw.get("accuracy", {})),
            "extract": {"top": raw.get("extract", {}).get("top", 8)}}


def main(argv):
    if len(argv) < 2 or not all("=" in a for a in argv[2:]):
        print("usage: python3 -m kope_deploy.testing WORKLOAD.toml OUT_DIR [FIELD=VALUE ...]",
              file=sys.stderr)
        return 2
    run = dict(a.split("=", 1) for a in argv[2:])
    os.makedirs(argv[1], exist_ok=True)
    with open(os.path.join(argv[1], "workload.json"), "w") as f:
        json.dump(normalized(argv[0], **run), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
