"""The table kernel's C common case alone, this checkout against another (issue 40).

Run: ``python bench/wide_loop_harness.py --against PATH [--case gl|gg|dl|d10] [--pairs N]``
(``PATH``: another checkout of dpfast, for instance a ``git worktree`` of an older commit;
needs gcc).  For each checkout it dumps the case's table as that checkout builds it
(``Table.kernel_args``, in a subprocess with that checkout first on ``sys.path``), compiles
``bench/wide_loop_harness.c`` against that checkout's ``csrc/table.c`` with the extension's
flags (``-O3 -ffp-contract=off``, no ``-march``), and times ``dpf_table_fast`` over 10^7
cells, a xorshift keystream refilling 2048-word buffers: no numba, ChaCha20 or Python in
the way.  The two binaries alternate (which runs first alternates too), pinned to one core
(``taskset`` where present); the
report is the median of the per-pair ratios (other / this) with their spread, per mode
(``add``: x + noise in place; ``add_sep``: x + noise into a separate output; ``grid``: the
float64 grid in place; ``grid_sep``: into a separate output).  Cases: ``gl`` grid Laplace
10 (its table: scale 10 / 2^-36), ``gg`` grid Gaussian 10, ``dl`` discrete Laplace 1000
(wide bins, a direct table), ``d10`` discrete Laplace 10 (bins of width 1, a direct
table).  The harness's own keystream is part of every
timing, so the ratios understate the loops' difference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = {"add": "1", "add_sep": "2", "grid": "3", "grid_sep": "4"}

DUMP = r"""
import sys
from fractions import Fraction
import numpy as np
sys.path.insert(0, sys.argv[1])
from dpfast.noise import _envelope, grid
case, path = sys.argv[2], sys.argv[3]
g = grid.granularity(10.0)
law, param = {"gl": ("laplace", Fraction(10.0) / Fraction(g)),
              "gg": ("gauss", Fraction(10.0) / Fraction(g)),
              "dl": ("laplace", Fraction(1000)), "d10": ("laplace", Fraction(10))}[case]
tab = _envelope.table(law, param)
(pack, thresh, f, nb, p, cbits, coef, ta, trm1, flo, fhi, vb, two, pa, pb, ubits, sel, direct,
 dbits) = tab.kernel_args
hdr = np.array([tab.law_code, nb, p, cbits, vb, ubits, dbits, len(pack), len(thresh), len(sel),
                len(trm1), len(flo), len(fhi), len(direct)], np.int64)
with open(path, "wb") as fh:
    fh.write(hdr.tobytes())
    fh.write(np.array([coef, g], np.float64).tobytes())
    for a in (pack, thresh, sel, trm1):
        fh.write(np.ascontiguousarray(a, np.uint64).tobytes())
    for a in (flo, fhi):
        fh.write(np.ascontiguousarray(a, np.float64).tobytes())
    fh.write(np.ascontiguousarray(direct, np.uint64).tobytes())
"""


def build(tree: str, case: str, work: str, tag: str, cflags: list[str]) -> tuple[str, str]:
    """(binary, table file) for the checkout ``tree``, compiled with ``cflags`` too."""
    table = os.path.join(work, f"{tag}.bin")
    subprocess.run([sys.executable, "-c", DUMP, tree, case, table], check=True)
    exe = os.path.join(work, tag)
    csrc = os.path.join(tree, "csrc")
    # (the AVX2 loops have their own file since round nine)
    srcs = [os.path.join(HERE, "wide_loop_harness.c")] + [
        os.path.join(csrc, f) for f in ("chacha20.c", "bitgen.c", "blake2b.c", "table_avx2.c")
        if os.path.exists(os.path.join(csrc, f))]
    subprocess.run(["gcc", "-O3", "-std=gnu11", "-fno-strict-aliasing", "-ffp-contract=off",
                    f"-I{csrc}", f'-DTABLE_C="{os.path.join(csrc, "table.c")}"', *cflags, "-o", exe,
                    *srcs, "-lm"], check=True)
    return exe, table


def time_one(exe: str, table: str, mode: str, reps: int) -> float:
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []
    out = subprocess.run([*pin, exe, table, MODES[mode], str(reps)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="another checkout of dpfast")
    ap.add_argument("--case", choices=["gl", "gg", "dl", "d10"], default="gl")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7, help="timings per run (median)")
    ap.add_argument("--cflags", default="", help="more compiler flags for this checkout's "
                    "build (a -D of a build option: -DDPF_HALVES8_GATHER=0)")
    ap.add_argument("--other-cflags", default="", help="... and for the other's")
    a = ap.parse_args()
    if shutil.which("gcc") is None:
        raise SystemExit("wide_loop_harness: needs gcc")
    with tempfile.TemporaryDirectory() as work:
        this = build(ROOT, a.case, work, "this", a.cflags.split())
        other = build(os.path.abspath(a.against), a.case, work, "other", a.other_cflags.split())
        modes = ["add", "add_sep"] if a.case in ("dl", "d10") else ["grid", "grid_sep"]
        for mode in modes:
            ratios, mine, theirs = [], [], []
            for k in range(a.pairs):
                # the order within a pair alternates (the second run of a pair can be
                # systematically slower or faster on a shared host)
                if k % 2:
                    t_this = time_one(*this, mode, a.reps)
                    t_other = time_one(*other, mode, a.reps)
                else:
                    t_other = time_one(*other, mode, a.reps)
                    t_this = time_one(*this, mode, a.reps)
                ratios.append(t_other / t_this)
                mine.append(t_this)
                theirs.append(t_other)
            print(f"{a.case} {mode}: this {statistics.median(mine):.1f} ms, other "
                  f"{statistics.median(theirs):.1f} ms: other / this "
                  f"{statistics.median(ratios):.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f},"
                  f" {a.pairs} pairs)")


if __name__ == "__main__":
    main()
