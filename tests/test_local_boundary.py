"""Local-DP clients: what the server sees (issue 36, channel 9).

(a) The refusal is not a channel: every report is charged its worst case, so the reports
a client sends in a period, and which requests are refused, depend on the number of
requests only -- (v, v, v, v, v) and (v, v, v, v, w) are answered alike.
(b) Fresh randomness per report: a raw 32-byte key derives a new generator for every
report batch of a ``Client`` / ``ClientPool`` (a counter kept in the state), so two reports
of one value are independent; only the same batch re-run (a restored state) reproduces.
"""

from __future__ import annotations

import math
import shutil
from fractions import Fraction

import numpy as np
import pytest

from dpfast import local as L

from .helpers import KEY, chisquare_pvalue


class _Clock:
    def __init__(self, t: float = 10 * 86400.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _rappor() -> L.Rappor:
    return L.Rappor(128, 2, 4, f=0.5, p=0.5, q=0.75, hash_seed=2)


def _rows(batch: L.ReportBatch) -> list[bytes]:
    """Each report of a batch as bytes (all its columns)."""
    cols = [np.ascontiguousarray(a).reshape(batch.n, -1) for a in batch.arrays.values()]
    return [b"".join(c[i].tobytes() for c in cols) for i in range(batch.n)]


def _pattern(client: L.Client, sequence: list[list]) -> list[tuple[bool, float, str]]:
    """(sent?, epsilon spent after, the refusal's message without the client id) for each
    request of ``sequence``."""
    out = []
    for values in sequence:
        msg = ""
        try:
            sent = client.report(values).n == len(values)
        except L.BudgetExhaustedError as e:
            msg = str(e).replace(str(client.client_id), "<id>")
            sent = False
        out.append((sent, client.spent(), msg))
    return out


def test_rappor_refusals_do_not_depend_on_repeated_values(tmp_path) -> None:
    """Channel 9a of issue 36: at a budget of epsilon_inf, five single reports of one
    value and four of it plus one of another are sent (or refused) alike, and so are the
    same requests as one batch each.  The old code charged a repeated value less
    (memoised permanent response): it sent all of (v, v, v, v, v) but refused the fifth
    report of (v, v, v, v, w)."""
    proto = _rappor()
    e1, einf = Fraction(proto.epsilon_one), Fraction(proto.epsilon_longitudinal)
    assert 4 * e1 <= einf < 5 * e1  # the configuration where the old rule leaked
    seqs = [list("vvvvv"), list("vvvvw"), list("vwuvw"), list("wwwww")]
    singles, batches = [], []
    for j, seq in enumerate(seqs):
        with L.Client(proto, tmp_path / f"s{j}.sqlite", budget=float(einf),
                      clock=_Clock(), rng=KEY) as c:
            singles.append(_pattern(c, [[v] for v in seq]))
        with L.Client(proto, tmp_path / f"b{j}.sqlite", budget=float(einf),
                      clock=_Clock(), rng=KEY) as c:
            batches.append(_pattern(c, [seq, seq[:4]]))
    assert all(p == singles[0] for p in singles)
    assert [p[0] for p in singles[0]] == [True] * 4 + [False]
    assert all(p == batches[0] for p in batches)
    assert [p[0] for p in batches[0]] == [False, True]  # 5 e1 > budget; 4 e1 fits


def test_costs_and_refusals_are_the_same_for_every_protocol(tmp_path) -> None:
    """Channel 9a: for every protocol a request's cost is epsilon per value, so its
    refusal depends on the number of values alone (pure protocols and the pool were
    already so; the check covers them all)."""
    protos = {"krr": L.GeneralizedRandomizedResponse(5, 1.5),
              "oue": L.OptimizedUnaryEncoding(5, 1.5),
              "olh": L.OptimalLocalHashing(5, 1.5),
              "cms": L.CountMeanSketch(1.5, 4, 64, hash_seed=1),
              "hcms": L.HadamardCountMeanSketch(1.5, 4, 64, hash_seed=1),
              "rappor": _rappor()}
    for name, proto in protos.items():
        pats = []
        for j, vals in enumerate(([1, 1, 1], [1, 2, 3])):
            with L.Client(proto, tmp_path / f"{name}{j}.sqlite", budget=4.0,
                          clock=_Clock(), rng=KEY) as c:
                assert c.cost(vals) == c.cost([vals[0]] * 3) == c.cost([4, 0, 2])
                pats.append(_pattern(c, [[v] for v in vals] + [[vals[0]]] * 3))
        assert pats[0] == pats[1], name
        pools = []
        for j, vals in enumerate(([1, 1, 1, 1, 1], [1, 2, 3, 1, 4])):
            pool = L.ClientPool(proto, tmp_path / f"{name}{j}.pool", num_clients=2,
                                budget=4.0, clock=_Clock(), rng=KEY)
            _, ok = pool.report_allowed([0, 0, 0, 1, 0], vals)
            pools.append(ok.tolist())
        assert pools[0] == pools[1], name


@pytest.mark.parametrize("name", ["rappor", "oue"])
def test_raw_key_client_reports_of_one_value_differ(tmp_path, name: str) -> None:
    """Channel 9b of issue 36: with ``rng=bytes(32)`` the old Client used the same
    randomness for every report (identical inputs gave identical reports); each report
    batch now derives its own generator.  Output spaces of 2**128 (RAPPOR) / 2**64 (OUE)
    reports: equal by chance with negligible probability."""
    proto = _rappor() if name == "rappor" else L.OptimizedUnaryEncoding(64, 1.0)
    value = ["x"] if name == "rappor" else [3]
    with L.Client(proto, tmp_path / "c.sqlite", budget=40.0, clock=_Clock(),
                  rng=bytes(32)) as c:
        reports = [_rows(c.report(value))[0] for _ in range(4)]
    assert len(set(reports)) == 4
    pool = L.ClientPool(proto, tmp_path / "p.pool", num_clients=3, budget=40.0,
                        clock=_Clock(), rng=bytes(32))
    got = [_rows(pool.report([0, 1], value * 2)) for _ in range(3)]
    assert len({r for batch in got for r in batch}) == 6  # across calls and clients


def _pairs_pvalue(a: np.ndarray, b: np.ndarray, k: int, eps: float, v: int) -> float:
    """Chi-square p-value of the pairs ``(a_i, b_i)`` of k-RR reports of the value ``v``
    against the product of the exact marginals (keep ``v`` with e^eps / (e^eps + k - 1),
    else uniform on the others)."""
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    marg = np.full(k, (1 - keep) / (k - 1))
    marg[v] = keep
    counts = np.bincount(a * k + b, minlength=k * k)
    return chisquare_pvalue(counts, np.outer(marg, marg).ravel())


def test_raw_key_reports_are_independent_of_each_other(tmp_path) -> None:
    """Channel 9b: two report batches of a Client (and of a ClientPool) with a fixed raw
    key, 4000 reports of one value each: the pairs (report i of batch 1, report i of batch
    2) follow the product of the exact marginals (chi-square; the old code gave identical
    batches, p = 0), and so do adjacent reports within one batch."""
    k, eps, n, v = 4, 1.0, 4000, 2
    proto = L.GeneralizedRandomizedResponse(k, eps)
    with L.Client(proto, tmp_path / "c.sqlite", budget=2 * n * eps, clock=_Clock(),
                  rng=KEY) as c:
        a = c.report(np.full(n, v)).arrays["values"].astype(np.int64)
        b = c.report(np.full(n, v)).arrays["values"].astype(np.int64)
    assert _pairs_pvalue(a, b, k, eps, v) > 1e-4
    assert _pairs_pvalue(a[0::2], a[1::2], k, eps, v) > 1e-4
    pool = L.ClientPool(proto, tmp_path / "p.pool", num_clients=n, budget=2 * eps,
                        clock=_Clock(), rng=KEY)
    a = pool.report(np.arange(n), np.full(n, v)).arrays["values"].astype(np.int64)
    b = pool.report(np.arange(n), np.full(n, v)).arrays["values"].astype(np.int64)
    assert _pairs_pvalue(a, b, k, eps, v) > 1e-4


def test_only_the_same_batch_rerun_reproduces(tmp_path) -> None:
    """A raw key replays a report batch only when its counter is the same: a state file
    restored from a copy (the same batch re-run) gives the same reports, the next batch
    of the live state does not.  A Generator rebuilt from the key replays its sequence."""
    proto = _rappor()
    path, copy = tmp_path / "c.sqlite", tmp_path / "copy.sqlite"
    with L.Client(proto, path, budget=40.0, clock=_Clock(), rng=KEY) as c:
        first = c.report(["x", "y"])
    shutil.copy(path, copy)
    with L.Client(None, path, clock=_Clock(), rng=KEY) as c:
        second = c.report(["x", "y"])
    shutil.copy(copy, path)
    with L.Client(None, path, clock=_Clock(), rng=KEY) as c:
        rerun = c.report(["x", "y"])
    assert rerun == second and second != first


def test_rng_is_checked_before_anything_is_charged(tmp_path) -> None:
    """A bad ``rng`` is refused when the client is built: the old Client accepted it and
    failed in the randomizer after the charge (budget spent, nothing sent)."""
    proto = L.GeneralizedRandomizedResponse(3, 1.0)
    with pytest.raises(ValueError, match="rng"):
        L.Client(proto, tmp_path / "c.sqlite", budget=4.0, rng=b"short")
    with pytest.raises(TypeError, match="rng"):
        L.Client(proto, tmp_path / "c.sqlite", budget=4.0, rng=12345)
    with pytest.raises(TypeError, match="rng"):
        L.ClientPool(proto, tmp_path / "p.pool", num_clients=2, budget=4.0,
                     rng=np.random.default_rng(1))


@pytest.mark.parametrize("name", ["oue", "olh", "cms", "rappor"])
def test_randomizers_give_each_value_of_a_batch_its_own_randomness(name: str) -> None:
    """Every randomizer, one call with a raw key: 2000 reports of one value are pairwise
    different (output spaces of at least 2**64; the within-batch half of channel 9b)."""
    protos = {"oue": L.OptimizedUnaryEncoding(64, 1.0),
              "olh": L.OptimalLocalHashing(64, 1.0),
              "cms": L.CountMeanSketch(1.0, 4, 256, hash_seed=1)}
    if name == "rappor":
        rep = _rappor().encode(["x"] * 2000, np.zeros(2000, np.int64), KEY, rng=bytes(32))
        rows = [rep.bits[i].tobytes() for i in range(2000)]
    else:
        rows = _rows(L.randomize(protos[name], [7] * 2000, rng=bytes(32)))
    assert len(set(rows)) == 2000


def test_small_output_randomizers_are_independent_within_a_batch() -> None:
    """The rest of the randomizers (binary RR, k-RR, Hadamard CMS), one call with a raw key,
    16000 reports of one value: adjacent reports (2i, 2i+1) follow the product of the
    exact marginals (chi-square): no value of a call shares another's randomness."""
    n = 16000
    for k in (2, 5):
        rep = L.randomize(L.GeneralizedRandomizedResponse(k, 1.0), [1] * n, rng=bytes(32))
        a = rep.arrays["values"].astype(np.int64)
        assert _pairs_pvalue(a[0::2], a[1::2], k, 1.0, 1) > 1e-4
    hc = L.randomize(L.HadamardCountMeanSketch(1.0, 4, 64, hash_seed=1), [7] * n,
                     rng=bytes(32))
    rows = hc.arrays["rows"].astype(np.int64)  # uniform on [0, 4), independent of the value
    cols = hc.arrays["cols"].astype(np.int64) % 8  # uniform on [0, 64) -> on [0, 8)
    for x, m in ((rows, 4), (cols, 8)):
        counts = np.bincount(x[0::2] * m + x[1::2], minlength=m * m)
        assert chisquare_pvalue(counts, np.full(m * m, 1.0 / (m * m))) > 1e-4
