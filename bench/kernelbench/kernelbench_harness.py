"""KernelBench's own evaluation of one candidate, as its scripts/run_and_check.py does locally
(eval_kernel_against_ref with 5 correctness trials and 100 timed trials by CUDA events, then the
eager reference's time by measure_ref_program_time), without that script's Modal and pydra
imports. Prints one JSON line: correctness, the candidate's and eager's mean ms, the speedup.

    KERNELBENCH_DIR=path/to/KernelBench python3 bench/kernelbench/kernelbench_harness.py \\
        PROBLEM.py CANDIDATE.py [--backend cuda|triton]
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("candidate")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--trials", type=int, default=100)
    args = ap.parse_args()
    start = time.perf_counter()
    sys.path.insert(0, os.path.join(os.environ["KERNELBENCH_DIR"], "src"))
    import torch
    from kernelbench import eval as kb_eval
    from kernelbench.timing import measure_ref_program_time

    problem = open(args.problem).read()
    candidate = open(args.candidate).read()
    device = torch.device("cuda:0")
    result = kb_eval.eval_kernel_against_ref(
        original_model_src=problem, custom_model_src=candidate, measure_performance=True,
        timing_method="cuda_event", num_correct_trials=5, num_perf_trials=args.trials,
        build_dir=os.path.join(os.environ.get("TMPDIR", "/tmp"), "kb_build",
                               str(abs(hash(candidate)))),
        device=device, backend=args.backend, precision=torch.float32)
    eager = measure_ref_program_time("reference", problem, num_trials=args.trials,
                                     timing_method="cuda_event", device=device,
                                     precision="fp32")
    out = {"correct": bool(result.correctness), "candidate_ms": result.runtime,
           "eager_ms": eager.get("mean")}
    if result.correctness and result.runtime > 0:
        out["speedup"] = out["eager_ms"] / result.runtime
    else:
        out["metadata"] = {k: str(v)[:300] for k, v in result.metadata.items()}
    out["wall_s"] = time.perf_counter() - start
    print(json.dumps(out))


if __name__ == "__main__":
    main()
