"""Sphinx configuration of dpfast's documentation site.

Build it with ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install -e
'.[docs]'``); ``tests/test_docs.py`` builds it with warnings as errors and runs every code
example of the pages.
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
if (ROOT / "dpfast" / "__init__.py").exists():  # the checkout's dpfast, not another install
    sys.path.insert(0, str(ROOT))

import dpfast  # noqa: E402

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
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
# numpydoc-style docstrings, parsed by napoleon: numpydoc itself drops sections it does not
# know, and every public mechanism and release has a "Privacy" section (most a "Numerics" one)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_custom_sections = ["Privacy", "Numerics"]
napoleon_use_rtype = False

html_theme = "alabaster"
html_static_path: list[str] = []
html_title = f"dpfast {release}"
