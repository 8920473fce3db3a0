"""The neighbour audit (issue 36, "An audit that finds the next one"): every public release
path, run on D and on D' = D ± one adversarial person with the same generator key
(:mod:`dpfast.testing`), shows the same control flow and failures, moves every additive
cell by at most the stated sensitivity, publishes keys that differ only by the person's,
and publishes the person's own keys no more often than δ allows.

Every case passes on the current code.  Attacks that are now refused before the charge
stay as regression guards (``ReleasePath(refused=...)``: both runs raise that exception,
publish nothing and charge nothing).  A case a path lists in ``known`` (a stated, still
open finding: none at present) is ``xfail(strict=True)``: when its fix lands, the XPASS
fails the run and the marker must go.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import dpfast.testing as T

ROOT = pathlib.Path(__file__).resolve().parents[1]
PATHS = T.release_paths()


def _case_params() -> list:
    params = []
    for path in PATHS:
        for case in path.cases():
            marks = [pytest.mark.slow] if path.slow else []
            if case.name in path.known:
                marks.append(pytest.mark.xfail(strict=True, reason=path.known[case.name],
                                               raises=T.AuditError))
            params.append(pytest.param(path, case, id=f"{path.name}:{case.name}",
                                       marks=marks))
    return params


def test_every_release_path_is_audited() -> None:
    """Every public release function (tables, dask, histogram, every Session and Analyst
    method, the local-DP clients) is covered by a registered path: a new release path
    that does not register with :func:`dpfast.testing.register` fails here."""
    covered = {name for p in PATHS for name in p.covers}
    missing = sorted(set(T.public_release_names()) - covered)
    assert not missing, f"release paths not registered with the neighbour audit: {missing}"
    stale = sorted(covered - set(T.public_release_names()))
    assert not stale, f"registered paths cover names that are not public releases: {stale}"
    assert len({p.name for p in PATHS}) == len(PATHS)


def test_an_unregistered_release_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpfast.tables

    def new_release(keys: object) -> None:  # a public release nobody registered
        return None

    monkeypatch.setattr(dpfast.tables, "new_release", new_release, raising=False)
    monkeypatch.setattr(dpfast.tables, "__all__", [*dpfast.tables.__all__, "new_release"])
    covered = {name for p in PATHS for name in p.covers}
    assert set(T.public_release_names()) - covered == {"dpfast.tables.new_release"}


def test_the_enumeration_sees_every_kind_of_release() -> None:
    names = set(T.public_release_names())
    for expected in ("dpfast.tables.count", "dpfast.tables.aggregate", "dpfast.tables.topdown",
                     "dpfast.tables.histogram.histogramdd", "dpfast.dask.privacy_id_count",
                     "dpfast.dask.laplace", "dpfast.Session.sql", "dpfast.Session.release",
                     "dpfast.Session.Analyst.histogram", "dpfast.local.Client.report",
                     "dpfast.local.ClientPool.report"):
        assert expected in names
    assert not names & set(T.NOT_RELEASES)


@pytest.mark.parametrize(("path", "case"), _case_params())
def test_neighbour_audit(path: T.ReleasePath, case: T.Case) -> None:
    report = T.audit(path.run, case.D, case.D_prime, person_keys=case.person_keys,
                     sensitivity=path.sensitivity, name=f"{path.name} ({case.name})")
    assert report.passed
    if path.refused is not None:  # an attack: refused before the charge on D and D' alike
        T.check_refused(report, path.refused)
        return
    # not vacuous: the path releases on D (both runs refusing alike would pass (a))
    failed = [x for x in report.on_d.shape if isinstance(x, T.Raised)]
    assert not failed or path.name.startswith("local."), failed


def _rate_params() -> list:
    params = []
    for path in PATHS:
        if not path.selects_keys or path.slow or path.name.startswith(("session.", "analyst.")):
            continue
        marks = [pytest.mark.slow]
        if "rate" in path.known:
            marks.append(pytest.mark.xfail(strict=True, reason=path.known["rate"],
                                           raises=T.AuditError))
        params.append(pytest.param(path, id=path.name, marks=marks))
    return params


@pytest.mark.parametrize("path", _rate_params())
def test_publication_rate(path: T.ReleasePath) -> None:
    """(d) A person holding 300 keys nobody else holds gets one of them published in at
    most a δ fraction of runs (binomial test at level 1e-3, fixed keys).  Guards issue 36
    channel 8: ``bounding="l2"`` took its candidates from the unbounded data."""
    D = T.audit_records()
    (person,) = T.adversarial_people(D, kinds=["many_keys"], n_keys=300)
    T.publication_rate(path.run, T.with_person(D, person), person.new_keys, runs=40)


@pytest.mark.slow
def test_publication_rate_of_a_session() -> None:
    (path,) = [p for p in PATHS if p.name == "session.count/select"]
    D = T.audit_records()
    (person,) = T.adversarial_people(D, kinds=["many_keys"], n_keys=100)
    rate = T.publication_rate(path.run, T.with_person(D, person), person.new_keys, runs=12)
    assert rate.runs == 12 and 0 < rate.delta <= 1e-2  # the selection's share of δ


def test_local_client_reports_are_fresh_per_report(tmp_path: pathlib.Path) -> None:
    """Issue 36 channel 9b: a Client with a raw key reused the same randomness for every
    report (identical inputs, identical reports)."""
    from dpfast.local import Client, GeneralizedRandomizedResponse

    c = Client(GeneralizedRandomizedResponse(16, 1.0), tmp_path / "c.db", budget=100.0,
               rng=bytes(range(32)))
    try:
        reports = [c.report([3]).to_bytes() for _ in range(24)]
    finally:
        c.close()
    assert len(set(reports)) > 1, "24 reports of one value with a raw key are identical"


# ---------------------------------------------------------------- the harness finds defects

def _count(d: dict, rng: bytes) -> object:
    import dpfast.tables

    return dpfast.tables.count(d["key"], d["id"], epsilon=1.0, domain=[0, 1, 2], rng=rng)


def _records() -> dict:
    return {"id": np.arange(12), "key": np.arange(12) % 3, "value": np.linspace(0, 1, 12)}


def test_the_audit_passes_a_correct_release() -> None:
    D = _records()
    (p,) = T.adversarial_people(D, kinds=["many_rows"], n_rows=5, bounds=(0, 1))
    report = T.audit(_count, D, T.with_person(D, p), person_keys=p.keys)
    assert report.passed and report.cells_checked == 3


def test_the_audit_finds_a_data_dependent_failure() -> None:
    def release(d: dict, rng: bytes) -> object:
        if np.isnan(d["value"]).any():
            raise ValueError("values contain NaN")
        return _count(d, rng)

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["nan"])
    with pytest.raises(T.AuditError, match=r"\(a\) control flow differs"):
        T.audit(release, D, T.with_person(D, p), person_keys=p.keys)


def test_the_audit_finds_a_leaked_message() -> None:
    def release(d: dict, rng: bytes) -> object:
        raise RuntimeError(f"failed after reading {len(d['id'])} rows")

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["huge"])
    report = T.audit(release, D, T.with_person(D, p), raises=False)
    assert not report.passed and "failed after reading 12 rows" in report.findings[0]
    fixed = T.audit(lambda d, rng: (_ for _ in ()).throw(RuntimeError("failed")), D,
                    T.with_person(D, p))
    assert fixed.on_d.raised == fixed.on_d_prime.raised  # identical failures pass


def test_the_audit_finds_an_understated_sensitivity() -> None:
    """A person with many rows moves a count by more than max_per_partition = 1 when the
    release does not bound it: stated sensitivity 1, moved by 6."""
    def unbounded(d: dict, rng: bytes) -> object:
        import dpfast.tables

        return dpfast.tables.count(d["key"], None, epsilon=1.0, domain=[0, 1, 2], rng=rng)

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["many_rows"], n_rows=6)
    with pytest.raises(T.AuditError, match=r"\(b\) the result\[0.0\] moved by 6.0 > the stated"):
        T.audit(unbounded, D, T.with_person(D, p), person_keys=p.keys)


def test_the_audit_finds_noise_that_is_not_addressed_by_cell() -> None:
    """Noise drawn after one draw per row (sequential, not addressed by the cell) differs
    on D and D' under one key: the audit reports the cells moving beyond the stated 1."""
    def sequential(d: dict, rng: bytes) -> object:
        g = np.random.default_rng(int.from_bytes(rng[:8], "little"))
        g.random(len(d["key"]))  # e.g. a shuffle of the rows
        return np.bincount(d["key"], minlength=3) + g.laplace(0, 10, size=3)

    D = _records()
    report = T.audit(sequential, D, T.without_person(D, 5), sensitivity=1.0, raises=False)
    assert any(f.startswith("(b)") for f in report.findings)
    assert T.audit(_count, D, T.without_person(D, 5)).passed


def _count_on(domain: list) -> object:
    def release(d: dict, rng: bytes) -> object:
        import dpfast.tables

        extra = [7] if len(d["id"]) > 12 else []
        return dpfast.tables.count(d["key"], d["id"], epsilon=1.0, domain=domain + extra,
                                   rng=rng)
    return release


def test_the_audit_finds_a_key_the_person_does_not_hold() -> None:
    def leaky(d: dict, rng: bytes) -> object:
        return {"more than 12 rows": len(d["id"]) > 12, "table": _count(d, rng)}

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["huge"])
    with pytest.raises(T.AuditError, match=r"\(a\) the shape"):
        T.audit(leaky, D, T.with_person(D, p))
    with pytest.raises(T.AuditError, match=r"\(c\) the result: public keys differ"):
        T.audit(_count_on([0, 1, 2]), D, T.with_person(D, p), person_keys=p.keys)


def test_check_refused_finds_a_charge_or_a_release() -> None:
    """A path stated as refused before the charge must raise that exception on D and D',
    publish nothing and return an empty ledger."""
    class Refused(ValueError):
        pass

    D = _records()
    ok = T.audit(lambda d, rng: (T.Raised.of(Refused("refused")), ()), D, D)
    assert T.check_refused(ok, Refused) is ok
    charged = T.audit(lambda d, rng: (T.Raised.of(Refused("refused")), ("a row",)), D, D)
    with pytest.raises(T.AuditError, match="charged while refused"):
        T.check_refused(charged, Refused)
    with pytest.raises(T.AuditError, match="not refused"):
        T.check_refused(T.audit(_count, D, D), Refused)
    other = T.audit(lambda d, rng: (T.Raised.of(KeyError("x")), ()), D, D)
    with pytest.raises(T.AuditError, match="expected .*Refused"):
        T.check_refused(other, Refused)


def test_replay_gives_raw_key_releases_the_same_noise() -> None:
    import dpfast.tables

    key = bytes(range(32))
    D = _records()
    outs = []
    for _ in range(2):
        with T.replay(key):
            outs.append([dpfast.tables.count(D["key"], D["id"], epsilon=0.1, domain=[0, 1, 2],
                                             rng=key) for _ in range(2)])
    for a, b in zip(*outs):
        assert a.release_id == b.release_id and np.array_equal(a.values, b.values)
    assert outs[0][0].release_id != outs[0][1].release_id  # two releases, two ids
    r1 = dpfast.tables.count(D["key"], D["id"], epsilon=0.1, domain=[0, 1, 2], rng=key)
    assert r1.release_id not in {r.release_id for r in outs[0]}  # outside: fresh again


def test_publication_rate_finds_keys_published_too_often() -> None:
    def careless(d: dict, rng: bytes) -> object:  # the person's key in a quarter of runs
        keys = np.unique(d["key"]) if rng[0] < 64 else np.unique(d["key"][d["key"] < 3])
        return T.Cells("", {int(k): 0.0 for k in keys}, selected=True, delta=0.01)

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["new_key"])
    with pytest.raises(T.AuditError, match=r"\(d\) the person's own keys"):
        T.publication_rate(careless, T.with_person(D, p), p.new_keys, runs=60)
    ok = T.publication_rate(careless, D, p.new_keys, runs=20)  # nobody holds them
    assert ok.published == 0 and ok.passed


def test_adversarial_people_and_neighbours() -> None:
    D = T.audit_records()
    before = D.copy()
    people = T.adversarial_people(D, bounds=T.BOUNDS, strings=("code",), divisors=("divisor",),
                                  n_keys=7, n_rows=5)
    assert [p.kind for p in people] == list(T.KINDS)
    by = {p.kind: p for p in people}
    assert len(by["many_keys"].new_keys) == 7 and len(by["many_rows"]) == 5
    assert np.isnan(by["nan"].rows["value"]).all() and by["huge"].rows["value"][0] > 1e300
    assert by["engine"].rows["divisor"][0] == 0
    assert by["new_key"].new_keys[0] not in set(D["key"])
    for p in people:
        D2 = T.with_person(D, p)
        assert len(D2) == len(D) + len(p) and set(D2["id"]) == set(D["id"]) | {p.id}
    assert D.equals(before)  # never mutated
    assert len(T.without_person(D, 0)) == len(D) - 2
    ints = T.adversarial_people({"id": np.arange(3), "key": np.arange(3),
                                 "value": np.arange(3)})
    assert {p.kind for p in ints} == set(T.KINDS) - {"nan", "inf", "minus_inf"}


def test_bad_arguments_are_refused() -> None:
    D = _records()
    with pytest.raises(TypeError, match="key must be 32 bytes"):
        T.audit(_count, D, D, key=b"short")
    with pytest.raises(ValueError, match="kinds: unknown"):
        T.adversarial_people(D, kinds=["odd"])
    with pytest.raises(ValueError, match="'nope' is not a column"):
        T.adversarial_people(D, key="nope")
    with pytest.raises(ValueError, match="no row of data"):
        T.without_person(D, 99)
    with pytest.raises(ValueError, match="person_keys is empty"):
        T.publication_rate(_count, D, ())
    with pytest.raises(ValueError, match="sensitivity must be >= 0"):
        T.observe(np.zeros(2), -1.0)
    with pytest.raises(ValueError, match="already registered"):
        T.register(PATHS[0])


def test_binomial_tail_is_exact_on_small_cases() -> None:
    from dpfast.testing._rate import binomial_tail

    assert binomial_tail(0, 5, 0.3) == 1.0
    assert binomial_tail(5, 5, 0.5) == pytest.approx(1 / 32, rel=1e-12)
    assert binomial_tail(1, 3, 0.1) == pytest.approx(1 - 0.9 ** 3, rel=1e-12)


def test_nothing_in_dpfast_imports_the_audit() -> None:
    """dpfast.testing is the top layer: no module of dpfast (outside it) imports it."""
    for path in sorted((ROOT / "dpfast").rglob("*.py")):
        text = path.read_text()
        if "testing" in path.relative_to(ROOT / "dpfast").parts or "testing" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("dpfast.testing") for n in names), path


# ------------------------------------------------ adaptive choices, censored cells, intervals

def test_a_choice_from_the_release_own_output_stops_the_comparison() -> None:
    """A release that chooses its later parameters from its own DP output (the tuning of
    ``aggregate(max_partitions="auto")``) may choose differently on D and D': the audit
    compares the tables published before the choice (and still finds their defects), not
    the release that follows, and says where it branched."""
    def tuned(moved: float) -> object:
        def release(d: dict, rng: bytes) -> object:
            n = float(len(d["id"]))
            summary = T.Cells(".summary", {0: n * moved}, additive=True, linf=1.0)
            after = T.Cells(".table", {0: float(np.sum(d["id"]))}, additive=True, linf=1.0)
            return [summary, T.Chosen("k", int(n) % 2), after]
        return release

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["new_key"])
    ok = T.audit(tuned(1.0), D, T.with_person(D, p))
    assert ok.passed and ok.cells_checked == 1 and ok.branched == "[1]k: 0 on D != 1 on D'"
    with pytest.raises(T.AuditError, match=r"\(b\) \[0\]\.summary\[0\] moved by 5.0"):
        T.audit(tuned(5.0), D, T.with_person(D, p))
    same = T.audit(tuned(1.0), D, T.with_person(T.without_person(D, 0), p), raises=False)
    assert not same.branched and "[2].table[0] moved by 12.0" in same.findings[0]


def test_censored_cells_move_by_the_sensitivity_across_the_floor() -> None:
    """A DP summary publishes noisy cells below a public floor as 0: a cell published on
    one side only must lie below the floor plus the sensitivity."""
    def summary(v: float) -> object:
        def release(d: dict, rng: bytes) -> object:
            value = v if len(d["id"]) > 12 else 0.0
            return T.Cells("", {0: value, 1: 7.0}, additive=True, linf=1.0, l1=3.0,
                           censored=2.5)
        return release

    D = _records()
    (p,) = T.adversarial_people(D, kinds=["huge"])
    assert T.audit(summary(3.4), D, T.with_person(D, p)).passed
    with pytest.raises(T.AuditError, match="censored below 2.5 on one side"):
        T.audit(summary(3.6), D, T.with_person(D, p))


def test_topdown_intervals_must_not_depend_on_the_data(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The BLUE's half-widths (and standard errors) are functions of the hierarchy and the
    noise parameters only: a half-width that reads the estimate is a channel, found by
    the observation of the interval (the audit did not look at intervals before)."""
    from dpfast.tables import TopDownRelease

    (path,) = [p for p in PATHS if p.name == "tables.topdown/blue"]
    case = next(c for c in path.cases() if c.name == "add-many_rows")
    assert T.audit(path.run, case.D, case.D_prime).passed
    honest = TopDownRelease.confidence_halfwidth

    def leaky(self: TopDownRelease, alpha: float = 0.05) -> list:
        return [h + 1e-3 * np.abs(c) for h, c in zip(honest(self, alpha), self.consistent)]

    monkeypatch.setattr(TopDownRelease, "confidence_halfwidth", leaky)
    report = T.audit(path.run, case.D, case.D_prime, raises=False)
    assert any(f.startswith("(a) the shape") for f in report.findings), report.findings


def test_the_tuning_is_audited_past_its_choice_and_its_summary_moves() -> None:
    """Not vacuous: on the tuning paths the DP summary moves with the person (checked
    against its sensitivity), and ``aggregate(max_partitions="auto")``'s release is
    compared past the tuning's choice where the recommendation agrees."""
    by = {p.name: p for p in PATHS}
    tune = by["tables.tune/domain"]
    case = next(c for c in tune.cases() if c.name == "add-many_rows")
    report = T.audit(tune.run, case.D, case.D_prime, person_keys=case.person_keys)
    (a,) = [t for t in report.on_d.tables if t.name == ".summary"]
    (b,) = [t for t in report.on_d_prime.tables if t.name == ".summary"]
    assert a.censored > 0 and sum(abs(a.cells[k] - b.cells[k]) for k in a.cells) >= 1
    auto = by["tables.aggregate/auto"]
    case = next(c for c in auto.cases() if c.name == "remove")
    report = T.audit(auto.run, case.D, case.D_prime, person_keys=case.person_keys)
    assert not report.branched
    assert any(t.name.startswith("[0].count") for t in report.on_d.tables)


def test_the_value_histogram_of_the_tuning_is_audited_and_moves() -> None:
    """Not vacuous: ``aggregate(bounds={"value": "auto"})``'s DP value histogram is a table
    of the audit (one unit per person, censored below its upper floor) and moves with the
    person on some neighbour."""
    by = {p.name: p for p in PATHS}
    path = by["tables.aggregate/auto-bounds"]
    moved = 0.0
    for case in path.cases():
        report = T.audit(path.run, case.D, case.D_prime, person_keys=case.person_keys)
        (a,) = [t for t in report.on_d.tables if t.name.endswith(".values[value]")]
        (b,) = [t for t in report.on_d_prime.tables if t.name.endswith(".values[value]")]
        assert a.l1 == 1.0 and a.censored > 0 and a.cells.keys() == b.cells.keys()
        moved += sum(abs(a.cells[k] - b.cells[k]) for k in a.cells)
    assert moved >= 1
