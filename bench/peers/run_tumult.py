"""Tumult Analytics on the comparison, run by ``compare.py`` in its own interpreter.

Tumult Analytics pins pandas < 2 and needs Spark (Java), so it lives in a separate
environment: ``python -m venv peers && peers/bin/pip install tmlt.analytics``, then
``compare.py --tumult-python peers/bin/python``.  This file is run as a script there::

    python run_tumult.py IN.parquet-or-csv OUT.json STAT[,STAT...] SEED

and writes ``{stat: {key: value}}`` (``"select"``: the published keys).
"""

from __future__ import annotations

import json
import sys

EPSILON, DELTA, K, C, LO, HI = (float(x) for x in sys.argv[5].split(",")) \
    if len(sys.argv) > 5 else (1.0, 1e-5, 10, 30, -60.0, 180.0)
K, C = int(K), int(C)


def main() -> None:
    import logging
    import os

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this interpreter

    import pandas as pd
    from pyspark.sql import SparkSession
    from tmlt.analytics import (
        AddRowsWithID,
        ApproxDPBudget,
        KeySet,
        MaxGroupsPerID,
        MaxRowsPerGroupPerID,
        QueryBuilder,
        Session,
    )

    logging.getLogger("py4j").setLevel(logging.ERROR)
    src, dst, stats = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    df = pd.read_csv(src)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sdf = spark.createDataFrame(df)
    keys = sorted(df["dest"].unique().tolist())
    out: dict = {}

    def session():
        return Session.from_dataframe(privacy_budget=ApproxDPBudget(EPSILON, DELTA),
                                      source_id="flights", dataframe=sdf,
                                      protected_change=AddRowsWithID(id_column="tailnum"))

    def grouped(ks):
        q = QueryBuilder("flights").enforce(MaxGroupsPerID("dest", K))
        return q.enforce(MaxRowsPerGroupPerID("dest", C)).groupby(ks)

    ks = KeySet.from_dict({"dest": keys})
    for stat in stats:
        s = session()
        budget = ApproxDPBudget(EPSILON, DELTA)
        if stat == "select":
            q = (QueryBuilder("flights").enforce(MaxGroupsPerID("dest", K))
                 .enforce(MaxRowsPerGroupPerID("dest", C)).get_groups(["dest"]))
            res = s.evaluate(q, budget).toPandas()
            out[stat] = sorted(res["dest"].tolist())
            continue
        if stat == "count":
            q = grouped(ks).count(name="v")
        elif stat == "privacy_id_count":
            q = QueryBuilder("flights").enforce(MaxGroupsPerID("dest", K)).groupby(ks) \
                .count_distinct(["tailnum"], name="v")
        elif stat == "sum":
            q = grouped(ks).sum("arr_delay", LO, HI, name="v")
        elif stat == "mean":
            q = grouped(ks).average("arr_delay", LO, HI, name="v")
        elif stat == "variance":
            q = grouped(ks).variance("arr_delay", LO, HI, name="v")
        elif stat == "median":
            q = grouped(ks).median("arr_delay", LO, HI, name="v")
        else:
            continue
        res = s.evaluate(q, budget).toPandas()
        out[stat] = {str(k): float(v) for k, v in zip(res["dest"], res["v"], strict=True)}
    with open(dst, "w") as f:
        json.dump(out, f)
    spark.stop()


if __name__ == "__main__":
    main()
