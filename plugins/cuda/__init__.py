"""A CUDA target for the kernel compiler (the dialect only, for now)."""
