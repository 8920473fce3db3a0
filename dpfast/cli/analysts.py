"""``dpfast ledger analysts add FILE NAME --epsilon E`` / ``list FILE``: the analyst
registry of a budget ledger (the subcommand ``analysts`` of ``dpfast ledger``).

Only the budget's owner sets analysts' shares: ``add`` records analyst NAME and their
sub-budget (``--epsilon``, ``--delta``; without ``--epsilon`` a share of the whole budget)
in the ledger's hash chain (:meth:`dpfast.Budget.add_analyst`; a ledger is writable by its
owner only), and ``dpfast query --analyst NAME`` then charges that share.  A name the
ledger does not know is refused by every command that charges an analyst: naming an
analyst creates no budget.  ``add`` on a ledger that does not exist yet creates it with
``--budget-epsilon`` (and ``--budget-delta``), as the release commands do.  ``list``
prints the registered analysts and their shares.  Names are 1 to 64 letters, digits,
``.``, ``_``, ``@`` or ``-`` (:mod:`dpfast.budget.names`).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``analysts`` action to ``dpfast ledger``'s subparsers ``sub``."""
    what = "register analysts and their shares of the budget (the owner), or list them"
    p = sub.add_parser("analysts", help=what, description=what)
    acts = p.add_subparsers(dest="analysts_action", metavar="ACTION", required=True)
    add = acts.add_parser("add", help="register analyst NAME with a share of the budget",
                          description="register analyst NAME with a share of the budget")
    add.add_argument("file", metavar="FILE", help="path of the ledger (a SQLite file)")
    add.add_argument("name", metavar="NAME", help="the analyst (letters, digits, . _ @ -)")
    add.add_argument("--epsilon", type=float, default=None,
                     help="the analyst's epsilon (default: the whole budget's)")
    add.add_argument("--delta", type=float, default=None,
                     help="the analyst's delta (default: the budget's)")
    add.add_argument("--budget-epsilon", type=float, default=None,
                     help="epsilon of a NEW ledger (mixed accounting)")
    add.add_argument("--budget-delta", type=float, default=None,
                     help="delta of a NEW ledger (default 1e-5)")
    ls = acts.add_parser("list", help="print the registered analysts and their shares",
                         description="print the registered analysts and their shares")
    ls.add_argument("file", metavar="FILE", help="path of the ledger (a SQLite file)")


def run(args: argparse.Namespace) -> int:
    import os

    import dpfast
    from dpfast.budget.names import check_name
    from dpfast.cli import CliError
    from dpfast.cli._io import open_budget

    if args.analysts_action == "list":
        if not os.path.exists(args.file):
            raise CliError(f"ledger not found: {args.file}")
        budget = dpfast.Budget.from_ledger(args.file)
        try:
            shares = budget.analysts()
        finally:
            budget.close()
        print(f"ledger {args.file}: {len(shares)} registered analyst"
              f"{'' if len(shares) == 1 else 's'}")
        for name, (eps, dlt) in shares.items():
            print(f"{name}  epsilon {eps:g}, delta {dlt:g}")
        return 0
    check_name(args.name, "NAME")
    args.ledger = args.file
    opened = open_budget(args)
    budget = opened.budget
    try:
        before = budget.analysts()
        analyst = budget.add_analyst(args.name, epsilon=args.epsilon, delta=args.delta)
        eps, dlt = analyst.sub_budget
    except BaseException:
        opened.discard_if_new()
        raise
    budget.close()
    if opened.note:
        print(opened.note)
    again = " (already registered with this share)" if args.name in before else ""
    print(f"analyst {args.name}: epsilon {eps:g}, delta {dlt:g} of the budget "
          f"({budget.epsilon:g}, {budget.delta:g}){again}")
    return 0
