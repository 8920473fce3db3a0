"""Record the golden outputs: ``python tests/golden/record.py [-v]`` (from the repository
root; ``-v`` prints each case's time and outcome).

Runs every case of :mod:`tests.golden.cases` (each with a fresh ``dpfast.default_rng(KEY)``)
and writes ``tests/golden/outputs.json`` (sorted keys, stable).  Re-record only for a
change of released values that is intended, with a CHANGELOG line (docs/design.md,
"Golden outputs").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.golden import cases as C  # noqa: E402


def record(verbose: bool = False) -> dict[str, Any]:
    """Every case's golden record, plus the header that names the data and the key."""
    out: dict[str, Any] = {}
    for name, fn in C.CASES:
        t0 = time.perf_counter()
        out[name] = C.run_case(fn)
        if verbose:
            tag = out[name].get("raises", "ok")
            print(f"{time.perf_counter() - t0:7.3f}s {tag:10s} {name}", file=sys.stderr)
    skipped = sorted(n for n, r in out.items() if "raises" in r)
    return {"header": {"key": C.KEY.hex(), "seed": C.SEED,
                       "dataset_version": C.DATASET_VERSION, "rows": int(C.D["pid"].size),
                       "cases": len(out), "skipped_by_design": skipped},
            "cases": out}


def dumps(data: dict[str, Any]) -> str:
    """The stable text of the golden file: sorted keys, one case per line (so a diff names
    the cases that changed), compact within a case, ASCII, no NaN."""

    def one(x: Any) -> str:
        return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False)

    cases = data["cases"]
    lines = [f"{one(name)}:{one(cases[name])}" for name in sorted(cases)]
    return ('{"cases":{\n' + ",\n".join(lines) + '\n},\n"header":' + one(data["header"])
            + "}\n")


def main() -> None:
    data = record(verbose="-v" in sys.argv[1:])
    C.OUTPUTS.write_text(dumps(data), encoding="utf-8")
    h = data["header"]
    print(f"wrote {C.OUTPUTS} ({h['cases']} cases, {len(h['skipped_by_design'])} raise "
          "ValueError by design)")


if __name__ == "__main__":
    main()
