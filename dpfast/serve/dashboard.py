"""The dashboard of ``dpfast serve`` at ``/``: server-rendered HTML with inline SVG plots
(:mod:`dpfast.serve.svg`); no script or style is loaded from anywhere else.

Sign in (``/login``) with a token: it is checked, then kept in an ``HttpOnly``,
``SameSite=Strict`` cookie (``Secure`` when the server runs TLS) that only GET pages read;
the JSON API's POST endpoints take the ``Authorization`` header only, so a cross-site form
cannot use the cookie.  The sign-in page also reads a token from the URL *fragment*
(``/login#token=...``, which browsers never send to the server) and submits it, for
scripted sign-in.  An analyst sees their own spending and releases; the admin everyone's.

Shown: the budget spent against the cap over time (epsilon charged, summed per analyst,
with each analyst's share and the total as dashed lines) and the usage report's certified
figures; the recent releases with their 95% intervals; each local-DP collection's
estimates with their intervals and the utility monitor's standard-error-vs-reports curve.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from . import svg, tokens

__all__ = ["routes"]

COOKIE = "dpfast_token"
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{}'; "
        "img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:1100px}"
          "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
          "padding:2px 6px;text-align:right}h2{margin-top:1.5em}code{font-size:12px}"
          ".err{color:#b00}")


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    return _CSP.format(digest)


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    doc = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
           f"<style>{_STYLE}</style></head><body>{body}</body></html>")
    return HTMLResponse(doc, status_code=status, headers={
        "Content-Security-Policy": _csp(), "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})


#: the sign-in page's one script (a token in the URL fragment is submitted, then removed
#: from the address bar); the pages' policy allows this script only, by its hash
_SCRIPT = ("(function(){var h=location.hash;if(h.indexOf('#token=')===0){"
           "history.replaceState(null,'',location.pathname);"
           "document.getElementById('t').value=decodeURIComponent(h.slice(7));"
           "document.getElementById('f').submit();}})();")
_SIGNIN = ("<h1>dpfast serve</h1><p>Sign in with your token (analyst or admin).</p>"
           "<form id='f' method='post' action='/login'><input type='password' name='token' "
           "id='t' size='60' autocomplete='off'> <button type='submit'>Sign in</button>"
           "</form>{msg}<script>" + _SCRIPT.replace("{", "{{").replace("}", "}}")
           + "</script>")


def routes(api: Any) -> list[Route]:
    """The dashboard's routes, bound to the app's :class:`~dpfast.serve.app.Api`."""

    async def signin_page(request: Request) -> Response:
        return _page("sign in", _SIGNIN.format(msg=""))

    async def login(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        raw = await api.body(request)
        from urllib.parse import parse_qs

        token = (parse_qs(raw.decode("utf-8", "replace")).get("token") or [""])[0].strip()
        who = await run_in_threadpool(api._authenticate, token)
        if who is None or who.kind == "ingest":
            return _page("sign in", _SIGNIN.format(
                msg="<p class='err'>That token is not a valid analyst or admin token.</p>"),
                status=401)
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie(COOKIE, token, httponly=True, samesite="strict",
                        secure=api.cfg.tls_certfile is not None, path="/", max_age=8 * 3600)
        return resp

    async def logout(request: Request) -> Response:
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(COOKIE, path="/")
        return resp

    async def index(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        who = await run_in_threadpool(api._authenticate, request.cookies.get(COOKIE))
        if who is None or who.kind == "ingest":
            return RedirectResponse("/login", status_code=303)
        if not api.buckets.take(f"{who.kind}:{who.name}"):
            return _page("busy", "<p>Too many requests; retry later.</p>", status=429)
        body = await run_in_threadpool(render, api.service, who)
        return _page("dpfast serve", body)

    return [Route("/", index), Route("/login", signin_page),
            Route("/login", login, methods=["POST"]), Route("/logout", logout)]


def _spending(records: list[dict[str, Any]]) -> dict[str, tuple[list[float], list[float]]]:
    """Per analyst (and ``total``), the seconds since the first charge and the epsilon
    charged so far after each accepted charge (refused charges are not spent)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    sums: dict[str, float] = {}
    t0 = None
    for r in records:
        if r["status"] == "refused" or r["epsilon"] is None:
            continue
        t = datetime.datetime.fromisoformat(r["time"]).timestamp()
        t0 = t if t0 is None else t0
        for name in ("total", r["analyst"] or "(none)"):
            sums[name] = sums.get(name, 0.0) + float(r["epsilon"])
            xs, ys = out.setdefault(name, ([], []))
            xs.append(t - t0)
            ys.append(sums[name])
    return out


def render(service: Any, who: tokens.Principal) -> str:
    """The dashboard's body for ``who`` (analyst: own figures; admin: everyone's)."""
    analyst = who.name if who.kind == "analyst" else None
    usage = service.usage(analyst)
    records = [r for r in service.history(analyst) if r["status"] != "refused"]
    series = _spending(records)
    caps = {a["name"]: a["epsilon"] for a in usage["analysts"] if a["epsilon"] is not None}
    if analyst is None:
        caps["total"] = usage["total"]["epsilon"]
    else:
        series.pop("total", None)
    parts = [f"<h1>dpfast serve</h1><p>Signed in as {_e(who.kind)} <b>{_e(who.name)}</b>."
             " <a href='/logout'>Sign out</a></p>",
             "<h2>Budget</h2>",
             svg.steps(series, caps, title="epsilon charged over time",
                       ylabel="epsilon charged (sum)"),
             "<p>Curves: the epsilon of the accepted charges, summed (an upper bound of what "
             "the accounting certifies); dashed: the caps.  The table: the usage report.</p>",
             _usage_table(usage)]
    parts.append("<h2>Recent releases</h2>")
    with service.state_lock:
        recent = service.state.releases(analyst, 8)
    if not recent:
        parts.append("<p>No release yet.</p>")
    for name, at, sql, answer in recent:
        parts.append(_release(name, at, sql, json.loads(answer)))
    parts.append("<h2>Local-DP collections</h2>")
    if not service.cfg.collections:
        parts.append("<p>No collection configured.</p>")
    for cname in service.cfg.collections:
        parts.append(_collection(service.estimates(cname)))
    return "".join(parts)


def _usage_table(usage: dict[str, Any]) -> str:
    rows = ["<table class='usage'><tr><th>analyst</th><th>share epsilon</th>"
            "<th>spent epsilon</th><th>remaining epsilon</th><th>charges</th><th>hits</th>"
            "</tr>"]
    for a in usage["analysts"]:
        rows.append(f"<tr class='analyst' data-name='{_e(a['name'])}' "
                    f"data-spent='{_e(a['spent_epsilon'])}' data-share='{_e(a['epsilon'])}'>"
                    f"<td>{_e(a['name'])}</td><td>{_e(a['epsilon'])}</td>"
                    f"<td>{a['spent_epsilon']:.6g}</td><td>{a['remaining_epsilon']:.6g}</td>"
                    f"<td>{a['charges']}</td><td>{a['hits']}</td></tr>")
    if "total" in usage:
        t = usage["total"]
        rows.append(f"<tr class='total' data-spent='{_e(t['spent']['epsilon'])}' "
                    f"data-share='{_e(t['epsilon'])}'><td>total</td><td>{t['epsilon']}</td>"
                    f"<td>{t['spent']['epsilon']:.6g}</td><td></td><td>{usage['charges']}"
                    f"</td><td>{usage['hits']}</td></tr>")
    return "".join(rows) + "</table>"


def _release(name: str, at: str, sql: str, ans: dict[str, Any]) -> str:
    cols, rows, ivals = ans["columns"], ans["rows"], ans.get("intervals") or {}
    nkeys = len(ans.get("key_columns", []))
    agg = next((c for c in cols if c in ivals), None)
    head = (f"<div class='release' data-query-id='{_e(ans['query_id'])}'><p><code>"
            f"{_e(sql)}</code><br>{_e(name)}, {_e(at[:19])} UTC; "
            f"{'from the cache (free)' if ans['cached'] else 'charged'} epsilon "
            f"{ans['privacy_spent']['epsilon']}</p>")
    if agg is None or not rows:
        return head + "</div>"
    j = cols.index(agg)
    labels = [" / ".join(str(v) for v in r[:max(nkeys, 0)]) or agg for r in rows][:40]
    values = [r[j] for r in rows][:40]
    lo = [iv[0] for iv in ivals[agg]][:40]
    hi = [iv[1] for iv in ivals[agg]][:40]
    return head + svg.errorbars(labels, values, lo, hi, title=f"{agg} with 95% intervals",
                                ylabel=agg) + "</div>"


def _collection(est: dict[str, Any]) -> str:
    name = est["collection"]
    mon = est["monitor"]
    cur = mon["curve"]
    parts = [f"<div class='collection' data-name='{_e(name)}' data-n='{est['n']}'>"
             f"<h3>{_e(name)}</h3><p>protocol {_e(est['protocol'])}, epsilon "
             f"{est['epsilon_per_report']:g} per report; {est['n']} reports in "
             f"{est['batches']} batches; {len(mon['flagged'])} estimates above the target "
             f"standard error {mon['target']:g}</p>",
             svg.errorbars(est["items"], est["counts"], est["low"], est["high"],
                           title=f"{name}: estimated counts, 95% intervals",
                           ylabel="count"),
             svg.loglog(cur["reports"], cur["max_std_error"], now=est["n"],
                        target=mon["target"], title=f"{name}: standard error vs reports",
                        xlabel="reports", ylabel="largest frequency std error")]
    rows = ["<table class='estimates'><tr><th>item</th><th>count</th><th>low</th>"
            "<th>high</th><th>frequency</th></tr>"]
    for i, item in enumerate(est["items"][:50]):
        c, lo, hi, f = (est["counts"][i], est["low"][i], est["high"][i],
                        est["frequencies"][i])
        rows.append(f"<tr class='estimate' data-item='{_e(item)}' data-count='{_e(c)}'>"
                    f"<td>{_e(item)}</td><td>{_fmt(c)}</td><td>{_fmt(lo)}</td>"
                    f"<td>{_fmt(hi)}</td><td>{_fmt(f)}</td></tr>")
    parts.append("".join(rows) + "</table></div>")
    return "".join(parts)


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{v:.6g}"
