"""Local-DP reports aggregated on a Dask LocalCluster equal the one-process aggregate."""

from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
dbag = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from dpfast import local as L  # noqa: E402
from dpfast.dask import aggregate_reports  # noqa: E402

from .helpers import KEY, SUBPROCESS_TIMEOUT_S  # noqa: E402


@pytest.mark.slow
def test_bag_and_dataframe_of_reports_on_a_local_cluster_equal_one_process(tmp_path) -> None:
    import dask

    rng = np.random.default_rng(8)
    cms = L.CountMeanSketch(4.0, 8, 128, hash_seed=4)
    olh = L.OptimalLocalHashing(30, 2.0)
    items = [f"e{i}" for i in range(20)]
    cms_batches = [L.randomize(cms, rng.choice(items, size=int(s)),
                               rng=bytes([i]) + KEY[1:]).to_bytes()
                   for i, s in enumerate(rng.integers(1, 3000, 12))]
    olh_batches = [L.randomize(olh, rng.integers(0, 30, int(s)), rng=bytes([i]) + KEY[1:])
                   for i, s in enumerate(rng.integers(1, 3000, 9))]
    one_cms = L.Aggregator(cms, candidates=items).add_all(cms_batches)
    one_olh = L.Aggregator(olh).add_all(olh_batches)
    with dask.config.set({"distributed.comm.timeouts.connect": f"{SUBPROCESS_TIMEOUT_S}s"}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", timeout=SUBPROCESS_TIMEOUT_S)
    client = distributed.Client(cluster)
    try:
        bag = dbag.from_sequence(cms_batches, npartitions=5)
        got = aggregate_reports(bag, L.Aggregator(cms, candidates=items), split_every=2)
        assert got == one_cms
        np.testing.assert_array_equal(got.estimate().counts, one_cms.estimate().counts)
        frame = dd.from_pandas(pd.DataFrame({"report": [b.to_json() for b in olh_batches]}),
                               npartitions=3)
        got = aggregate_reports(frame, L.Aggregator(olh))
        assert got == one_olh
        bad = L.ReportBatch(olh_batches[0].protocol, dict(olh_batches[0].params, g=3),
                            olh_batches[0].arrays)
        with pytest.raises(ValueError, match="g = 3"):
            aggregate_reports(dbag.from_sequence([olh_batches[1], bad], npartitions=2),
                              L.Aggregator(olh))
    finally:
        client.close()
        cluster.close()
