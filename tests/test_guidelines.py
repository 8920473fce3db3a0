"""dpfast.guidelines: the use-case table, deployments and the range warning."""

from __future__ import annotations

import warnings

import pytest

from dpfast import guidelines as gl


def test_table_matches_the_guidance() -> None:
    expected = {
        "government_statistics": (0.1, 1.0),
        "healthcare": (0.5, 2.0),
        "location": (1.0, 3.0),
        "product_analytics": (1.0, 5.0),
        "ab_testing": (2.0, 8.0),
        "public_reporting": (0.5, 3.0),
    }
    assert {k: (u.low, u.high) for k, u in gl.USE_CASES.items()} == expected
    assert all(u.source for u in gl.USE_CASES.values())


def test_deployments_with_sources() -> None:
    by_name = {d.name: d for d in gl.DEPLOYMENTS}
    census = next(d for n, d in by_name.items() if "Census" in n)
    assert census.low == census.high == 19.61 and "Census" in census.source
    apple = [d for d in gl.DEPLOYMENTS if d.name.startswith("Apple")]
    assert sorted(d.low for d in apple) == [4.0, 8.0]
    rappor = next(d for d in gl.DEPLOYMENTS if "RAPPOR" in d.name)
    assert (rappor.low, rappor.high) == (2.0, 9.0) and "Erlingsson" in rappor.source
    assert all(d.source for d in gl.DEPLOYMENTS)


@pytest.mark.parametrize("name", ["healthcare", "Healthcare analytics", "health",
                                  "HEALTHCARE_ANALYTICS"])
def test_aliases(name) -> None:
    assert gl.use_case_range(name) == (0.5, 2.0)


def test_ab_aliases() -> None:
    assert gl.use_case("A/B testing").key == "ab_testing"
    assert gl.use_case("ab-testing").key == "ab_testing"


def test_check_warns_outside_only() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gl.check_use_case("healthcare", 0.5)
        assert gl.check_use_case("healthcare", 2.0)
        assert gl.check_use_case(None, 100.0)
    with pytest.warns(UserWarning, match="above the range 0.5-2"):
        assert not gl.check_use_case("healthcare", 2.5)
    with pytest.warns(UserWarning, match="below the range 0.5-2"):
        assert not gl.check_use_case("healthcare", 0.1)


def test_bad_names() -> None:
    with pytest.raises(ValueError, match="use_case must be one of"):
        gl.use_case("astrology")
    with pytest.raises(TypeError, match="use_case"):
        gl.use_case(3)  # type: ignore[arg-type]


def test_placement_lines() -> None:
    lines = gl.placement(19.61, "government statistics")
    assert lines[0] == "Government statistics: above the 0.1-1 range"
    assert any(line.startswith("within US Census 2020") for line in lines)
    assert any(line.startswith("above Apple emoji") for line in lines)
    lines = gl.placement(1.5)
    assert "Healthcare analytics" in lines[0] and "Government" not in lines[0]


def test_release_functions_warn() -> None:
    import numpy as np

    from dpfast import tables

    keys = np.array([1, 2, 2, 3])
    with pytest.warns(UserWarning, match="release epsilon 5 is above the range 0.5-2"):
        tables.count(keys, epsilon=5.0, domain=np.array([1, 2, 3]), use_case="healthcare",
                     rng=bytes(32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tables.count(keys, epsilon=1.0, domain=np.array([1, 2, 3]), use_case="healthcare",
                     rng=bytes(32))
        tables.sum(np.array([1.0, 2, 3, 4]), keys, bounds=(0, 5), epsilon=1.0,
                   domain=np.array([1, 2, 3]), use_case="healthcare", rng=bytes(32))
    with pytest.warns(UserWarning, match=r"rho 0.5 at delta 1e-10"):
        tables.count(keys, rho=0.5, domain=np.array([1, 2, 3]), use_case="healthcare",
                     rng=bytes(32))
    with pytest.raises(ValueError, match="use_case"):
        tables.mean(np.array([1.0, 2, 3, 4]), keys, bounds=(0, 5), epsilon=1.0,
                    domain=np.array([1, 2, 3]), use_case="astrology", rng=bytes(32))


def test_histogram_use_case() -> None:
    import numpy as np

    import dpfast

    with pytest.warns(UserWarning, match="above the range 0.1-1"):
        dpfast.histogram(np.array([0.5, 1.5, 1.7]), bins=3, range=(0, 3), epsilon=4.0,
                         use_case="government statistics", rng=bytes(32))
