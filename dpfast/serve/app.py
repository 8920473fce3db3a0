"""The ASGI app of ``dpfast serve`` (Starlette): the JSON API and the dashboard.

Endpoints (JSON; every error is ``{"error": {"code", "message"}}``):

* ``POST /v1/query`` ``{"sql", "epsilon", "delta"}``, an analyst's Bearer token: the
  release (columns, rows, intervals, the privacy spent, ``cached``, ``query_id``).  401
  without a valid token (nothing charged), 400 a refused or malformed query (before the
  charge), 403 when the analyst's share or the total would be exceeded (nothing charged),
  500 ``release_failed`` with the session's fixed message when the release failed after
  its charge;
* ``GET /v1/usage`` (own spend; the admin's: everyone's), ``GET /v1/ledger``,
  ``GET /v1/ledger/verify`` (admin);
* ``POST /v1/collections/{name}/reports`` ``{"batch_id", "client_id", "reports"}`` (the
  collection's ingestion token; ``reports`` as :meth:`dpfast.local.ReportBatch.to_json`
  writes it, a JSON object or its text): 202 with the count accepted, a retried batch id
  counted once (``duplicate``: true), a malformed batch refused whole (400 with the
  reason);
* ``GET /v1/collections/{name}/estimates`` (an analyst's or the admin's token);
  ``GET /healthz``; the dashboard (:mod:`dpfast.serve.dashboard`) at ``/``.

Limits: a request body above ``server.max_body_bytes`` is refused (413) before it is read
whole; each token (or, before authentication, each client address) has a token bucket of
``server.rate`` requests per second and ``server.burst`` (429).  The buckets are per worker
process.

The app reads its configuration from the file named by ``DPFAST_SERVE_CONFIG`` when
uvicorn calls :func:`create_app` (one :class:`~dpfast.serve.service.Service` per worker).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import tokens
from .config import Config, load
from .service import Service

__all__ = ["ApiError", "create_app", "make_app"]

ENV = "DPFAST_SERVE_CONFIG"


class ApiError(Exception):
    """An HTTP error answer: ``status``, ``code``, ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None
          ) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status,
                        headers=headers)


class Buckets:
    """Per-key token buckets: ``rate`` tokens per second, at most ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, float(burst)
        self._state: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            level, last = self._state.get(key, (self.burst, now))
            level = min(self.burst, level + (now - last) * self.rate)
            ok = level >= 1.0
            self._state[key] = (level - 1.0 if ok else level, now)
            if len(self._state) > 100_000:  # forget idle keys (full buckets)
                self._state = {k: v for k, v in self._state.items()
                               if v[0] + (now - v[1]) * self.rate < self.burst}
            return ok


class Api:
    """The handlers, bound to one worker's :class:`Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.cfg: Config = service.cfg
        self.buckets = Buckets(self.cfg.rate, self.cfg.burst)

    # ------------------------------------------------------------------ helpers
    def token_of(self, request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        return request.cookies.get("dpfast_token") if request.method == "GET" else None

    async def principal(self, request: Request, *kinds: str) -> tokens.Principal:
        who = await run_in_threadpool(self._authenticate, self.token_of(request))
        if who is None:
            host = request.client.host if request.client else "?"
            if not self.buckets.take(f"addr:{host}"):
                raise ApiError(429, "rate_limited", "too many requests; retry later")
            raise ApiError(401, "unauthorized", "a valid token is required "
                           "(Authorization: Bearer TOKEN)")
        if not self.buckets.take(f"{who.kind}:{who.name}"):
            raise ApiError(429, "rate_limited", "too many requests for this token; retry "
                           "later")
        if kinds and who.kind not in kinds:
            raise ApiError(403, "forbidden", f"this endpoint needs a {' or '.join(kinds)} "
                           "token")
        return who

    def _authenticate(self, token: str | None) -> tokens.Principal | None:
        """The principal of a live token that names an analyst or a collection of the
        configuration (or the admin); None otherwise."""
        with self.service.state_lock:
            who = tokens.authenticate(self.service.state, token)
        if who is None or (who.kind == "analyst" and who.name not in self.cfg.analysts) \
                or (who.kind == "ingest" and who.name not in self.cfg.collections):
            return None
        return who

    async def body(self, request: Request) -> bytes:
        cap = self.cfg.max_body_bytes
        length = request.headers.get("content-length")
        if length is not None:
            try:
                if int(length) > cap:
                    raise ApiError(413, "too_large", f"the request body is over {cap} bytes")
            except ValueError:
                raise ApiError(400, "bad_request", "bad Content-Length") from None
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise ApiError(413, "too_large", f"the request body is over {cap} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_object(self, request: Request) -> dict[str, Any]:
        raw = await self.body(request)
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(400, "bad_json", f"the body is not valid JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise ApiError(400, "bad_request", "the body must be a JSON object")
        return doc

    # ------------------------------------------------------------------ endpoints
    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def query(self, request: Request) -> Response:
        from dpfast._core.errors import ReleaseFailedError
        from dpfast.budget import BudgetExceededError
        from dpfast.session import SqlRefusedError

        who = await self.principal(request, "analyst")
        doc = await self.json_object(request)
        unknown = sorted(set(doc) - {"sql", "epsilon", "delta"})
        if unknown:
            raise ApiError(400, "bad_request", f"unknown field {unknown[0]!r} (fields: sql, "
                           "epsilon, delta)")
        sql, eps, dlt = doc.get("sql"), doc.get("epsilon"), doc.get("delta", 0.0)
        if not isinstance(sql, str) or not sql.strip():
            raise ApiError(400, "bad_request", "sql must be a non-empty string")
        num: dict[str, float] = {}
        for name, v in (("epsilon", eps), ("delta", dlt)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ApiError(400, "bad_request", f"{name} must be a finite number")
            num[name] = float(v)
        if not num["epsilon"] > 0:
            raise ApiError(400, "bad_request", "epsilon must be > 0")
        if not 0 <= num["delta"] < 1:
            raise ApiError(400, "bad_request", "delta must be in [0, 1)")
        try:
            answer = await run_in_threadpool(self.service.query, who.name, sql,
                                             num["epsilon"], num["delta"])
        except SqlRefusedError as exc:
            return JSONResponse({"error": {"code": "refused", "reason": exc.reason,
                                           "message": str(exc)}}, status_code=400)
        except BudgetExceededError as exc:
            return error(403, "budget_exceeded", str(exc))
        except ReleaseFailedError as exc:
            return error(500, "release_failed", str(exc))
        except (ValueError, TypeError) as exc:  # before the charge: public information
            return error(400, "bad_request", str(exc))
        return JSONResponse(answer)

    async def usage(self, request: Request) -> Response:
        who = await self.principal(request, "analyst", "admin")
        name = None if who.kind == "admin" else who.name
        return JSONResponse(await run_in_threadpool(self.service.usage, name))

    async def ledger(self, request: Request) -> Response:
        await self.principal(request, "admin")
        return JSONResponse({"records": await run_in_threadpool(self.service.history)})

    async def verify(self, request: Request) -> Response:
        await self.principal(request, "admin")
        return JSONResponse(await run_in_threadpool(self.service.verify))

    def collection(self, request: Request) -> str:
        name = request.path_params["name"]
        if name not in self.cfg.collections:
            raise ApiError(404, "not_found", f"no collection named {name!r}")
        return name

    async def reports(self, request: Request) -> Response:
        from .store import BatchConflictError

        name = self.collection(request)
        who = await self.principal(request, "ingest")
        if who.name != name:
            raise ApiError(403, "forbidden", f"this ingestion token is for collection "
                           f"{who.name!r}, not {name!r}")
        doc = await self.json_object(request)
        unknown = sorted(set(doc) - {"batch_id", "client_id", "reports"})
        if unknown:
            raise ApiError(400, "bad_request", f"unknown field {unknown[0]!r} (fields: "
                           "batch_id, client_id, reports)")
        for f in ("batch_id", "client_id"):
            v = doc.get(f)
            if not isinstance(v, str) or not 0 < len(v) <= 128 or not v.isprintable():
                raise ApiError(400, "bad_request", f"{f} must be a string of 1 to 128 "
                               "printable characters")
        reports = doc.get("reports")
        if isinstance(reports, dict):
            reports = json.dumps(reports, separators=(",", ":"))
        if not isinstance(reports, str):
            raise ApiError(400, "bad_request", "reports must be a report batch (the JSON "
                           "of dpfast.local.ReportBatch.to_json, as an object or its text)")
        try:
            n, dup = await run_in_threadpool(self.service.add_reports, name, doc["batch_id"],
                                             doc["client_id"], reports)
        except BatchConflictError as exc:
            return error(409, "conflict", str(exc))
        except (ValueError, TypeError, OverflowError) as exc:
            return error(400, "bad_reports", f"batch refused, nothing counted: {exc}")
        return JSONResponse({"accepted": n, "duplicate": dup, "batch_id": doc["batch_id"]},
                            status_code=202)

    async def estimates(self, request: Request) -> Response:
        name = self.collection(request)
        await self.principal(request, "analyst", "admin")
        return JSONResponse(await run_in_threadpool(self.service.estimates, name))


def make_app(cfg: Config) -> Starlette:
    """The app for a checked configuration (one :class:`Service`)."""
    from . import dashboard

    api = Api(Service(cfg))
    routes = [
        Route("/healthz", api.healthz),
        Route("/v1/query", api.query, methods=["POST"]),
        Route("/v1/usage", api.usage),
        Route("/v1/ledger", api.ledger),
        Route("/v1/ledger/verify", api.verify),
        Route("/v1/collections/{name}/reports", api.reports, methods=["POST"]),
        Route("/v1/collections/{name}/estimates", api.estimates),
    ] + dashboard.routes(api)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error(exc.status, exc.code, exc.message)

    async def on_http(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        codes = {404: "not_found", 405: "method_not_allowed"}
        return error(status, codes.get(status, "http_error"),
                     str(getattr(exc, "detail", "")) or "error")

    async def on_other(request: Request, exc: Exception) -> Response:
        # never an exception's text: it may quote private data
        return error(500, "internal", f"the server failed ({type(exc).__name__})")

    from starlette.exceptions import HTTPException

    app = Starlette(routes=routes, exception_handlers={
        ApiError: on_api_error, HTTPException: on_http, Exception: on_other})
    app.state.api = api
    return app


def create_app() -> Starlette:
    """uvicorn's factory: the app of the configuration named by ``DPFAST_SERVE_CONFIG``."""
    path = os.environ.get(ENV)
    if not path:
        raise RuntimeError(f"{ENV} must name the dpfast serve configuration file")
    return make_app(load(path))
