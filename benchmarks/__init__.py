"""Benchmarks of interactive_recsys against pandas, polars, Dask and an I/O floor.

Run ``python -m benchmarks criteo --quick`` (smoke run) or see ``benchmarks/README.md``.
Nothing here is imported by the package or its tests, and nothing here imports ``tests``
(the browser driver is :mod:`tools.lab`).
"""
