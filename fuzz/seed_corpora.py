"""Seeds each fuzz target's corpus (build/fuzz/corpus/<target>/) from the repository's own files.

    python3 fuzz/seed_corpora.py CORPUS_ROOT

Files are named by their content's hash, so seeding again adds nothing twice and leaves what the
fuzzers found in place.
"""
import glob
import hashlib
import json
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def files(*patterns):
    out = []
    for pattern in patterns:
        out += sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    return [f for f in out if "/build/" not in f and os.path.isfile(f)]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def task_files():
    return files("examples/*/task.toml", "src/**/task.toml", "src/task/testdata/invalid/*.toml")


def expressions():
    sizes = struct.pack("=6q", 64, 32, 16, 7, 5, 1)  # M N K rows cols n, as expr_fuzzer reads
    seen = set()
    for path in task_files():
        text = read(path).decode("utf-8", "replace")
        for line in text.splitlines():
            if re.match(r"\s*(shape|bytes|flops|reduction|fan_in)\s*=", line):
                seen.update(re.findall(r'"([^"]*)"', line))
    return [sizes + e.encode() for e in sorted(seen)]


def protocol_messages():
    with open(os.path.join(ROOT, "testdata/contract/protocol.json")) as f:
        messages = json.load(f)["messages"]
    out = []
    for m in messages:
        payload = bytes.fromhex(m["payload_hex"])
        if m["type"] == "reply":
            out.append(b"\x00" + payload)
        elif m["type"] == "hello":
            out.append(b"\x01" + payload)
        elif m["layout"].startswith("call spec"):
            out.append(b"\x02" + struct.pack("=Q", 4096) + payload)
    return out


def main():
    root = sys.argv[1]
    corpora = {
        "task_toml": [read(f) for f in task_files()],
        "expr": expressions(),
        "llm_reply": [read(f) for f in files("src/llm/testdata/replies/*.md")],
        "memory_record": [read(f) for f in files("fuzz/seeds/memory_record/*")],
        "workload": [read(f) for f in files("examples/deploy/*.toml",
                                            "src/deploy/testdata/workloads/*.toml")],
        "runner_protocol": protocol_messages(),
        "pack_file": [read(f) for f in files("fuzz/seeds/pack_file/*")],
    }
    for target, seeds in corpora.items():
        folder = os.path.join(root, target)
        os.makedirs(folder, exist_ok=True)
        for seed in seeds:
            name = hashlib.sha1(seed).hexdigest()
            with open(os.path.join(folder, name), "wb") as f:
                f.write(seed)
        print(f"seed_corpora: {target}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
