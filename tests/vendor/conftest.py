"""The peers' own test suites (diffprivlib_suite/, pipelinedp_suite/) run in subprocesses with
dpfast installed for their whole session (tests/test_compat_diffprivlib_suite.py,
tests/test_compat_pipeline_dp_suite.py), never in the project's session."""

collect_ignore = ["diffprivlib_suite", "pipelinedp_suite"]
