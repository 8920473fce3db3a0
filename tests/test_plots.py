"""Pictures and notebook views: TableRelease.plot, TopDownRelease.plot, Budget.plot,
``dpfast ledger plot`` and the ``_repr_html_`` views.  Rendered to PNG files (Agg) and
checked: labels and titles on the Axes, sorted keys, the PNG's size and that it is not
blank."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import dpfast
from dpfast import tables
from tests.helpers import KEY

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _png(ax, path) -> tuple[int, int]:
    """Save ``ax``'s figure; check the file is a PNG of a picture (not blank)."""
    ax.figure.savefig(path, format="png", dpi=80)
    plt.close(ax.figure)
    return _check_png(path)


def _check_png(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 300 and height >= 200
    assert len(data) > 8_000  # axes, labels and points; a blank canvas compresses to ~2 kB
    img = plt.imread(str(path))
    assert img.std() > 0.05  # not a uniform image
    return width, height


def test_table_release_plot_sorted_keys_with_error_bars(tmp_path) -> None:
    city = np.array(["Paris", "Lyon", "Nice", "Lille"] * 50)
    rel = tables.count(city, epsilon=1.0, domain=["Paris", "Nice", "Lyon", "Lille"], rng=KEY)
    ax = rel.plot()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Lille", "Lyon", "Nice", "Paris"]
    assert ax.get_ylabel() == "count" and ax.get_xlabel() == "key"
    assert ax.get_title() == "count per key (4 keys)"
    assert "95% interval" in ax.get_legend().get_texts()[0].get_text()
    line = ax.lines[0]
    np.testing.assert_array_equal(line.get_ydata(), rel.to_pandas().sort_index()["count"])
    _png(ax, tmp_path / "table.png")


def test_mean_plot_uses_the_value_name_and_given_axes(tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"city": ["a", "b", "c"] * 40, "stay": np.arange(120) % 7})
    rel = tables.mean(df.stay.astype(float), df.city, bounds=(0.0, 6.0), epsilon=2.0,
                      domain=["c", "a", "b"], rng=KEY)
    fig, ax = plt.subplots()
    out = rel.plot(0.1, ax=ax)
    assert out is ax and ax.get_xlabel() == "city" and ax.get_ylabel() == "mean"
    assert "90% interval" in ax.get_legend().get_texts()[0].get_text()
    _png(ax, tmp_path / "mean.png")


def test_topdown_plot_error_by_level(tmp_path) -> None:
    pop = np.array([12, 0, 40, 7, 3, 0, 5])
    levels = [np.zeros(7, int), np.array([0, 0, 0, 1, 1, 1, 1]),
              np.array([0, 0, 1, 2, 2, 3, 2]), np.arange(7)]
    r = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4], rng=KEY)
    ax = r.plot()
    assert ax.get_xlabel() == "level (coarse to fine)"
    assert ax.get_title().startswith("TopDown: error by level")
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "0\n(1 units)"
    assert len(ax.patches) == 2 * 4  # two bars per level
    truth = [np.bincount(lv, weights=pop).astype(int) for lv in levels]
    ax2 = r.plot(truth=truth)
    assert len(ax2.patches) == 3 * 4
    _png(ax, tmp_path / "topdown.png")
    plt.close(ax2.figure)


def test_budget_plot_by_analyst(tmp_path) -> None:
    """Issue 41 item 5: the plot shows epsilon spent (not the number of charges) against
    the cap, per analyst, with dates on the time axis."""
    import matplotlib.dates as mdates

    b = dpfast.Budget(3.0, accounting="basic", ledger=str(tmp_path / "b.sqlite"))
    for analyst, eps in (("ana", 0.5), ("bo", 1.0), ("ana", 0.5)):
        b.spend(dpfast.events.Epsilon(eps), analyst=analyst, note="q")
    with pytest.raises(dpfast.BudgetExceededError):
        b.spend(dpfast.events.Epsilon(2.0), analyst="bo")
    ax = b.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["all analysts", "analyst ana", "analyst bo", "refused (1)",
                      "budget epsilon 3"]
    assert ax.get_ylabel() == "epsilon spent"
    assert ax.get_xlabel() == "time (UTC)" and "b.sqlite" in ax.get_title()
    assert list(ax.lines[0].get_ydata()) == [0.0, 0.5, 1.5, 2.0]
    assert list(ax.lines[1].get_ydata()) == [0.0, 0.5, 1.0]
    assert ax.lines[0].get_ydata()[-1] == b.spent().epsilon
    cap = [ln for ln in ax.lines if ln.get_label() == "budget epsilon 3"]
    assert len(cap) == 1 and list(cap[0].get_ydata()) == [3.0, 3.0]
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    _png(ax, tmp_path / "budget.png")
    html = b._repr_html_()
    assert "<b>Budget</b>: epsilon 3" in html and "spent: epsilon 2" in html
    assert "<td>ana</td>" in html and "delta -0" not in html
    b.close()


def test_budget_plot_mixed_gaussian_epsilon_matches_the_ledger(tmp_path) -> None:
    """Issue 41 item 5: under a (default, mixed) budget with delta, the plotted curve is the
    epsilon the accounting certifies after each charge (Budget.spent() then), the analyst's
    curve their own, and the sub-budget is drawn as its cap."""
    b = dpfast.Budget(2.0, 1e-6, ledger=str(tmp_path / "m.sqlite"))
    b.add_analyst("ana", epsilon=1.0)
    spent = []
    for event, who in ((dpfast.events.Epsilon(0.25), "ana"), (dpfast.events.Gaussian(8.0), ""),
                       (dpfast.events.EpsilonDelta(0.25, 1e-7), "ana")):
        b.spend(event, analyst=who)
        spent.append(b.spent().epsilon)
    ax = b.plot()
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [0.0, *spent])
    ana = ax.lines[1]
    assert ana.get_label() == "analyst ana"
    assert list(ana.get_ydata()) == [0.0, 0.25, 0.5]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ana's sub-budget epsilon 1" in labels and "budget epsilon 2" in labels
    assert ax.get_ylabel() == "epsilon spent (at delta=1e-06)"
    _png(ax, tmp_path / "mixed.png")
    b.close()


def test_ledger_plot_command(tmp_path, capsys) -> None:
    """``dpfast ledger plot`` draws epsilon (converted from zCDP at the budget's delta)."""
    from dpfast.cli import main

    path = tmp_path / "l.sqlite"
    with dpfast.Budget(1.0, ledger=str(path), accounting="zcdp", delta=1e-6) as b:
        b.spend(dpfast.events.Zcdp(0.005), note="a")
        first = b.spent().epsilon
        b.spend(dpfast.events.Zcdp(0.004), note="b")
        second = b.spent().epsilon
    shown = []
    real = plt.Figure.savefig

    def keep(fig, *a, **k):
        shown.append(list(fig.axes[0].lines[0].get_ydata()))
        return real(fig, *a, **k)

    plt.Figure.savefig = keep
    try:
        assert main(["ledger", "plot", str(path), "-o", str(tmp_path / "s.png")]) == 0
    finally:
        plt.Figure.savefig = real
    assert shown == [[0.0, first, second]] and 0 < first < second < 1.0
    assert "plot of 2 charges written to" in capsys.readouterr().out
    _check_png(tmp_path / "s.png")
    assert main(["ledger", "plot", str(path), "-o", str(tmp_path / "s.jpg")]) == 2
    assert ".png" in capsys.readouterr().err


def test_html_views() -> None:
    rel = tables.count(np.array(["a", "b", "<c>"] * 30), epsilon=1.0,
                       domain=["a", "b", "<c>"], rng=KEY)
    html = rel._repr_html_()
    assert html.startswith("<div><b>TableRelease</b>: count of 3 keys")
    assert "&lt;c&gt;" in html and "<c>" not in html  # escaped
    assert html.count("<tr>") == 4 and "<th>ci_low</th>" in html
    many = tables.count(np.arange(100) % 50, epsilon=1.0, domain=np.arange(50), rng=KEY)
    assert "30 more rows" in many._repr_html_()
    pop = np.array([3, 1, 4, 1])
    r = tables.topdown(pop, [np.zeros(4, int), np.array([0, 0, 1, 1]), np.arange(4)],
                       rho=0.5, rng=KEY)
    assert "TopDown release: 3 levels" in r._repr_html_()


def test_plot_without_matplotlib_says_what_to_install(monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real(name, *args, **kwargs)

    rel = tables.count(np.array([1, 2, 2]), epsilon=1.0, domain=[1, 2], rng=KEY)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"pip install 'dpfast\[plot\]'"):
        rel.plot()
