"""Two summaries side by side: ``diff`` (what moved and why) and ``rank_diff`` (two multi-GPU
summaries rank by rank). Imports the floors below it (load, core, trace, questions)."""
