"""Type-checked (never run): the lazy top-level namespace resolves to real types."""

from __future__ import annotations

from typing_extensions import assert_type

import dpfast
from dpfast.accounting import events as ev

acct = dpfast.RdpAccountant()
assert_type(acct.compose(ev.Gaussian(1.0), 3), dpfast.RdpAccountant)
assert_type(acct.get_epsilon(1e-5), float)
assert_type(acct.supports(ev.Laplace(1.0)), bool)
zc = dpfast.ZcdpAccountant(neighbouring="add_remove")
assert_type(zc.get_delta(1.0), float)
assert_type(dpfast.dpsgd_epsilon(0.01, 1.1, 1000, 1e-5), float)
mech = dpfast.GaussianMechanism(1.0, 1e-6)
assert_type(mech.sigma, float)
assert_type(dpfast.DiscreteLaplaceMechanism(0.5).confidence_interval(0.05), int)
rng: dpfast.RngLike = bytes(32)
err: type[ValueError] = dpfast.UnsupportedEventError
base: type[dpfast.Accountant] = dpfast.PureDpAccountant
