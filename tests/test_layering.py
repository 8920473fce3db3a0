"""Imports flow downward only (docs/design.md, "Layers").

Every subpackage (or top-level module) of dpfast gets one rank; a module may import dpfast
modules of a strictly lower rank, or modules of its own package at the same rank.  The
compiled ``dpfast._cffi`` may be imported by ``dpfast._native`` alone, kernels import
nothing but numpy, numba, math and other kernels, ``dpfast._core`` imports nothing else of
dpfast, and the events import only the standard-library part of ``dpfast._core``.  Every
rank names a module that exists (a stale rank fails :func:`test_every_rank_exists`).  Inside
a subpackage, where the ranks are equal, the import-time graph must be acyclic
(:func:`test_no_import_cycle_inside_a_package`).
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Callable

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "dpfast"

# lower number = lower layer
RANKS: list[tuple[str, int]] = [
    ("dpfast._core", 0),  # validation, directed rounding, DP conversions, error types
    ("dpfast._cffi", 0),
    ("dpfast._kernels", 1),
    ("dpfast.accounting.events", 1),
    ("dpfast.accounting._event_base", 1),  # the events' base class and field checks
    ("dpfast.guidelines", 1),  # data and a warning helper; imports nothing of dpfast
    ("dpfast._parallel", 0),  # threads, fork safety, compile notice: imports nothing of dpfast
    ("dpfast._native", 0),  # the C kernels (below the numba kernels, which call them)
    ("dpfast.noise._exact", 2),  # exact continuation (pure Python, imports nothing)
    ("dpfast.random._streams", 3),  # stream ids, stream sources (C keystream)
    ("dpfast.noise._envelope", 3),
    ("dpfast.noise._kernel_table", 3),  # the envelope's encoding for the table kernel
    ("dpfast.noise._params", 4),  # the samplers' drivers sit below the generators
    ("dpfast.noise._chunks", 4),
    ("dpfast.noise._drive", 4),
    ("dpfast.noise._addressed", 5),  # addressed streams: noise named by call id and cell/key
    ("dpfast.random", 5),
    ("dpfast.noise", 6),
    ("dpfast.mechanisms", 7),
    ("dpfast.selection", 7),
    ("dpfast.local", 7),
    ("dpfast.accounting", 8),
    ("dpfast.budget", 9),
    ("dpfast.tables", 10),  # the release layer (count/sum/mean, bounding, selection, topdown,
    #                         numpy-style histograms, error measures)
    ("dpfast.planning", 10),  # accuracy-first calibration (uses the mechanisms)
    ("dpfast.dask", 11),  # scale-out, built on dpfast.tables
    ("dpfast.session", 12),  # sessions over a data store: tables, budget, dask, SQL
    ("dpfast", 12),  # the package __init__ re-exports lazily (imports at run time only)
    ("dpfast.perf", 13),  # the performance gate times the public facade
    ("dpfast.testing", 13),  # the neighbour audit runs every release path; nothing imports it
    ("dpfast.serve", 13),  # the HTTP service: sessions, budget and local-DP behind HTTP
    ("dpfast.cli", 14),  # the command line uses the public facade
    ("dpfast.__main__", 15),
    ("dpfast.compat", 14),  # drop-in backends for diffprivlib / PipelineDP (public facade)
]

# ranks announced for modules that other work in flight is adding; exempt from
# test_every_rank_exists until they land (then remove them from this set)
PENDING: set[str] = set()

# llvmlite: numba's own IR builder (the intrinsic that calls the C ChaCha20 in chacha.py)
KERNEL_ALLOWED = {"numpy", "numba", "llvmlite", "math", "__future__"}
# the launch guard (a lock around parallel launches on a layer that is not thread-safe)
KERNEL_ALLOWED_EXTRA = {"dpfast._kernels._launch": {"threading", "typing"}}
# the kernels package's __init__ (no kernel code) installs the compile notice and registers
# the C symbols the kernels call by name before any kernel module loads: it alone may
# import dpfast._parallel (stdlib + a lazy numba import) and dpfast._native (the C code)
KERNEL_INIT_MAY_IMPORT = {"dpfast._parallel", "dpfast._native"}
# what the events (imported by every mechanism, kept cheap) may import of dpfast._core
EVENTS_MAY_IMPORT = {"dpfast._core.validate", "dpfast._core.rounding", "dpfast._core.errors",
                     "dpfast.accounting._event_base"}
# the modules the events rule applies to (the events and their base)
EVENTS_MODULES = ("dpfast.accounting.events", "dpfast.accounting._event_base")


def rank_of(module: str) -> tuple[str, int]:
    best = None
    for prefix, rank in RANKS:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, rank)
    assert best is not None, f"no layer assigned to {module}; add it to RANKS"
    return best


def _is_module(name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "dpfast":
        return False
    base = ROOT.joinpath(*parts[1:])
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _from_target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from X import ...`` in ``package`` names (relative resolved)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if node.module is None or target in ("dpfast", "dpfast.accounting", "dpfast._kernels"):
                # "from . import x" / "from dpfast import x": each name is a submodule
                found.extend(f"{target}.{alias.name}" for alias in node.names)
            else:
                # "from dpfast.noise import _drive": a name that is a submodule is imported
                # as that submodule (its own rank), other names come from the package
                subs = [a.name for a in node.names if _is_module(f"{target}.{a.name}")]
                found.extend(f"{target}.{name}" for name in subs)
                if len(subs) < len(node.names):
                    found.append(target)
    return found


SOURCES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_imports_flow_downward(path: pathlib.Path) -> None:
    mod = module_name(path)
    if mod == "dpfast":
        return  # lazy re-export hub; imports by name at run time only
    my_prefix, my_rank = rank_of(mod)
    for target in imports_of(path):
        top = target.split(".")[0]
        if mod.startswith("dpfast._kernels"):
            allowed = KERNEL_ALLOWED | KERNEL_ALLOWED_EXTRA.get(mod, set())
            assert top in allowed or target.startswith("dpfast._kernels") or (
                mod == "dpfast._kernels" and target in KERNEL_INIT_MAY_IMPORT), (
                f"kernel {mod} imports {target}"
            )
        if top != "dpfast":
            continue
        if target == "dpfast._cffi" or target.startswith("dpfast._cffi."):
            assert mod == "dpfast._native", f"{mod} imports the compiled module"
            continue
        t_prefix, t_rank = rank_of(target)
        if mod.startswith(EVENTS_MODULES):
            assert target in EVENTS_MAY_IMPORT, (
                f"events import only the standard-library part of dpfast._core: "
                f"{mod} imports {target}"
            )
        if mod.startswith("dpfast._core"):
            assert target.startswith("dpfast._core"), f"{mod} imports {target}"
        parent = mod.rpartition(".")[0]
        same_package = t_prefix == my_prefix or (
            my_rank == t_rank and parent != "dpfast" and target.rpartition(".")[0] == parent
        )
        assert t_rank < my_rank or same_package, (
            f"{mod} (layer {my_rank}) imports {target} (layer {t_rank}): imports flow downward"
        )


@pytest.mark.parametrize("prefix", [p for p, _ in RANKS if p != "dpfast._cffi"])
def test_every_rank_names_an_existing_module(prefix: str) -> None:
    assert _is_module(prefix), f"RANKS names {prefix}, which does not exist"


def test_mechanisms_never_import_accountants() -> None:
    checked = 0
    for name in ("mechanisms", "selection", "local"):
        paths = [ROOT / f"{name}.py"] + sorted((ROOT / name).rglob("*.py"))
        for path in paths:
            if not path.exists():
                continue
            checked += 1
            for target in imports_of(path):
                if target.startswith("dpfast.accounting"):
                    assert target == "dpfast.accounting.events", f"{path.name} imports {target}"
    assert checked >= 3, "no mechanism module found: update the names above"


def _exists(module: str) -> bool:
    rel = pathlib.Path(*module.split(".")[1:]) if module != "dpfast" else pathlib.Path()
    base = ROOT / rel
    return base.is_dir() or base.with_suffix(".py").exists() or any(
        base.parent.glob(base.name + ".*.so")
    ) or (module == "dpfast._cffi")


@pytest.mark.parametrize("prefix", [p for p, _ in RANKS])
def test_every_rank_exists(prefix: str) -> None:
    if prefix in PENDING:
        return
    assert _exists(prefix), f"RANKS names {prefix}, which does not exist: remove or rename it"


def test_one_rank_per_name() -> None:
    names = [p for p, _ in RANKS]
    assert len(names) == len(set(names)), "a module or subpackage is ranked twice"


def test_events_and_core_validation_stay_standard_library() -> None:
    for path in [*sorted((ROOT / "_core").glob("*.py")), ROOT / "accounting" / "events.py",
                 ROOT / "accounting" / "_event_base.py"]:
        if path.name in ("conversions.py", "idhash.py", "scratch.py"):
            # numpy (and hashlib / threading); imported explicitly by the accountants
            # (conversions) and by the release layer and Dask (the ids' canonical hashes,
            # the scratch pages): never by the events
            continue
        for target in imports_of(path):
            top = target.split(".")[0]
            assert top in {"__future__", "dpfast"} or top in _STDLIB, f"{path.name}: {target}"


_STDLIB = {"abc", "collections", "dataclasses", "fractions", "importlib", "math", "numbers",
           "operator", "struct", "sys", "types", "typing"}


def test_stale_ranks_are_detected() -> None:
    assert _exists("dpfast._core") and _exists("dpfast.noise") and _exists("dpfast._cffi")
    assert not _exists("dpfast.no_such_module")
    assert not _exists("dpfast._core.no_such_module")


# --------------------------------------------------------------------------- inside a package
# Within one subpackage the modules share a rank, so the rank table cannot see a cycle
# between two of them (a imports b imports a), which fails or half-initialises depending on
# which is imported first.  The import graph of what each module executes at import time
# (its body, not function bodies or TYPE_CHECKING blocks) must be acyclic.

CYCLE_CHECKED = ["dpfast.local", "dpfast.selection", "dpfast.tables", "dpfast.budget",
                 "dpfast.mechanisms", "dpfast.accounting", "dpfast.cli", "dpfast._core"]


def import_time_imports(path: pathlib.Path) -> list[str]:
    """The dpfast modules that executing ``path``'s body imports (``from pkg import sub``
    names the submodule; any other name imports ``pkg`` itself)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: list[str] = []

    def visit(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, ast.Import):
                found.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _from_target(node, package)
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    found.append(sub if sub.startswith("dpfast") and _is_module(sub) else target)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for h in node.handlers:
                    visit(h.body)
            elif isinstance(node, ast.With | ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return [t for t in found if t == "dpfast" or t.startswith("dpfast.")]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (node -> successors) as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := dfs(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := dfs(node)) is not None:
            return found
    return None


@pytest.mark.parametrize("package", CYCLE_CHECKED)
def test_no_import_cycle_inside_a_package(package: str) -> None:
    paths = [p for p in SOURCES if module_name(p) == package
             or module_name(p).startswith(package + ".")]
    assert paths, f"{package} has no modules: update CYCLE_CHECKED"
    graph = {
        module_name(p): {t for t in import_time_imports(p)
                         if (t == package or t.startswith(package + ".")) and t != module_name(p)}
        for p in paths
    }
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle inside " + package + ": " + " -> ".join(cycle or [])


def test_cycle_detection_sees_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert "dpfast.local._validate" in import_time_imports(ROOT / "local" / "rr.py")


def test_no_compatibility_aliases_or_shims() -> None:
    """The package tree shows the layers (issue 22, item 15; issue 37): no module replaces
    itself in ``sys.modules`` (an alias of a module that lives elsewhere), the modules that
    moved to their layer (``noise/_drive``, ``_exact``, ``_envelope``, ``_addressed``,
    ``mechanisms/_calibrate``, ``_core/validate``, ``tables/histogram``, ``tables/metrics``,
    ``mechanisms/dpsgd``, ``budget/sync``) have no old copy (their public names
    ``dpfast.histogram``, ``dpfast.metrics`` and ``dpfast.dpsgd`` come from the top-level
    lazy facade), and the generator carries no private shims for its stream source."""
    for path in SOURCES:
        alias = re.search(r"sys\.modules\[__name__\]\s*=[^=]", path.read_text())
        assert alias is None, f"{path.name} is an alias of another module"
    for name in ("_drive", "_exact", "_envelope", "_validate", "_addressed", "_calibrate",
                 "histogram", "metrics", "dpsgd"):
        assert not (ROOT / f"{name}.py").exists(), f"dpfast/{name}.py is back at the top"
    assert not (ROOT / "budget" / "session.py").exists(), "budget/session.py is now sync.py"
    gen = ast.parse((ROOT / "random" / "generator.py").read_text())
    defined = {n.name for n in ast.walk(gen) if isinstance(n, ast.FunctionDef)}
    assert not defined & {"_key_words", "_allocate_streams"}


# ------------------------------------------------- function-level imports count (issue 37)
# A cycle that only function bodies close (``def f(): from .b import g``) imports fine but
# still ties the modules into one knot: none can be understood, tested or moved alone.  For
# every module of dpfast, every import counts: the
# module body, function bodies, ``importlib.import_module("dpfast....")`` with a literal
# name; only ``if TYPE_CHECKING:`` blocks (never executed) are left out.
#
# Today's knots are listed below, as the import edges that lie on a cycle (``a -> b``:
# ``a`` imports ``b``, and ``b`` reaches ``a`` back).  The list may only shrink: a new edge
# on a cycle fails the test, and so does an entry that no longer occurs (delete it: the
# list stays exact while the redesign takes the knots apart).  Removing imports can only
# remove edges from cycles, never add one, so a refactoring that unties a knot only
# deletes lines here.  ``python tests/test_layering.py`` prints the current sets.

# The whole package, every module against every other (so a cycle across packages counts
# too, and one inside a subpackage: budget/'s filters <-> mixed <-> rdp <-> display knot was
# the last, untied by the leaf modules budget/costs.py and budget/_format.py).
FULL_CYCLE_CHECKED = ["dpfast"]

KNOWN_CYCLE_EDGES: dict[str, set[str]] = {
    # (tables/' knot of 13 modules is untied: the noise law and the state codec are leaves,
    # each release class owns its state, the variance interval registers itself; session's
    # _answer no longer reads Session's STATISTICS back: the registry)
    "dpfast": set(),
}


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def all_imports(path: pathlib.Path) -> list[str]:
    """The dpfast modules ``path`` imports anywhere (module body and function bodies;
    ``from pkg import sub`` names the submodule, any other name ``pkg`` itself), plus the
    literal names given to ``importlib.import_module`` and, for a package that discovers
    its modules with ``pkgutil.iter_modules``, every module of that package;
    ``TYPE_CHECKING`` blocks excluded."""
    tree = ast.parse(path.read_text(), filename=str(path))
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append(sub if sub.startswith("dpfast") and _is_module(sub) else target)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func).endswith("import_module")):
            found.append(node.args[0].value)
        elif isinstance(node, ast.For) and "iter_modules(" in ast.unparse(node.iter):
            # a package that imports what it discovers (dpfast.tables.statistics: a loop over
            # pkgutil.iter_modules) imports every module of its folder
            found.extend(module_name(p) for p in SOURCES
                         if module_name(p).rpartition(".")[0] == package)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [t for t in found if t == "dpfast" or t.startswith("dpfast.")]


def _package_graph(package: str, imports: Callable[[pathlib.Path], list[str]]
                   ) -> dict[str, set[str]]:
    paths = [p for p in SOURCES if module_name(p) == package
             or module_name(p).startswith(package + ".")]
    assert paths, f"{package} has no modules"
    return {
        module_name(p): {t for t in imports(p)
                         if (t == package or t.startswith(package + ".")) and t != module_name(p)}
        for p in paths
    }


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` (Tarjan), each a set of nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def cycle_edges(graph: dict[str, set[str]]) -> set[str]:
    """The edges of ``graph`` that lie on a cycle, as ``"a -> b"`` (both ends in one
    strongly connected component; a node's edge to itself is a cycle too)."""
    comp_of = {v: i for i, comp in enumerate(strongly_connected(graph)) for v in comp}
    return {f"{a} -> {b}" for a, succ in graph.items() for b in succ
            if b in comp_of and comp_of[a] == comp_of[b]}


def _check_known(found: set[str], known: set[str], what: str) -> None:
    new = sorted(found - known)
    gone = sorted(known - found)
    assert not new, f"new {what} (not in the known list, which may only shrink):\n  " + (
        "\n  ".join(new))
    assert not gone, (f"{what} that no longer occur: delete them from the known list in "
                      f"tests/test_layering.py:\n  " + "\n  ".join(gone))


def test_known_lists_only_shrink() -> None:
    """A violation not in the known list fails, and so does a known one that is gone."""
    _check_known({"a", "b"}, {"a", "b"}, "uses")
    with pytest.raises(AssertionError, match="new uses"):
        _check_known({"a", "b", "c"}, {"a", "b"}, "uses")
    with pytest.raises(AssertionError, match="uses that no longer occur"):
        _check_known({"a"}, {"a", "b"}, "uses")


@pytest.mark.parametrize("package", FULL_CYCLE_CHECKED)
def test_no_new_import_cycle_with_function_level_imports(package: str) -> None:
    """No import cycle inside ``package`` counting function-level imports, beyond the
    known ones (issue 37: a 13-module knot in ``tables/`` hidden in function bodies)."""
    found = cycle_edges(_package_graph(package, all_imports))
    _check_known(found, KNOWN_CYCLE_EDGES[package], f"import-cycle edges inside {package}")


def test_function_level_cycles_are_seen() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycle_edges(graph) == {"a -> b", "b -> c", "c -> a", "e -> e"}
    assert sorted(map(sorted, strongly_connected(graph))) == [["a", "b", "c"], ["d"], ["e"]]
    # a function-level import is an import here, not at import time
    src = ROOT / "tables" / "histogram.py"
    assert set(import_time_imports(src)) <= set(all_imports(src))
    assert set(FULL_CYCLE_CHECKED) == set(KNOWN_CYCLE_EDGES)


# ------------------------------------------------------ the private names of dpfast.tables
# ``dpfast.tables`` is used through its public names only (issue 37): no module outside
# ``dpfast/tables/`` imports an underscore name of it or of its modules, a private module
# of it, or reaches one as an attribute (``from dpfast.tables import groupby as g;
# g._common``; ``import dpfast.tables; dpfast.tables._keys``; ``getattr(g, "_x")``;
# ``importlib.import_module("dpfast.tables._plan")``).  Dunder names (``__all__``) are
# public.  Each use is ``importer -> dpfast.tables.path``, the path ending at its first
# private part (what is taken from a private module is not listed again).  Today's uses
# are listed below; the list may only shrink, exactly as KNOWN_CYCLE_EDGES.

TABLES = "dpfast.tables"

KNOWN_PRIVATE_TABLES_USES: set[str] = set()


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _first_private(dotted: str) -> str | None:
    """``dotted`` cut after its first private part below dpfast.tables, or None."""
    if not (dotted == TABLES or dotted.startswith(TABLES + ".")):
        return None
    parts = dotted.split(".")
    for i in range(2, len(parts)):
        if _private(parts[i]):
            return ".".join(parts[: i + 1])
    return None


def _in_tables(mod: str) -> bool:
    return mod == TABLES or mod.startswith(TABLES + ".")


def private_tables_uses(path: pathlib.Path, mod: str | None = None) -> set[str]:
    """The private names of dpfast.tables that ``path`` (the module ``mod``, by default
    the one at ``path``) uses (see above)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    mod = module_name(path) if mod is None else mod
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    bound: dict[str, str] = {}  # local name -> the dpfast module (or package) it names
    dotted: list[str] = []  # every dpfast name the file reaches

    for node in ast.walk(tree):  # first the bindings (a file's names are few and stable)
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("dpfast"):
                    if a.asname:
                        bound[a.asname] = a.name
                    else:
                        bound[a.name.split(".")[0]] = a.name.split(".")[0]
                    dotted.append(a.name)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if not target.startswith("dpfast"):
                continue
            for a in node.names:
                full = f"{target}.{a.name}"
                dotted.append(full)
                bound[a.asname or a.name] = full

    def resolve(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = resolve(expr.value)
            return None if base is None else f"{base}.{expr.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            full = resolve(node)
            if full is not None:
                dotted.append(full)
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and (
                isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            base = resolve(node.args[0])
            if base is not None:
                dotted.append(f"{base}.{node.args[1].value}")
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func).endswith("import_module")):
            dotted.append(node.args[0].value)
    return {f"{mod} -> {cut}" for d in dotted if (cut := _first_private(d)) is not None}


def test_no_new_use_of_private_tables_names() -> None:
    found: set[str] = set()
    for path in SOURCES:
        if not _in_tables(module_name(path)):
            found |= private_tables_uses(path)
    _check_known(found, KNOWN_PRIVATE_TABLES_USES, "uses of private dpfast.tables names")


def test_private_tables_uses_are_seen(tmp_path: pathlib.Path) -> None:
    text = (
        "import dpfast\n"
        "import dpfast.tables as T\n"
        "from dpfast.tables import _keys, count, __all__ as names\n"
        "from dpfast.tables._plan import privacy\n"
        "from dpfast.tables import groupby as aggregate\n"
        "from dpfast import tables\n"
        "def f():\n"
        "    from dpfast.tables.release import _fmt\n"
        "    aggregate._common(); aggregate.count(); T._scratch; tables.partition._x\n"
        "    dpfast.tables._rows; getattr(aggregate, '_make_plan'); privacy._not_again\n"
        "    importlib.import_module('dpfast.tables._state')\n"
    )
    probe = tmp_path / "probe.py"
    probe.write_text(text)
    uses = private_tables_uses(probe, "dpfast.dask._probe")
    assert {u.split(" -> ")[0] for u in uses} == {"dpfast.dask._probe"}
    assert {u.split(" -> ")[1] for u in uses} == {
        "dpfast.tables._keys", "dpfast.tables._plan", "dpfast.tables.release._fmt",
        "dpfast.tables.groupby._common", "dpfast.tables._scratch",
        "dpfast.tables.partition._x", "dpfast.tables._rows",
        "dpfast.tables.groupby._make_plan", "dpfast.tables._state"}


def _current() -> None:  # pragma: no cover - a maintainer's tool
    for package in FULL_CYCLE_CHECKED:
        edges = sorted(cycle_edges(_package_graph(package, all_imports)))
        print(f"{package}: {len(edges)} cycle edges")
        for e in edges:
            print(f'    "{e}",')
    uses = sorted(u for p in SOURCES if not _in_tables(module_name(p))
                  for u in private_tables_uses(p))
    print(f"private dpfast.tables uses: {len(uses)}")
    for u in uses:
        print(f'    "{u}",')


def _rewrite() -> None:  # pragma: no cover - a maintainer's tool
    """Rewrite the KNOWN lists of this file to the current sets (after a refactoring that
    removed cycle edges or private uses; review the diff: only deletions are expected)."""
    import re

    path = pathlib.Path(__file__)
    text = path.read_text()
    for package in FULL_CYCLE_CHECKED:
        edges = sorted(cycle_edges(_package_graph(package, all_imports)))
        # an empty set is written "set()" (an empty "{}" would be a dict)
        body = ("{\n" + "".join(f'        "{e}",\n' for e in edges) + "    }") if edges \
            else "set()"
        text = re.sub(r'(    "' + re.escape(package) + r'": )(\{\n.*?    \}|set\(\))(,\n)',
                      lambda m, b=body: m.group(1) + b + m.group(3), text, count=1,
                      flags=re.S)
    uses = sorted(u for p in SOURCES if not _in_tables(module_name(p))
                  for u in private_tables_uses(p))
    body = ("{\n" + "".join(f'    "{u}",\n' for u in uses) + "}") if uses else "set()"
    text = re.sub(r"(KNOWN_PRIVATE_TABLES_USES: set\[str\] = )(\{\n.*?\}|set\(\))(\n)",
                  lambda m: m.group(1) + body + m.group(3), text, count=1, flags=re.S)
    path.write_text(text)


if __name__ == "__main__":  # pragma: no cover
    import sys

    _rewrite() if "--rewrite" in sys.argv else _current()
