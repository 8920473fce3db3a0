"""dpfast's command line: ``dpfast COMMAND [options]`` (also ``python -m dpfast``).

Each command lives in its own module of this package and registers itself in
``COMMANDS`` (name -> module).  A command module defines

* ``HELP``: a one-line summary shown by ``dpfast --help``;
* ``add_arguments(parser)``: adds its options (every option has a ``help=``);
* ``run(args) -> int``: does the work and returns the exit code.

Conventions (tested with real subprocess calls):

* ``dpfast`` with no command prints the help and exits 0; ``--version`` prints it.
* Exit codes: 0 success, 1 the work failed or was refused (for example a budget
  overspend or a failed check), 2 bad usage or bad input.
* Errors are one line on stderr (``dpfast: error: ...``), never a traceback; a
  command raises :class:`CliError` (or ``ValueError``/``TypeError``/``OSError``
  for bad input) and ``main`` prints it.  Any other exception is a runtime error: one
  line naming its type but not its message (an engine's message may quote private
  values: run the release through the Python API to debug it), exit 1; a release that
  failed after its charge prints its fixed, data-free message.  Every message
  is printed escaped (:func:`dpfast.budget.names.shown`): no control character reaches
  the terminal.
* An output path is checked before anything is read or charged
  (:func:`dpfast.cli._io.check_paths`): never an input file (nor a link to one), nor the
  ledger; its directory must exist and be writable.
* Output files are written atomically (:func:`write_atomic`): nothing half-written; they
  get the permissions the user's umask gives a new file (ledgers stay private: the
  budget creates them 0600).
* A missing input file is reported first, before any other option is checked.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from dpfast.cli._files import CliError, check_writable, write_atomic  # noqa: F401 (public)

# name -> module; modules are imported only when their command runs or help is shown
COMMANDS: dict[str, str] = {
    "demo": "dpfast.cli.demo",
    "release": "dpfast.cli.release",
    "count": "dpfast.cli.count",
    "sum": "dpfast.cli.sum",
    "mean": "dpfast.cli.mean",
    "histogram": "dpfast.cli.histogram",
    "topdown": "dpfast.cli.topdown",
    "tune": "dpfast.cli.tune",
    "query": "dpfast.cli.query",
    "plan": "dpfast.cli.plan",
    "ledger": "dpfast.cli.ledger",
    "epsilon": "dpfast.cli.epsilon",
    "ldp": "dpfast.cli.ldp",
    "bench": "dpfast.cli.bench",
    "warmup": "dpfast.cli.warmup",
    "serve": "dpfast.cli.serve",
}


def _version() -> str:
    from dpfast import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpfast",
        description="dpfast: exact, secure differential-privacy noise at numpy speed.",
        epilog="Run 'dpfast COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"dpfast {_version()}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND")
    for name, modname in COMMANDS.items():
        module = importlib.import_module(modname)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 failed/refused, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 0
    try:
        path = getattr(args, "input", None)
        if isinstance(path, str) and not os.path.exists(path) and not _glob(path):
            raise CliError(f"input file not found: {path}")
        from dpfast.cli._io import check_paths

        check_paths(args, args.cmd)
        return int(args._run(args) or 0)
    except CliError as exc:
        _error(str(exc))
        return exc.code
    except (ValueError, TypeError, OSError) as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        print("dpfast: interrupted", file=sys.stderr)
        return 130
    except ImportError as exc:  # a missing optional dependency: its message says which
        _error(str(exc))
        return 1
    except Exception as exc:  # a runtime error: one line, never a traceback
        from dpfast._core import errors

        fixed = getattr(errors, "ReleaseFailedError", None)  # a fixed, data-free message
        if fixed is not None and isinstance(exc, fixed):
            _error(str(exc))
        else:
            _error(f"the command failed ({type(exc).__name__}); its message is not shown, "
                   "as it may quote private data")
        return 1


def _glob(path: str) -> bool:
    """``path`` is a glob pattern that matches files (``dpfast query 'data/*.parquet'``)."""
    import glob

    return glob.has_magic(path) and bool(glob.glob(path))


def _error(message: str) -> None:
    """Print ``dpfast: error: MESSAGE`` as one line, every control character escaped."""
    from dpfast.budget.names import shown

    print(f"dpfast: error: {shown(message, backslash=False)}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
