# A user inference script's path for the workload tests: they parse workload files that name it
# (model.script must be a file beside the workload) and never run it. A script that runs is
# examples/deploy/tiny_lm.py (examples/deploy/tiny-script.toml).
