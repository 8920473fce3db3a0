"""Privacy budget with a durable, concurrent, hash-chained ledger.

A :class:`Budget` is a *privacy filter*: it admits a sequence of charges, each
described by an event of :mod:`dpfast.accounting.events`, for as long as the whole
(fully adaptive) sequence stays within an overall ``(epsilon, delta)`` guarantee, and
refuses (:class:`BudgetExceededError`) the first charge that would not.  Every charge,
accepted or refused, is appended to a ledger -- an in-memory or on-disk SQLite
database -- which is also the audit log (who, what, when, cost).

The package, one topic per module:

* :mod:`.records`: :class:`Cost`, :class:`Remaining`, :class:`Charge`, the exceptions;
* :mod:`.filters` (base :class:`Filter`, :class:`BasicFilter`), :mod:`.zcdp`
  (:class:`ZcdpFilter`), :mod:`.rdp` (:class:`RdpFilter`), :mod:`.advanced`
  (:class:`AdvancedFilter`), :mod:`.mixed` (:class:`MixedFilter`: pure, approximate and
  Gaussian releases in one ledger): what a charge costs and whether it fits, each with
  its proof; :mod:`.registry` maps accounting names to them;
* :mod:`.books`, :mod:`.analysts`: analysts' sub-budgets (:class:`Analyst`);
  :mod:`.queries`: cached query results (:class:`Query`); :mod:`.usage`: the usage
  report (:class:`Usage`);
* :mod:`.schema`, :mod:`.ledger`, :mod:`.migrations`: the SQLite file, its hash chain
  and the upgrades of old formats;
* :mod:`.manager`: the :class:`Budget`, which composes a filter with a ledger under a
  lock and handles processes;
* :mod:`.audit`: reading a ledger file without opening a budget (``dpfast ledger``).
"""

from __future__ import annotations

from .advanced import AdvancedFilter
from .analysts import Analyst
from .audit import LedgerReport, inspect_ledger
from .filters import BasicFilter, Filter
from .manager import Budget
from .mixed import MixedFilter
from .queries import Query
from .rdp import DEFAULT_ORDERS, RdpFilter
from .records import BudgetExceededError, Charge, Cost, LedgerError, Remaining
from .registry import FILTERS
from .usage import AnalystUsage, QueryUsage, Usage
from .zcdp import ZcdpFilter

__all__ = [
    "AdvancedFilter",
    "Analyst",
    "AnalystUsage",
    "BasicFilter",
    "Budget",
    "BudgetExceededError",
    "Charge",
    "Cost",
    "DEFAULT_ORDERS",
    "FILTERS",
    "Filter",
    "LedgerError",
    "LedgerReport",
    "MixedFilter",
    "Query",
    "QueryUsage",
    "RdpFilter",
    "Remaining",
    "Usage",
    "ZcdpFilter",
    "inspect_ledger",
]
