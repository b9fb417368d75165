"""Running the CS336 model under Nsight Systems: the sweep driver and its results."""
