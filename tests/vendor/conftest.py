"""diffprivlib's own test suite (diffprivlib_suite/) runs in a subprocess with dpfast
installed for its whole session (tests/test_compat_diffprivlib_suite.py), never in the
project's session."""

collect_ignore = ["diffprivlib_suite"]
