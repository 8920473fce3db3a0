"""``dpfast serve`` end to end over real HTTP on loopback (issue 38): a module fixture
starts the service as a subprocess (``python -m dpfast serve CONFIG``) on a free port of
127.0.0.1 and the tests talk to it with httpx; the dashboard is checked in headless
Chromium when it is installed (``.ci/run`` installs Debian's ``chromium``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "serve")
QUERY = "SELECT region, COUNT(*) AS n, AVG(spend) AS s FROM people GROUP BY region"

CONFIG = """
[server]
host = "127.0.0.1"
port = {port}
workers = {workers}
max_body_bytes = 65536
rate = 1000.0
burst = 1000

[data]
source = "people.csv"
name = "people"
privacy_unit = "person_id"

[data.bounds]
age = [18, 90]
spend = [0, 200]

[data.domains]
region = ["north", "south", "east", "west"]
plan = ["basic", "plus", "pro"]

[budget]
epsilon = 4.0
delta = 1e-6
ledger = "budget.db"

[analysts.alice]
epsilon = 2.0

[analysts.bob]
epsilon = 1.0

[analysts.carol]
epsilon = 1.0

[collections.apps]
protocol = "krr"
params = {{ k = 8, epsilon = 1.0 }}

[collections.sites]
protocol = "oue"
params = {{ k = 4, epsilon = 2.0 }}
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["DPFAST_NO_COMPILE_NOTICE"] = "1"
    return env


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", *args], env=_env(),
                         capture_output=True, text=True, timeout=600)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def _tokens(config: str, who: dict[str, list[str]]) -> dict[str, str]:
    """``dpfast serve token CONFIG ARGS`` for each entry of ``who``, one after the other,
    each a process of its own forked from one parent that imported dpfast's CLI once
    (tests/forkrun.py); ``_cli`` runs the command as a fresh interpreter (the revocation
    test)."""
    from tests.forkrun import run_forked

    jobs = [{"module": "dpfast", "args": ["serve", "token", config, *args]}
            for args in who.values()]
    done = run_forked(jobs, preload=["dpfast", "dpfast.cli", "dpfast.cli.serve"], env=_env(),
                      cwd=ROOT, timeout=600)
    for r in done:
        assert r["returncode"] == 0, r["stderr"]
    return {name: r["stdout"].strip() for name, r in zip(who, done, strict=True)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running ``dpfast serve`` subprocess and its tokens."""

    def __init__(self, directory: str, workers: int = 1, config: str = CONFIG) -> None:
        self.dir = directory
        self.port = _free_port()
        self.config = os.path.join(directory, "config.toml")
        shutil.copy(os.path.join(EXAMPLE, "people.csv"), directory)
        with open(self.config, "w") as fh:
            fh.write(config.format(port=self.port, workers=workers))
        self.tokens = _tokens(self.config, {
            "alice": ["--analyst", "alice"], "bob": ["--analyst", "bob"],
            "carol": ["--analyst", "carol"], "admin": ["--admin"],
            "apps": ["--collection", "apps"], "sites": ["--collection", "sites"]})
        self.url = f"http://127.0.0.1:{self.port}"
        self.start()

    def start(self) -> None:
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "dpfast", "serve", self.config],
                                     env=_env(), stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        deadline = time.monotonic() + 600  # generous: a cold kernel cache compiles
        while True:
            assert self.proc.poll() is None, open(self.log.name).read()
            try:
                if httpx.get(self.url + "/healthz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.5)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        os.killpg(self.proc.pid, sig)
        self.proc.wait(timeout=60)
        self.log.close()

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def query(self, who: str | None, body: dict, **kw) -> httpx.Response:
        headers = self.auth(who) if who else {}
        return httpx.post(self.url + "/v1/query", json=body, headers=headers, timeout=120,
                          **kw)

    def usage(self) -> dict:
        r = httpx.get(self.url + "/v1/usage", headers=self.auth("admin"), timeout=60)
        assert r.status_code == 200, r.text
        return r.json()

    def spent(self, name: str) -> float:
        return next(a["spent_epsilon"] for a in self.usage()["analysts"] if a["name"] == name)

    def records(self) -> list:
        r = httpx.get(self.url + "/v1/ledger", headers=self.auth("admin"), timeout=60)
        assert r.status_code == 200, r.text
        return r.json()["records"]

    def post_reports(self, collection: str, body: bytes | dict, who: str | None = None
                     ) -> httpx.Response:
        headers = self.auth(who or collection)
        url = f"{self.url}/v1/collections/{collection}/reports"
        if isinstance(body, dict):
            return httpx.post(url, json=body, headers=headers, timeout=60)
        return httpx.post(url, content=body, headers=headers, timeout=60)

    def estimates(self, collection: str, who: str = "admin") -> dict:
        r = httpx.get(f"{self.url}/v1/collections/{collection}/estimates",
                      headers=self.auth(who), timeout=60)
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    s = Server(str(tmp_path_factory.mktemp("serve")))
    yield s
    s.stop()


def _batch(protocol: str, params: dict, values, seed: int = 1):
    from dpfast.local.client import randomize
    from dpfast.local.reports import build_protocol

    return randomize(build_protocol(protocol, params), np.asarray(values),
                     rng=seed.to_bytes(32, "little"))  # a fixed key: replayable reports


def _error(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


# ---------------------------------------------------------------------- health, auth
def test_healthz(server: Server) -> None:
    r = httpx.get(server.url + "/healthz", timeout=30)
    assert r.status_code == 200 and r.json()["ok"] is True


def test_auth_missing_wrong_revoked_is_401_and_charges_nothing(server: Server) -> None:
    """Without a valid token nothing runs and nothing is charged: no token, a wrong one,
    a token of the right shape but unknown, a revoked one."""
    before = len(server.records())
    body = {"sql": QUERY, "epsilon": 0.1}
    _error(server.query(None, body), 401, "unauthorized")
    _error(httpx.post(server.url + "/v1/query", json=body, timeout=60,
                      headers={"Authorization": "Bearer nonsense"}), 401, "unauthorized")
    forged = "dpf_" + "A" * 43
    _error(httpx.post(server.url + "/v1/query", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {forged}"}), 401, "unauthorized")
    extra = _cli("token", server.config, "--analyst", "carol").stdout.strip()
    headers = {"Authorization": f"Bearer {extra}"}
    r = httpx.get(server.url + "/v1/usage", headers=headers, timeout=60)
    assert r.status_code == 200 and r.json()["analyst"] == "carol"
    out = _cli("token", server.config, "--analyst", "carol", "--revoke")
    assert "revoked 2 tokens" in out.stdout  # the fixture's and this one
    _error(httpx.post(server.url + "/v1/query", json=body, headers=headers, timeout=60),
           401, "unauthorized")
    _error(server.query("carol", body), 401, "unauthorized")
    assert len(server.records()) == before
    assert server.spent("carol") == 0.0


def test_token_kinds_are_enforced(server: Server) -> None:
    _error(server.query("apps", {"sql": QUERY, "epsilon": 0.1}), 403, "forbidden")
    _error(server.query("admin", {"sql": QUERY, "epsilon": 0.1}), 403, "forbidden")
    _error(httpx.get(server.url + "/v1/ledger", headers=server.auth("alice"), timeout=60),
           403, "forbidden")
    _error(httpx.get(server.url + "/v1/ledger/verify", headers=server.auth("apps"),
                     timeout=60), 403, "forbidden")
    batch = _batch("krr", {"k": 8, "epsilon": 1.0}, [1, 2, 3])
    body = {"batch_id": "kinds", "client_id": "c", "reports": batch.to_json()}
    _error(server.post_reports("apps", body, who="sites"), 403, "forbidden")
    _error(server.post_reports("apps", body, who="alice"), 403, "forbidden")
    _error(server.post_reports("nope", body, who="apps"), 404, "not_found")


def test_tokens_are_stored_as_hashes_only(server: Server) -> None:
    """The state file holds no token, only SHA-256 digests."""
    state = os.path.join(server.dir, "budget.db.serve.db")
    raw = b""
    for suffix in ("", "-wal"):
        if os.path.exists(state + suffix):
            with open(state + suffix, "rb") as fh:
                raw += fh.read()
    for tok in server.tokens.values():
        assert tok.encode() not in raw
    assert all(len(t) >= 4 + 43 for t in server.tokens.values())  # 32 random bytes


# ---------------------------------------------------------------------- queries
def test_query_answers_with_intervals_and_charges_once(server: Server) -> None:
    before = server.spent("alice")
    r = server.query("alice", {"sql": QUERY, "epsilon": 0.4})
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["columns"] == ["region", "n", "s"] and a["cached"] is False
    assert [row[0] for row in a["rows"]] == ["north", "south", "east", "west"]
    assert len(a["intervals"]["n"]) == 4 and len(a["intervals"]["s"]) == 4
    for row, (lo, hi) in zip(a["rows"], a["intervals"]["n"]):
        assert lo <= row[1] <= hi
    assert a["privacy_spent"]["epsilon"] == pytest.approx(0.4)
    assert server.spent("alice") == pytest.approx(before + 0.4)


def test_cache_hit_is_free_and_bit_identical(server: Server) -> None:
    body = {"sql": "SELECT plan, COUNT(*) AS n FROM people GROUP BY plan", "epsilon": 0.3}
    first = server.query("alice", body)
    assert first.status_code == 200, first.text
    spent = server.spent("alice")
    second = server.query("alice", body)
    assert second.status_code == 200
    f, s = first.json(), second.json()
    assert s["cached"] is True and s["privacy_spent"]["epsilon"] == 0.0
    assert s["query_id"] == f["query_id"]
    assert json.dumps(s["rows"]) == json.dumps(f["rows"])
    assert json.dumps(s["intervals"]) == json.dumps(f["intervals"])
    assert server.spent("alice") == spent


def test_refused_query_is_400_with_the_reason_and_charges_nothing(server: Server) -> None:
    before = len(server.records())
    for sql, reason in (("SELECT * FROM people", "raw_rows"),
                        ("SELECT MAX(age) FROM people", "unsupported_aggregate"),
                        ("SELECT age FROM people", "raw_rows"),
                        ("DELETE FROM people", "not_select"),
                        ("SELECT COUNT(*) FROM people; SELECT 1", "syntax")):
        err = _error(server.query("alice", {"sql": sql, "epsilon": 0.1}), 400, "refused")
        assert err["reason"] == reason, (sql, err)
    for body in ({"sql": QUERY}, {"sql": QUERY, "epsilon": -1}, {"sql": QUERY,
                 "epsilon": "1"}, {"sql": 3, "epsilon": 1}, {"sql": QUERY, "epsilon": 1,
                 "delta": 2}, {"sql": QUERY, "epsilon": 0.1, "rows": True}):
        _error(server.query("alice", body), 400, "bad_request")
    assert len(server.records()) == before


def test_overspend_is_403_and_charges_nothing(server: Server) -> None:
    """bob's share is epsilon 1: a query of 1.5 is refused (nothing charged), then one
    that fits is answered, then one more that would exceed the share is refused."""
    body = {"sql": "SELECT COUNT(*) AS n FROM people WHERE age > 40", "epsilon": 1.5}
    _error(server.query("bob", body), 403, "budget_exceeded")
    assert server.spent("bob") == 0.0
    ok = server.query("bob", {"sql": "SELECT COUNT(*) AS n FROM people", "epsilon": 0.75})
    assert ok.status_code == 200, ok.text
    _error(server.query("bob", {"sql": "SELECT COUNT(*) AS n FROM people WHERE age > 50",
                                "epsilon": 0.5}), 403, "budget_exceeded")
    assert server.spent("bob") == pytest.approx(0.75)
    # a cached answer stays free even with the share nearly spent
    again = server.query("bob", {"sql": "SELECT COUNT(*) AS n FROM people", "epsilon": 0.75})
    assert again.status_code == 200 and again.json()["cached"] is True


def test_usage_own_and_admin(server: Server) -> None:
    r = httpx.get(server.url + "/v1/usage", headers=server.auth("bob"), timeout=60)
    assert r.status_code == 200
    mine = r.json()
    assert [a["name"] for a in mine["analysts"]] == ["bob"] and "total" not in mine
    everyone = server.usage()
    assert {"alice", "bob", "carol"} <= {a["name"] for a in everyone["analysts"]}
    assert everyone["total"]["epsilon"] == 4.0
    v = httpx.get(server.url + "/v1/ledger/verify", headers=server.auth("admin"), timeout=60)
    assert v.status_code == 200 and v.json()["ok"] is True


# ---------------------------------------------------------------------- reports
def test_report_batches_are_counted_once(server: Server) -> None:
    from dpfast.local.server import Aggregator

    params = {"k": 8, "epsilon": 1.0}
    values = np.random.default_rng(5).choice(8, 500, p=[.3, .2, .1, .1, .1, .1, .05, .05])
    batch = _batch("krr", params, values, seed=11)
    body = {"batch_id": "once-1", "client_id": "phone-1", "reports": json.loads(
        batch.to_json())}
    n0 = server.estimates("apps")["n"]
    r1 = server.post_reports("apps", body)
    assert r1.status_code == 202 and r1.json() == {"accepted": 500, "duplicate": False,
                                                   "batch_id": "once-1"}
    r2 = server.post_reports("apps", body)  # a retry after a lost response
    assert r2.status_code == 202 and r2.json()["duplicate"] is True
    # the reports' JSON as text, or spaced otherwise, is the same batch
    r3 = server.post_reports("apps", dict(body, reports=batch.to_json()))
    assert r3.status_code == 202 and r3.json()["duplicate"] is True
    spaced = json.dumps(json.loads(batch.to_json()), indent=2)
    r4 = server.post_reports("apps", dict(body, reports=spaced))
    assert r4.status_code == 202 and r4.json()["duplicate"] is True
    est = server.estimates("apps")
    assert est["n"] == n0 + 500 and est["consistent"] is True
    # the same id with other content is a conflict, nothing counted
    other = _batch("krr", params, values[:10], seed=12)
    _error(server.post_reports("apps", dict(body, reports=other.to_json())), 409,
           "conflict")
    assert server.estimates("apps")["n"] == n0 + 500
    if n0 == 0:  # the estimates are the library's on the same reports
        want = Aggregator.from_params("krr", params).add(batch).estimate()
        assert est["counts"] == [float(c) for c in want.counts]
        assert est["low"] == [float(c) for c in want.low]


def test_malformed_batches_are_refused_whole(server: Server) -> None:
    batch = _batch("oue", {"k": 4, "epsilon": 2.0}, [0, 1, 2, 3] * 5)
    good = {"batch_id": "m-1", "client_id": "c", "reports": batch.to_json()}
    text = json.dumps(good).encode()
    n0 = server.estimates("sites")["n"]
    _error(server.post_reports("sites", text[: len(text) // 2]), 400, "bad_json")
    _error(server.post_reports("sites", b"\x00\xff not json at all"), 400, "bad_json")
    _error(server.post_reports("sites", b"[1, 2, 3]"), 400, "bad_request")
    wrong = _batch("krr", {"k": 4, "epsilon": 2.0}, [0, 1])
    e = _error(server.post_reports("sites", dict(good, reports=wrong.to_json())), 400,
               "bad_reports")
    assert "protocol" in e["message"]
    other_eps = _batch("oue", {"k": 4, "epsilon": 1.0}, [0, 1])
    _error(server.post_reports("sites", dict(good, reports=other_eps.to_json())), 400,
           "bad_reports")
    # a report no client could produce: a bit row of the wrong width
    doc = json.loads(batch.to_json())
    doc["arrays"]["bits"]["shape"] = [10, 2]
    _error(server.post_reports("sites", dict(good, reports=doc)), 400, "bad_reports")
    _error(server.post_reports("sites", dict(good, batch_id="")), 400, "bad_request")
    _error(server.post_reports("sites", dict(good, extra=1)), 400, "bad_request")
    big = dict(good, reports=_batch("oue", {"k": 4, "epsilon": 2.0}, [0] * 100000).to_json())
    _error(server.post_reports("sites", big), 413, "too_large")
    assert server.estimates("sites")["n"] == n0
    r = server.post_reports("sites", good)
    assert r.status_code == 202 and r.json()["accepted"] == 20
    assert server.estimates("sites")["n"] == n0 + 20


def test_estimates_carry_intervals_and_the_monitor(server: Server) -> None:
    est = server.estimates("apps", who="alice")
    k = len(est["items"])
    assert k == 8 and len(est["low"]) == k and len(est["high"]) == k
    for c, lo, hi in zip(est["counts"], est["low"], est["high"]):
        assert lo <= c <= hi
    mon = est["monitor"]
    assert mon["target"] == 0.01 and set(mon["reports_needed"]) == {str(i) for i in range(8)}
    curve = mon["curve"]
    assert len(curve["reports"]) == len(curve["max_std_error"]) > 1
    ses = [s for s in curve["max_std_error"] if s is not None]
    assert ses == sorted(ses, reverse=True)  # more reports, smaller error
    r = httpx.get(server.url + "/v1/collections/apps/estimates", headers=server.auth("apps"),
                  timeout=60)
    _error(r, 403, "forbidden")


def test_unknown_route_and_method_are_json_errors(server: Server) -> None:
    _error(httpx.get(server.url + "/v1/nothing", timeout=30), 404, "not_found")
    _error(httpx.get(server.url + "/v1/query", timeout=30), 405, "method_not_allowed")


# ---------------------------------------------------------------------- durability
def test_acknowledged_batches_survive_sigkill(tmp_path) -> None:
    """A batch answered 202 is on disk: SIGKILL the server, start it again, the count
    and the batch id are still there (a retry is still a duplicate)."""
    s = Server(str(tmp_path))
    try:
        batch = _batch("krr", {"k": 8, "epsilon": 1.0}, list(range(8)) * 25)
        body = {"batch_id": "k-1", "client_id": "c", "reports": batch.to_json()}
        assert s.post_reports("apps", body).status_code == 202
        s.stop(signal.SIGKILL)
        s.start()
        assert s.estimates("apps")["n"] == 200
        assert s.post_reports("apps", body).json()["duplicate"] is True
        assert s.estimates("apps")["n"] == 200
    finally:
        s.stop()


# ---------------------------------------------------------------------- the dashboard
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _browser(url: str, out_dir: str, name: str) -> str:
    exe = _chromium()
    assert exe is not None
    profile = os.path.join(out_dir, f"profile-{name}")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            f"--user-data-dir={profile}", "--virtual-time-budget=10000"]
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=300)
    assert dom.returncode == 0, dom.stderr[-2000:]
    shot = subprocess.run(base + [f"--screenshot={os.path.join(out_dir, name + '.png')}",
                                  "--window-size=1200,2400", url],
                          capture_output=True, text=True, timeout=300)
    assert shot.returncode == 0, shot.stderr[-2000:]
    return dom.stdout


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (.ci/run "
                    "installs it)")
def test_dashboard_in_headless_chromium(server: Server, tmp_path) -> None:
    """Chromium signs in (the token in the URL fragment, submitted by the sign-in page;
    the server sets the cookie) and the dashboard shows the budget and a collection's
    estimates with the values the API returns; screenshots under tmp_path."""
    q = server.query("alice", {"sql": "SELECT region, SUM(spend) AS total FROM people "
                               "GROUP BY region", "epsilon": 0.2})
    assert q.status_code == 200
    batch = _batch("krr", {"k": 8, "epsilon": 1.0}, [0, 0, 1, 2] * 50, seed=3)
    server.post_reports("apps", {"batch_id": "dash-1", "client_id": "c",
                                 "reports": batch.to_json()})
    usage = server.usage()
    records = server.records()
    est = server.estimates("apps")
    html = _browser(f"{server.url}/login#token={server.tokens['admin']}", str(tmp_path),
                    "admin")
    assert "Signed in as admin" in html, html[:2000]
    assert os.path.getsize(tmp_path / "admin.png") > 1000
    # the budget plot: per analyst, the last point is the epsilon charged (the ledger's
    # accepted charges, summed) and the cap is the analyst's share
    for a in usage["analysts"]:
        charged = sum(r["epsilon"] for r in records
                      if r["analyst"] == a["name"] and r["status"] != "refused")
        name = re.escape(a["name"])
        m = re.search(f'<g class="series" data-name="{name}" data-last="([^"]+)" '
                      'data-cap="([^"]+)"', html)
        if charged:
            assert m is not None, a["name"]
            assert float(m.group(1)) == pytest.approx(charged, rel=1e-12)
            assert float(m.group(2)) == a["epsilon"]
        # (Chromium writes the DOM's attributes in double quotes)
        row = re.search(f'<tr class="analyst" data-name="{name}" data-spent="([^"]+)"',
                        html)
        assert row is not None and float(row.group(1)) == a["spent_epsilon"]
    # the collection's estimates: every item's count and interval as the API gives them
    block = html[html.index('class="collection" data-name="apps"'):]
    for item, c, lo, hi in zip(est["items"], est["counts"], est["low"], est["high"]):
        m = re.search(f'data-label="{item}" data-value="([^"]+)" data-low="([^"]+)" '
                      'data-high="([^"]+)"', block)
        assert m is not None
        assert [float(x) for x in m.groups()] == [c, lo, hi]
    assert f'data-n="{est["n"]}"' in html
    assert 'class="loglog"' in html and 'class="now"' in html
    # a recent release with its error bars
    assert 'class="release"' in html and 'class="errorbars"' in html
    # an analyst sees their own figures only
    html_b = _browser(f"{server.url}/login#token={server.tokens['bob']}", str(tmp_path),
                      "bob")
    assert "Signed in as analyst" in html_b and 'data-name="alice"' not in html_b
    # a wrong token does not sign in
    bad = _browser(f"{server.url}/login#token=dpf_{'B' * 43}", str(tmp_path), "bad")
    assert "not a valid analyst or admin token" in bad


def test_dashboard_needs_a_token(server: Server) -> None:
    r = httpx.get(server.url + "/", timeout=30)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    r = httpx.post(server.url + "/login", data={"token": server.tokens["apps"]}, timeout=30)
    assert r.status_code == 401
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/login", data={"token": server.tokens["alice"]}, follow_redirects=True)
        assert r.status_code == 200 and "Signed in as analyst" in r.text
        page = re.sub(r'xmlns="http://www.w3.org/2000/svg"', "", r.text)
        assert "http" not in page  # every asset is served inline: no CDN, no link out
        cookie = r.history[0].headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        # the cookie is not accepted by the POST API (no cross-site form can use it)
        _error(c.post("/v1/query", json={"sql": QUERY, "epsilon": 0.1}), 401,
               "unauthorized")


def test_tls_with_uvicorn_options(tmp_path) -> None:
    """``tls_certfile`` / ``tls_keyfile`` serve HTTPS (a self-signed certificate)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    port = _free_port()
    shutil.copy(os.path.join(EXAMPLE, "people.csv"), tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(port=port, workers=1).replace(
        "[server]", '[server]\ntls_certfile = "cert.pem"\ntls_keyfile = "key.pem"'))
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "dpfast", "serve", str(config)],
                            env=_env(), stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                r = httpx.get(f"https://127.0.0.1:{port}/healthz", verify=False, timeout=5)
                if r.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.5)
        with pytest.raises(httpx.HTTPError):  # no plain HTTP on the TLS port
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()


def test_two_workers_share_the_ledger_and_the_reports(tmp_path) -> None:
    """With 2 worker processes: one new question asked 12 times at once is charged once
    (the others are cache hits with the same rows); 12 batches posted at once, each
    twice, are counted once each."""
    from concurrent.futures import ThreadPoolExecutor

    s = Server(str(tmp_path), workers=2)
    try:
        body = {"sql": "SELECT plan, COUNT(*) AS n FROM people WHERE age < 60 GROUP BY plan",
                "epsilon": 0.2}
        with ThreadPoolExecutor(12) as pool:
            answers = [r.json() for r in pool.map(lambda _: s.query("alice", body),
                                                  range(12))]
        assert sum(not a["cached"] for a in answers) == 1
        assert all(a["rows"] == answers[0]["rows"] for a in answers)
        assert s.spent("alice") == pytest.approx(0.2)
        batches = [_batch("krr", {"k": 8, "epsilon": 1.0}, [i % 8] * 50, seed=100 + i)
                   for i in range(12)]
        bodies = [{"batch_id": f"w-{i}", "client_id": f"c{i}", "reports": b.to_json()}
                  for i, b in enumerate(batches)] * 2
        with ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(lambda b: s.post_reports("apps", b).status_code, bodies))
        assert codes == [202] * 24
        est = s.estimates("apps")
        assert est["n"] == 12 * 50 and est["batches"] == 12
    finally:
        s.stop()


# the same service with two private tables, [data.people] and [data.orders]
TWO_TABLES = CONFIG.replace("[data]\n", "[data.people]\n").replace(
    "[data.bounds]", "[data.people.bounds]").replace(
    "[data.domains]", "[data.people.domains]").replace("[budget]", """[data.orders]
source = "orders.csv"
privacy_unit = "person_id"

[data.orders.bounds]
amount = [0, 100]

[data.orders.domains]
kind = ["book", "food"]

[budget]""")


def test_two_private_tables_share_one_ledger(tmp_path) -> None:
    """``[data.<name>]``: a query is answered by the table its FROM names, both charges
    land in the one ledger (one chain, one total); a table that is neither is a 400
    refusal with nothing charged."""
    import pandas as pd

    pd.DataFrame({"person_id": [1, 2, 3, 4, 5, 6] * 20, "kind": ["book", "food"] * 60,
                  "amount": [10.0, 20.0, 30.0] * 40}).to_csv(tmp_path / "orders.csv",
                                                             index=False)
    s = Server(str(tmp_path), config=TWO_TABLES)
    try:
        a = s.query("alice", {"sql": QUERY, "epsilon": 0.25})
        assert a.status_code == 200, a.text
        b = s.query("bob", {"sql": "SELECT kind, SUM(amount) AS total FROM orders "
                                   "GROUP BY kind ORDER BY kind", "epsilon": 0.5})
        assert b.status_code == 200, b.text
        assert b.json()["columns"] == ["kind", "total"]
        assert [r[0] for r in b.json()["rows"]] == ["book", "food"]
        assert sorted(r[0] for r in a.json()["rows"]) == ["east", "north", "south", "west"]
        records = s.records()
        charged: dict[str, float] = {}
        for r in records:  # one row per aggregate: alice's query has two
            if r["status"] == "charged":
                charged[r["analyst"]] = charged.get(r["analyst"], 0.0) + r["epsilon"]
        assert charged == {"alice": pytest.approx(0.25), "bob": pytest.approx(0.5)}, records
        assert s.usage()["total"]["spent"]["epsilon"] == pytest.approx(0.75)
        err = _error(s.query("alice", {"sql": "SELECT COUNT(*) AS n FROM invoices",
                                       "epsilon": 0.1}), 400, "refused")
        assert err["reason"] == "unknown_table", err
        assert s.records() == records and s.spent("alice") == pytest.approx(0.25)
        v = httpx.get(s.url + "/v1/ledger/verify", headers=s.auth("admin"), timeout=60)
        assert v.status_code == 200 and v.json()["ok"] is True, v.text
    finally:
        s.stop()
