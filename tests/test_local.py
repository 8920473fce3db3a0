"""Local DP: exact reporting probabilities, audits, unbiased estimators with their exact
variances (repeated trials), hashing shared by clients and servers, RAPPOR decoding,
validation.  Fixed keys: every statistical test is deterministic."""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import hypothesis
import mpmath
import numpy as np
import pytest
from hypothesis import strategies as st

from dpfast import local as L
from dpfast._kernels import local as _lk
from dpfast._kernels.chacha import ST_COLS
from dpfast.accounting import events
from dpfast.local import _lanes, hashing, rappor
from dpfast.noise import _exact

from .helpers import KEY

SECRET = bytes(range(100, 132))
LN3 = math.log(3)


def key(i: int) -> bytes:
    return hashlib.blake2b(i.to_bytes(8, "little"), digest_size=32).digest()


def mp_keep(eps: float, k: int, dps: int = 60) -> mpmath.mpf:
    with mpmath.workdps(dps):
        e = mpmath.exp(mpmath.mpf(Fraction(eps).numerator) / Fraction(eps).denominator)
        return e / (e + k - 1)


def check_unbiased_and_variance(est: np.ndarray, truth: np.ndarray, var: np.ndarray) -> None:
    """est (T, items) estimates over T independent trials; truth, var (items,)."""
    t = est.shape[0]
    mean_err = est.mean(axis=0) - truth
    se = np.sqrt(var / t)
    assert np.all(np.abs(mean_err) <= 3 * se), (mean_err / se)
    emp = est.var(axis=0, ddof=1)
    ratio = emp / var
    assert np.all(np.abs(ratio - 1) <= 0.10), ratio


# ============================================================================ exactness
@pytest.mark.parametrize("eps,k", [(0.5, 2), (LN3, 2), (1.3, 5), (3.0, 40), (0.01, 3)])
def test_threshold_words_are_exact_floor(eps, k):
    thr = _lanes._keep_threshold(Fraction(eps), k)
    with mpmath.workdps(80):
        want = int(mpmath.floor(mp_keep(eps, k) * mpmath.mpf(2) ** 64))
    assert thr.terminal == 0 and int(thr.words[0]) == want
    lo, hi = thr.bounds(300)
    with mpmath.workdps(120):
        c = mp_keep(eps, k, 120) * mpmath.mpf(2) ** 300
        assert lo <= c <= hi and hi - lo <= 4


def test_dyadic_thresholds():
    t = _lanes._Threshold(Fraction(0.3))
    assert t.terminal == 1
    m = 0
    for w in t.words:
        m = (m << 64) | int(w)
    assert Fraction(m, 1 << (64 * len(t.words))) == Fraction(0.3)
    assert _lanes._Threshold(Fraction(1)).terminal == 2
    z = _lanes._Threshold(Fraction(0))
    assert z.terminal == 1 and z.words.size == 0
    tiny = _lanes._Threshold(Fraction(1e-30))
    assert tiny.terminal == 1 and len(tiny.words) == 3  # bits down to 2^-152


def test_rr_probability_exact_large_sample():
    eps = 0.5
    n = 8_000_000
    x = np.ones(n, bool)
    y = L.randomized_response(x, eps, rng=KEY)
    p = float(mp_keep(eps, 2))
    se = math.sqrt(p * (1 - p) / n)
    assert abs(y.mean() - p) <= 4 * se


def test_krr_probability_exact_large_sample():
    eps, k = 1.3, 5
    n = 4_000_000
    x = np.full(n, 2)
    y = L.k_randomized_response(x, k, eps, rng=KEY)
    freq = np.bincount(y, minlength=k) / n
    p = float(mp_keep(eps, k))
    q = (1 - p) / (k - 1)
    for v in range(k):
        want = p if v == 2 else q
        assert abs(freq[v] - want) <= 4.5 * math.sqrt(want * (1 - want) / n)


def test_forced_exact_continuation():
    # every decision goes through the exact Python path; distribution unchanged
    eps, k, n = 0.7, 3, 6000
    with _exact.force_exact(3):
        y = L.k_randomized_response(np.zeros(n, np.int64), k, eps, rng=KEY)
        b = L.randomized_response(np.zeros(4000, bool), eps, rng=KEY)
        o = L.OptimizedUnaryEncoding(6, 1.0).perturb(np.zeros(300, np.int64), rng=KEY)
        c = L.CountMeanSketch(2.0, 2, 32, hash_seed=1).perturb(np.zeros(30, np.int64),
                                                               rng=KEY)
    p = float(mp_keep(eps, k))
    assert abs((y == 0).mean() - p) <= 4 * math.sqrt(p * (1 - p) / n)
    assert set(np.unique(y)) <= {0, 1, 2}
    pf = 1 - float(mp_keep(eps, 2))
    assert abs(b.mean() - pf) <= 4 * math.sqrt(pf * (1 - pf) / 4000)
    q = 1 / (math.e + 1)
    assert abs(o[:, 1:].mean() - q) <= 4 * math.sqrt(q * (1 - q) / o[:, 1:].size)
    assert c.bits.shape == (30, 4)


def test_deterministic_for_a_key_and_inputs_untouched():
    x = np.arange(1000) % 7
    x0 = x.copy()
    a = L.k_randomized_response(x, 7, 1.0, rng=KEY)
    b = L.k_randomized_response(x, 7, 1.0, rng=KEY)
    assert np.array_equal(a, b) and np.array_equal(x, x0)
    c = L.k_randomized_response(x, 7, 1.0, rng=key(5))
    assert not np.array_equal(a, c)


def test_rr_shape_and_dtype():
    x = (np.arange(24).reshape(2, 3, 4) % 2).astype(np.int8)
    y = L.randomized_response(x, 1.0, rng=KEY)
    assert y.shape == x.shape and y.dtype == np.int8 and set(np.unique(y)) <= {0, 1}
    yb = L.randomized_response(x.astype(bool), 1.0, rng=KEY)
    assert yb.dtype == np.bool_ and yb.shape == x.shape
    assert L.randomized_response(np.zeros(0, bool), 1.0, rng=KEY).shape == (0,)


# ============================================================================ audit
@pytest.mark.parametrize("k", [2, 4])
def test_audit_ln3(k):
    """Empirical audit: for every output y, P[y | v] <= e^eps P[y | v'] up to sampling
    error (upper confidence bound of the ratio), and the bound is nearly attained."""
    eps = LN3
    n = 1_000_000
    y0 = L.k_randomized_response(np.zeros(n, np.int64), k, eps, rng=key(10 + k))
    y1 = L.k_randomized_response(np.ones(n, np.int64), k, eps, rng=key(20 + k))
    f0 = np.bincount(y0, minlength=k) / n
    f1 = np.bincount(y1, minlength=k) / n
    for a, b in ((f0, f1), (f1, f0)):
        for v in range(k):
            ratio = a[v] / b[v]
            rel = math.sqrt((1 - a[v]) / (n * a[v]) + (1 - b[v]) / (n * b[v]))
            assert math.log(ratio) <= eps + 4 * rel
    assert f0[0] / f1[0] == pytest.approx(3.0, rel=0.02)


# ============================================================================ estimators
T = 3000  # trials per estimator


def test_binary_rr_estimator_unbiased_variance():
    eps, n = 1.0, 400
    truth = 130
    x = np.zeros((T, n), bool)
    x[:, :truth] = True
    y = L.randomized_response(x, eps, rng=KEY)
    est = np.array([L.randomized_response_estimate(y[t], eps).counts for t in range(T)])
    ax = L.randomized_response_estimate(y, eps, axis=1)
    assert np.allclose(ax.counts, est)
    grr = L.GeneralizedRandomizedResponse(2, eps)
    var = np.array([grr.variance(n, truth)])
    check_unbiased_and_variance(est[:, None], np.array([truth]), var)


def test_krr_estimator_unbiased_variance():
    eps, k = 1.5, 6
    counts = np.array([300, 200, 150, 100, 50, 0])
    n = counts.sum()
    x = np.repeat(np.arange(k), counts)
    y = L.k_randomized_response(np.tile(x, T), k, eps, rng=KEY).reshape(T, n)
    grr = L.GeneralizedRandomizedResponse(k, eps)
    sup = np.stack([np.bincount(r, minlength=k) for r in y])
    est = (sup - n * grr.q) / (grr.p - grr.q)
    e0 = L.k_randomized_response_estimate(y[0], k, eps)
    assert np.allclose(e0.counts, est[0])
    check_unbiased_and_variance(est, counts, grr.variance(n, counts))


def test_oue_estimator_unbiased_variance():
    eps, k = 1.0, 8
    counts = np.array([200, 120, 80, 50, 30, 15, 5, 0])
    n = counts.sum()
    x = np.tile(np.repeat(np.arange(k), counts), T)
    oue = L.OptimizedUnaryEncoding(k, eps)
    r = oue.perturb(x, rng=KEY).reshape(T, n, k)
    est = (r.sum(axis=1) - n * oue.q) / (oue.p - oue.q)
    e0 = oue.estimate(r[0])
    assert np.allclose(e0.counts, est[0])
    check_unbiased_and_variance(est, counts, oue.variance(n, counts))
    # paper's formula for an absent value
    e = math.exp(eps)
    assert oue.variance(n) == pytest.approx(n * 4 * e / (e - 1) ** 2, rel=1e-12)


def test_olh_estimator_unbiased_variance():
    eps, k = 2.0, 8
    counts = np.array([200, 120, 80, 50, 30, 15, 5, 0])
    n = counts.sum()
    olh = L.OptimalLocalHashing(k, eps)
    assert olh.g == round(math.exp(eps)) + 1
    rep = olh.perturb(np.tile(np.repeat(np.arange(k), counts), T), rng=KEY)
    est = np.empty((T, k))
    for t in range(T):
        sl = slice(t * n, (t + 1) * n)
        est[t] = olh.estimate(L.OlhReports(rep.seeds[sl], rep.values[sl])).counts
    check_unbiased_and_variance(est, counts, olh.variance(n, counts))
    g = olh.g
    p = math.exp(eps) / (math.exp(eps) + g - 1)
    assert olh.variance(n) == pytest.approx(n * (1 / g) * (1 - 1 / g) / (p - 1 / g) ** 2)


def _sketch_trials(cls, eps, counts, m, k, trials):
    n = counts.sum()
    items = np.repeat(np.arange(counts.size), counts)
    cands = np.arange(counts.size + 1)  # the last candidate is absent
    est = np.empty((trials, cands.size))
    sk = None
    for t in range(trials):
        sk = cls(eps, k, m, hash_seed=t + 1)  # fresh random hash functions per trial
        est[t] = sk.estimate(sk.perturb(items, rng=key(t)), cands).counts
    truth = np.append(counts, 0)
    s2 = float(np.sum(counts.astype(float) ** 2))
    var = np.array([sk.variance(n, c, s2 - c * c) for c in truth])
    return est, truth, var


@pytest.mark.slow
def test_cms_estimator_unbiased_variance():
    counts = np.array([150, 100, 60, 40, 30, 20])
    est, truth, var = _sketch_trials(L.CountMeanSketch, 2.0, counts, 16, 4, T)
    check_unbiased_and_variance(est, truth, var)


@pytest.mark.slow
def test_hcms_estimator_unbiased_variance():
    counts = np.array([150, 100, 60, 40, 30, 20])
    est, truth, var = _sketch_trials(L.HadamardCountMeanSketch, 2.0, counts, 16, 4, T)
    check_unbiased_and_variance(est, truth, var)


def test_cms_sketch_merge_and_collect():
    cms = L.CountMeanSketch(3.0, 8, 64, hash_seed=3)
    items = np.arange(5000) % 10
    r1 = cms.perturb(items[:2000], rng=KEY)
    r2 = cms.perturb(items[2000:], rng=KEY)
    merged = cms.aggregate(r1) + cms.aggregate(r2)
    both = cms.aggregate(L.CmsReports(np.concatenate([r1.rows, r2.rows]),
                                      np.concatenate([r1.bits, r2.bits])))
    assert np.array_equal(merged.ones, both.ones) and merged.n == 5000
    sk = cms.collect(items, rng=KEY, batch=1500)
    assert sk.n == 5000 and sk.totals.sum() == 5000
    e = cms.estimate(sk, np.arange(10))
    assert np.all(np.abs(e.counts - 500) <= 5 * e.std_error)


@pytest.mark.slow
def test_rappor_bit_estimates_unbiased_variance():
    rap = L.Rappor(num_bits=16, num_hashes=2, num_cohorts=1, f=0.25, p=0.25, q=0.75,
                   hash_seed=11)
    counts = np.array([120, 60, 20])
    n = counts.sum()
    values = np.repeat(np.arange(3), counts)
    bloom = rap.bloom_bits(np.arange(3))[0]  # (m, 3)
    truth = bloom @ counts
    trials = 2000
    est = np.empty((trials, 16))
    for t in range(trials):  # a fresh client secret per trial: fresh permanent responses
        rep = rap.encode(values, np.arange(n), key(1000 + t), rng=key(t))
        est[t] = rap.bit_estimates(rep)[0][0]
    f, p, q = 0.25, 0.25, 0.75
    ps = p + f * (q - p) / 2
    qs = ps + (1 - f) * (q - p)
    var = (truth * qs * (1 - qs) + (n - truth) * ps * (1 - ps)) / (qs - ps) ** 2
    check_unbiased_and_variance(est, truth, var)


# ============================================================================ hashing
def test_fingerprints():
    assert L.fingerprint([3, -1]).tolist() == [3, 2**64 - 1]
    d = hashlib.blake2b("héllo".encode(), digest_size=8, person=b"dpfast.local").digest()
    assert L.fingerprint(["héllo"])[0] == int.from_bytes(d, "little")
    assert L.fingerprint([b"abc"])[0] == L.fingerprint(["abc"])[0]
    assert L.fingerprint(np.array(["a", "b", "a"])).tolist() == L.fingerprint(
        ["a", "b", "a"]).tolist()
    with pytest.raises(TypeError, match="items"):
        L.fingerprint([1.5])


def _tab_py(tables, f, x):
    h = 0
    for i in range(8):
        h ^= int(tables[f, i, (x >> (8 * i)) & 255])
    return h


def test_hash_tables_and_cms_clients_match_server():
    cms = L.CountMeanSketch(80.0, 5, 100, hash_seed=12345)  # flips have prob ~e^-40
    tab = L.hash_tables(12345, 5)
    assert np.array_equal(tab, cms._tables)
    from dpfast.random import keystream
    raw = keystream((12345).to_bytes(32, "little"), hashing._TAB_STREAM, 5 * 8192)
    assert np.array_equal(tab.reshape(-1), np.frombuffer(raw, "<u4"))
    items = ["apple", "pear", 17, -3]
    cols = cms.buckets(items)
    fps = L.fingerprint(items)
    for i, x in enumerate(fps):
        for j in range(5):
            assert cols[i, j] == (_tab_py(tab, j, int(x)) * 100) >> 32
    rep = cms.perturb(np.array(items * 50, dtype=object), rng=KEY)
    bits = np.unpackbits(rep.bits, axis=1, count=100, bitorder="little")
    for u in range(len(rep.rows)):
        assert bits[u].sum() == 1
        assert bits[u].argmax() == cols[u % 4, rep.rows[u]]


def test_olh_clients_use_documented_hash():
    olh = L.OptimalLocalHashing(50, 60.0, g=37)  # keep probability 1 - ~e^-56
    x = np.arange(2000) % 50
    rep = olh.perturb(x, rng=KEY)
    m64 = (1 << 64) - 1
    for i in range(0, 2000, 97):
        a0, a1, b = (int(w) for w in rep.seeds[i])
        v = int(x[i])
        h = (((a0 * (v & 0xFFFFFFFF) + a1 * (v >> 32) + b) & m64) >> 32)
        assert rep.values[i] == (h * 37) >> 32
    sup = olh.aggregate(rep)
    assert sup.dtype == np.int64 and sup.shape == (50,)
    want = np.zeros(50, np.int64)  # brute force: H_i(v) == y_i over every user and value
    for (a0, _a1, b), y in zip(rep.seeds.tolist(), rep.values.tolist()):
        for v in range(50):
            h = ((a0 * v + b) & m64) >> 32  # v < 2^32: the a1 term vanishes
            want[v] += ((h * 37) >> 32) == y
    assert np.array_equal(sup, want)
    assert np.all(sup >= np.bincount(x, minlength=50))


# ============================================================================ RAPPOR
def test_rappor_epsilons():
    e1, einf = L.rappor_epsilon(0.5, 0.5, 0.75, 2)
    with mpmath.workdps(50):
        qs = mpmath.mpf(0.25) * 1.25 + 0.5 * 0.75
        ps = mpmath.mpf(0.25) * 1.25 + 0.5 * 0.5
        want1 = 2 * mpmath.log(qs * (1 - ps) / (ps * (1 - qs)))
        wantinf = 4 * mpmath.log(3)
        assert mpmath.mpf(e1) >= want1 and e1 - want1 < 1e-15
        assert mpmath.mpf(einf) >= wantinf and einf - wantinf < 1e-15
    assert e1 == pytest.approx(1.0743, abs=1e-4)  # the paper's value for these parameters
    r = L.Rappor(f=0.5, p=0.5, q=0.75, num_hashes=2)
    # local DP: one client's value replaced by another (issue 22: stated)
    assert r.event == events.Epsilon(e1, neighbouring=events.REPLACE_ONE)
    assert r.longitudinal_event == events.Epsilon(einf, neighbouring=events.REPLACE_ONE)


def test_rappor_permanent_response_memoized():
    rap = L.Rappor(num_bits=64, num_hashes=2, num_cohorts=8, hash_seed=5)
    ids = np.arange(300)
    vals = np.array(["a", "b", "c"] * 100)
    p1 = rap.permanent(vals, ids, SECRET)
    p2 = rap.permanent(vals, ids, SECRET)
    assert np.array_equal(p1.bits, p2.bits) and np.array_equal(p1.cohorts, p2.cohorts)
    assert np.array_equal(p1.cohorts, rap.cohorts(ids, SECRET))
    other = rap.permanent(vals, ids, key(1))
    assert not np.array_equal(p1.bits, other.bits)
    changed = rap.permanent(np.array(["z"] * 300), ids, SECRET)
    assert np.array_equal(changed.cohorts, p1.cohorts)
    assert not np.array_equal(changed.bits, p1.bits)
    r1 = rap.encode(vals, ids, SECRET, rng=key(2))
    r2 = rap.encode(vals, ids, SECRET, rng=key(3))
    assert not np.array_equal(r1.bits, r2.bits)
    # IRR: P(report bit = 1) is q over permanent ones and p over permanent zeros
    big = rap.encode(np.array(["a"] * 20000), np.arange(20000), SECRET, rng=key(4))
    prr = np.unpackbits(rap.permanent(np.array(["a"] * 20000), np.arange(20000),
                                      SECRET).bits, axis=1, bitorder="little").astype(bool)
    rep = np.unpackbits(big.bits, axis=1, bitorder="little").astype(bool)
    for mask, want in ((prr, 0.75), (~prr, 0.5)):
        frac = rep[mask].mean()
        assert abs(frac - want) <= 4 * math.sqrt(want * (1 - want) / mask.sum())


@pytest.mark.slow
def test_rappor_recovers_zipf_top_strings():
    n, ncand = 1_000_000, 100
    rng = np.random.default_rng(7)
    cands = [f"candidate-{i:03d}" for i in range(ncand)]
    w = 1.0 / np.arange(1, ncand + 1) ** 1.2
    w /= w.sum()
    idx = rng.choice(ncand, size=n, p=w)
    vals = np.array(cands)[idx]
    true = np.bincount(idx, minlength=ncand)
    rap = L.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f=0.5, p=0.5, q=0.75,
                   hash_seed=2014)
    rep = rap.encode(vals, np.arange(n), SECRET, rng=KEY)
    dec = rap.decode(rap.aggregate(rep), cands, alpha=0.05)
    top = dec.top()
    found = [c for c, _, _ in top]
    assert all(cands[i] in found for i in range(10)), found
    assert [c for c, _, _ in top[:3]] == cands[:3]
    for i in range(10):
        assert abs(dec.counts[i] - true[i]) <= 5 * dec.std_errors[i]
    # false discoveries are rare: the detected set is dominated by true heavy hitters
    assert sum(true[cands.index(c)] < 2000 for c in found) <= 2


# ============================================================================ API / events
def test_events_and_probabilities():
    assert L.GeneralizedRandomizedResponse(5, 1.0).event == events.RandomizedResponse(1.0, 5)
    olh = L.OptimalLocalHashing(100, 1.0)
    assert olh.event == events.RandomizedResponse(1.0, olh.g)
    assert L.OptimizedUnaryEncoding(4, 1.0).event == events.Epsilon(1.0, neighbouring="replace_one")
    cms = L.CountMeanSketch(2.0, 4, 32, hash_seed=0)
    assert cms.event == events.Epsilon(2.0, neighbouring="replace_one")
    assert cms.flip_probability == pytest.approx(1 / (1 + math.exp(1.0)), rel=1e-15)
    assert L.HadamardCountMeanSketch(2.0, 4, 32, hash_seed=0).flip_probability == \
        pytest.approx(1 / (1 + math.exp(2.0)), rel=1e-15)


def test_validation_names_parameter():
    with pytest.raises(ValueError, match="epsilon"):
        L.randomized_response([0, 1], -1.0)
    with pytest.raises(ValueError, match="epsilon"):
        L.k_randomized_response([0], 3, float("nan"))
    with pytest.raises(TypeError, match="epsilon"):
        L.randomized_response([0, 1], "1")
    with pytest.raises(ValueError, match="values"):
        L.randomized_response([0, 2], 1.0)
    with pytest.raises(TypeError, match="values"):
        L.randomized_response([0.5], 1.0)
    with pytest.raises(ValueError, match="values"):
        L.k_randomized_response([0, 3], 3, 1.0)
    with pytest.raises(ValueError, match="k"):
        L.k_randomized_response([0], 1, 1.0)
    with pytest.raises(TypeError, match="k"):
        L.GeneralizedRandomizedResponse(2.5, 1.0)
    with pytest.raises(ValueError, match=r"^g must be in \[2, 2147483648\], got 1$"):
        L.OptimalLocalHashing(10, 1.0, g=1)
    with pytest.raises(ValueError, match="sketch_size"):
        L.HadamardCountMeanSketch(1.0, 4, 48)
    with pytest.raises(ValueError, match="num_hashes"):
        L.CountMeanSketch(1.0, 0, 16)
    with pytest.raises(ValueError, match="hash_seed"):
        L.CountMeanSketch(1.0, 2, 16, hash_seed=b"short")
    with pytest.raises(ValueError, match="f"):
        L.Rappor(f=1.5)
    with pytest.raises(ValueError, match="p and q"):
        L.Rappor(p=0.5, q=0.5)
    with pytest.raises(TypeError, match="secret"):
        L.Rappor().encode(["a"], [1], b"x")
    with pytest.raises(ValueError, match="client_ids"):
        L.Rappor().encode(["a", "b"], [1], SECRET)
    with pytest.raises(ValueError, match="reports"):
        L.OptimizedUnaryEncoding(4, 1.0).estimate(np.zeros((3, 5), bool))
    with pytest.raises(ValueError, match="alpha"):
        L.Rappor().decode(L.RapporCounts(np.zeros((64, 128)), np.ones(64)), ["a"], alpha=2)


def test_rappor_cohorts_follow_documented_prf():
    from dpfast.random import keystream

    rap = L.Rappor(num_cohorts=37)
    ids = np.array([0, 1, 2**40 + 5, 2**63 + 9], dtype=np.uint64)
    got = rap.cohorts(ids, SECRET)
    for cid, c in zip(ids.tolist(), got.tolist()):
        block = keystream(SECRET, cid + (rappor._RAPPOR_TAG << 64), 64)
        for t in range(4, 8):
            x = int.from_bytes(block[8 * t:8 * t + 8], "little") * 37
            if x % 2**64 >= (2**64 - 37) % 37:
                assert c == x >> 64
                break


# ============================================================================ edges (issue 17)
def test_forced_exact_olh_and_hcms():
    """The exact continuation of OLH's keep decision and HCMS's flip, every decision forced
    through it: the frequencies match the exact probabilities."""
    eps, g, n = 1.2, 4, 6000
    olh = L.OptimalLocalHashing(20, eps, g=g)
    x = np.arange(n) % 20
    with _exact.force_exact(3):
        rep = olh.perturb(x, rng=key(40))
    m64 = (1 << 64) - 1
    kept = 0
    for (a0, _a1, b), v, y in zip(rep.seeds.tolist(), x.tolist(), rep.values.tolist()):
        kept += (((((a0 * v + b) & m64) >> 32) * g) >> 32) == y
    p = float(mp_keep(eps, g))
    assert abs(kept / n - p) <= 4 * math.sqrt(p * (1 - p) / n)
    hc = L.HadamardCountMeanSketch(0.8, 4, 16, hash_seed=9)
    items = np.arange(n) % 30
    with _exact.force_exact(3):
        r = hc.perturb(items, rng=key(41))
    h = hc.buckets(items)[np.arange(n), r.rows]
    par = np.array([bin(int(a) & int(c)).count("1") & 1 for a, c in zip(h, r.cols)])
    flipped = (r.bits != 1 - par).mean()
    q = 1 / (1 + math.exp(0.8))
    assert abs(flipped - q) <= 4 * math.sqrt(q * (1 - q) / n)


EPS_THIRD = Fraction(1, 3)  # float(1/3) rounds *down*


def test_fraction_epsilon_rounds_up_in_events():
    up = math.nextafter(1 / 3, 1)
    assert Fraction(1 / 3) < EPS_THIRD < Fraction(up)
    objs = [L.GeneralizedRandomizedResponse(5, EPS_THIRD), L.OptimizedUnaryEncoding(4, EPS_THIRD),
            L.OptimalLocalHashing(9, EPS_THIRD), L.CountMeanSketch(EPS_THIRD, 2, 8, hash_seed=1),
            L.HadamardCountMeanSketch(EPS_THIRD, 2, 8, hash_seed=1)]
    for o in objs:
        assert o.epsilon == up and o.event.epsilon == up, type(o).__name__
    assert L.GeneralizedRandomizedResponse(5, 0.5).event.epsilon == 0.5  # floats stay


@pytest.mark.parametrize("eps", [21.4, 21.5, 22.0, 40.0, 1024.0])
def test_olh_default_g_for_large_epsilon(eps):
    olh = L.OptimalLocalHashing(10, eps)
    assert olh.g == min(round(math.exp(min(eps, 30))) + 1, 2 ** 31)
    assert olh.event == events.RandomizedResponse(eps, olh.g)
    rep = olh.perturb(np.arange(200) % 10, rng=KEY)
    est = olh.estimate(rep)  # keeps w.p. p* ~ 1/2; other values supported w.p. 1/g ~ 0
    assert np.all(np.isfinite(est.counts)) and abs(est.counts.sum() - 200) <= 5 * 2 * 7.1


def _exact_estimate(support, n, p, q):
    return [(mpmath.mpf(int(s)) - n * q) / (p - q) for s in np.atleast_1d(support)]


@pytest.mark.parametrize("eps", [1e-8, 1e-12, 1e-15, 1e-17])
def test_tiny_epsilon_estimators_exact_and_finite(eps):
    """(C - n q) / (p - q) to full precision: p - q is taken exactly, not as the difference
    of two rounded probabilities (which is 0 at eps = 1e-17)."""
    n = 1000
    fe = Fraction(eps)
    with mpmath.workdps(80):
        e = mpmath.exp(mpmath.mpf(fe.numerator) / fe.denominator)
        cases = []
        grr = L.GeneralizedRandomizedResponse(5, eps)
        rep = np.repeat(np.arange(5), [400, 300, 200, 100, 0])
        cases.append((grr.estimate(rep), np.bincount(rep, minlength=5), e / (e + 4),
                      1 / (e + 4)))
        bits = np.zeros(n, bool)
        bits[:700] = True
        cases.append((L.randomized_response_estimate(bits, eps), [700], e / (e + 1),
                      1 / (e + 1)))
        oue = L.OptimizedUnaryEncoding(3, eps)
        r = np.zeros((n, 3), bool)
        r[:600, 0] = True
        r[:10, 2] = True
        cases.append((oue.estimate(r), r.sum(axis=0), mpmath.mpf(1) / 2, 1 / (e + 1)))
        olh = L.OptimalLocalHashing(4, eps)
        sup = np.array([900, 500, 0, 1000])
        cases.append((olh.estimate_from_support(sup, n), sup, e / (e + olh.g - 1),
                      mpmath.mpf(1) / olh.g))
        for est, support, p, q in cases:
            want = _exact_estimate(support, n, p, q)
            assert np.all(np.isfinite(est.counts)) and np.all(np.isfinite(est.variance))
            for got, w in zip(np.atleast_1d(est.counts), want):
                assert abs(got - w) <= 1e-13 * abs(w) + 1e-9, (got, w)
        v = grr.variance(n)
        want_v = n * (1 / (e + 4)) * (1 - 1 / (e + 4)) / ((e - 1) / (e + 4)) ** 2
        assert abs(v / want_v - 1) < 1e-12


def test_epsilon_below_the_float_range_of_estimates():
    grr = L.GeneralizedRandomizedResponse(2, 1e-300)  # 1 / (p - q) = 2e300: still finite
    assert np.all(np.isfinite(grr.estimate([0, 1, 1]).counts))
    assert grr.variance(3) == math.inf  # ~3e600: above the float range, no warning
    tiny = L.GeneralizedRandomizedResponse(2, 1e-310)
    assert tiny.perturb([0, 1], rng=KEY).shape == (2,)  # randomizing still works
    with pytest.raises(ValueError, match="epsilon is too small"):
        tiny.estimate([0, 1, 1])
    for cls in (L.CountMeanSketch, L.HadamardCountMeanSketch):
        sk = cls(1e-200, 2, 8, hash_seed=1)
        est = sk.estimate(sk.perturb([1, 2, 3], rng=KEY), [1, 5])
        assert np.all(np.isfinite(est.counts)) and np.all(est.variance == math.inf)
        sk = cls(1e-310, 2, 8, hash_seed=1)
        with pytest.raises(ValueError, match="epsilon is too small"):
            sk.estimate(sk.perturb([1, 2, 3], rng=KEY), [1, 5])


def test_estimators_reject_impossible_reports():
    with pytest.raises(ValueError, match="reports must be 0 or 1"):
        L.randomized_response_estimate([2, 2, 2, 2], 1.0)
    with pytest.raises(TypeError, match="reports"):
        L.randomized_response_estimate([0.5, 1.0], 1.0)
    oue = L.OptimizedUnaryEncoding(3, 1.0)
    with pytest.raises(ValueError, match="reports must be 0 or 1"):
        oue.estimate(np.array([[1, 0, 5], [0, 1, 0]]))
    with pytest.raises(ValueError, match="reports must be 0 or 1"):
        oue.aggregate(np.array([[1, 0, -1]]))
    hc = L.HadamardCountMeanSketch(1.0, 2, 8, hash_seed=1)
    with pytest.raises(ValueError, match="reports.bits"):
        hc.aggregate(L.HcmsReports(np.array([0, 1]), np.array([3, 4]), np.array([1, 2])))
    with pytest.raises(TypeError, match="reports.rows"):
        hc.aggregate(L.HcmsReports(np.array([0.9, 1.0]), np.array([3, 4]), np.array([1, 0])))
    with pytest.raises(TypeError, match="reports.cols"):
        hc.aggregate(L.HcmsReports(np.array([0, 1]), np.array([3.5, 4]), np.array([1, 0])))
    cms = L.CountMeanSketch(1.0, 2, 12, hash_seed=1)
    ok_bits = np.zeros((2, 2), np.uint8)
    with pytest.raises(TypeError, match="reports.rows"):
        cms.aggregate(L.CmsReports(np.array([0.7, 1.2]), ok_bits))
    pad = ok_bits.copy()
    pad[1, 1] = 0x10  # bit 12 of a 12-bit report
    with pytest.raises(ValueError, match="padding"):
        cms.aggregate(L.CmsReports(np.array([0, 1]), pad))
    with pytest.raises(ValueError, match="sketch"):
        cms.estimate(L.Sketch(np.full((2, 12), 3), np.array([1, 1]), 2), [1])
    with pytest.raises(ValueError, match="sketch.totals"):
        cms.estimate(L.Sketch(np.zeros((2, 12), np.int64), np.array([1, 1]), 5), [1])
    olh = L.OptimalLocalHashing(6, 1.0)
    with pytest.raises(ValueError, match="support"):
        olh.estimate_from_support(np.zeros(5, np.int64), 10)  # k = 6 values
    with pytest.raises(ValueError, match="support"):
        olh.estimate_from_support(np.array([1, 0, 0, 0, 0, 0]), 0)  # n = 0 reports
    with pytest.raises(ValueError, match="support"):
        olh.estimate_from_support(np.array([-1, 0, 0, 0, 0, 0]), 4)
    with pytest.raises(TypeError, match="support"):
        olh.estimate_from_support(np.full(6, 0.5), 4)
    rep = olh.perturb(np.arange(6), rng=KEY)
    with pytest.raises(TypeError, match="reports.values"):
        olh.aggregate(L.OlhReports(rep.seeds, rep.values + 0.25))
    with pytest.raises(ValueError, match="reports.values"):
        olh.aggregate(L.OlhReports(rep.seeds, rep.values[:3]))
    rap = L.Rappor(num_bits=16, num_cohorts=4, hash_seed=1)
    with pytest.raises(TypeError, match="reports.cohorts"):
        rap.aggregate(L.RapporReports(np.array([0.5]), np.zeros((1, 2), np.uint8)))
    with pytest.raises(ValueError, match="counts"):
        rap.bit_estimates(L.RapporCounts(np.full((4, 16), 3), np.full(4, 2)))


def test_empty_inputs():
    assert L.fingerprint([]).dtype == np.uint64 and L.fingerprint([]).shape == (0,)
    assert L.randomized_response([], 1.0, rng=KEY).shape == (0,)
    assert L.k_randomized_response([], 3, 1.0, rng=KEY).shape == (0,)
    e = L.randomized_response_estimate([], 1.0)
    assert e.n == 0 and e.counts == 0
    e = L.k_randomized_response_estimate([], 3, 1.0)
    assert e.n == 0 and np.array_equal(e.counts, np.zeros(3))
    oue = L.OptimizedUnaryEncoding(4, 1.0)
    assert oue.perturb([], rng=KEY).shape == (0, 4)
    assert np.array_equal(oue.estimate([]).counts, np.zeros(4))
    olh = L.OptimalLocalHashing(5, 1.0)
    rep = olh.perturb([], rng=KEY)
    assert rep.seeds.shape == (0, 3) and rep.values.shape == (0,)
    assert np.array_equal(olh.estimate(rep).counts, np.zeros(5))
    assert np.array_equal(olh.estimate(L.OlhReports([], [])).counts, np.zeros(5))
    cms = L.CountMeanSketch(1.0, 3, 12, hash_seed=1)
    r = cms.perturb([], rng=KEY)
    assert r.rows.shape == (0,) and r.bits.shape == (0, 2)
    sk = cms.aggregate(r)
    assert sk.n == 0 and not sk.ones.any()
    assert np.array_equal(cms.estimate(sk, ["a", 1]).counts, np.zeros(2))
    assert cms.collect([], rng=KEY).n == 0
    assert cms.aggregate(L.CmsReports([], [])).n == 0
    hc = L.HadamardCountMeanSketch(1.0, 3, 8, hash_seed=1)
    hr = hc.perturb([], rng=KEY)
    assert hc.aggregate(hr).n == 0 and hc.aggregate(L.HcmsReports([], [], [])).n == 0
    rap = L.Rappor(num_bits=12, num_cohorts=4, hash_seed=1)
    enc = rap.encode([], [], SECRET, rng=KEY)
    assert enc.cohorts.shape == (0,) and enc.bits.shape == (0, 2)
    assert rap.permanent([], [], SECRET).bits.shape == (0, 2)
    assert rap.cohorts([], SECRET).shape == (0,)
    cnt = rap.aggregate(enc)
    assert cnt.totals.sum() == 0
    assert not rap.decode(cnt, ["a", "b"]).detected.any()


def test_olh_huge_domain_streams_or_refuses(monkeypatch):
    k = 10 ** 9
    olh = L.OptimalLocalHashing(k, 3.0)
    x = np.array([5, 7, k - 1, 5])
    rep = olh.perturb(x, rng=KEY)
    with pytest.raises(ValueError, match=r"k=1000000000 .*values="):
        olh.aggregate(rep)
    with pytest.raises(ValueError, match="values="):
        olh.estimate(rep)
    vals = np.array([5, 7, k - 1, 3])
    sup = olh.aggregate(rep, values=vals)
    m64 = (1 << 64) - 1
    want = [sum((((((a0 * v + b) & m64) >> 32) * olh.g) >> 32) == y
                for (a0, _a1, b), y in zip(rep.seeds.tolist(), rep.values.tolist()))
            for v in vals.tolist()]
    assert sup.tolist() == want
    est = olh.estimate(rep, values=vals)
    assert np.allclose(est.counts, olh.estimate_from_support(sup, 4, vals).counts)
    # the domain is swept in blocks: any block size gives the same counts
    small = L.OptimalLocalHashing(50, 1.0)
    rep = small.perturb(np.arange(3000) % 50, rng=KEY)
    full = small.aggregate(rep)
    assert np.array_equal(small.aggregate(rep, values=[3, 49, 0]), full[[3, 49, 0]])
    from dpfast.local import olh as olh_mod
    monkeypatch.setattr(olh_mod, "_BLOCK_CELLS", 7)
    assert np.array_equal(small.aggregate(rep), full)
    assert np.array_equal(small.aggregate(rep, values=np.arange(50)), full)


def test_hash_seed_defaults_are_fresh_everywhere():
    for make in (lambda: L.Rappor(num_bits=8, num_cohorts=1),
                 lambda: L.CountMeanSketch(1.0, 2, 8),
                 lambda: L.HadamardCountMeanSketch(1.0, 2, 8)):
        a, b = make(), make()
        assert isinstance(a.hash_seed, bytes) and len(a.hash_seed) == 32
        assert a.hash_seed != b.hash_seed
    same = L.Rappor(num_bits=8, num_cohorts=2, hash_seed=7)
    assert np.array_equal(same._tables, L.Rappor(num_bits=8, num_cohorts=2, hash_seed=7)._tables)


# ============================================================================ constructed bits
def _undecided_lane_words(c1: int) -> np.ndarray:
    """Bit-sliced keystream words in which lane 0 copies c's leading 64 bits (undecided
    after the whole word) and lane 1 differs at the first bit (decided at once)."""
    out = []
    for i in range(64):
        bit = (c1 >> (63 - i)) & 1
        lane1 = (1 - bit) if i == 0 else 0
        out.append(bit | (lane1 << 1))
    return np.array(out, np.uint64)


def _lane_outcomes(thr, decide) -> list[bool]:
    lo, _ = thr.bounds(128)
    c1, c2 = lo >> 64, lo & ((1 << 64) - 1)
    assert c1 == int(thr.words[0]) and 0 < c2 - 1 and c2 + 1 < (1 << 64) - 1
    buf = _undecided_lane_words(c1)
    st = np.zeros(ST_COLS, np.int64)  # one chunk's state; 64 words suffice: no refill
    res, und, pos = _lk.bern_lanes(buf, 0, st, np.zeros(8, np.uint32),
                                   np.zeros(3, np.uint32), thr.words, thr.terminal,
                                   np.uint64(3), False)
    assert pos == 64 and int(und) == 1  # lane 0 consumed exactly c's 64 bits
    assert int(res) == (2 if (c1 >> 63) & 1 else 0)  # lane 1: U < c iff c's first bit is 1
    out = []
    for first in ([c2 - 1, 0], [c2 + 1, 0], [c2, 0]):
        words = iter(first + [0] * 8)
        src = _exact.WordSource(lambda n, w=words: np.array([next(w) for _ in range(n)],
                                                             np.uint64), batch=1)
        out.append(decide(thr, src))
    return out


def test_lane_continuation_keeps_the_kernel_bits():
    """An undecided Bernoulli lane has consumed c's leading 64 bits; the continuation
    appends the refinement words to them: U = 0.c1 (c2 - 1) ... < c, U = 0.c1 (c2 + 1) ...
    > c, and U = 0.c1 c2 0 ... < c (c irrational: its later bits are not all zero)."""
    from dpfast.local._lanes import _flip_threshold

    for thr in (_lanes._keep_threshold(Fraction(1), 2), _lanes._keep_threshold(Fraction(0.3), 7),
                _flip_threshold(Fraction(2.5))):
        assert _lane_outcomes(thr, lambda t, s: t.decide(s, False)) == [True, False, True]


def test_lane_resampling_variant_is_caught():
    """A continuation that discards the lane's 64 bits (draws a fresh uniform) fails."""
    thr = _lanes._keep_threshold(Fraction(1), 2)

    def resampling(t, src):
        return _exact.u_less_than(_exact.LazyUniform(0, src, 0), t.bounds)

    assert _lane_outcomes(thr, resampling) != [True, False, True]


@hypothesis.given(
    log_eps=st.floats(-17.0, 1.8),
    g=st.integers(2, 5000),
    n=st.integers(0, 10 ** 9),
    frac=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4),
)
def test_olh_estimator_matches_exact_formula(log_eps, g, n, frac):
    """For any epsilon in [1e-17, 63], g and n, the estimate is (C - n q*) / (p* - q*)
    to ~1e-12 relative (never inf or nan)."""
    eps = 10.0 ** log_eps
    olh = L.OptimalLocalHashing(len(frac), eps, g=g)
    sup = np.array([int(f * n) for f in frac], np.int64)
    est = olh.estimate_from_support(sup, n)
    assert np.all(np.isfinite(est.counts)) and np.all(np.isfinite(est.variance))
    fe = Fraction(eps)
    with mpmath.workdps(60):
        e = mpmath.exp(mpmath.mpf(fe.numerator) / fe.denominator)
        p, q = e / (e + g - 1), mpmath.mpf(1) / g
        unit = abs(1 / (p - q))  # the estimate's change per supporting report
        for got, c in zip(est.counts, sup.tolist()):
            want = (c - n * q) / (p - q)
            assert abs(got - want) <= 1e-12 * abs(want) + 1e-9 * unit, (got, want)


def test_rappor_bit_estimates_exact_for_close_p_q():
    """q* - p* = (1 - f)(q - p) is taken exactly, and p* N_j as a double-double: with
    q - p = 2^-45 the float formula lost most digits."""
    p, q, f = 0.5, 0.5 + 2.0 ** -45, 0.375
    rap = L.Rappor(num_bits=8, num_hashes=1, num_cohorts=2, f=f, p=p, q=q, hash_seed=3)
    counts = np.array([[500_000, 500_001, 499_999, 0, 1, 2, 3, 4],
                       [7, 6, 5, 4, 3, 2, 1, 0]])
    totals = np.array([1_000_000, 13])
    t, var = rap.bit_estimates(L.RapporCounts(counts, totals))
    fr, pr, qr = Fraction(f), Fraction(p), Fraction(q)
    ps = pr + fr * (qr - pr) / 2
    d = (1 - fr) * (qr - pr)
    for j in range(2):
        for i in range(8):
            want = (counts[j, i] - ps * int(totals[j])) / d
            assert abs(Fraction(float(t[j, i])) - want) <= abs(want) * Fraction(1, 2 ** 50) + 1
    assert np.all(np.isfinite(var))
