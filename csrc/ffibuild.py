"""cffi out-of-line API-mode build of dpfast's C kernels (``dpfast._cffi``).

Paths are relative to the project root (setuptools runs builds from there), so the
sdist and wheel builds work from any checkout.  Only portable flags: SIMD variants are
compiled per function with ``target`` attributes and chosen at run time.
"""

from __future__ import annotations

import pathlib
import re

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = ["csrc/chacha20.c", "csrc/bitgen.c", "csrc/blake2b.c", "csrc/table.c",
           "csrc/table_avx2.c"]

def header_cdef(text: str) -> str:
    """The declarations of ``dpfast.h`` in the form cffi's ``cdef`` accepts.

    The header is the single source of truth (no second copy of its structs or
    constants here): comments and include guards are dropped, integer ``#define``s become
    ``#define NAME ...`` (the compiler supplies the value in API mode), and array sizes
    written with macros become ``[...]``.
    """
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            m = re.match(r"#define\s+(DPF_\w+)\s+\S+", stripped)
            if m:
                lines.append(f"#define {m.group(1)} ...")
            continue
        lines.append(line)
    out = "\n".join(lines)
    return re.sub(r"\[[^\]]*[A-Za-z_][^\]]*\]", "[...]", out)


ffibuilder = FFI()
ffibuilder.cdef(header_cdef((HERE / "dpfast.h").read_text()))

ffibuilder.set_source(
    "dpfast._cffi",
    '#include "dpfast.h"',
    sources=SOURCES,
    include_dirs=["csrc"],
    # no fused multiply-adds: table.c's certified bounds are written for separate roundings
    extra_compile_args=["-O3", "-std=gnu99", "-fno-strict-aliasing", "-ffp-contract=off"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
