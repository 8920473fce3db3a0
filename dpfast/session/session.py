""":class:`Session`: releases of :mod:`dpfast.tables` over one private data source, with
the privacy unit and the public facts filled in, a budget, a result cache and analysts."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from dpfast.budget import Budget
from dpfast.tables import bounding as _bounding

from . import _cache, _colcache, _release, _spec, _stats, _store
from ._expr import Col
from ._open import make_source
from ._query import Agg, Query
from ._source import Source
from ._stats import STATISTICS

if TYPE_CHECKING:
    import numpy.typing as npt
    from typing_extensions import Unpack

    from dpfast.budget.usage import Usage
    from dpfast.random import RngLike
    from dpfast.tables.hierarchy import TopDownRelease
    from dpfast.tables.release import TableRelease

    from ._answer import SqlRelease
    from ._cache import Released
    from ._histogram import HistogramOptions
    from ._topdown import Geography

__all__ = ["Analyst", "Session", "STATISTICS"]


class _Options(TypedDict, total=False):
    """The options of :meth:`Session.count`, :meth:`Session.sum`, :meth:`Session.mean`
    (those of :meth:`Session.release` but the privacy target and ``where``)."""

    rho: float | None
    noise: str | None
    bounds: tuple[float, float] | None
    domain: npt.ArrayLike | None
    max_partitions: int | None
    max_per_partition: int | None
    note: str
    bounding: str


class _SqlOptions(TypedDict, total=False):
    """The options of :meth:`Session.sql` (:func:`dpfast.session._answer.run`)."""

    rho: float | None
    noise: str | None
    max_partitions: int | None
    max_per_partition: int | None


class Session:
    """Differentially private releases over one private data source.

    Parameters
    ----------
    source : DataFrame, path(s), DuckDB connection or Dask DataFrame
        The private table: a pandas or Polars DataFrame, Parquet file(s) (paths or a glob),
        a DuckDB database file (``table=`` names the table when it holds several) or
        connection (with ``table=``), or a Dask DataFrame (releases run on the cluster
        with :mod:`dpfast.dask`: the same results, bit for bit).  Never modified.
    privacy_unit : str or None
        The column naming the person each row is about (one person may have many rows);
        None: every row is a different person.  The budget's ledger is bound to it
        (:meth:`dpfast.Budget.bind_privacy_unit`): the first session on a ledger records
        it, and a session with another privacy unit is refused (ValueError), so a
        ledger's total never mixes units.
    bounds : dict, optional
        Public bounds ``{column: (lo, hi)}`` of value columns (values are clamped).
    domains : dict, optional
        Public key domains ``{column: keys}``: grouping by such a column releases exactly
        these keys (no key selection); other group-by columns use private key selection
        (``delta > 0``).
    budget : dpfast.Budget, optional
        The budget every release is charged to.  Or give ``epsilon`` (and ``delta``,
        ``ledger``) and the session makes one (accounting: the budget layer's ``"mixed"``
        filter where it exists, else ``"basic"``); a ``ledger`` that exists is reopened.
    rng : None, Generator or 32-byte key
        The noise source of every release (see :func:`dpfast.tables.count`).
    max_partitions, max_per_partition : int
        Default contribution bounds per person (overridable per release).
    table, name : str, optional
        ``table``: the table of a DuckDB source; ``name``: the private table's name in SQL
        (default: the DuckDB table, the Parquet file's stem, else ``"data"``).
    public : dict, optional
        Public tables ``{name: DataFrame or Parquet path}`` that SQL may join with.
    column_cache : int
        Bytes of decoded columns a file source (Parquet files, a DuckDB database file)
        keeps in memory between queries (default 1 GiB; 0: none): queries without a join
        or a row filter then read them instead of asking DuckDB to decode the file again.
        Kept per column with its NULL mask, valid while the files keep their stamps (path,
        size, times, inode, footer digest; and a DuckDB file its WAL), least recently used evicted
        first (:mod:`dpfast.session._colcache`).  It changes no release and no charge.

    Notes
    -----
    Every release goes through the **result cache**: its spec
    (:class:`dpfast.tables.spec.ReleaseSpec`: statistic, columns, bounds, privacy target,
    contribution bounds, key domain, and a fingerprint of the data and of the row query --
    filter, joins; :mod:`dpfast.session._release`) is hashed to a query id
    (:meth:`~dpfast.tables.spec.ReleaseSpec.query_id`), the same for a method call and an
    SQL aggregate asking the same question; a query asked before returns the stored
    release -- the same numbers, no new charge, no new noise -- also in another process
    using the same ledger.  Re-noising would leak: ``k`` independent
    noisy answers to one question average to an answer with ``sqrt(k)`` times less noise,
    i.e. ``k`` times the privacy loss; returning the stored one is post-processing of a
    release already paid for (free).

    Privacy
    -------
    Each release has the guarantee of the :mod:`dpfast.tables` release it runs (stated
    there; its event is its plan's, :func:`dpfast.tables.plan.plan`, computed from the
    spec and the table's schema before any row is read), for neighbouring datasets that
    differ by all rows of one privacy unit (add/remove one person), and is charged to the
    budget (and to the analyst's sub-budget) before any noise is drawn; the budget's
    filter bounds the whole fully
    adaptive sequence (:class:`dpfast.Budget`).  A row filter (``where``) is applied per
    row before contribution bounding, so it does not change the sensitivity.  Cache hits
    are post-processing of earlier releases and cost nothing (Dwork and Roth 2014,
    Proposition 2.1).  Whatever fails after the charge raises
    :class:`~dpfast.session.ReleaseFailedError` with a fixed message and nothing chained
    (a ``failed`` ledger row); analysts' row queries run on a locked DuckDB connection
    (:mod:`dpfast.session._engine`).
    """

    def __init__(self, source: object, *, privacy_unit: str | None,
                 bounds: dict[str, tuple[float, float]] | None = None,
                 domains: dict[str, npt.ArrayLike] | None = None,
                 budget: Budget | None = None,
                 epsilon: float | None = None, delta: float = 0.0,
                 ledger: str | os.PathLike[str] | None = None, rng: RngLike = None,
                 max_partitions: int = 1, max_per_partition: int = 1,
                 table: str | None = None, name: str | None = None,
                 public: dict[str, object] | None = None,
                 column_cache: int = _colcache.DEFAULT_BUDGET) -> None:
        if budget is not None and (epsilon is not None or ledger is not None):
            raise ValueError("give budget= or epsilon=/delta=/ledger=, not both")
        made = budget is None
        if budget is None:
            budget = self._make_budget(epsilon, delta, ledger)
        elif not isinstance(budget, Budget):
            raise TypeError(f"budget must be a dpfast.Budget, got {type(budget).__name__}")
        self.budget = budget
        self._source: Source = make_source(source, table=table, name=name, public=public,
                                           column_cache=column_cache,
                                           privacy_unit=privacy_unit)
        if privacy_unit is not None:
            self._source.check_columns(_spec.column_names(privacy_unit, "privacy_unit"),
                                       "privacy_unit")
        self.privacy_unit = privacy_unit
        self.bounds = self._check_bounds(bounds or {})
        self.domains = self._check_domains(domains or {})
        self.rng = rng
        self.max_partitions = max_partitions
        self.max_per_partition = max_per_partition
        self._store = _store.Store(budget)
        self.analyst_name = ""
        #: True if this session bound the ledger to its privacy unit (a new ledger, or
        #: one of an earlier dpfast that had none); a ledger bound to another unit is
        #: refused here (ValueError naming privacy_unit), before anything is charged
        try:
            self.bound_unit = self._store.bind_unit(privacy_unit)
        except BaseException:
            if made:
                budget.close()  # the session opened it: leave no connection behind
            raise

    @staticmethod
    def _make_budget(epsilon: float | None, delta: float,
                     ledger: str | os.PathLike[str] | None) -> Budget:
        if epsilon is None:
            if ledger is not None and os.path.exists(ledger):
                return Budget.from_ledger(ledger)
            raise ValueError("a session needs budget= or epsilon= (and delta=, ledger=)")
        acc = _store.default_accounting(delta)
        return Budget(epsilon, delta or None, ledger=ledger, accounting=acc)

    def _check_bounds(self, bounds: object) -> dict[str, tuple[float, float]]:
        if not isinstance(bounds, dict):
            raise TypeError("bounds must be a dict {column: (lo, hi)}")
        out = {}
        for col, b in bounds.items():
            self._source.check_columns([col], "bounds column")
            if not isinstance(b, (tuple, list)) or len(b) != 2:
                raise ValueError(f"bounds[{col!r}] must be (lo, hi), got {b!r}")
            out[col] = (b[0], b[1])
        return out

    def _check_domains(self, domains: object) -> dict[str, np.ndarray]:
        if not isinstance(domains, dict):
            raise TypeError("domains must be a dict {column: keys}")
        for col in domains:
            self._source.check_columns([col], "domains column")
        return {c: np.asarray(list(v) if isinstance(v, (set, frozenset)) else v)
                for c, v in domains.items()}

    # ------------------------------------------------------------------ analysts
    def add_analyst(self, name: str, *, epsilon: float | None = None,
                    delta: float | None = None) -> Analyst:
        """Register analyst ``name`` with a sub-budget of ``epsilon``, ``delta`` (default
        delta: the total's; no ``epsilon``: a share of the whole budget) in the ledger --
        the budget owner's act (:meth:`dpfast.Budget.add_analyst`) -- and return their
        view (:meth:`analyst`).  Registering again with the same share returns it."""
        self._store.add_analyst(name, epsilon, delta)
        return Analyst(self, name)

    def analyst(self, name: str, *, epsilon: float | None = None,
                delta: float | None = None) -> Analyst:
        """A view of this session whose releases charge the *registered* analyst ``name``
        (:meth:`add_analyst`) and the total, every ledger row naming them.  An unknown
        name is a ValueError (nothing is created: naming an analyst gives no budget);
        ``epsilon`` / ``delta``, if given, must be the registered share."""
        self._store.analyst(name, epsilon, delta)
        return Analyst(self, name)

    def usage(self) -> Usage:
        """The budget's usage report (:meth:`dpfast.Budget.usage`): total, spent,
        remaining, utilization %, per analyst, per query, cache hits; ``print`` it."""
        return self._store.usage()

    # ------------------------------------------------------------------ releases
    def count(self, by: str | Sequence[str], *, epsilon: float | None = None,
              delta: float = 0.0, where: str | None = None,
              **options: Unpack[_Options]) -> Released:
        """:func:`dpfast.tables.count` of the rows per ``by`` key (passing ``where``, a SQL
        condition on the row's columns of the whitelist of :mod:`dpfast.session.sql`, from
        which dpfast generates the SQL DuckDB evaluates), through the cache.
        ``options``: ``rho``, ``noise``, ``max_partitions``, ``max_per_partition``,
        ``domain`` (overrides the session's ``domains``), ``note``, ``bounding``."""
        return self.release("count", by, epsilon=epsilon, delta=delta, where=where,
                            **options)

    def sum(self, value: str, by: str | Sequence[str], *,  # noqa: A003
            epsilon: float | None = None, delta: float = 0.0, where: str | None = None,
            **options: Unpack[_Options]) -> Released:
        """:func:`dpfast.tables.sum` of ``value`` per ``by`` key (bounds from the
        session's ``bounds`` or ``bounds=``), through the cache; as :meth:`count`."""
        return self.release("sum", by, value=value, epsilon=epsilon, delta=delta,
                            where=where, **options)

    def mean(self, value: str, by: str | Sequence[str], *, epsilon: float | None = None,
             delta: float = 0.0, where: str | None = None,
             **options: Unpack[_Options]) -> Released:
        """:func:`dpfast.tables.mean` of ``value`` per ``by`` key; as :meth:`sum`."""
        return self.release("mean", by, value=value, epsilon=epsilon, delta=delta,
                            where=where, **options)

    def __getattr__(self, name: str) -> Callable[..., Released]:
        """``session.<statistic>``: a release method of every statistic of the registry
        (:data:`dpfast.session.STATISTICS`): ``session.<name>(value, by, **options)``, or
        ``session.<name>(by, **options)`` for one that reads no value column."""
        stat = _stats.lookup(name)
        if stat is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return stat.method(name, self.release)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_stats.names()))

    def release(self, statistic: str, by: str | Sequence[str], *, value: str | None = None,
                epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                noise: str | None = None, where: str | None = None,
                bounds: tuple[float, float] | None = None, domain: npt.ArrayLike | None = None,
                max_partitions: int | None = None, max_per_partition: int | None = None,
                note: str = "", bounding: str = "uniform", **params: object) -> Released:
        """The release ``statistic`` (a name of :data:`dpfast.session.STATISTICS`: every
        statistic of the registry) of ``value`` per ``by`` key; what :meth:`count`,
        :meth:`sum`, :meth:`mean` call (and, by attribute, every other statistic:
        ``session.variance(value, by)``, ``session.median(value, by)``,
        ``session.quantile(value, by, q=0.9)``, ``session.privacy_id_count(by)``,
        ``session.count_distinct(value, by)``).  ``params``: the statistic's own
        parameters (``q=`` of the quantile).  ``bounding``: the bounding policy of the
        statistic (``"uniform"`` or ``"frequent"``, :func:`dpfast.tables.count`); part of
        the cached query's spec.

        The release's spec (:class:`dpfast.tables.spec.ReleaseSpec`) is the one an SQL
        aggregate asking the same question builds (:mod:`dpfast.session._release`): its
        query id is the cache key, so the question is charged once whichever way it is
        asked.  The event charged is the release's plan's, known before any row is read.
        """
        stat = _stats.lookup(statistic)
        if stat is None:
            raise ValueError(f"statistic must be one of {_stats.names()}, got "
                             f"{statistic!r}")
        _bounding.policy_code(bounding)  # ValueError naming bounding, before anything
        keys = _spec.column_names(by)
        src = self._source
        src.check_columns(keys, "key column")
        own = stat.spec_params(params)
        # a public grid of candidates (a rank statistic's) is the clamping range itself:
        # no bounds are needed, and the session's default bounds do not apply
        grid = dict(own).get("candidates") is not None
        if stat.value:
            if not isinstance(value, str):
                raise TypeError(f"{statistic} needs value=, a column name")
            src.check_columns([value], "value column")
            if bounds is None and stat.bounds and not grid:
                if value not in self.bounds:
                    raise ValueError(f"{statistic} of {value!r} needs bounds: give "
                                     f"bounds={{{value!r}: (lo, hi)}} to the session or "
                                     "bounds=(lo, hi)")
                bounds = self.bounds[value]
        elif value is not None:
            raise TypeError(f"{statistic} takes no value column")
        if not stat.bounds:
            bounds = None
        cond = _spec.where_condition(where, src)
        if domain is None:
            domain = self._domain(keys)
        k = self.max_partitions if max_partitions is None else max_partitions
        c = self.max_per_partition if max_per_partition is None else max_per_partition
        where_sql = None if cond is None else _spec.render_where(cond)
        what = f"{statistic}({value or '*'}) by {', '.join(keys)}" + (
            f" where {where_sql}" if where_sql else "")
        agg = Agg(stat.session_name, stat.name,
                  Col(0, value, "") if value is not None else None, what, own)
        q = Query(src.name, (), cond, tuple(Col(0, n, "") for n in keys), tuple(keys),
                  (agg,), ())
        return _release.run(self, q, agg, stat, epsilon=epsilon, delta=delta, rho=rho,
                            noise=noise, bounds=bounds, domain=domain, max_partitions=k,
                            max_per_partition=c, bounding=bounding, what=what)

    def _check_room(self, need: float, what: str, qid: str) -> None:
        """Refuse, before any charge, a query whose remaining parts (``need`` epsilon in
        all) cannot all fit what the analyst (or the session) may still spend, unless
        its next part is already answered (a hit costs nothing)."""
        from dpfast.accounting.events import Epsilon
        from dpfast.budget import BudgetExceededError

        who = self._store.who(self.analyst_name)
        if not who.fits(Epsilon(need)) and not self._store.cached(qid):
            left = who.remaining()
            name = f"analyst {self.analyst_name}" if self.analyst_name else "the budget"
            raise BudgetExceededError(
                f"{what}: the query's remaining aggregates need epsilon {need:.6g}, more "
                f"than {name} may still spend ({left.epsilon:.6g}); nothing was charged",
                remaining=left, ledger=self.budget.ledger)

    def histogram(self, column: str, bins: int | str | npt.ArrayLike = 10,
                  range: tuple[float, float] | None = None, *,  # noqa: A002
                  epsilon: float | None = None, delta: float = 0.0, where: str | None = None,
                  **options: Unpack[HistogramOptions]
                  ) -> tuple[np.ndarray, np.ndarray, TableRelease]:
        """:func:`dpfast.histogram` of ``column`` (``bins``, ``range`` as numpy; the privacy
        unit and contribution bounds filled in), through the cache: ``(hist, bin_edges,
        release)``.  ``options``: those of :func:`dpfast.histogram` but ``weights``."""
        from dpfast.session import _histogram

        options.setdefault("max_partitions", self.max_partitions)
        options.setdefault("max_per_partition", self.max_per_partition)
        q = _histogram.HistogramQuery(self._source, self.privacy_unit, self.rng, column, bins,
                                      range, epsilon=epsilon, delta=delta, where=where,
                                      options=options)
        return _cache.cached(self, q.spec, q.what, q.event, q.compute, q.payload,
                             release_of=lambda r: r[2])

    def topdown(self, geography: Geography, levels: str | Sequence[str], *, rho: float,
                where: str | None = None, **options: object) -> TopDownRelease:
        """:func:`dpfast.tables.topdown` over the rows, through the cache.

        ``geography`` is a public table (a DataFrame or a mapping of columns) with one row
        per leaf and the ``levels`` columns, coarse to fine; the private table's column
        ``levels[-1]`` names each row's leaf.  Each person (privacy unit) is bounded to
        one row (:func:`dpfast.tables.bound_contributions`), rows are counted per leaf
        (rows of leaves outside ``geography`` are dropped), and every level is noised
        (``rho`` zCDP) and made consistent.  ``options``: those of
        :func:`dpfast.tables.topdown`.  Returns a :class:`dpfast.tables.TopDownRelease`.

        Privacy
        -------
        That of :func:`dpfast.tables.topdown` (``rho``-zCDP, add/remove one person, whose
        one bounded row changes one leaf and its ancestors by 1; Canonne, Kamath, Steinke
        2020), since bounding to one row per person depends only on that person's rows.
        """
        from dpfast.session import _topdown

        return _topdown.topdown(self, geography, levels, rho=rho, where=where, **options)

    def sql(self, query: str, *, epsilon: float | None = None, delta: float = 0.0,
            **options: Unpack[_SqlOptions]) -> SqlRelease:
        """Answer an aggregate SQL query privately (:mod:`dpfast.session.sql`: the subset,
        the refusals, the budget split): returns a :class:`dpfast.session.SqlRelease`."""
        from dpfast.session import _answer, _cache

        # one question, charged in parts (one per aggregate): the usage report counts it once
        with _cache.question():
            return _answer.run(self, query, epsilon=epsilon, delta=delta, **options)

    def _domain(self, keys: list[str]) -> np.ndarray | tuple[np.ndarray, ...] | None:
        if not all(k in self.domains for k in keys):
            return None
        if len(keys) == 1:
            return self.domains[keys[0]]
        grid = list(itertools.product(*(self.domains[k].tolist() for k in keys)))
        return tuple(np.asarray([g[j] for g in grid]) for j in range(len(keys)))

    def close(self) -> None:
        """Close the session's store and its budget's ledger connection."""
        self.budget.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        src = self._source
        return (f"Session({src.kind} table {src.name!r}, privacy_unit={self.privacy_unit!r}, "
                f"budget={self.budget!r})")


class Analyst(Session):
    """A :class:`Session` seen by one analyst: the same data, facts, budget and cache;
    releases also charge the analyst's sub-budget and name them in the ledger."""

    def __init__(self, session: Session, name: str) -> None:  # noqa: D107
        self.__dict__.update(session.__dict__)
        self.analyst_name = name
        self._parent = session

    def analyst(self, name: str, *, epsilon: float | None = None,
                delta: float | None = None) -> Analyst:
        return self._parent.analyst(name, epsilon=epsilon, delta=delta)

    def add_analyst(self, name: str, *, epsilon: float | None = None,
                    delta: float | None = None) -> Analyst:
        return self._parent.add_analyst(name, epsilon=epsilon, delta=delta)

    def close(self) -> None:
        """An analyst's view closes nothing (close the session)."""

    def __repr__(self) -> str:
        return f"Analyst({self.analyst_name!r}) of {self._parent!r}"

