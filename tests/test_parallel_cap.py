"""Thread cap from a container's CPU quota (cgroup v1 and v2), read from a fake root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import dpfast
from dpfast import _parallel
from dpfast.noise import _chunks

KEY = bytes(range(32))


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_no_cgroup_files_means_no_quota(tmp_path) -> None:
    assert _parallel.cpu_quota(str(tmp_path)) is None


@pytest.mark.parametrize("text,expect", [("max 100000", None), ("200000 100000", 2.0),
                                         ("150000 100000", 1.5), ("50000 100000", 0.5),
                                         ("garbage", None), ("1 0", None)])
def test_cgroup_v2_cpu_max(tmp_path, text, expect) -> None:
    _write(tmp_path, "proc/self/cgroup", "0::/\n")
    _write(tmp_path, "sys/fs/cgroup/cpu.max", text + "\n")
    assert _parallel.cpu_quota(str(tmp_path)) == expect


def test_cgroup_v2_nested_takes_the_smallest_ancestor_limit(tmp_path) -> None:
    _write(tmp_path, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
    _write(tmp_path, "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n")
    _write(tmp_path, "sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n")
    _write(tmp_path, "sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n")
    assert _parallel.cpu_quota(str(tmp_path)) == 3.0


@pytest.mark.parametrize("mount", ["cpu,cpuacct", "cpu"])
def test_cgroup_v1_cfs_quota(tmp_path, mount) -> None:
    _write(tmp_path, "proc/self/cgroup",
           "9:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n")
    base = f"sys/fs/cgroup/{mount}/docker/abc"
    _write(tmp_path, f"{base}/cpu.cfs_quota_us", "250000\n")
    _write(tmp_path, f"{base}/cpu.cfs_period_us", "100000\n")
    assert _parallel.cpu_quota(str(tmp_path)) == 2.5
    _write(tmp_path, f"{base}/cpu.cfs_quota_us", "-1\n")  # no quota
    assert _parallel.cpu_quota(str(tmp_path)) is None


def test_cgroup_v1_inside_a_container_reads_the_mount_root(tmp_path) -> None:
    """In a container the cgroup namespace shows "/" and the mount is the container's."""
    _write(tmp_path, "proc/self/cgroup", "4:cpu,cpuacct:/\n")
    _write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "100000\n")
    _write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    assert _parallel.cpu_quota(str(tmp_path)) == 1.0


def test_thread_cap_rounds_the_quota_up_and_respects_the_user(monkeypatch) -> None:
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    for q, cap in ((None, None), (0.5, 1), (1.5, 2), (2.0, 2), (3.0000000001, 3)):
        monkeypatch.setattr(_parallel, "_CAP", [])
        monkeypatch.setattr(_parallel, "cpu_quota", lambda q=q: q)
        assert _parallel.thread_cap() == cap
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")  # the user chose: no cap
    monkeypatch.setattr(_parallel, "_CAP", [])
    assert _parallel.thread_cap() is None


def test_parallel_batches_use_at_most_the_cap(monkeypatch) -> None:
    """Under a quota of one CPU the kernels' batches run on one thread (restored after),
    and the output does not depend on it."""
    expect = dpfast.discrete_laplace(np.zeros(300_000, np.int64), 10.0, rng=KEY)
    seen = []
    monkeypatch.setattr(_parallel, "_CAP", [1])
    before = numba.get_num_threads()
    with _chunks.threads_for(8, 1):
        seen.append(numba.get_num_threads())
    assert seen == [1] and numba.get_num_threads() == before
    got = dpfast.discrete_laplace(np.zeros(300_000, np.int64), 10.0, rng=KEY)
    assert np.array_equal(got, expect)
    monkeypatch.setattr(_parallel, "_CAP", [None])
    with _chunks.threads_for(8, 1):
        assert numba.get_num_threads() == before


def test_the_real_host_quota_is_read_without_error() -> None:
    q = _parallel.cpu_quota()
    assert q is None or q > 0
    code = "from dpfast import _parallel; print(_parallel.thread_cap())"
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "None"
