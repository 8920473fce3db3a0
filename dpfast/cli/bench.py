"""``dpfast bench``: the performance-regression gate (ratios against same-run baselines)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from typing import cast

HELP = "run the speed benchmarks as ratios against same-run baselines; gate on a baseline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="smaller inputs and 5 rounds: under a minute on 2 cores")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument("--check", metavar="BASELINE",
                        help="compare with the baseline of this host's SIMD level in a "
                             "baseline JSON; exit 1 if a ratio falls more than its tolerance "
                             "below it (a host with no baseline of its level and core count: "
                             "a warning on the first line, exit 0)")
    parser.add_argument("--tolerance", type=float, default=0.25,
                        help="allowed relative drop below the baseline for entries whose "
                             "baseline has no tolerance of its own (default: 0.25)")
    parser.add_argument("--only", metavar="NAMES",
                        help="comma-separated benchmark names (default: all)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed rounds per benchmark (at least 5; default 5 quick, 9 full; "
                        "the thread-scaling entries take at least 11)")
    parser.add_argument("--save-baseline", metavar="FILE",
                        help="run the suite --runs times and write a baseline: the lowest "
                             "median ratio per entry, with a tolerance from the run-to-run "
                             "spread, stored for this host's SIMD level (an existing FILE "
                             "keeps its other levels)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs for --save-baseline (default: 3)")
    parser.add_argument("--results", metavar="FILE",
                        help="check results saved earlier with --json instead of running")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _write_text(text: str) -> Callable[[str], None]:
    """A :func:`dpfast.cli.write_atomic` callback writing ``text`` (and closing the file)."""
    def write(path: str) -> None:
        with open(path, "w") as fh:
            fh.write(text)

    return write


def run(args: argparse.Namespace) -> int:
    from dpfast.cli import CliError, write_atomic
    from dpfast.perf import (
        ENTRIES,
        baseline_for,
        check,
        confirmed,
        load_json,
        results_from_json,
        results_to_json,
        run_suite,
        with_section,
    )

    if args.list:
        for e in ENTRIES:
            print(f"{e.name:24s} {e.what}  vs  {e.baseline}")
        return 0
    if not 0 <= args.tolerance < 1:
        raise CliError("--tolerance must be in [0, 1)")
    if args.rounds is not None and args.rounds < 5:
        raise CliError("--rounds must be at least 5")
    if args.runs < 2 and args.save_baseline:
        raise CliError("--runs must be at least 2 (the tolerance comes from their spread)")
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    for opt, path in (("--check", args.check), ("--results", args.results)):
        if path and not os.path.isfile(path):
            raise CliError(f"{opt}: file not found: {path}")
    try:
        baseline = load_json(args.check) if args.check else None
    except ValueError as exc:
        raise CliError(f"--check: {exc}") from None
    if baseline is not None and baseline_for(baseline)[0] is None:
        # said first, before any timing: a foreign host's ratios are shown, never gated
        print(f"warning: not gated, the host differs from the baseline {args.check}: "
              f"{baseline_for(baseline)[1]}; ratios are shown, exit status 0", flush=True)

    def progress(name: str) -> None:
        print(f"  timing {name} ...", file=sys.stderr, flush=True)

    if args.results:
        if args.save_baseline:
            raise CliError("--results and --save-baseline cannot be combined")
        all_runs = [results_from_json(load_json(args.results))]
    else:
        runs = args.runs if args.save_baseline else 1
        all_runs = [run_suite(ENTRIES, quick=args.quick, rounds=args.rounds, only=only,
                              progress=progress) for _ in range(runs)]
    results = all_runs[-1]
    if args.save_baseline:
        data = results_to_json(results, quick=args.quick)
        for i, r in enumerate(results):
            medians = [m for run_ in all_runs if (m := run_[i].ratio) is not None]
            if not medians:
                continue
            low, high = min(medians), max(medians)
            spread = (high - low) / statistics.median(medians)
            within = max(run_[i].spread for run_ in all_runs)
            entry = cast("dict[str, dict[str, object]]", data["entries"])[r.name]
            entry["ratio"] = low
            entry["run_to_run_spread"] = spread
            # three times the spread seen between runs (and half the spread inside a run)
            entry["tolerance"] = round(min(0.6, max(args.tolerance, 3 * spread, within / 2)),
                                       3)
        try:  # an existing baseline file keeps its other SIMD levels' baselines
            old = load_json(args.save_baseline) if os.path.isfile(args.save_baseline) else None
        except ValueError:
            old = None
        text = json.dumps(with_section(old, data), indent=2) + "\n"
        write_atomic(args.save_baseline, _write_text(text))

    verdicts, warnings = (check(results, baseline, tolerance=args.tolerance)
                          if baseline is not None else ([], []))
    failing = [v.name for v in verdicts if not v.ok]
    if failing and not args.results and not args.save_baseline and baseline is not None:
        # a failing entry is timed once more: a regression fails both timings (both shown)
        print(f"re-timing {len(failing)} benchmark(s) below the baseline once: "
              f"{', '.join(failing)}", flush=True)
        again = run_suite(ENTRIES, quick=args.quick, rounds=args.rounds, only=failing,
                          progress=progress)
        verdicts = confirmed(verdicts, check(again, baseline, tolerance=args.tolerance)[0])
        retimed = {r.name: r for r in again}
        results = [retimed.get(r.name, r) for r in results]
    by_name = {v.name: v for v in verdicts}
    print(f"{'benchmark':24s} {'ratio':>7s} {'baseline':>9s}  verdict   (ratio = baseline "
          "time / dpfast time; higher is better)")
    for r in results:
        v = by_name.get(r.name)
        verdict = v.text if v else (r.note or "")
        base = v.baseline_ratio if v else None
        print(f"{r.name:24s} {_fmt(r.ratio):>7s} {_fmt(base):>9s}  {verdict}")
        print(f"{'':24s} {r.what} vs {r.baseline} (spread {r.spread:.0%}, "
              f"{len(r.ratios)} rounds)")
    for w in warnings:
        print(f"warning: {w}")
    if args.json and not args.results:
        text = json.dumps(results_to_json(results, quick=args.quick), indent=2) + "\n"
        write_atomic(args.json, _write_text(text))
    if any(not v.ok for v in verdicts):
        print("dpfast bench: performance regression against the baseline", file=sys.stderr)
        return 1
    return 0
