"""The configuration of ``dpfast serve``: a TOML file, read and checked before anything
starts (``dpfast serve check CONFIG``).

Tables and keys (paths are relative to the config file's directory)::

    [server]                 # all optional
    host = "127.0.0.1"       port = 8000          workers = 1
    tls_certfile = "cert.pem"  tls_keyfile = "key.pem"   # uvicorn's TLS (both or neither)
    max_body_bytes = 1048576                     # larger requests: 413
    rate = 20.0              burst = 40          # per-token token bucket (requests/s)
    state = "serve.db"       # tokens and report aggregates (default: LEDGER.serve.db)

    [data]                   # the private table (or several: [data.<name>] below)
    source = "people.parquet"  # Parquet file, CSV file or DuckDB database file
    table = "people"           # the table of a DuckDB file
    name = "people"            # its name in SQL (default: the file's stem)
    privacy_unit = "person_id" # or "none": every row is a different person
    max_partitions = 1       max_per_partition = 1
    [data.bounds]            age = [0, 100]            # public bounds of value columns
    [data.domains]           region = ["north", "south"]  # public key domains
    [public]                 regions = "regions.parquet"  # public tables SQL may join

    [data.orders]            # several private tables: one [data.<name>] each (its SQL
    source = "orders.csv"    # name: <name> unless `name` says otherwise), with the keys
    privacy_unit = "person_id"  # of [data]; all of them declare ONE privacy unit (the
    [data.orders.bounds]     # ledger is bound to one) and share the one budget
    amount = [0, 500]

    [budget]                 epsilon = 4.0   delta = 1e-6   ledger = "budget.db"

    [analysts.alice]         epsilon = 1.0   delta = 1e-7   # a share (sub-budget)

    [collections.apps]       # a local-DP collection
    protocol = "krr"         # a wire name of dpfast.local.reports.PROTOCOLS
    params = { k = 8, epsilon = 1.0 }   # its public parameters, exactly
    candidates = [0, 1, 2]   # optional (sketch protocols need them for estimates)
    target = 0.01            # the monitor's target standard error of a frequency

Every error is a :class:`ConfigError` (a ValueError) naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from typing import Any

__all__ = ["Collection", "Config", "ConfigError", "PrivateTable", "load"]

_TOP = {"server", "data", "public", "budget", "analysts", "collections"}
_SERVER = {"host", "port", "workers", "tls_certfile", "tls_keyfile", "max_body_bytes",
           "rate", "burst", "state"}
_DATA = {"source", "table", "name", "privacy_unit", "max_partitions", "max_per_partition",
         "bounds", "domains"}


class ConfigError(ValueError):
    """A configuration that cannot be served; the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Collection:
    """One local-DP collection: its protocol (wire name), public parameters, candidates
    and the monitor's target standard error."""

    name: str
    protocol: str
    params: dict[str, Any]
    candidates: list[Any] | None
    target: float


@dataclasses.dataclass(frozen=True)
class PrivateTable:
    """One private table: its source, SQL name, public bounds and domains (``key``: the
    config's table it came from, ``data`` or ``data.<name>``, for messages)."""

    key: str
    source: str
    table: str | None
    name: str | None
    max_partitions: int
    max_per_partition: int
    bounds: dict[str, tuple[Any, Any]]
    domains: dict[str, list[Any]]


@dataclasses.dataclass(frozen=True)
class Config:
    """A checked configuration (see the module docstring)."""

    path: str
    host: str
    port: int
    workers: int
    tls_certfile: str | None
    tls_keyfile: str | None
    max_body_bytes: int
    rate: float
    burst: int
    state: str
    tables: tuple[PrivateTable, ...]  # one or more; queries are routed by the FROM's name
    privacy_unit: str | None          # the one unit of every table (the ledger's)
    public: dict[str, str]
    epsilon: float
    delta: float
    ledger: str
    analysts: dict[str, tuple[float | None, float | None]]
    collections: dict[str, Collection]


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # pragma: no cover - Python 3.10
        import tomli
    except ImportError as exc:  # pragma: no cover
        raise ImportError("dpfast serve needs tomli on Python 3.10: "
                          "pip install 'dpfast[serve]'") from exc
    return tomli  # pragma: no cover


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path))

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"config {self.path}: {key}: {message}")

    def table(self, doc: dict[str, Any], key: str, allowed: set[str] | None = None,
              required: bool = False) -> dict[str, Any]:
        value = doc.get(key.rsplit(".", 1)[-1])
        if value is None:
            if required:
                raise self.fail(key, "missing (a table is required)")
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table, got {type(value).__name__}")
        if allowed is not None:
            unknown = sorted(set(value) - allowed)
            if unknown:
                raise self.fail(f"{key}.{unknown[0]}", f"unknown key (known: "
                                f"{', '.join(sorted(allowed))})")
        return value

    def named(self, section: str, name: str, value: Any, allowed: set[str], what: str) -> str:
        """The key ``section.name`` of a named table (an analyst, a collection): its name
        checked (:func:`dpfast.budget.names.check_name`), its value a table (``what``
        says of what) holding only ``allowed`` keys."""
        from dpfast.budget.names import check_name

        key = f"{section}.{name}"
        try:
            check_name(name, key)
        except (TypeError, ValueError) as exc:
            raise self.fail(key, str(exc)) from None
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table ({what})")
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}", f"unknown key (known: "
                            f"{', '.join(sorted(allowed))})")
        return key

    def number(self, doc: dict[str, Any], key: str, default: Any, *, positive: bool = False,
               integer: bool = False, lo: float | None = None, hi: float | None = None) -> Any:
        name = key.rsplit(".", 1)[-1]
        v = doc.get(name, default)
        if v is None:
            raise self.fail(key, "missing (a number is required)")
        kinds = (int,) if integer else (int, float)
        if isinstance(v, bool) or not isinstance(v, kinds):
            raise self.fail(key, f"must be {'an integer' if integer else 'a number'}, got "
                            f"{v!r}")
        if not math.isfinite(v) or (positive and not v > 0) or (lo is not None and v < lo) \
                or (hi is not None and v > hi):
            rng = ("> 0" if positive else "") + (f" >= {lo}" if lo is not None else "") + (
                f" <= {hi}" if hi is not None else "")
            raise self.fail(key, f"must be a finite number{rng}, got {v!r}")
        return v

    def text(self, doc: dict[str, Any], key: str, default: Any = None,
             required: bool = False) -> Any:
        v = doc.get(key.rsplit(".", 1)[-1], default)
        if v is None:
            if required:
                raise self.fail(key, "missing (a string is required)")
            return None
        if not isinstance(v, str) or not v:
            raise self.fail(key, f"must be a non-empty string, got {v!r}")
        return v

    def file(self, doc: dict[str, Any], key: str, *, must_exist: bool,
             default: Any = None, required: bool = False) -> Any:
        v = self.text(doc, key, default, required)
        if v is None:
            return None
        p = os.path.normpath(os.path.join(self.base, os.path.expanduser(v)))
        if must_exist and not os.path.exists(p):
            raise self.fail(key, f"file not found: {p}")
        if not must_exist and not os.path.isdir(os.path.dirname(p) or "."):
            raise self.fail(key, f"directory of {p} does not exist")
        return p


def load(path: str | os.PathLike[str]) -> Config:
    """Read and check the configuration at ``path`` (:class:`ConfigError` naming the key)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ConfigError(f"config file not found: {path}")
    r = _Reader(path)
    try:
        with open(path, "rb") as fh:
            doc = _toml().load(fh)
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise ConfigError(f"config {path}: not valid TOML ({exc})") from None
    unknown = sorted(set(doc) - _TOP)
    if unknown:
        raise r.fail(unknown[0], f"unknown table (known: {', '.join(sorted(_TOP))})")
    server = r.table(doc, "server", _SERVER)
    data = r.table(doc, "data", required=True)  # its keys: checked by _tables
    budget = r.table(doc, "budget", {"epsilon", "delta", "ledger"}, required=True)
    ledger = r.file(budget, "budget.ledger", must_exist=False, required=True)
    cert = r.file(server, "server.tls_certfile", must_exist=True)
    key = r.file(server, "server.tls_keyfile", must_exist=True)
    if (cert is None) != (key is None):
        raise r.fail("server.tls_certfile", "give tls_certfile and tls_keyfile together")
    public = {k: r.file(doc["public"], f"public.{k}", must_exist=True)
              for k in r.table(doc, "public")}
    tables, unit = _tables(r, data, public)
    eps = r.number(budget, "budget.epsilon", None, positive=True)
    delta = r.number(budget, "budget.delta", 0.0, lo=0.0, hi=1.0)
    if delta >= 1:
        raise r.fail("budget.delta", f"must be < 1, got {delta!r}")
    return Config(
        path=os.path.abspath(path),
        host=r.text(server, "server.host", "127.0.0.1"),
        port=r.number(server, "server.port", 8000, integer=True, lo=0, hi=65535),
        workers=r.number(server, "server.workers", 1, integer=True, lo=1, hi=64),
        tls_certfile=cert, tls_keyfile=key,
        max_body_bytes=r.number(server, "server.max_body_bytes", 1 << 20, integer=True,
                                lo=1024),
        rate=float(r.number(server, "server.rate", 20.0, positive=True)),
        burst=r.number(server, "server.burst", 40, integer=True, lo=1),
        state=r.file(server, "server.state", must_exist=False,
                     default=ledger + ".serve.db"),
        tables=tables, privacy_unit=unit, public=public,
        epsilon=float(eps), delta=float(delta), ledger=ledger,
        analysts=_analysts(r, r.table(doc, "analysts"), float(eps)),
        collections=_collections(r, r.table(doc, "collections")),
    )


def _tables(r: _Reader, data: dict[str, Any], public: dict[str, str]
            ) -> tuple[tuple[PrivateTable, ...], str | None]:
    """The private tables: ``[data]`` itself (it has a key of its own) or one
    ``[data.<name>]`` each; all must declare one privacy unit (ConfigError naming the
    key otherwise: a budget total over two units bounds neither)."""
    if set(data) & _DATA:
        unknown = sorted(set(data) - _DATA)
        if unknown:
            raise r.fail(f"data.{unknown[0]}", f"unknown key (known: "
                         f"{', '.join(sorted(_DATA))})")
        specs: dict[str, tuple[dict[str, Any], str | None]] = {"data": (data, None)}
    else:
        if not data:
            raise r.fail("data", "names no private table (give [data] with source = ..., "
                         "or one [data.<name>] per table)")
        specs = {}
        for name, spec in data.items():
            key = f"data.{name}"
            if not isinstance(spec, dict):
                raise r.fail(key, f"must be a table (a private table's keys), got "
                             f"{type(spec).__name__}")
            unknown = sorted(set(spec) - _DATA)
            if unknown:
                raise r.fail(f"{key}.{unknown[0]}", f"unknown key (known: "
                             f"{', '.join(sorted(_DATA))})")
            specs[key] = (spec, name)
    tables: list[PrivateTable] = []
    units: list[tuple[str, str | None]] = []
    seen: dict[str, str] = {}
    for key, (spec, default_name) in specs.items():
        source = r.file(spec, f"{key}.source", must_exist=True, required=True)
        unit = r.text(spec, f"{key}.privacy_unit", required=True)
        units.append((f"{key}.privacy_unit", None if unit.lower() == "none" else unit))
        name = r.text(spec, f"{key}.name", default_name)
        if name is not None:
            other = seen.get(name.casefold()) or next(
                (f"public.{p}" for p in public if p.casefold() == name.casefold()), None)
            if other is not None:
                raise r.fail(f"{key}.name" if "name" in spec else key,
                             f"the SQL name {name!r} is also {other}'s (each table needs "
                             "its own name)")
            seen[name.casefold()] = key
        tables.append(PrivateTable(
            key=key, source=source, table=r.text(spec, f"{key}.table"), name=name,
            max_partitions=r.number(spec, f"{key}.max_partitions", 1, integer=True, lo=1),
            max_per_partition=r.number(spec, f"{key}.max_per_partition", 1, integer=True,
                                       lo=1),
            bounds=_bounds(r, r.table(spec, f"{key}.bounds"), f"{key}.bounds"),
            domains=_domains(r, r.table(spec, f"{key}.domains"), f"{key}.domains")))
    first_key, first = units[0]
    for key, unit in units[1:]:
        if unit != first:
            raise r.fail(key, f"{unit or 'none'!r} differs from {first_key} "
                         f"{first or 'none'!r}: the tables share one budget, so they must "
                         "share one privacy unit (a total over two units bounds neither)")
    return tuple(tables), first


def _bounds(r: _Reader, table: dict[str, Any], where: str) -> dict[str, tuple[Any, Any]]:
    out = {}
    for col, b in table.items():
        key = f"{where}.{col}"
        if not isinstance(b, list) or len(b) != 2 or any(
                isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
                for x in b):
            raise r.fail(key, f"must be [lo, hi], two finite numbers, got {b!r}")
        if not b[0] < b[1]:
            raise r.fail(key, f"lo must be below hi, got {b!r}")
        out[col] = (b[0], b[1])
    return out


def _domains(r: _Reader, table: dict[str, Any], where: str) -> dict[str, list[Any]]:
    out = {}
    for col, keys in table.items():
        key = f"{where}.{col}"
        if not isinstance(keys, list) or not keys or not all(
                isinstance(k, (int, str)) and not isinstance(k, bool) for k in keys):
            raise r.fail(key, f"must be a non-empty list of integers or strings, got {keys!r}")
        if len({type(k) for k in keys}) > 1:
            raise r.fail(key, "mixes integers and strings")
        if len(set(keys)) != len(keys):
            raise r.fail(key, "lists a key twice")
        out[col] = keys
    return out


def _analysts(r: _Reader, table: dict[str, Any], total: float
              ) -> dict[str, tuple[float | None, float | None]]:
    out = {}
    for name, share in table.items():
        key = r.named("analysts", name, share, {"epsilon", "delta"}, "epsilon, delta")
        eps = r.number(share, f"{key}.epsilon", None, positive=True) \
            if "epsilon" in share else None
        if eps is not None and eps > total:
            raise r.fail(f"{key}.epsilon", f"{eps!r} is above the budget's epsilon {total!r}")
        dlt = r.number(share, f"{key}.delta", None, lo=0.0, hi=1.0) \
            if "delta" in share else None
        out[name] = (None if eps is None else float(eps), None if dlt is None else float(dlt))
    return out


def _collections(r: _Reader, table: dict[str, Any]) -> dict[str, Collection]:
    from dpfast.local.reports import PROTOCOLS, build_protocol, protocol_params

    out = {}
    for name, spec in table.items():
        key = r.named("collections", name, spec, {"protocol", "params", "candidates",
                                                  "target"},
                      "protocol, params, candidates, target")
        proto = spec.get("protocol")
        if proto not in PROTOCOLS:
            raise r.fail(f"{key}.protocol", f"must be one of {', '.join(PROTOCOLS)}, got "
                         f"{proto!r}")
        params = spec.get("params")
        if not isinstance(params, dict):
            raise r.fail(f"{key}.params", "must be a table of the protocol's public "
                         "parameters")
        cands = spec.get("candidates")
        try:
            obj = build_protocol(proto, params)
            from dpfast.local.server import Aggregator

            agg = Aggregator(obj, candidates=cands)
        except (TypeError, ValueError) as exc:
            raise r.fail(f"{key}.params", str(exc)) from None
        if proto in ("cms", "hcms", "rappor") and cands is None:
            raise r.fail(f"{key}.candidates", f"a {proto} collection needs candidates "
                         "(the items to estimate)")
        target = r.number(spec, f"{key}.target", 0.01, positive=True)
        out[name] = Collection(name, proto, protocol_params(obj), agg.candidates,
                               float(target))
    return out
