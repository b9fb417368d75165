"""Experiments beyond the plain bench: attention grid, mixed precision, memory, compile, overhead."""
