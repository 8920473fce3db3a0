"""``dpfast serve``'s configuration checks and rate limiter, without a server (issue 38):
every bad key is refused before anything starts, with a message naming the key."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("starlette")

from dpfast.serve.config import ConfigError, load  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "serve")

GOOD = """
[data]
source = "people.csv"
privacy_unit = "person_id"
[data.bounds]
age = [18, 90]
[budget]
epsilon = 2.0
delta = 1e-6
ledger = "budget.db"
[analysts.alice]
epsilon = 1.0
[collections.apps]
protocol = "krr"
params = { k = 8, epsilon = 1.0 }
"""


@pytest.fixture
def where(tmp_path):
    shutil.copy(os.path.join(EXAMPLE, "people.csv"), tmp_path)
    return tmp_path


def _write(where, text: str) -> str:
    p = where / "config.toml"
    p.write_text(text)
    return str(p)


def test_the_example_config_loads() -> None:
    cfg = load(os.path.join(EXAMPLE, "config.toml"))
    assert cfg.privacy_unit == "person_id" and cfg.epsilon == 4.0
    assert set(cfg.analysts) == {"alice", "bob"} and set(cfg.collections) == {"apps"}
    assert os.path.isabs(cfg.ledger) and cfg.state == cfg.ledger + ".serve.db"


def test_a_good_config_loads(where) -> None:
    cfg = load(_write(where, GOOD))
    assert cfg.analysts == {"alice": (1.0, None)}
    assert cfg.collections["apps"].params == {"k": 8, "epsilon": 1.0}
    assert [t.bounds for t in cfg.tables] == [{"age": (18, 90)}] and cfg.workers == 1
    assert cfg.tables[0].key == "data" and cfg.tables[0].name is None


@pytest.mark.parametrize("old, new, key", [
    ('epsilon = 2.0', 'epsilon = -2.0', "budget.epsilon"),
    ('epsilon = 2.0', 'epsilon = "2"', "budget.epsilon"),
    ('delta = 1e-6', 'delta = 1.5', "budget.delta"),
    ('ledger = "budget.db"', 'ledger = "no/such/dir/budget.db"', "budget.ledger"),
    ('source = "people.csv"', 'source = "missing.parquet"', "data.source"),
    ('privacy_unit = "person_id"', '', "data.privacy_unit"),
    ('age = [18, 90]', 'age = [90, 18]', "data.bounds.age"),
    ('age = [18, 90]', 'age = [18]', "data.bounds.age"),
    ('[analysts.alice]\nepsilon = 1.0', '[analysts.alice]\nepsilon = 3.0',
     "analysts.alice.epsilon"),
    ('[analysts.alice]', '[analysts."al ice"]', "analysts.al ice"),
    ('[analysts.alice]\nepsilon = 1.0', '[analysts.alice]\nepsilon = 1.0\nshare = 2',
     "analysts.alice.share"),
    ('protocol = "krr"', 'protocol = "nope"', "collections.apps.protocol"),
    ('params = { k = 8, epsilon = 1.0 }', 'params = { k = 8 }', "collections.apps.params"),
    ('[data]', '[server]\nport = 70000\n[data]', "server.port"),
    ('[data]', '[server]\nworkers = 0\n[data]', "server.workers"),
    ('[data]', '[server]\ntls_certfile = "people.csv"\n[data]', "server.tls_certfile"),
    ('[data]', '[server]\nhots = "x"\n[data]', "server.hots"),
    ('[data]', '[extra]\n[data]', "extra"),
])
def test_bad_keys_are_named(where, old: str, new: str, key: str) -> None:
    assert old in GOOD
    with pytest.raises(ConfigError, match=f": {key}: "):
        load(_write(where, GOOD.replace(old, new, 1)))


def test_not_toml_and_missing_file(where) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(_write(where, "[data\nsource ="))
    with pytest.raises(ConfigError, match="not found"):
        load(str(where / "nothing.toml"))


def test_check_command_validates_without_starting(where) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT, DPFAST_NO_COMPILE_NOTICE="1")
    bad = _write(where, GOOD.replace('epsilon = 2.0', 'epsilon = 0'))
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "check", bad], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and "budget.epsilon" in out.stderr
    assert not os.path.exists(where / "budget.db")  # nothing created
    good = _write(where, GOOD)
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "check", good], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.startswith("ok: "), out.stderr
    assert not os.path.exists(where / "budget.db")  # check writes nothing
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "token", good,
                          "--analyst", "mallory"], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 2 and "not in the configuration" in out.stderr
    # a ledger made with another share for alice: check names the key
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "token", good, "--admin"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and os.path.exists(where / "budget.db")
    other = _write(where, GOOD.replace("[analysts.alice]\nepsilon = 1.0",
                                       "[analysts.alice]\nepsilon = 0.5"))
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "check", other], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and "analysts.alice.epsilon" in out.stderr, out.stderr


def test_token_bucket_refuses_past_the_burst() -> None:
    from dpfast.serve.app import Buckets

    b = Buckets(rate=1e-9, burst=3)  # practically no refill during the test
    assert [b.take("t") for _ in range(4)] == [True, True, True, False]
    assert b.take("other") is True  # per key


def test_failures_after_the_charge_answer_the_fixed_message_only(where, monkeypatch) -> None:
    """Over HTTP too, a release that failed after its charge is the session's one fixed
    message (500 release_failed), and any other failure names its type only: no
    exception text (which may quote private values) reaches the client."""
    from dpfast._core.errors import RELEASE_FAILED, ReleaseFailedError
    from dpfast.serve import tokens
    from dpfast.serve.app import make_app
    from dpfast.serve.service import prepare

    cfg = load(_write(where, GOOD))
    prepare(cfg)
    app = make_app(cfg)
    api = app.state.api
    tok = tokens.make_token(api.service.state, "analyst", "alice")
    headers = {"Authorization": f"Bearer {tok}"}
    body = {"sql": "SELECT COUNT(*) AS n FROM people", "epsilon": 0.1}

    def failed(*args, **kwargs):
        try:
            raise RuntimeError("engine: value 4711 of row 12")
        except RuntimeError:
            raise ReleaseFailedError() from None

    def crashed(*args, **kwargs):
        raise KeyError("private value 4711")

    import asyncio

    import httpx

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/v1/query", json=body, headers=headers)

    try:
        monkeypatch.setattr(api.service, "query", failed)
        r = asyncio.run(post())
        assert r.status_code == 500
        assert r.json() == {"error": {"code": "release_failed", "message": RELEASE_FAILED}}
        monkeypatch.setattr(api.service, "query", crashed)
        r = asyncio.run(post())
        assert r.status_code == 500 and r.json()["error"]["code"] == "internal"
        assert "4711" not in r.text and "KeyError" in r.text
    finally:
        api.service.close()


def test_tokens_outside_the_config_and_guessing_are_refused(where) -> None:
    """A live token of an analyst the configuration no longer lists is refused (401);
    wrong tokens from one address are rate-limited (429) like a token's requests."""
    import asyncio

    import httpx

    from dpfast.serve import tokens
    from dpfast.serve.app import make_app
    from dpfast.serve.service import prepare

    text = GOOD.replace("[data]", "[server]\nrate = 1e-9\nburst = 2\n[data]")
    prepare(load(_write(where, text.replace("[analysts.alice]", "[analysts.bob]\n"
                                            "epsilon = 0.5\n[analysts.alice]"))))
    app = make_app(load(_write(where, text)))  # bob is no longer configured
    api = app.state.api
    bob = tokens.make_token(api.service.state, "analyst", "bob")

    async def get(token: str) -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            r = await client.get("/v1/usage", headers={"Authorization": f"Bearer {token}"})
            return r.status_code

    try:
        assert asyncio.run(get(bob)) == 401
        codes = [asyncio.run(get("dpf_" + "C" * 43)) for _ in range(3)]
        assert codes == [401, 429, 429]  # bob's try took the address's first token
    finally:
        api.service.close()


@pytest.mark.parametrize("kind", ["csv", "parquet", "duckdb"])
def test_each_source_kind_serves_a_query(where, kind: str) -> None:
    """The private table may be a CSV, a Parquet or a DuckDB file (``data.table``)."""
    import pandas as pd

    from dpfast.serve.service import Service, prepare

    text = GOOD
    if kind == "parquet":
        pd.read_csv(where / "people.csv").to_parquet(where / "people.parquet")
        text = GOOD.replace('source = "people.csv"', 'source = "people.parquet"')
    elif kind == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect(str(where / "store.duckdb"))
        con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv_auto("
                    f"'{where / 'people.csv'}')")
        con.close()
        text = GOOD.replace('source = "people.csv"',
                            'source = "store.duckdb"\ntable = "people"')
    cfg = load(_write(where, text))
    prepare(cfg)
    svc = Service(cfg)
    try:
        a = svc.query("alice", "SELECT COUNT(*) AS n, AVG(age) AS mean_age FROM people",
                      0.5, 0.0)
        assert a["columns"] == ["n", "mean_age"] and len(a["rows"]) == 1
        assert a["cached"] is False and a["privacy_spent"]["epsilon"] == pytest.approx(0.5)
        again = svc.query("alice", "SELECT COUNT(*) AS n, AVG(age) AS mean_age FROM people",
                          0.5, 0.0)
        assert again["cached"] is True and again["rows"] == a["rows"]
    finally:
        svc.close()


TWO = """
[data.people]
source = "people.csv"
privacy_unit = "person_id"
[data.people.bounds]
age = [18, 90]
[data.orders]
source = "orders.csv"
privacy_unit = "person_id"
[data.orders.bounds]
amount = [0, 100]
[data.orders.domains]
kind = ["book", "food"]
[budget]
epsilon = 2.0
delta = 1e-6
ledger = "budget.db"
[analysts.alice]
epsilon = 1.0
"""


@pytest.fixture
def two(where):
    import pandas as pd

    pd.DataFrame({"person_id": [1, 1, 2, 3, 4, 5] * 10,
                  "kind": ["book", "food"] * 30,
                  "amount": [10.0, 20.0, 30.0] * 20}).to_csv(where / "orders.csv",
                                                             index=False)
    return where


def test_several_private_tables_load(two) -> None:
    """``[data.<name>]``: one private table each, named in SQL by the section's name."""
    cfg = load(_write(two, TWO))
    assert [(t.key, t.name) for t in cfg.tables] == [("data.people", "people"),
                                                     ("data.orders", "orders")]
    assert cfg.tables[1].bounds == {"amount": (0, 100)}
    assert cfg.tables[1].domains == {"kind": ["book", "food"]}
    assert cfg.privacy_unit == "person_id"


def test_check_opens_every_private_table(two) -> None:
    """``dpfast serve check`` opens each table: a bound on a column only the other table
    has is refused, naming the column; a good config lists both tables."""
    env = dict(os.environ, PYTHONPATH=ROOT, DPFAST_NO_COMPILE_NOTICE="1")
    good = _write(two, TWO)
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "check", good], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "private tables people (" in out.stdout and ", orders (" in out.stdout
    bad = _write(two, TWO.replace("amount = [0, 100]", "amount = [0, 100]\nage = [18, 90]"))
    out = subprocess.run([sys.executable, "-m", "dpfast", "serve", "check", bad], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and "age" in out.stderr, (out.stdout, out.stderr)
    assert not os.path.exists(two / "budget.db")  # check writes nothing


@pytest.mark.parametrize("old, new, key", [
    # a total over two units bounds neither: refused, naming the second table's key
    ('source = "orders.csv"\nprivacy_unit = "person_id"',
     'source = "orders.csv"\nprivacy_unit = "kind"', "data.orders.privacy_unit"),
    ('source = "orders.csv"\nprivacy_unit = "person_id"',
     'source = "orders.csv"\nprivacy_unit = "none"', "data.orders.privacy_unit"),
    ('source = "orders.csv"\nprivacy_unit = "person_id"', 'source = "orders.csv"',
     "data.orders.privacy_unit"),
    ('source = "orders.csv"', 'source = "missing.csv"', "data.orders.source"),
    ('source = "orders.csv"', 'source = "orders.csv"\nname = "People"', "data.orders.name"),
    ('source = "orders.csv"', 'source = "orders.csv"\nsauce = 1', "data.orders.sauce"),
    ('amount = [0, 100]', 'amount = [100, 0]', "data.orders.bounds.amount"),
    ('kind = ["book", "food"]', 'kind = ["book", 1]', "data.orders.domains.kind"),
    ('[data.orders]', '[public]\norders = "orders.csv"\n[data.orders]', "data.orders"),
])
def test_several_tables_bad_keys_are_named(two, old: str, new: str, key: str) -> None:
    assert old in TWO
    with pytest.raises(ConfigError, match=f": {key}: "):
        load(_write(two, TWO.replace(old, new, 1)))


def test_no_private_table_is_refused(where) -> None:
    text = GOOD.replace('[data]\nsource = "people.csv"\nprivacy_unit = "person_id"\n'
                        '[data.bounds]\nage = [18, 90]\n', '[data]\n')
    with pytest.raises(ConfigError, match=": data: names no private table"):
        load(_write(where, text))


def test_several_tables_route_by_from_and_share_the_ledger(two) -> None:
    """A query goes to the session whose private table its FROM names; both charge the one
    ledger; a query naming no configured private table is refused before any charge."""
    from dpfast.serve.service import Service, prepare, route
    from dpfast.session import SqlRefusedError

    assert route("SELECT COUNT(*) FROM ORDERS", ["people", "orders"]) == 1
    assert route("SELECT COUNT(*) FROM people", ["people", "orders"]) == 0
    assert route("SELECT (", ["people", "orders"]) == 0
    cfg = load(_write(two, TWO))
    prepare(cfg)
    svc = Service(cfg)
    try:
        a = svc.query("alice", "SELECT COUNT(*) AS n FROM people", 0.25, 0.0)
        b = svc.query("alice", "SELECT kind, SUM(amount) AS s FROM orders GROUP BY kind",
                      0.5, 0.0)
        assert a["columns"] == ["n"] and b["columns"] == ["kind", "s"]
        assert sorted(r[0] for r in b["rows"]) == ["book", "food"]
        spent = svc.usage("alice")["analysts"][0]["spent_epsilon"]
        assert spent == pytest.approx(0.75)
        with pytest.raises(SqlRefusedError) as info:
            svc.query("alice", "SELECT COUNT(*) FROM invoices", 0.25, 0.0)
        assert info.value.reason == "unknown_table"
        assert svc.usage("alice")["analysts"][0]["spent_epsilon"] == pytest.approx(0.75)
    finally:
        svc.close()
