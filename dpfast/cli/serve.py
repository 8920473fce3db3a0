"""``dpfast serve``: run the HTTP service (:mod:`dpfast.serve`), check its configuration,
or make and revoke its tokens.

Examples::

    dpfast serve check examples/serve/config.toml        # validate, start nothing
    dpfast serve token examples/serve/config.toml --analyst alice   # prints a token once
    dpfast serve token examples/serve/config.toml --admin
    dpfast serve token examples/serve/config.toml --collection apps  # ingestion token
    dpfast serve token examples/serve/config.toml --analyst alice --revoke
    dpfast serve examples/serve/config.toml --workers 2

Starting (and ``token``) first performs the budget owner's acts of the
configuration: the ledger is created or reopened (with the configured definition), bound
to the privacy unit, and the configured analysts' shares are registered (once).  A token
is printed once and stored only as its hash; an analyst token needs an analyst of the
configuration.  ``check`` makes the same checks and writes nothing (an existing ledger is
read, a missing one is not created).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from dpfast.cli import CliError

if TYPE_CHECKING:
    from dpfast.serve.config import Config

HELP = "run the HTTP service (dpfast serve CONFIG), check a config, or make tokens"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="CONFIG|check|token",
                        help="the configuration file to serve, or 'check' / 'token' "
                             "followed by it")
    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help="the configuration file (after 'check' or 'token')")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default: server.workers of the config)")
    parser.add_argument("--host", default=None, help="override server.host")
    parser.add_argument("--port", type=int, default=None, help="override server.port")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--analyst", default=None, metavar="NAME",
                     help="token: an analyst's token (an analyst of the config)")
    who.add_argument("--admin", action="store_true", help="token: the admin's token")
    who.add_argument("--collection", default=None, metavar="NAME",
                     help="token: the ingestion token of a local-DP collection")
    parser.add_argument("--revoke", action="store_true",
                        help="token: revoke every token of that analyst / admin / collection")


def _config(path: str | None) -> Config:
    from dpfast.serve.config import load

    if path is None:
        raise CliError("give the configuration file: dpfast serve check|token CONFIG")
    return load(path)


def run(args: argparse.Namespace) -> int:
    if args.target in ("check", "token"):
        cfg = _config(args.config)
    else:
        if args.config is not None:
            raise CliError(f"unexpected argument {args.config!r} (dpfast serve CONFIG, or "
                           "dpfast serve check|token CONFIG)")
        cfg = _config(args.target)
    if args.target != "token" and (args.analyst or args.admin or args.collection
                                   or args.revoke):
        raise CliError("--analyst, --admin, --collection and --revoke are for "
                       "'dpfast serve token CONFIG'")
    from dpfast.serve.service import prepare

    if args.target == "check":
        prepare(cfg, dry_run=True)
        return _check(cfg)
    prepare(cfg)
    if args.target == "token":
        return _token(cfg, args)
    return _serve(cfg, args)


def _check(cfg: Config) -> int:
    from dpfast.serve.service import make_session

    described = []
    for t in cfg.tables:  # every private table opened (its columns, bounds, domains, unit)
        session = make_session(cfg, t, in_memory=True)
        try:
            described.append(f"{session._source.name} ({len(list(session._source.columns))} "
                             f"columns, {os.path.basename(t.source)})")
        finally:
            session.close()
    c = cfg
    print(f"ok: {c.path}: private table{'s' if len(described) > 1 else ''} "
          f"{', '.join(described)}, privacy unit {c.privacy_unit or 'one row'}; budget "
          f"epsilon {c.epsilon:g}, delta {c.delta:g}, ledger {c.ledger}; "
          f"{len(c.analysts)} analysts, {len(c.collections)} collections; "
          f"would listen on {c.host}:{c.port}")
    return 0


def _token(cfg: Config, args: argparse.Namespace) -> int:
    from dpfast.serve import tokens
    from dpfast.serve.store import StateStore

    if args.analyst is not None:
        if args.analyst not in cfg.analysts:
            raise CliError(f"analyst {args.analyst!r} is not in the configuration's "
                           "[analysts] (its owner adds them and their share there)")
        kind, name = "analyst", args.analyst
    elif args.collection is not None:
        if args.collection not in cfg.collections:
            raise CliError(f"collection {args.collection!r} is not in the configuration's "
                           "[collections]")
        kind, name = "ingest", args.collection
    elif args.admin:
        kind, name = "admin", "admin"
    else:
        raise CliError("token: give --analyst NAME, --admin or --collection NAME")
    store = StateStore(cfg.state)
    try:
        if args.revoke:
            n = tokens.revoke(store, kind, name)
            print(f"revoked {n} token{'s' if n != 1 else ''} of {kind} {name}")
            return 0
        token = tokens.make_token(store, kind, name)
    finally:
        store.close()
    print(token)
    print(f"the {kind} token of {name}: shown once, stored only as its hash; keep it secret",
          file=sys.stderr)
    return 0


def _serve(cfg: Config, args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError("dpfast serve needs uvicorn and starlette: "
                          "pip install 'dpfast[serve]'") from exc
    from dpfast.serve.app import ENV

    workers = args.workers if args.workers is not None else cfg.workers
    if workers < 1:
        raise CliError(f"--workers must be >= 1, got {workers}")
    os.environ[ENV] = cfg.path
    host = args.host or cfg.host
    port = cfg.port if args.port is None else args.port
    print(f"dpfast serve: {cfg.path} on {'https' if cfg.tls_certfile else 'http'}://"
          f"{host}:{port} ({workers} worker{'s' if workers > 1 else ''})", file=sys.stderr)
    uvicorn.run("dpfast.serve.app:create_app", factory=True, host=host, port=port,
                workers=workers, ssl_certfile=cfg.tls_certfile,
                ssl_keyfile=cfg.tls_keyfile, log_level="warning",
                access_log=False)
    return 0
