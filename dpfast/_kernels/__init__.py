"""Private numba kernels.  They validate nothing, fill a caller's ``out`` and are cached."""

# every kernel module is imported through this package: numba's compile event (sent only
# when a kernel is compiled, not when it is loaded from the on-disk cache) prints dpfast's
# one-time compile notice (dpfast._parallel.notice)
from dpfast import _parallel

_parallel.install_compile_notice()
