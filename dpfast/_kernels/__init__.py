"""Private numba kernels.  They validate nothing, fill a caller's ``out`` and are cached."""
