"""Worker-side installation hook: importing this module calls
:func:`dpfast.compat.pipeline_dp.install` (with a fresh ``os.urandom`` key) in the
importing process.

For PipelineDP on Apache Beam, name it in the pipeline options so that every SDK worker
process imports it at start-up (Beam's ``beam_plugins``)::

    options = PipelineOptions(beam_plugins=["dpfast.compat.pipeline_dp.worker"], ...)

Each worker draws from its own generator keyed from ``os.urandom`` (never one stream shared
by two workers); importing it again does nothing more.
"""

from __future__ import annotations

from dpfast.compat.pipeline_dp import install, is_installed

__all__: list[str] = []

if not is_installed():
    install()
