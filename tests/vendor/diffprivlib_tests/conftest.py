"""Run diffprivlib's unchanged mechanism tests against dpfast.compat.diffprivlib."""

from __future__ import annotations

import pytest

pytest.importorskip("diffprivlib")

# test id suffix -> reason: differences that are intentional (see the classes' docstrings)
INTENTIONAL: dict[str, str] = {
    "test_Laplace.py::TestLaplace::test_variance": (
        "exact instead of float: variance() is the exact variance of the grid Laplace noise, "
        "whose scale is (1 + g) times diffprivlib's to pay for the grid rounding: "
        "2.000000000007 instead of 2.0"),
    "test_GaussianDiscrete.py::TestGaussianDiscrete::test_sanity_scale": (
        "rigorous calibration: dpfast finds sigma = 1.9573 for (eps=3, delta=4.009e-10), "
        "which satisfies CKS20 Thm. 7 (delta = 3.8e-10); diffprivlib's bisection stops at 2.0 "
        "(Thm. 7's delta is not monotone in sigma)"),
    "test_LaplaceBoundedDomain.py::TestLaplaceBoundedDomain::test_effective_epsilon_same": (
        "rigorous calibration: the scale is found with a 1e-12 relative safety margin below "
        "epsilon, so effective_epsilon() is 0.999999999999 instead of exactly 1.0"),
    "test_Snapping.py::TestSnapping::test_immediately_above_zero_effective_epsilon": (
        "Mironov's Thm. 1 bound (1 + 2^-49 B) / lambda <= eps with lambda < B has no solution "
        "for eps <= 2^-48; diffprivlib's looser effective-epsilon formula accepts 2^-52"),
}


@pytest.fixture(scope="module", autouse=True)
def _dpfast_backend(request: pytest.FixtureRequest):
    from dpfast.compat.diffprivlib import REPLACEMENTS

    with pytest.MonkeyPatch.context() as mp:
        for name, value in list(vars(request.module).items()):
            if isinstance(value, type) and value in REPLACEMENTS:
                mp.setattr(request.module, name, REPLACEMENTS[value])
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for suffix, reason in INTENTIONAL.items():
            if item.nodeid.endswith(suffix):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
