"""Golden outputs of the release layer: every public release function, bit for bit.

Each case of :mod:`tests.golden.cases` (``dpfast.tables``, ``dpfast.dask``, ``Session``
methods and SQL, ``dpfast.histogram``; Laplace / Gaussian / zCDP x public domain / private
key selection) runs with a fresh ``dpfast.default_rng(KEY)`` and must reproduce
``tests/golden/outputs.json`` exactly: keys (with their types), values (hex floats), events,
thresholds, noise laws, release ids, per-metric values.  A refactor of the release layer
(issue 37) keeps every one of them; a change of released values is re-recorded with
``python tests/golden/record.py`` and named in the CHANGELOG (docs/design.md, "Golden
outputs").
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.golden import cases as C

GOLDEN: dict[str, Any] = json.loads(C.OUTPUTS.read_text(encoding="utf-8"))
CASES = dict(C.CASES)
HAVE_DASK = (importlib.util.find_spec("dask") is not None
             and importlib.util.find_spec("pandas") is not None)
HAVE_PANDAS = importlib.util.find_spec("pandas") is not None


def _needs(name: str) -> list[Any]:
    if name.startswith("dask."):
        return [pytest.mark.skipif(not HAVE_DASK, reason="needs dask[dataframe]")]
    if name.startswith(("session.", "tables.aggregate")):
        return [pytest.mark.skipif(not HAVE_PANDAS, reason="needs pandas")]
    return []


def _diff(want: Any, got: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Every field where ``got`` differs from ``want``: ``(path, want, got)``."""
    if type(want) is not type(got):
        yield path or "/", want, got
    elif isinstance(want, dict):
        for k in sorted(set(want) | set(got)):
            if k not in got or k not in want:
                yield f"{path}/{k}", want.get(k, "<absent>"), got.get(k, "<absent>")
            else:
                yield from _diff(want[k], got[k], f"{path}/{k}")
    elif isinstance(want, list):
        if len(want) != len(got):
            yield f"{path} (length)", len(want), len(got)
        for i, (a, b) in enumerate(zip(want, got)):
            yield from _diff(a, b, f"{path}[{i}]")
    elif want != got:
        yield path or "/", want, got


def _check(name: str) -> None:
    got = json.loads(json.dumps(C.run_case(CASES[name])))  # as the file holds it
    diffs = list(_diff(GOLDEN["cases"][name], got))
    if diffs:
        shown = "\n".join(f"  {p}: recorded {w!r:.120}, got {g!r:.120}"
                          for p, w, g in diffs[:12])
        more = f"\n  ... and {len(diffs) - 12} more" if len(diffs) > 12 else ""
        pytest.fail(f"golden case {name!r}: {len(diffs)} field(s) differ from "
                    f"tests/golden/outputs.json\n{shown}{more}\n(an intended change: "
                    "re-record with `python tests/golden/record.py` and add a CHANGELOG "
                    "line)", pytrace=False)


def test_golden_file_matches_the_case_table() -> None:
    """The recorded file is that of these cases, this key and this table."""
    h = GOLDEN["header"]
    assert h["key"] == C.KEY.hex()
    assert (h["seed"], h["dataset_version"], h["rows"]) == (
        C.SEED, C.DATASET_VERSION, int(C.D["pid"].size))
    assert sorted(CASES) == sorted(GOLDEN["cases"]), (
        "the case table and tests/golden/outputs.json list different cases: re-record")
    assert h["skipped_by_design"] == sorted(
        n for n, r in GOLDEN["cases"].items() if "raises" in r)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs(n)) for n in CASES])
def test_golden(name: str) -> None:
    """The release of case ``name`` equals its recorded golden output, bit for bit."""
    _check(name)


@pytest.mark.skipif(not HAVE_DASK, reason="needs dask[dataframe]")
def test_replay_in_one_process_in_reverse_order() -> None:
    """Determinism within one process: every tenth case and every session case again,
    in reverse order, after all the others ran (no state carried between releases)."""
    names = list(CASES)
    again = [n for i, n in enumerate(names) if i % 10 == 0 or n.startswith("session.")]
    for name in reversed(again):
        _check(name)


def test_dask_equals_tables() -> None:
    """dpfast.dask's promise, on the golden record: each Dask case releases exactly what
    the :mod:`dpfast.tables` case of the same name releases (keys, values, event, ids)."""
    cases = GOLDEN["cases"]
    twins = C.dask_twins(sorted(cases))
    assert len(twins) >= 90
    for dname, tname in sorted(twins.items()):
        diffs = list(_diff(cases[tname], cases[dname]))
        assert not diffs, f"{dname} differs from {tname}: {diffs[:5]}"
