"""The OpenCL plugin: any OpenCL device (PoCL on the CPU, GPUs where a driver exists)."""
