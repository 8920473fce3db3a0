"""Run many short Python programs as separate processes without paying the interpreter's
start and dpfast's imports for each one; and the CLI's ``main`` in the test process.

``python tests/forkrun.py`` (started by :func:`run_forked` with the environment the
programs need) imports the ``preload`` modules once, then forks one child per job, one
after the other: the child changes to the job's directory, points its file descriptors 1
and 2 at files of its own, and runs the job as ``python -c CODE`` or ``python -m MODULE
ARGS...`` would (a ``__main__`` namespace, ``sys.argv`` as the interpreter sets it,
``SystemExit`` and an uncaught exception turned into the exit status and traceback the
interpreter gives, the exit handlers the job registered run).  Each job is a process of
its own: nothing one job does in memory (a module imported, a kernel loaded, a global
changed) is seen by the next, and the parent never runs a job itself.  What a child
shares with the parent is what the parent imported before forking (``preload``).

:func:`cli_here` runs ``dpfast ARGV`` through :func:`dpfast.cli.main` in the calling
process, for read-only commands checked for what they print.

The tests that use either keep at least one true ``subprocess`` run of the same kind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from typing import Any

SCRIPT = os.path.abspath(__file__)


def run_forked(jobs: list[dict[str, Any]], *, preload: list[str], env: dict[str, str],
               cwd: str, timeout: float) -> list[dict[str, Any]]:
    """Each job's ``{"returncode", "stdout", "stderr"}``, in order.

    A job is ``{"code": str}`` (``python -c``) or ``{"module": str, "args": [str, ...]}``
    (``python -m``), with an optional ``"cwd"`` (else ``cwd``).  ``preload``: modules the
    parent imports before the first fork (never ``dpfast`` where a job checks what its own
    import does).
    """
    spec = json.dumps({"jobs": jobs, "preload": preload})
    done = subprocess.run([sys.executable, SCRIPT], input=spec, env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"forkrun failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


ROOT = os.path.dirname(os.path.dirname(SCRIPT))


def forked_cli(argvs: list[list[str]], *, cwd: str, env: dict[str, str] | None = None,
               preload: tuple[str, ...] = ("dpfast", "dpfast.cli"),
               timeout: float = 1200) -> list[subprocess.CompletedProcess[str]]:
    """``python -m dpfast ARGV`` for each of ``argvs``, one after the other in ``cwd``, each
    a forked process of its own (:func:`run_forked`); ``env`` defaults to this process's
    environment with this checkout on ``PYTHONPATH``."""
    if env is None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    done = run_forked([{"module": "dpfast", "args": list(a)} for a in argvs],
                      preload=list(preload), env=env, cwd=cwd, timeout=timeout)
    return [subprocess.CompletedProcess(["dpfast", *a], r["returncode"], r["stdout"],
                                        r["stderr"]) for a, r in zip(argvs, done, strict=True)]


def cli_here(*argv: str) -> subprocess.CompletedProcess[str]:
    """``dpfast ARGV`` through :func:`dpfast.cli.main` in this process, stdout and stderr
    captured, the exit status as the process's would be: for read-only commands (``ledger
    show`` / ``verify``) whose test is about what they report, not about the process."""
    import contextlib
    import io

    from dpfast.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return subprocess.CompletedProcess(["dpfast", *argv], code, out.getvalue(),
                                       err.getvalue())


def _child(job: dict[str, Any], out: str, err: str) -> None:
    """Run ``job`` in this (forked) process and leave with its exit status."""
    import atexit

    atexit._clear()  # the parent's exit handlers are the parent's (its files, its pools)
    code = 1
    try:
        os.chdir(job.get("cwd") or os.getcwd())
        if "code" not in job:
            sys.path[0] = os.getcwd()  # as under ``python -m``
        for fd, name in ((1, out), (2, err)):
            target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        try:
            if "code" in job:
                sys.argv = ["-c"]
                exec(compile(job["code"], "<string>", "exec"), {"__name__": "__main__"})
            else:
                import runpy

                sys.argv = ["-m", *job["args"]]
                runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        try:
            atexit._run_exitfuncs()  # the job's own, as the interpreter runs them at exit
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main() -> None:
    spec = json.loads(sys.stdin.read())
    sys.path[0] = ""  # as under ``python -c``: not this file's directory
    for name in spec["preload"]:
        __import__(name)
    results = []
    tmp = tempfile.mkdtemp(prefix="forkrun-")
    try:
        for i, job in enumerate(spec["jobs"]):
            out, err = os.path.join(tmp, f"{i}.out"), os.path.join(tmp, f"{i}.err")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(job, out, err)
            _, status = os.waitpid(pid, 0)
            with open(out) as fo, open(err) as fe:
                results.append({"returncode": os.waitstatus_to_exitcode(status),
                                "stdout": fo.read(), "stderr": fe.read()})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
