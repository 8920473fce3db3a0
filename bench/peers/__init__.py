"""Accuracy comparison of dpfast with its peers on a public dataset (``compare.py``)."""
