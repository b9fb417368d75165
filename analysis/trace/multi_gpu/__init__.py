"""The summary's ``communication`` section: ranks, NCCL collectives and their payloads, FSDP
blocks, the per-rank timeline (``summary.communication_summary`` puts them together)."""
