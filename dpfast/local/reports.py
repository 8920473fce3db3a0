"""Serialized local-DP reports: a compact, versioned container with the public parameters.

A :class:`ReportBatch` holds the reports of one protocol configuration: the protocol name,
its **public parameters** (what a server needs to aggregate: epsilon, sizes, hash seed) and
the report arrays, column by column.  Two encodings:

* bytes (:meth:`ReportBatch.to_bytes`): ``b"DPLDPRPT"``, a format version byte, a 4-byte
  little-endian header length, a UTF-8 JSON header (protocol, params, ``n``, the arrays'
  names, dtypes and shapes) and the raw little-endian arrays back to back;
* JSON (:meth:`ReportBatch.to_json`): the same header with each array base64-encoded.

Integer columns use the smallest unsigned dtype that holds their range (a k-RR report of
``k <= 256`` is one byte), bits are packed (``np.packbits(..., bitorder="little")``).
Decoding checks the container (magic, version, lengths, dtypes, shapes) and raises
``ValueError`` on anything malformed; a server additionally checks that the parameters
equal its own and that every report is one a client could have produced
(:mod:`dpfast.local.server`).

Protocols and their columns (``n`` reports):

============  =========================================================  ===================
protocol      public parameters                                          columns
============  =========================================================  ===================
``rr``        epsilon                                                    values (n,)
``krr``       k, epsilon                                                 values (n,)
``oue``       k, epsilon                                                 bits (n, ceil(k/8))
``olh``       k, epsilon, g                                              seeds (n, 3) u64,
                                                                         values (n,)
``cms``       epsilon, num_hashes, sketch_size, hash_seed                rows, bits packed
``hcms``      epsilon, num_hashes, sketch_size, hash_seed                rows, cols, bits
``rappor``    num_bits, num_hashes, num_cohorts, f, p, q, hash_seed      cohorts, bits packed
============  =========================================================  ===================

``hash_seed`` travels as the hex of the 32-byte ChaCha20 key of the public hash tables (an
integer seed ``s`` is the key ``s.to_bytes(32, "little")``: the same tables).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast.local.hadamard import HadamardCountMeanSketch
from dpfast.local.hashing import _seed_key
from dpfast.local.olh import OptimalLocalHashing
from dpfast.local.rappor import Rappor
from dpfast.local.rr import GeneralizedRandomizedResponse
from dpfast.local.sketch import CountMeanSketch
from dpfast.local.unary import OptimizedUnaryEncoding

FORMAT_VERSION = 1
REPORT_MAGIC = b"DPLDPRPT"
STATE_MAGIC = b"DPLDPAGG"
_DTYPES = {"|u1", "<u2", "<u4", "<u8", "<i8"}
_MAX_HEADER = 1 << 24

PROTOCOLS = ("rr", "krr", "oue", "olh", "cms", "hcms", "rappor")
_PARAM_NAMES: dict[str, tuple[str, ...]] = {
    "rr": ("epsilon",),
    "krr": ("k", "epsilon"),
    "oue": ("k", "epsilon"),
    "olh": ("k", "epsilon", "g"),
    "cms": ("epsilon", "num_hashes", "sketch_size", "hash_seed"),
    "hcms": ("epsilon", "num_hashes", "sketch_size", "hash_seed"),
    "rappor": ("num_bits", "num_hashes", "num_cohorts", "f", "p", "q", "hash_seed"),
}
_FLOATS = {"epsilon", "f", "p", "q"}

Protocol = Any  # one of the protocol objects of dpfast.local


def _exact_float(value: Any, exact: Fraction, name: str) -> float:
    x = float(value)
    if Fraction(x) != exact:
        raise ValueError(f"{name} must be a float for a report pipeline (reports carry it as "
                         f"a float; {exact} is not one)")
    return x


def protocol_name(protocol: Protocol) -> str:
    """The wire name of a protocol object (``rr`` is k-ary randomized response with k = 2)."""
    if isinstance(protocol, GeneralizedRandomizedResponse):
        return "rr" if protocol.k == 2 else "krr"
    for cls, name in ((OptimizedUnaryEncoding, "oue"), (OptimalLocalHashing, "olh"),
                      (HadamardCountMeanSketch, "hcms"), (CountMeanSketch, "cms"),
                      (Rappor, "rappor")):
        if isinstance(protocol, cls):
            return name
    raise TypeError(f"protocol must be a dpfast.local protocol object "
                    f"(GeneralizedRandomizedResponse, OptimizedUnaryEncoding, "
                    f"OptimalLocalHashing, CountMeanSketch, HadamardCountMeanSketch, Rappor), "
                    f"got {type(protocol).__name__}")


def protocol_params(protocol: Protocol) -> dict[str, Any]:
    """The public parameters of a protocol object, as JSON-ready values."""
    name = protocol_name(protocol)
    out: dict[str, Any] = {}
    for key in _PARAM_NAMES[name]:
        if key == "hash_seed":
            out[key] = _seed_key(protocol.hash_seed).hex()
        elif key == "epsilon":
            out[key] = _exact_float(protocol.epsilon, protocol._eps, "epsilon")
        elif key in ("f", "p", "q"):
            out[key] = _exact_float(getattr(protocol, key), getattr(protocol, "_" + key), key)
        else:
            out[key] = int(getattr(protocol, key))
    return out


def check_params(protocol: str, params: Any) -> dict[str, Any]:
    """Validate a ``params`` mapping for ``protocol`` (names, types); returns a clean copy."""
    if protocol not in _PARAM_NAMES:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if not isinstance(params, dict):
        raise TypeError("params must be a dict")
    want = _PARAM_NAMES[protocol]
    if set(params) != set(want):
        raise ValueError(f"params of {protocol!r} must be exactly {list(want)}, got "
                         f"{sorted(params)}")
    out: dict[str, Any] = {}
    for key in want:
        v = params[key]
        if key == "hash_seed":
            if not isinstance(v, str) or len(v) != 64:
                raise ValueError("params.hash_seed must be 64 hex digits (32 bytes)")
            try:
                bytes.fromhex(v)
            except ValueError:
                raise ValueError("params.hash_seed must be 64 hex digits (32 bytes)") from None
            out[key] = v.lower()
        elif key in _FLOATS:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"params.{key} must be a number, got {type(v).__name__}")
            out[key] = float(v)
        else:
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"params.{key} must be an integer, got {type(v).__name__}")
            out[key] = v
    return out


def build_protocol(protocol: str, params: Any) -> Protocol:
    """The protocol object of wire name ``protocol`` with public parameters ``params``."""
    p = check_params(protocol, params)
    if protocol == "rr":
        return GeneralizedRandomizedResponse(2, p["epsilon"])
    if protocol == "krr":
        return GeneralizedRandomizedResponse(p["k"], p["epsilon"])
    if protocol == "oue":
        return OptimizedUnaryEncoding(p["k"], p["epsilon"])
    if protocol == "olh":
        return OptimalLocalHashing(p["k"], p["epsilon"], p["g"])
    seed = bytes.fromhex(p["hash_seed"])
    if protocol == "cms":
        return CountMeanSketch(p["epsilon"], p["num_hashes"], p["sketch_size"], hash_seed=seed)
    if protocol == "hcms":
        return HadamardCountMeanSketch(p["epsilon"], p["num_hashes"], p["sketch_size"],
                                       hash_seed=seed)
    return Rappor(p["num_bits"], p["num_hashes"], p["num_cohorts"], p["f"], p["p"], p["q"],
                  hash_seed=seed)


def compact(values: np.ndarray, bound: int) -> np.ndarray:
    """Integers in ``[0, bound)`` in the smallest unsigned dtype that holds them."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if bound <= np.iinfo(dt).max + 1:
            return np.ascontiguousarray(values, dtype=dt)
    return np.ascontiguousarray(values, dtype=np.uint64)


@dataclasses.dataclass(frozen=True, eq=False)
class ReportBatch:
    """Reports of ``n`` clients of one protocol configuration, ready to send.

    Attributes
    ----------
    protocol : str
        Wire name (:data:`PROTOCOLS`).
    params : dict
        Public parameters (see the module docstring).
    arrays : dict of numpy.ndarray
        The report columns (each with ``n`` rows).
    """

    protocol: str
    params: dict[str, Any]
    arrays: dict[str, np.ndarray]

    @property
    def n(self) -> int:
        """Number of reports."""
        first = next(iter(self.arrays.values()), None)
        return 0 if first is None else int(first.shape[0])

    def __len__(self) -> int:
        return self.n

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReportBatch):
            return NotImplemented
        return (self.protocol == other.protocol and self.params == other.params
                and self.arrays.keys() == other.arrays.keys()
                and all(self.arrays[k].dtype == other.arrays[k].dtype
                        and np.array_equal(self.arrays[k], other.arrays[k])
                        for k in self.arrays))

    def _header(self) -> dict[str, Any]:
        return {"format": "dpfast.ldp.reports", "version": FORMAT_VERSION,
                "protocol": self.protocol, "params": self.params, "n": self.n}

    def to_bytes(self) -> bytes:
        """The compact binary encoding (see the module docstring)."""
        return pack(REPORT_MAGIC, self._header(), self.arrays)

    @classmethod
    def from_bytes(cls, data: bytes) -> ReportBatch:
        """Decode :meth:`to_bytes`; ``ValueError`` on a malformed or foreign container."""
        header, arrays = unpack(REPORT_MAGIC, data, "reports")
        return cls._of(header, arrays)

    def to_json(self) -> str:
        """JSON encoding (arrays base64-encoded)."""
        head = self._header()
        head["arrays"] = {k: {"dtype": a.dtype.str, "shape": list(a.shape),
                              "data": base64.b64encode(_le(a).tobytes()).decode("ascii")}
                          for k, a in self.arrays.items()}
        return json.dumps(head, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ReportBatch:
        """Decode :meth:`to_json`; ``ValueError`` on malformed input."""
        try:
            head = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"reports: not JSON ({exc})") from None
        if not isinstance(head, dict) or not isinstance(head.get("arrays"), dict):
            raise ValueError("reports: JSON must be an object with an 'arrays' object")
        arrays = {}
        for k, spec in head["arrays"].items():
            if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data"}:
                raise ValueError(f"reports: array {k!r} must have dtype, shape and data")
            try:
                raw = base64.b64decode(spec["data"], validate=True)
            except (ValueError, TypeError):
                raise ValueError(f"reports: array {k!r} is not valid base64") from None
            arrays[k] = _array_of(k, spec["dtype"], spec["shape"], raw, "reports")
        return cls._of(head, arrays)

    @classmethod
    def _of(cls, head: dict[str, Any], arrays: dict[str, np.ndarray]) -> ReportBatch:
        if head.get("format") != "dpfast.ldp.reports":
            raise ValueError(f"reports: format must be 'dpfast.ldp.reports', got "
                             f"{head.get('format')!r}")
        if head.get("version") != FORMAT_VERSION:
            raise ValueError(f"reports: unsupported format version {head.get('version')!r} "
                             f"(this dpfast reads version {FORMAT_VERSION})")
        protocol = head.get("protocol")
        params = check_params(protocol, head.get("params"))  # type: ignore[arg-type]
        rows = {a.shape[0] if a.ndim else -1 for a in arrays.values()}
        if len(rows) > 1 or rows == {-1} or head.get("n") != (rows.pop() if rows else 0):
            raise ValueError("reports: every array must have n rows (header n = "
                             f"{head.get('n')!r})")
        return cls(protocol, params, arrays)  # type: ignore[arg-type]


def _le(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _array_of(name: str, dtype: Any, shape: Any, raw: Any, what: str) -> np.ndarray:
    _check_spec(name, dtype, shape, what)
    dt = np.dtype(dtype)
    size = int(np.prod(shape, dtype=object)) * dt.itemsize
    if len(raw) != size:
        raise ValueError(f"{what}: array {name!r} needs {size} bytes, got {len(raw)}")
    return np.frombuffer(raw, dt).reshape(shape).astype(dt.newbyteorder("="), copy=False)


def _check_spec(name: Any, dtype: Any, shape: Any, what: str) -> None:
    if dtype not in _DTYPES:
        raise ValueError(f"{what}: array {name!r} has dtype {dtype!r}; allowed: "
                         f"{sorted(_DTYPES)}")
    if (not isinstance(shape, list) or not 1 <= len(shape) <= 3
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                       for s in shape)):
        raise ValueError(f"{what}: array {name!r} has a bad shape {shape!r}")


def pack(magic: bytes, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """The binary container: magic, version, header length, JSON header, raw arrays."""
    head = dict(header)
    head["arrays"] = [[k, _le(a).dtype.str, list(a.shape)] for k, a in arrays.items()]
    text = json.dumps(head, separators=(",", ":")).encode("utf-8")
    parts = [magic, bytes([FORMAT_VERSION]), struct.pack("<I", len(text)), text]
    parts += [_le(a).tobytes() for a in arrays.values()]
    return b"".join(parts)


def unpack(magic: bytes, data: Any, what: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Inverse of :func:`pack`; ``ValueError`` naming what is wrong."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes, got {type(data).__name__}")
    buf = memoryview(bytes(data))
    if bytes(buf[:len(magic)]) != magic:
        raise ValueError(f"{what}: not a dpfast {what} container (bad magic)")
    pos = len(magic)
    if len(buf) < pos + 5:
        raise ValueError(f"{what}: truncated header")
    if buf[pos] != FORMAT_VERSION:
        raise ValueError(f"{what}: unsupported format version {buf[pos]} (this dpfast reads "
                         f"version {FORMAT_VERSION})")
    (hlen,) = struct.unpack_from("<I", buf, pos + 1)
    pos += 5
    if hlen > _MAX_HEADER or len(buf) < pos + hlen:
        raise ValueError(f"{what}: truncated header")
    try:
        head = json.loads(bytes(buf[pos:pos + hlen]).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError(f"{what}: header is not JSON") from None
    pos += hlen
    if not isinstance(head, dict) or not isinstance(head.get("arrays"), list):
        raise ValueError(f"{what}: header must be an object with an 'arrays' list")
    arrays: dict[str, np.ndarray] = {}
    for spec in head.pop("arrays"):
        if not isinstance(spec, list) or len(spec) != 3 or not isinstance(spec[0], str):
            raise ValueError(f"{what}: bad array entry {spec!r}")
        name, dtype, shape = spec
        _check_spec(name, dtype, shape, what)
        size = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
        if name in arrays:
            raise ValueError(f"{what}: array {name!r} appears twice")
        if len(buf) < pos + size:
            raise ValueError(f"{what}: truncated data of array {name!r}")
        arrays[name] = _array_of(name, dtype, shape, buf[pos:pos + size], what)
        pos += size
    if pos != len(buf):
        raise ValueError(f"{what}: {len(buf) - pos} trailing bytes after the last array")
    return head, arrays


def batch_of(protocol: Protocol, reports: Any) -> ReportBatch:
    """Wrap a protocol's native reports (what its ``perturb`` / ``encode`` returns) in a
    :class:`ReportBatch` (compact dtypes, packed bits)."""
    name = protocol_name(protocol)
    params = protocol_params(protocol)
    if name in ("rr", "krr"):
        arrays = {"values": compact(np.asarray(reports).reshape(-1), protocol.k)}
    elif name == "oue":
        bits = np.asarray(reports, dtype=bool)
        if bits.ndim != 2 or bits.shape[1] != protocol.k:
            raise ValueError(f"OUE reports must have shape (n, {protocol.k}), got {bits.shape}")
        arrays = {"bits": np.packbits(bits, axis=1, bitorder="little")}
    elif name == "olh":
        arrays = {"seeds": np.ascontiguousarray(reports[0], dtype=np.uint64),
                  "values": compact(reports[1], protocol.g)}
    elif name == "cms":
        arrays = {"rows": compact(reports[0], protocol.num_hashes),
                  "bits": np.ascontiguousarray(reports[1], dtype=np.uint8)}
    elif name == "hcms":
        arrays = {"rows": compact(reports[0], protocol.num_hashes),
                  "cols": compact(reports[1], protocol.sketch_size),
                  "bits": np.ascontiguousarray(reports[2], dtype=np.uint8)}
    else:
        arrays = {"cohorts": compact(reports[0], protocol.num_cohorts),
                  "bits": np.ascontiguousarray(reports[1], dtype=np.uint8)}
    return ReportBatch(name, params, arrays)
