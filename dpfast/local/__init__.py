"""Local differential privacy: randomized response, OUE, OLH, count-mean sketches, RAPPOR.

In the local model every user randomizes her own value before it leaves her device; a
client mechanism ``M`` is ``epsilon``-LDP when for **any two inputs** ``v, v'`` and every
set of outputs ``S``: ``P[M(v) in S] <= e^epsilon P[M(v') in S]``.  Each client function
here states its per-report epsilon (**Privacy** sections) and exposes it as a privacy
event (:mod:`dpfast.accounting.events`) for the accountants.  The servers' estimators are
unbiased and come with their variances (exact formulas, and plug-in estimates on the
returned :class:`FrequencyEstimate`; for the count-mean sketches an estimate of the mean
squared error for the server's fixed hash functions, :mod:`dpfast.local._collisions`).

Exactness
---------
The reporting probabilities (``e^eps / (e^eps + k - 1)``, ``1 / (e^eps + 1)``,
``1 / (1 + e^(eps/2))``) are irrational.  They are sampled **exactly**: 64 decisions at a
time compare the bits of independent uniforms with the exact binary expansion of the
probability (computed by integer interval arithmetic, :mod:`dpfast.noise._exact`), and the rare
comparison still undecided after 64 bits (probability ``2^-64``) is finished by refining
that uniform lazily, never by resampling (see :mod:`dpfast._kernels.local`).  RAPPOR's
``f, p, q`` and any other float probability are the exact binary rationals they encode and
are compared bit by bit to completion.  Every random bit comes from dpfast's ChaCha20
generator (``rng``: None, a :class:`dpfast.Generator` or a 32-byte key), split into fixed
chunks on their own streams, so a key gives the same output whatever the thread count.
The estimators themselves are float post-processing of integer counts.

Randomness per report
---------------------
Within one call of a randomizer (``perturb``, ``encode``, ``instantaneous``,
:func:`randomize`) every value has its own streams: two reports of one value in a batch
are independent.  A raw 32-byte key keys *that call*: the same call with the same key
replays the same reports (the replay handle of tests and audits), so a key passed to a
randomizer must name one batch -- reporting again with it would send the same
randomness twice (two reports charged ``2 epsilon`` would be only ``epsilon``-LDP
together with the first).  To report repeatedly pass a :class:`dpfast.Generator` (its
allocator gives every call fresh streams) or use :class:`Client` / :class:`ClientPool`,
which derive a fresh generator for every report batch from a raw key and a counter kept
in their state (:func:`dpfast.local.client.report_generator`) and charge every report
its worst case, so that what the server sees -- reports, and refusals that send nothing
-- depends on the values only through the reports themselves (docs/security.md, "Local-DP
clients: what the server sees").

Hashing (identical on clients and servers)
------------------------------------------
Items are first mapped to 64-bit *fingerprints* (:func:`fingerprint`): integers to their
two's-complement bit pattern, strings to BLAKE2b-64 of their UTF-8 bytes (bytes as they
are), with personalization ``b"dpfast.local"``.  Then:

* OLH uses, per user, a fresh strongly universal hash (multiply-add-shift with three
  random 64-bit words that the user sends with her report).
* Count-mean sketches and RAPPOR use ``num`` fixed public hash functions, each a simple
  tabulation hash (3-independent; 8 tables of 256 random 32-bit words per function)
  whose tables are the ChaCha20 keystream of the ``hash_seed``
  (:func:`hash_tables`).  Server and clients built with the same ``hash_seed`` hash
  identically; any other implementation can reproduce the tables from RFC 8439 ChaCha20.

A 32-bit hash ``h`` selects bucket ``(h * m) >> 32`` of ``[0, m)``.

Modules
-------
``rr`` (binary and k-ary randomized response), ``unary`` (OUE), ``olh`` (optimal local
hashing), ``sketch`` (count-mean sketch and the :class:`Sketch` tallies), ``hadamard``
(Hadamard count-mean sketch), ``rappor`` (with ``rappor_reports``: its epsilons and
records), ``hashing`` (fingerprints and public tables), ``estimate``
(:class:`FrequencyEstimate`); the collection pipeline: ``client`` (:class:`Client`: a
device's persistent per-period budget, RAPPOR memoization), ``pool`` (:class:`ClientPool`:
many clients array-at-a-time), ``reports`` (:class:`ReportBatch`: the versioned wire
format), ``server`` (:class:`Aggregator`: streaming, mergeable tallies), ``monitor``
(estimates with confidence intervals, :func:`monitor`); private: ``_tally`` (report checks
and tallies), ``_validate`` (parameters and reports), ``_lanes``
(exact thresholds and the client-kernel driver).  Kernels live in
:mod:`dpfast._kernels.local`.

References
----------
Warner, "Randomized response", JASA 1965.  Wang, Blocki, Li, Jha, "Locally Differentially
Private Protocols for Frequency Estimation", USENIX Security 2017.  Apple Differential
Privacy Team, "Learning with Privacy at Scale", 2017.  Erlingsson, Pihur, Korolova,
"RAPPOR: Randomized Aggregatable Privacy-Preserving Ordinal Response", CCS 2014.
Thorup, "High Speed Hashing for Integers and Strings", 2015.  Patrascu, Thorup, "The
Power of Simple Tabulation Hashing", JACM 2012.
"""

from __future__ import annotations

from dpfast.local.client import BudgetExhaustedError, Client, randomize
from dpfast.local.estimate import FrequencyEstimate
from dpfast.local.hadamard import HadamardCountMeanSketch
from dpfast.local.hashing import fingerprint, hash_tables
from dpfast.local.monitor import Estimates, UtilityReport, estimates, monitor
from dpfast.local.olh import OlhReports, OptimalLocalHashing
from dpfast.local.pool import ClientPool
from dpfast.local.rappor import Rappor
from dpfast.local.rappor_reports import (
    RapporCounts,
    RapporDecoding,
    RapporReports,
    rappor_epsilon,
)
from dpfast.local.reports import ReportBatch, batch_of
from dpfast.local.rr import (
    GeneralizedRandomizedResponse,
    k_randomized_response,
    k_randomized_response_estimate,
    randomized_response,
    randomized_response_estimate,
)
from dpfast.local.server import Aggregator
from dpfast.local.sketch import CmsReports, CountMeanSketch, HcmsReports, Sketch
from dpfast.local.unary import OptimizedUnaryEncoding

__all__ = [
    "FrequencyEstimate",
    "randomized_response",
    "randomized_response_estimate",
    "k_randomized_response",
    "k_randomized_response_estimate",
    "GeneralizedRandomizedResponse",
    "OptimizedUnaryEncoding",
    "OptimalLocalHashing",
    "OlhReports",
    "CountMeanSketch",
    "HadamardCountMeanSketch",
    "CmsReports",
    "HcmsReports",
    "Sketch",
    "Rappor",
    "RapporReports",
    "RapporCounts",
    "RapporDecoding",
    "rappor_epsilon",
    "fingerprint",
    "hash_tables",
    # the collection pipeline: clients -> reports -> streaming server -> monitor
    "Client",
    "ClientPool",
    "BudgetExhaustedError",
    "randomize",
    "ReportBatch",
    "batch_of",
    "Aggregator",
    "Estimates",
    "estimates",
    "UtilityReport",
    "monitor",
]
