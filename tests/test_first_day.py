"""Issue 41 ("The first day, third pass"): one budget that takes every release, privacy
spent in (epsilon, delta), coherent usage counts, the CLI's record-level and epsilon
checks, outputs that say what they are, and notebook views of releases.

Every test runs in process (``dpfast.cli.main``), on small data, with a fixed key."""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest

import dpfast
from dpfast import tables
from dpfast.accounting import events as ev
from dpfast.cli import main
from tests.helpers import KEY

pd = pytest.importorskip("pandas")


def _visits(n: int = 20_000, people: int = 2_000, seed: int = 0):
    r = np.random.default_rng(seed)
    return pd.DataFrame({"person": r.integers(0, people, n),
                         "city": r.choice(["Lille", "Lyon", "Nice", "Paris"], n)})


# -- 1. one budget that takes every release ---------------------------------------------

def test_readme_quick_start_with_a_ledger_backed_budget(tmp_path) -> None:
    """Item 1: the README's first quick start (tables.count with delta: private key
    selection, an (epsilon, delta) event) charged to ``Budget(epsilon=1, delta=1e-6,
    ledger=...)`` built as the README shows.  Failed on the old default (RDP: "no finite
    RDP bound")."""
    visits = _visits()
    budget = dpfast.Budget(epsilon=1.0, delta=1e-6, ledger=tmp_path / "budget.sqlite")
    assert budget.accounting == "mixed"
    table = tables.count(visits["city"], visits["person"], epsilon=1.0, delta=1e-6,
                         max_partitions=2, budget=budget, rng=KEY)
    assert len(table.to_pandas()) == 4
    assert budget.spent().epsilon == 1.0 and budget.spent().delta == 1e-6
    budget.close()
    again = dpfast.Budget.from_ledger(tmp_path / "budget.sqlite")
    assert again.accounting == "mixed" and len(again.history()) == 1
    again.close()


def test_the_default_budget_takes_every_kind_of_release() -> None:
    """Item 1: pure (mechanism, histogram), approximate (key selection), Gaussian/zCDP
    (TopDown, a Gaussian mechanism) releases all fit one ``Budget(epsilon, delta)``."""
    budget = dpfast.Budget(epsilon=8.0, delta=1e-6)
    visits = _visits(4_000, 500)
    tables.count(visits["city"], visits["person"], epsilon=0.5, delta=1e-7, budget=budget,
                 rng=KEY)
    dpfast.histogram(np.arange(100.0), bins=5, range=(0, 100), epsilon=0.5, budget=budget,
                     rng=KEY)
    budget.release(dpfast.DiscreteLaplaceMechanism(epsilon=0.5), np.array([3, 1]), rng=KEY)
    tables.topdown(np.array([3, 1, 4, 1]), [np.zeros(4, int), np.arange(4)], rho=0.05,
                   budget=budget, rng=KEY)
    budget.spend(ev.Gaussian(20.0))
    assert len(budget.history()) == 5
    assert budget.spent().epsilon <= 8.0


@pytest.mark.parametrize("accounting,event,names", [
    ("rdp", ev.EpsilonDelta(0.1, 1e-9), "accounting='mixed' charges it"),
    ("zcdp", ev.EpsilonDelta(0.1, 1e-9), "accounting='mixed' charges it"),
    ("basic", ev.Gaussian(5.0), "accounting='mixed' charges it"),
    ("advanced", ev.Gaussian(5.0), "accounting='mixed' charges it"),
])
def test_an_explicit_accounting_is_kept_and_its_refusal_names_the_one_that_fits(
        accounting, event, names) -> None:
    """Item 1: an explicit choice stays; what it cannot charge names ``"mixed"``."""
    b = dpfast.Budget(1.0, 1e-6, accounting=accounting)
    assert b.accounting == accounting
    with pytest.raises(ValueError, match=re.escape(names)):
        b.spend(event)
    assert b.history() == []


def test_pure_budget_refusing_a_gaussian_says_to_give_delta() -> None:
    with pytest.raises(ValueError, match="a budget with delta > 0 charges it"):
        dpfast.Budget(1.0).spend(ev.Gaussian(5.0))


def test_a_ledger_made_under_the_old_default_reopens_as_it_was(tmp_path) -> None:
    """Item 1: ``Budget(eps, delta, ledger=old)`` without ``accounting`` reopens an rdp
    ledger (the old default) instead of refusing it as another definition."""
    path = tmp_path / "old.sqlite"
    with dpfast.Budget(1.0, 1e-6, ledger=path, accounting="rdp") as b:
        b.spend(ev.Gaussian(10.0))
    with dpfast.Budget(1.0, 1e-6, ledger=path) as b:
        assert b.accounting == "rdp" and len(b.history()) == 1


# -- 4. privacy spent reads as (epsilon, delta) -------------------------------------------

def test_refusals_and_costs_read_as_epsilon_delta_with_the_detail_one_step_away() -> None:
    """Item 4: an rdp budget's refusal speaks (epsilon, delta); the RDP figures are in
    ``exc.detail``; each charge's cost has an (epsilon, delta) in every accounting."""
    b = dpfast.Budget(1.0, 1e-6, accounting="rdp")
    c = b.spend(ev.Gaussian(5.0))
    assert c.cost.delta == 1e-6 and 0 < c.cost.epsilon < 1.0 and c.cost.rdp is not None
    with pytest.raises(dpfast.BudgetExceededError) as info:
        b.spend(ev.Epsilon(2.0))
    msg = str(info.value)
    assert msg.startswith("this release costs (epsilon=2, delta=0)")
    assert "order" not in msg and "RDP" not in msg and not re.search(r"\ba=", msg)
    assert "order" in info.value.detail
    z = dpfast.Budget(1.0, 1e-6, accounting="zcdp")
    assert z.spend(ev.Zcdp(0.01)).cost.epsilon > 0


def test_ledger_show_prints_epsilon_delta_and_detail_on_request(tmp_path, capsys) -> None:
    """Item 4: ``ledger show`` prints costs as (epsilon, delta), no RDP order list;
    ``--detail`` adds the accounting's figures.  Item 6: the record numbering is
    explained (charges vs the ledger's records)."""
    path = tmp_path / "l.sqlite"
    with dpfast.Budget(2.0, 1e-6, ledger=path) as b:
        b.add_analyst("ana", epsilon=1.0)
        b.spend(ev.Epsilon(0.25), analyst="ana", note="pure")
        b.spend(ev.Gaussian(10.0), note="gauss")
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\ba=", out) and "orders=" not in out and "rdp" not in out
    assert "eps=0.25" in out and "delta=1e-06" in out
    assert "charges: 2 (2 charged" in out and "3 records" in out and "1 analyst sub-budget" in out
    assert main(["ledger", "show", str(path), "--detail"]) == 0
    detail = capsys.readouterr().out
    assert "orders=" in detail and "rdp a=" in detail and "accounting's figures" in detail


def test_privacy_text_rounds_up_and_says_when_it_converted() -> None:
    from dpfast.budget.display import down, privacy_text, up

    assert privacy_text(ev.Epsilon(0.5)) == "(epsilon=0.5, delta=0)"
    assert privacy_text(ev.EpsilonDelta(0.1, 1e-7)) == "(epsilon=0.1, delta=1e-07)"
    g = privacy_text(ev.Gaussian(5.0), 1e-6)
    assert g.endswith("from its zCDP/RDP bound") and "delta=1e-06" in g
    assert up(0.123451) == "0.1235" and down(0.123459) == "0.1234" and up(math.inf) == \
        "unbounded"


# -- 5 is in tests/test_plots.py; 6. usage counts -----------------------------------------

def test_one_sql_question_asked_twice_is_one_charge_and_one_cache_hit() -> None:
    """Item 6: a SQL query with two aggregates (two ledger charges) asked twice reports
    1 charge and 1 cache hit; its status is ``charged`` after the first ask and ``cached``
    only after the hit.  The old report said 2 charges, 2 hits, ``cached`` at once."""
    pytest.importorskip("duckdb")
    pytest.importorskip("sqlglot")
    r = np.random.default_rng(2)
    flights = pd.DataFrame({"dest": r.choice(["BOS", "LAX", "ORD"], 3_000),
                            "passenger": r.integers(0, 900, 3_000),
                            "delay": r.normal(12, 30, 3_000).round()})
    s = dpfast.Session(flights, name="flights", privacy_unit="passenger",
                       bounds={"delay": (-60, 300)}, epsilon=2.0, delta=1e-6, rng=KEY)
    alice = s.add_analyst("alice", epsilon=1.0)
    q = "SELECT dest, COUNT(*) AS n, AVG(delay) AS delay FROM flights GROUP BY dest"
    alice.sql(q, epsilon=0.5, delta=1e-6)
    u = s.usage()
    assert (u.questions, u.question_hits, u.charges, u.hits) == (1, 0, 2, 0)
    (line,) = u.queries
    assert (line.status, line.charges, line.hits, line.stored, line.parts) == (
        "charged", 1, 0, True, 2)
    alice.sql(q.lower(), epsilon=0.5, delta=1e-6)  # the same question, written otherwise
    u = s.usage()
    assert (u.questions, u.question_hits, u.charges, u.hits) == (1, 1, 2, 2)
    (line,) = u.queries
    assert (line.status, line.charges, line.hits) == ("cached", 1, 1)
    assert line.cost.epsilon == 0.5
    (a,) = u.analysts
    assert (a.questions, a.question_hits, a.queries) == (1, 1, 1)
    text = "\n".join(u.lines("query"))
    assert "1 charge, 0 refused, 0 failed, 1 cache hit (a question asked again" in text
    assert "in the ledger: 2 charges and 2 cache hits, one per aggregate" in text
    assert len(s.budget.history()) == 2  # the ledger keeps one charge per aggregate
    s.close()


# -- 7. the CLI ---------------------------------------------------------------------------

@pytest.fixture
def visits_csv(tmp_path):
    path = tmp_path / "visits.csv"
    _visits(3_000, 500).to_csv(path, index=False)
    return path


def test_cli_count_requires_id_or_record_level(visits_csv, tmp_path, capsys) -> None:
    """Item 7: record data without ``--id`` is refused (it used to mean one row = one
    person, silently); ``--record-level`` states it explicitly."""
    out = str(tmp_path / "c.csv")
    base = ["count", str(visits_csv), "--key", "city", "--epsilon", "1", "--delta", "1e-6",
            "--seed-key-file"]
    key = tmp_path / "k.bin"
    key.write_bytes(KEY)
    assert main(base + [str(key), "-o", out]) == 2
    assert "--id COL is required" in capsys.readouterr().err
    assert main(base + [str(key), "--record-level", "-o", out]) == 0
    assert main(base + [str(key), "--id", "person", "--record-level", "-o", out]) == 2
    assert "not both" in capsys.readouterr().err
    for cmd in (["histogram", str(visits_csv), "--column", "person", "--range", "0", "500"],
                ["sum", str(visits_csv), "--key", "city", "--value", "person", "--bounds",
                 "0", "1", "--delta", "1e-6"]):
        assert main(cmd + ["--epsilon", "1", "-o", out]) == 2
        assert "--id COL is required" in capsys.readouterr().err


def test_cli_epsilon_outside_the_ranges_warns(visits_csv, tmp_path, capsys) -> None:
    """Item 7: ``--epsilon 1e6`` passed without a word; now a warning on stderr, and
    ``--use-case`` checks against that use case's range."""
    key = tmp_path / "k.bin"
    key.write_bytes(KEY)
    base = ["count", str(visits_csv), "--key", "city", "--id", "person", "--delta", "1e-6",
            "--seed-key-file", str(key), "-o", str(tmp_path / "c.csv")]
    assert main(base + ["--epsilon", "1e6"]) == 0
    assert "warning: --epsilon 1e+06 is above every conventional range" in \
        capsys.readouterr().err
    assert main(base + ["--epsilon", "3", "--use-case", "healthcare"]) == 0
    assert "above the range 0.5-2 conventional for healthcare" in capsys.readouterr().err
    assert main(base + ["--epsilon", "1", "--use-case", "healthcare"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(base + ["--epsilon", "1", "--use-case", "nope"]) == 2


def test_cli_unknown_columns_are_reported_as_unknown(visits_csv, tmp_path, capsys) -> None:
    """Item 7: a typo in a column name is named as unknown, with the closest name."""
    assert main(["count", str(visits_csv), "--key", "citty", "--id", "persn", "--epsilon",
                 "1", "--delta", "1e-6", "-o", str(tmp_path / "c.csv")]) == 2
    err = capsys.readouterr().err
    assert "unknown columns in" in err and "--key 'citty' (did you mean 'city'?)" in err
    assert "--id 'persn' (did you mean 'person'?)" in err
    assert main(["histogram", str(visits_csv), "--column", "ages", "--range", "0", "1",
                 "--record-level", "--epsilon", "1", "-o", str(tmp_path / "h.csv")]) == 2
    assert "unknown column in" in capsys.readouterr().err
    bom = tmp_path / "bom.csv"  # the header as the reader sees it (a UTF-8 BOM is not a name)
    bom.write_bytes(b"\xef\xbb\xbfcity,person\nLyon,1\nNice,2\n")
    (tmp_path / "dom.csv").write_text("city\nLyon\nNice\n")
    assert main(["count", str(bom), "--key", "city", "--id", "person", "--epsilon", "1",
                 "--domain", str(tmp_path / "dom.csv"), "-o", str(tmp_path / "b.csv")]) == 0


def test_cli_one_budget_delta_default(visits_csv, tmp_path, capsys) -> None:
    """Item 7: ``topdown`` created ledgers with delta 1e-6, ``count`` with 1e-5."""
    leaves = tmp_path / "blocks.csv"
    leaves.write_text("state,county,pop\nA,a,3\nA,b,5\nB,c,7\n")
    assert main(["topdown", str(leaves), "--level", "state", "--level", "county", "--count",
                 "pop", "--rho", "0.5", "--ledger", str(tmp_path / "t.sqlite"),
                 "--budget-epsilon", "10", "-o", str(tmp_path / "td")]) == 0
    assert main(["count", str(visits_csv), "--key", "city", "--id", "person", "--epsilon",
                 "1", "--delta", "1e-6", "--ledger", str(tmp_path / "c.sqlite"),
                 "--budget-epsilon", "10", "-o", str(tmp_path / "c.csv")]) == 0
    out = capsys.readouterr().out
    assert out.count("delta 1e-05 (the default") == 2


# -- 8. outputs -----------------------------------------------------------------------------

def test_topdown_files_say_released_and_measured(tmp_path, capsys) -> None:
    """Item 8: ``pop`` (released) / ``pop_noisy`` (raw) became ``pop_released`` /
    ``pop_measured``."""
    leaves = tmp_path / "blocks.csv"
    leaves.write_text("state,county,pop\nA,a,3\nA,b,5\nB,c,7\n")
    key = tmp_path / "k.bin"
    key.write_bytes(KEY)
    assert main(["topdown", str(leaves), "--level", "state", "--level", "county", "--count",
                 "pop", "--rho", "0.5", "--seed-key-file", str(key), "-o",
                 str(tmp_path / "td")]) == 0
    with open(tmp_path / "td" / "level_2_county.csv") as fh:
        head = next(csv.reader(fh))
    assert head == ["state", "county", "pop_released", "pop_measured"]


def test_count_nonnegative_clips_counts_and_intervals(tmp_path, capsys) -> None:
    """Item 8: a public-domain count could publish -1; ``--nonnegative`` clips it (and the
    interval ends) at 0, as ``histogram`` does."""
    data = tmp_path / "d.csv"
    data.write_text("id,k\n" + "".join(f"{i},a\n" for i in range(3)))
    dom = tmp_path / "dom.csv"
    dom.write_text("k\n" + "".join(f"z{i}\n" for i in range(40)) + "a\n")
    key = tmp_path / "k.bin"
    key.write_bytes(KEY)
    out = tmp_path / "c.csv"
    args = ["count", str(data), "--key", "k", "--id", "id", "--epsilon", "0.5", "--domain",
            str(dom), "--seed-key-file", str(key), "-o", str(out)]
    assert main(args) == 0
    plain = pd.read_csv(out)
    assert (plain["count"] < 0).any()  # the fixed key draws negative zeros somewhere
    assert main(args + ["--nonnegative"]) == 0
    clipped = pd.read_csv(out)
    assert (clipped["count"] >= 0).all() and (clipped["ci_low"] >= 0).all()
    assert (clipped["count"] == plain["count"].clip(lower=0)).all()
    assert "before clipping at 0" in capsys.readouterr().out


def test_csv_numbers_rounded_for_display_and_intervals_outward(tmp_path, capsys) -> None:
    """Item 8: 16-digit floats in CSV; now 6 significant digits, ``ci_low`` rounded down
    and ``ci_high`` up (the written interval contains the computed one)."""
    r = np.random.default_rng(3)
    data = tmp_path / "w.csv"
    pd.DataFrame({"p": r.integers(0, 300, 2000), "city": r.choice(["x", "y"], 2000),
                  "stay": r.uniform(0, 20, 2000)}).to_csv(data, index=False)
    key = tmp_path / "k.bin"
    key.write_bytes(KEY)
    out = tmp_path / "m.csv"
    assert main(["mean", str(data), "--key", "city", "--value", "stay", "--bounds", "0",
                 "20", "--id", "p", "--epsilon", "1", "--domain", str(tmp_path / "dom.csv"),
                 "--seed-key-file", str(key), "-o", str(out)]) == 2  # no domain file yet
    (tmp_path / "dom.csv").write_text("city\nx\ny\n")
    assert main(["mean", str(data), "--key", "city", "--value", "stay", "--bounds", "0",
                 "20", "--id", "p", "--epsilon", "1", "--domain", str(tmp_path / "dom.csv"),
                 "--seed-key-file", str(key), "-o", str(out)]) == 0
    text = out.read_text().splitlines()
    for line in text[1:]:
        for cell in line.split(",")[1:]:
            digits = cell.replace("-", "").replace(".", "").lstrip("0")
            assert len(digits) <= 6, cell
    pytest.importorskip("pyarrow")
    full = tmp_path / "m.parquet"  # the same release (same key), written in full
    assert main(["mean", str(data), "--key", "city", "--value", "stay", "--bounds", "0",
                 "20", "--id", "p", "--epsilon", "1", "--domain", str(tmp_path / "dom.csv"),
                 "--seed-key-file", str(key), "-o", str(full)]) == 0
    exact, got = pd.read_parquet(full), pd.read_csv(out)
    assert (got["ci_low"] <= exact["ci_low"]).all() and (got["ci_high"] >= exact["ci_high"]).all()
    assert np.allclose(got["stay"], exact["stay"], rtol=1e-5)
    assert (exact["stay"] != got["stay"]).any()  # the Parquet keeps every digit


def test_halfwidth_is_labelled(visits_csv, tmp_path, capsys) -> None:
    """Item 8: a bare ``+-6``; now ``95% interval half-width 6 (each value within ...)``."""
    assert main(["count", str(visits_csv), "--key", "city", "--id", "person", "--epsilon",
                 "1", "--delta", "1e-6", "-o", str(tmp_path / "c.csv")]) == 0
    assert re.search(r"95% interval half-width \d+ \(each value within \+-\d+ of the truth",
                     capsys.readouterr().out)


def test_aggregate_prints_every_column_and_defines_utility_ratio() -> None:
    """Item 8: ``print(rel)`` shows all metric and interval columns (pandas' print elided
    10 of 14); the accuracy report defines "utility ratio"."""
    r = np.random.default_rng(1)
    df = pd.DataFrame({"person": r.integers(0, 3_000, 30_000),
                       "city": r.choice(["Lyon", "Nice", "Paris"], 30_000),
                       "stay": r.integers(0, 15, 30_000)})
    rel = tables.aggregate(df, by="city", privacy_id="person",
                           metrics=["count", "privacy_id_count", ("mean", "stay"),
                                    ("variance", "stay"), ("median", "stay")],
                           bounds={"stay": (0, 14)}, epsilon=1.0, delta=1e-6,
                           max_partitions=2, max_per_partition=3, rng=KEY)
    text = str(rel)
    head = text.splitlines()[0].split()
    assert head == list(rel.to_columns())
    assert len(head) == 15 and len(text.splitlines()) == 1 + len(rel)
    truth = df.groupby("city").size().to_dict()
    acc = str(rel["count"].accuracy(truth))
    assert "utility ratio" in acc and "root-mean-square truth / RMSE" in acc


# -- notebook views -----------------------------------------------------------------------

def test_releases_display_in_a_notebook_with_intervals_and_epsilon_delta() -> None:
    """Every release's ``_repr_html_``: the table, its intervals, the privacy spent in
    (epsilon, delta).  QuantileRelease and AggregateRelease had none; TableRelease showed
    the event's repr."""
    visits = _visits(6_000, 800)
    count = tables.count(visits["city"], visits["person"], epsilon=1.0, delta=1e-6, rng=KEY)
    h = count._repr_html_()
    assert "privacy spent: (epsilon=1, delta=1e-06)" in h and "<th>ci_low</th>" in h
    assert "interval half-width" in h and "EpsilonDelta" not in h
    quant = tables.quantile(visits["person"].to_numpy().astype(float), visits["city"],
                            visits["person"], q=0.5, bounds=(0.0, 2000.0), epsilon=1.0,
                            domain=["Lille", "Lyon", "Nice", "Paris"], rng=KEY)
    hq = quant._repr_html_()
    assert "<b>QuantileRelease</b>" in hq and "privacy spent: (epsilon=1, delta=0)" in hq
    assert "rank is within" in hq and hq.count("<tr>") == 5
    agg = tables.aggregate(visits, by="city", privacy_id="person",
                           metrics=["count", ("median", "person")],
                           bounds={"person": (0, 2000)}, epsilon=1.0,
                           domain=["Lille", "Lyon", "Nice", "Paris"], rng=KEY)
    ha = agg._repr_html_()
    assert "<b>AggregateRelease</b>" in ha and "privacy spent: (epsilon=1, delta=0)" in ha
    assert "<th>count_ci_low</th>" in ha and "<th>median_person_rank_error</th>" in ha
    td = tables.topdown(np.array([3, 1, 4, 1]), [np.zeros(4, int), np.array([0, 0, 1, 1]),
                                                 np.arange(4)], rho=0.5, rng=KEY)
    ht = td._repr_html_()
    assert "privacy spent: (epsilon=" in ht and "delta=1e-10), from rho = 0.5 zCDP" in ht
    assert "<th>released</th><th>measured</th><th>ci_low</th><th>ci_high</th>" in ht

