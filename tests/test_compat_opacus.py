"""dpfast.compat.opacus: Opacus's noise, Poisson sampling and accounting through dpfast."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from tests.helpers import KEY, SUBPROCESS_TIMEOUT_S

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import PRVAccountant, create_accountant  # noqa: E402
from opacus.accountants import registry as _registry  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402
from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping  # noqa: E402
from opacus.optimizers import optimizer as _opt  # noqa: E402
from opacus.utils import uniform_sampler as _us  # noqa: E402
from scipy import stats  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import dpfast  # noqa: E402
import dpfast.compat.opacus as dpo  # noqa: E402
from dpfast.compat.opacus import _noise, _patch  # noqa: E402

# torch warns about Opacus's full backward hooks on modules whose inputs need no grad
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")

OTHER_KEY = bytes(range(1, 33))


@pytest.fixture(autouse=True)
def _always_uninstalled():
    yield
    while dpo.is_installed():
        dpo.uninstall()


def _snapshot() -> dict:
    """Every attribute install() may rebind, by identity."""
    return {(id(owner), attr): vars(owner).get(attr) for owner, attr, _ in _patch._targets()}


def _data(n: int = 256, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return TensorDataset(x, y)


def _train(key: bytes, *, steps: int = 4, dtype=torch.float32, clipping: str = "flat",
           accountant: str = "dpfast_pld"):
    """A few DP-SGD steps of a tiny MLP with install(key) active; returns (model, engine)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with dpo.patched(key):
        engine = PrivacyEngine(accountant=accountant, secure_mode=True)
        clip = 1.0 if clipping == "flat" else [0.5] * 4
        model, opt, loader = engine.make_private(
            module=model, optimizer=opt, data_loader=DataLoader(_data(), batch_size=32),
            noise_multiplier=1.1, max_grad_norm=clip, clipping=clipping)
        for i, (xb, yb) in enumerate(loader):
            if i == steps:
                break
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb.to(dtype)), yb).backward()
            opt.step()
    return model, engine


# ----------------------------------------------------------------------- install / uninstall
def test_uninstall_restores_opacus_exactly():
    before = _snapshot()
    accountants = _registry._ACCOUNTANTS
    dpo.install(KEY)
    dpo.install()  # nested
    assert dpo.is_installed()
    assert _opt._generate_noise is _patch._generate_noise
    assert vars(DPOptimizer)["add_noise"] is _patch._fused_add_noise
    assert vars(DPOptimizerFastGradientClipping)["add_noise"] is _patch._fused_add_noise
    assert create_accountant("dpfast_pld").mechanism() == "dpfast_pld"
    dpo.uninstall()
    assert dpo.is_installed()  # one level left
    dpo.uninstall()
    assert not dpo.is_installed()
    assert _snapshot() == before
    assert _registry._ACCOUNTANTS is accountants and "dpfast_pld" not in accountants
    with pytest.raises(ValueError, match="dpfast_pld"):
        create_accountant("dpfast_pld")
    with pytest.raises(RuntimeError, match="install"):
        dpo.generator()
    dpo.uninstall()  # without install: nothing happens
    assert _snapshot() == before


def test_every_noise_module_is_patched():
    import sys

    dpo.install(KEY)
    for name in _patch._NOISE_MODULES:
        mod = sys.modules[f"opacus.optimizers.{name}"]
        assert mod._generate_noise is _patch._generate_noise, name


def test_secure_mode_without_torchcsprng():
    import importlib.util

    if importlib.util.find_spec("torchcsprng") is None:
        with pytest.raises(ImportError, match="torchcsprng"):
            PrivacyEngine(secure_mode=True)
    with dpo.patched(KEY):
        engine = PrivacyEngine(secure_mode=True)
    assert engine.secure_mode is True
    assert isinstance(engine.secure_rng, torch.Generator)


def test_objects_made_while_installed_keep_working_after_uninstall():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 2))
    with dpo.patched(KEY):
        engine = PrivacyEngine(accountant="dpfast_rdp", secure_mode=True)
        model, opt, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=DataLoader(_data(), batch_size=32), noise_multiplier=1.0,
            max_grad_norm=1.0)
    xb, yb = next(iter(loader))  # Opacus's own sampler again
    nn.functional.cross_entropy(model(xb), yb).backward()
    opt.step()  # Opacus's own (secure-mode) noise, on the engine's generator
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert math.isfinite(engine.get_epsilon(1e-5))


# ----------------------------------------------------------------------- no torch randomness
def test_a_training_step_draws_nothing_from_torch(monkeypatch):
    calls: list[str] = []

    def spy(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    for name in ("normal", "randn", "rand", "randint", "randperm", "bernoulli", "poisson"):
        spy(torch, name)
    for name in ("normal_", "uniform_", "random_", "bernoulli_", "exponential_"):
        spy(torch.Tensor, name)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    dpo.install(KEY)
    engine = PrivacyEngine(accountant="dpfast_pld", secure_mode=True)
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=DataLoader(_data(), batch_size=32), noise_multiplier=1.0,
        max_grad_norm=1.0)
    batches = iter(loader)  # the DataLoader itself draws a worker base seed here
    state, secure = torch.get_rng_state(), engine.secure_rng.get_state()
    calls.clear()
    for _ in range(3):
        xb, yb = next(batches)  # Poisson sampling
        opt.zero_grad()
        nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()  # clipping and noise
    assert calls == []
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(engine.secure_rng.get_state(), secure)
    # without install(), Opacus's own step does draw from torch
    dpo.uninstall()
    model2 = nn.Sequential(nn.Linear(6, 2))
    with pytest.warns(UserWarning, match="Secure RNG turned off"):
        engine2 = PrivacyEngine()
    model2, opt2, loader2 = engine2.make_private(
        module=model2, optimizer=torch.optim.SGD(model2.parameters(), lr=0.1),
        data_loader=DataLoader(_data(), batch_size=32), noise_multiplier=1.0,
        max_grad_norm=1.0)
    xb, yb = next(iter(loader2))
    calls.clear()
    nn.functional.cross_entropy(model2(xb), yb).backward()
    opt2.step()
    assert "normal" in calls


# ----------------------------------------------------------------------- the noise
def _optimizer_noise(n: int, z: float, c: float, dtype=torch.float64, summed=None):
    p = nn.Parameter(torch.zeros(n, dtype=dtype))
    opt = DPOptimizer(torch.optim.SGD([p], lr=0.1), noise_multiplier=z, max_grad_norm=c,
                      expected_batch_size=1)
    p.summed_grad = torch.zeros(n, dtype=dtype) if summed is None else summed
    opt.add_noise()
    return p.grad


def test_noise_has_the_requested_sigma():
    n, z, c = 2_000_000, 1.3, 0.7
    dpo.install(KEY)
    noise = _optimizer_noise(n, z, c).numpy()
    sigma, g = _noise.fused_sigma(z, c, n)
    target = z * c
    assert target <= sigma <= target * (1 + 1e-7)  # the grid term only
    assert np.all(noise / g == np.rint(noise / g))  # on the grid g Z
    # sample variance: standard error sigma^2 sqrt(2/n) (0.1%); a 1% error in sigma moves
    # it by 2% = 20 standard errors
    var = float(np.mean(noise.astype(np.float64) ** 2))
    assert abs(var / target**2 - 1) < 5 * math.sqrt(2 / n)
    assert abs(float(np.mean(noise))) < 5 * target / math.sqrt(n)
    assert stats.kstest(noise, stats.norm(scale=target).cdf).pvalue > 1e-3
    # float32: the same draws rounded once more
    dpo.uninstall()
    dpo.install(KEY)
    noise32 = _optimizer_noise(n, z, c, torch.float32).numpy()
    assert noise32.dtype == np.float32
    np.testing.assert_array_equal(noise32, noise.astype(np.float32))


def test_noise_only_path_has_the_requested_sigma():
    dpo.install(KEY)
    ref = torch.zeros(500_000, dtype=torch.float32)
    noise = _opt._generate_noise(std=2.5, reference=ref, generator=None, secure_mode=True)
    assert noise.dtype == torch.float32 and noise.shape == ref.shape
    g = dpfast.granularity(2.5)
    v = noise.numpy().astype(np.float64)
    assert abs(float(np.mean(v**2)) / 2.5**2 - 1) < 5 * math.sqrt(2 / v.size)
    assert np.all(np.rint(v / g) * g == v)
    zeros = _opt._generate_noise(std=0, reference=ref)
    assert torch.equal(zeros, torch.zeros_like(ref))


def test_fused_value_is_the_grid_point_and_input_is_kept():
    n = 4096
    summed = torch.linspace(-3, 3, n, dtype=torch.float64) + 1e-9
    copy = summed.clone()
    dpo.install(KEY)
    out = _optimizer_noise(n, 1.0, 2.0, summed=summed)
    assert torch.equal(summed, copy)  # Opacus's summed gradient not mutated
    sigma, g = _noise.fused_sigma(1.0, 2.0, n)
    x = summed.numpy()
    z = (out.numpy() - np.rint(x / g) * g) / g
    assert np.all(z == np.rint(z))
    assert 0.5 < float(np.std(z * g)) / sigma < 1.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_is_the_rounded_float64_value(dtype):
    x64 = torch.linspace(-1, 1, 3000, dtype=torch.float64)
    x = x64.to(dtype)
    sigma, g = _noise.fused_sigma(1.1, 1.0, x.numel())
    ref = _noise.noisy_tensor(x.to(torch.float64), sigma, g, dpfast.default_rng(key=KEY))
    got = _noise.noisy_tensor(x, sigma, g, dpfast.default_rng(key=KEY))
    assert got.dtype == dtype and got.shape == x.shape
    if dtype == torch.bfloat16:
        expect = ref.to(torch.bfloat16)
    else:
        expect = torch.from_numpy(ref.numpy().astype(_noise._NUMPY[dtype]))
    assert torch.equal(got, expect)


def test_non_contiguous_and_shaped_tensors():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    x = base.t()  # not contiguous
    sigma, g = _noise.fused_sigma(1.0, 1.0, 24)
    got = _noise.noisy_tensor(x, sigma, g, dpfast.default_rng(key=KEY))
    ref = _noise.noisy_tensor(x.contiguous(), sigma, g, dpfast.default_rng(key=KEY))
    assert got.shape == (6, 4) and torch.equal(got, ref)
    empty = _noise.noisy_tensor(torch.zeros(0, 3), sigma, g, dpfast.default_rng(key=KEY))
    assert empty.shape == (0, 3)


def test_per_layer_sensitivity_and_fused_sigma():
    c = _noise.clip_norm_of(None, [0.5, 0.5, 0.5, 0.5])
    assert c == 1.0
    c3 = _noise.clip_norm_of(None, [1.0, 1.0, 1.0])
    assert Fraction(c3) ** 2 >= 3 > Fraction(math.nextafter(c3, 0)) ** 2  # rounded up
    sigma, g = _noise.fused_sigma(1.1, 1.0, 10**7)
    root = math.isqrt(10**7 - 1) + 1
    assert Fraction(sigma) >= Fraction(1.1) * (1 + root * Fraction(g))
    assert g == dpfast.granularity(sigma)


def test_bad_inputs():
    gen = dpfast.default_rng(key=KEY)
    with pytest.raises(ValueError, match="noise_multiplier"):
        _noise.fused_sigma(0.0, 1.0, 10)
    with pytest.raises(ValueError, match="max_grad_norm"):
        _noise.fused_sigma(1.0, math.inf, 10)
    with pytest.raises(ValueError, match="n_params"):
        _noise.fused_sigma(1.0, 1.0, 0)
    with pytest.raises(TypeError, match="max_grad_norm"):
        _noise.clip_norm_of("1.0")
    assert _noise.clip_norm_of(torch.tensor(0.5)) == 0.5  # Opacus may hold a 0-dim tensor
    with pytest.raises(TypeError, match="dtype"):
        _noise.noisy_tensor(torch.zeros(3, dtype=torch.int64), 1.0, 2.0**-40, gen)
    with pytest.raises(TypeError, match="torch.Tensor"):
        _noise.noisy_tensor(np.zeros(3), 1.0, 2.0**-40, gen)
    with pytest.raises(ValueError, match="std"):
        _noise.noise_tensor(-1.0, torch.zeros(3), gen)
    for bad in (1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match="sample_rate"):
            dpo.poisson_mask(3, bad, gen)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_matches_cpu(dtype):
    x = torch.linspace(-1, 1, 10000, dtype=dtype)
    sigma, g = _noise.fused_sigma(1.0, 1.0, x.numel())
    cpu = _noise.noisy_tensor(x, sigma, g, dpfast.default_rng(key=KEY))
    dev = _noise.noisy_tensor(x.cuda(), sigma, g, dpfast.default_rng(key=KEY))
    dev2 = _noise.noisy_tensor(x.cuda(), sigma, g, dpfast.default_rng(key=OTHER_KEY))
    torch.cuda.synchronize()
    assert dev.device.type == "cuda" and torch.equal(dev.cpu(), cpu)
    assert not torch.equal(dev2.cpu(), cpu)  # the staging buffer was reused safely


# ----------------------------------------------------------------------- Poisson sampling
def test_poisson_mask_rate():
    gen = dpfast.default_rng(key=KEY)
    n, q = 1_000_000, 256 / 60000
    k = int(dpo.poisson_mask(n, q, gen).sum())
    assert abs(k - n * q) < 5 * math.sqrt(n * q * (1 - q))
    assert dpo.poisson_mask(100, 1.0, gen).all() and not dpo.poisson_mask(100, 0.0, gen).any()


class _Words:
    """A constructed word source: ``random_raw`` hands out the given words in order."""

    def __init__(self, words):
        self.words = list(words)

    def random_raw(self, size=None):
        if size is None:
            return self.words.pop(0)
        out = np.array(self.words[:size], np.uint64)
        del self.words[:size]
        return out


def test_poisson_mask_continues_a_tie_exactly():
    q = 1e-4  # below 2^-12: q 2^64 is not an integer, so ties continue
    scaled = Fraction(q) * 2**64
    t = int(scaled)
    assert scaled != t
    rest = (scaled - t) * 2**64
    k = int(rest)
    # cell 0: below; cell 1: tie then a smaller word (selected); cell 2: tie then larger
    mask = dpo.poisson_mask(3, q, _Words([t - 1, t, t, k - 1, k + 1]))
    assert mask.tolist() == [True, True, False]
    # q 2^64 an integer: a tie means U >= q exactly, never selected, no further words
    mask = dpo.poisson_mask(2, 0.25, _Words([2**62 - 1, 2**62]))
    assert mask.tolist() == [True, False]


def test_sampler_draws_batches_from_dpfast():
    dpo.install(KEY)
    sampler = _us.UniformWithReplacementSampler(num_samples=1000, sample_rate=0.1, steps=5)
    a = list(sampler)
    dpo.uninstall()
    dpo.install(KEY)
    b = list(_us.UniformWithReplacementSampler(num_samples=1000, sample_rate=0.1, steps=5))
    assert a == b and len(a) == 5
    assert 50 < len(a[0]) < 150 and all(0 <= i < 1000 for i in a[0])


# ----------------------------------------------------------------------- reproducibility
@pytest.mark.parametrize("clipping", ["flat", "per_layer"])
def test_training_with_a_fixed_key_is_reproducible(clipping):
    m1, e1 = _train(KEY, clipping=clipping)
    m2, e2 = _train(KEY, clipping=clipping)
    m3, _ = _train(OTHER_KEY, clipping=clipping)
    p1, p2, p3 = ([p.detach().clone() for p in m.parameters()] for m in (m1, m2, m3))
    assert all(torch.equal(a, b) for a, b in zip(p1, p2))
    assert not all(torch.equal(a, b) for a, b in zip(p1, p3))
    assert e1.accountant.history == e2.accountant.history


def test_half_precision_training_step():
    model, _ = _train(KEY, steps=2, dtype=torch.bfloat16)
    assert all(p.dtype == torch.bfloat16 and torch.isfinite(p).all()
               for p in model.parameters())


# ----------------------------------------------------------------------- accountants
Q, SIGMA, STEPS, DELTA = 256 / 60000, 1.1, 14062, 1e-5


@pytest.mark.parametrize("history", [[(SIGMA, Q, STEPS)], [(0.8, 0.01, 1000)],
                                     [(1.0, 0.02, 300), (1.5, 0.05, 200)], [(5.0, 0.5, 10)]])
def test_pld_accountant_is_tight_and_never_below_the_truth(history):
    acct = dpo.DpfastPldAccountant()
    acct.history = list(history)
    eps = acct.get_epsilon(DELTA)
    lo, up = acct.get_epsilon_bounds(DELTA)
    assert up == eps and lo <= eps
    prv = PRVAccountant()
    prv.history = list(history)
    dprv = prv._get_dprv(eps_error=0.01, delta_error=DELTA / 1000)
    prv_lo, prv_est, prv_up = dprv.compute_epsilon(DELTA, DELTA / 1000, 0.01)
    # within 0.5% of PRV's estimate, at or below its upper bound (PRV's bounds are its
    # estimate +- eps_error = 0.01), above both lower bounds on the exact epsilon
    assert abs(eps / prv_est - 1) < 0.005 and eps <= prv_up
    assert eps >= prv_lo and eps >= lo
    rdp = dpo.DpfastRdpAccountant()
    rdp.history = list(history)
    assert eps < rdp.get_epsilon(DELTA)  # RDP is looser


def test_rdp_accountant_matches_dpsgd_epsilon():
    rdp = dpo.DpfastRdpAccountant()
    rdp.history = [(SIGMA, Q, STEPS)]
    assert rdp.get_epsilon(DELTA) == pytest.approx(
        dpfast.dpsgd_epsilon(Q, SIGMA, STEPS, DELTA), rel=1e-9)


def test_accountant_interface():
    acct = dpo.DpfastPldAccountant()
    assert acct.get_epsilon(DELTA) == 0.0 and len(acct) == 0
    for _ in range(3):
        acct.step(noise_multiplier=1.0, sample_rate=0.01)
    acct.step(noise_multiplier=2.0, sample_rate=0.01)
    assert acct.history == [(1.0, 0.01, 3), (2.0, 0.01, 1)] and len(acct) == 2
    eps = acct.get_epsilon(DELTA, eps_error=0.1)  # Opacus's extra options are accepted
    state = acct.state_dict()
    assert state["mechanism"] == "dpfast_pld"
    other = dpo.DpfastPldAccountant()
    other.load_state_dict(state)
    assert other.get_epsilon(DELTA) == eps
    with pytest.raises(ValueError, match="dpfast_pld"):
        dpo.DpfastRdpAccountant().load_state_dict(state)
    acct.step(noise_multiplier=0.0, sample_rate=0.01)
    assert acct.get_epsilon(DELTA) == math.inf
    with pytest.raises(ValueError, match="delta"):
        acct.get_epsilon(0.0)
    with pytest.raises(ValueError, match="sample_rate"):
        acct.step(noise_multiplier=1.0, sample_rate=2.0)
    with pytest.raises(TypeError, match="noise_multiplier"):
        acct.step(noise_multiplier="1", sample_rate=0.1)


@pytest.mark.parametrize("mechanism", ["dpfast_pld", "dpfast_rdp"])
def test_calibration_through_opacus(mechanism):
    dpo.install(KEY)
    q, steps, target = 0.01, 500, 2.0
    sigma = get_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=q,
                                 steps=steps, accountant=mechanism)
    acct = create_accountant(mechanism)
    acct.history = [(sigma, q, steps)]
    eps = acct.get_epsilon(DELTA)
    assert eps <= target and eps > target - 0.05


def test_make_private_with_epsilon_and_engine_accountant():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 2))
    dpo.install(KEY)
    engine = PrivacyEngine(accountant="dpfast_pld", secure_mode=True)
    loader = DataLoader(_data(), batch_size=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=loader, target_epsilon=3.0, target_delta=DELTA, epochs=2,
            max_grad_norm=1.0)
    for _ in range(2):
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    assert isinstance(engine.accountant, dpo.DpfastPldAccountant)
    assert 2.5 < engine.get_epsilon(DELTA) <= 3.0


def test_ghost_clipping_draws_from_dpfast(monkeypatch):
    calls: list[str] = []
    normal = torch.normal
    monkeypatch.setattr(torch, "normal", lambda *a, **k: (calls.append("normal"),
                                                          normal(*a, **k))[1])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    dpo.install(KEY)
    engine = PrivacyEngine(accountant="dpfast_pld", secure_mode=True)
    model, opt, crit, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        criterion=nn.CrossEntropyLoss(), data_loader=DataLoader(_data(), batch_size=32),
        noise_multiplier=1.0, max_grad_norm=1.0, grad_sample_mode="ghost")
    assert isinstance(opt, DPOptimizerFastGradientClipping)
    before = [p.detach().clone() for p in model.parameters()]
    xb, yb = next(iter(loader))
    opt.zero_grad()
    crit(model(xb), yb).backward()
    opt.step()
    assert calls == []
    assert not all(torch.equal(a, p) for a, p in zip(before, model.parameters()))


def test_the_core_never_imports_torch():
    import subprocess
    import sys

    code = ("import sys, numpy as np, dpfast, dpfast.compat, dpfast.accounting\n"
            "dpfast.gaussian(np.zeros(4), 1.0)\n"
            "assert 'torch' not in sys.modules and 'opacus' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=SUBPROCESS_TIMEOUT_S)
    assert r.returncode == 0, r.stderr[-2000:]


def test_distributed_sampler_and_optimizer_draw_from_dpfast(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0,
                            world_size=1)
    try:
        def batches():
            s = _us.DistributedUniformWithReplacementSampler(total_size=500, sample_rate=0.2,
                                                             steps=4)
            return [b.tolist() for b in s]

        with dpo.patched(KEY):
            a = batches()
        with dpo.patched(KEY):
            b = batches()
        assert a == b and len(a) == 4
        assert all(60 < len(x) < 140 and len(set(x)) == len(x) for x in a)
        assert all(0 <= i < 500 for x in a for i in x)
        # the distributed optimizer's rank 0 noise goes through the fused path
        from opacus.optimizers import DistributedDPOptimizer

        p = nn.Parameter(torch.zeros(1000, dtype=torch.float64))
        opt = DistributedDPOptimizer(torch.optim.SGD([p], lr=0.1), noise_multiplier=1.0,
                                     max_grad_norm=1.0, expected_batch_size=1)
        p.summed_grad = torch.full((1000,), 0.3, dtype=torch.float64)
        with dpo.patched(KEY):
            opt.add_noise()
        sigma, g = _noise.fused_sigma(1.0, 1.0, 1000)
        z = (p.grad.numpy() - np.rint(0.3 / g) * g) / g
        assert np.all(z == np.rint(z)) and 0.8 < float(np.std(z)) * g / sigma < 1.2
    finally:
        dist.destroy_process_group()


def test_adaptive_clipping_draws_from_dpfast(monkeypatch):
    calls: list[str] = []
    normal = torch.normal
    monkeypatch.setattr(torch, "normal", lambda *a, **k: (calls.append("normal"),
                                                          normal(*a, **k))[1])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    dpo.install(KEY)
    engine = PrivacyEngine(accountant="dpfast_pld", secure_mode=True)
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=DataLoader(_data(), batch_size=32), noise_multiplier=1.0,
        max_grad_norm=1.0, clipping="adaptive", target_unclipped_quantile=0.5,
        clipbound_learning_rate=0.2, max_clipbound=10.0, min_clipbound=0.1,
        unclipped_num_std=20.0)
    assert type(opt).__name__ == "AdaClipDPOptimizer"
    xb, yb = next(iter(loader))
    opt.zero_grad()
    nn.functional.cross_entropy(model(xb), yb).backward()
    opt.step()  # noise-only path: gradient noise and the noisy unclipped count
    assert calls == []
    assert float(opt.max_grad_norm) != 1.0  # the clipping bound adapted
