"""Sphinx configuration of dpfast's documentation site.

Build it with ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e
'.[docs]'``); ``tests/test_docs.py`` builds it with warnings as errors and runs every code
example of the pages.
"""

from __future__ import annotations

import importlib.util
import logging
import pathlib
import sys

from sphinx.util import logging as sphinx_logging

ROOT = pathlib.Path(__file__).resolve().parents[1]
if (ROOT / "dpfast" / "__init__.py").exists():  # the checkout's dpfast, not another install
    sys.path.insert(0, str(ROOT))

import dpfast  # noqa: E402

sphinx_logger = sphinx_logging.getLogger(__name__)

project = "dpfast"
author = "dpfast developers"
copyright = "dpfast developers"  # noqa: A001
release = dpfast.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

autosummary_generate = False  # the reference pages are written by hand (api/*.rst)
# optional dependencies of dpfast.compat / dpfast.dask that are not installed are mocked, so
# the reference builds with only the `docs` extra (the real ones are used when present)
autodoc_mock_imports = [name for name in ("pandas", "dask", "distributed", "diffprivlib",
                                          "sklearn", "pipeline_dp")
                        if importlib.util.find_spec(name) is None]
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_inherit_docstrings = False  # e.g. numpy's BitGenerator.spawn, which ChaCha20 refuses
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
# numpydoc-style docstrings, parsed by napoleon: numpydoc itself drops sections it does not
# know, and every public mechanism and release has a "Privacy" section (most a "Numerics" one)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_custom_sections = ["Privacy", "Numerics", "Where to go next"]
napoleon_use_rtype = False
napoleon_use_param = False  # types shown as written, not cross-referenced (many are prose)

html_theme = "alabaster"
html_static_path: list[str] = []
html_title = f"dpfast {release}"

# Markup problems of docstrings known when this site was set up, as (object, message start).
# Each is for the module's owner to fix (then remove it here); every other warning fails
# the build (-W in tests/test_docs.py), and an entry that no longer occurs fails it too.
KNOWN_DOCSTRING_WARNINGS = {
    # the "Public names" map is plain text; it wants a literal block ("::" and an indent)
    ("dpfast.accounting", "Unexpected indentation."),
    ("dpfast.accounting", "Block quote ends without a blank line"),
}
_seen_known: set[tuple[str, str]] = set()
_read: set[str] = set()


class _KnownDocstringWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        where = f"{getattr(record, 'location', '')} {record.pathname}"
        text = record.getMessage()
        for obj, start in KNOWN_DOCSTRING_WARNINGS:
            if f"docstring of {obj}:" in where + " " + text and start in text:
                _seen_known.add((obj, start))
                return False
        return True


def _check_known(app, exc) -> None:  # type: ignore[no-untyped-def]
    if exc is None and "api/accounting" in _read and _seen_known != KNOWN_DOCSTRING_WARNINGS:
        stale = sorted(KNOWN_DOCSTRING_WARNINGS - _seen_known)
        sphinx_logger.warning("fixed, remove from KNOWN_DOCSTRING_WARNINGS in conf.py: %s", stale)


def _registry_reference(app, docname, source) -> None:  # type: ignore[no-untyped-def]
    """The functions of the registered statistics, generated from the registry: a page's
    line ``.. dpfast-statistics:: dpfast.tables`` becomes one ``autofunction`` each
    (:func:`dpfast.tables.facade.expand_reference`)."""
    from dpfast.tables import facade

    if facade.REFERENCE_MARKER in source[0]:
        source[0] = facade.expand_reference(source[0])


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("source-read", _registry_reference)
    for handler in logging.getLogger("sphinx").handlers:
        if type(handler).__name__ == "WarningStreamHandler":
            handler.filters.insert(0, _KnownDocstringWarnings())
    app.connect("source-read", lambda app, docname, source: _read.add(docname))
    app.connect("build-finished", _check_known)
