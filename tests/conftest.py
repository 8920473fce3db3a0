from __future__ import annotations

import hypothesis
import pytest

from .helpers import KEY

hypothesis.settings.register_profile("dpfast", deadline=None, max_examples=60)
hypothesis.settings.load_profile("dpfast")

__all__ = ["KEY"]


@pytest.fixture
def key() -> bytes:
    """The fixed 32-byte key of the statistical tests (:data:`tests.helpers.KEY`)."""
    return KEY
