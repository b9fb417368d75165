# Import-only stand-in for wandb (not installed on the GPU machine, no network there).
# The student's cs336_basics/train.py does `import wandb` at module level (l.10) but the
# benchmark path (cs336_systems/benchmarking.py) never calls anything from it.
# Not the student's code; placed on PYTHONPATH by the sweep line only.
