"""The CS336 basics Transformer LM and a runner that times it with NVTX annotations for nsys."""
