"""``progress=`` of the long-running noising calls (off by default).

``progress=True`` shows a bar on stderr: tqdm's when tqdm is installed (optional extra
``progress``), otherwise a one-line counter.  A callable is called as
``progress(done_cells, total_cells)`` after each batch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

Tick = Callable[[int], None]


class _Counter:
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def __call__(self, k: int) -> None:
        self.done += k
        sys.stderr.write(f"\rdpfast: noised {self.done:,} / {self.total:,} cells")
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def ticker(progress: Any, total: int) -> tuple[Tick | None, Callable[[], None]]:
    """(a function taking the cells just finished, a close function)."""
    if progress is None or progress is False:
        return None, lambda: None
    if callable(progress):
        state = [0]

        def tick(k: int) -> None:
            state[0] += k
            progress(state[0], total)

        return tick, lambda: None
    if progress is True:
        try:
            from tqdm import tqdm
        except ImportError:
            return _Counter(total), lambda: None
        bar = tqdm(total=total, unit="cell", unit_scale=True, file=sys.stderr,
                   desc="dpfast", leave=False)
        return bar.update, bar.close
    raise TypeError(f"progress must be a bool or a callable, got {type(progress).__name__}")
