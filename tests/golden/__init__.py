"""Golden outputs of the release layer (see docs/design.md, "Golden outputs")."""
