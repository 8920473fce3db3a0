from __future__ import annotations

import hypothesis

hypothesis.settings.register_profile("dpfast", deadline=None, max_examples=60)
hypothesis.settings.load_profile("dpfast")

KEY = bytes(range(32))  # fixed key: statistical tests are deterministic
