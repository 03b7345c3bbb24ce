"""The CUDA plugin (compiling only, for now) and its dialect."""
