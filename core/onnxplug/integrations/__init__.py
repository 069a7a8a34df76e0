"""Batch inference on cluster engines: :mod:`onnxplug.integrations.ray` (Ray Data) and
:mod:`onnxplug.integrations.dask` (Dask arrays and dataframes).

Each is an optional extra (``pip install onnxplug[ray]``, ``onnxplug[dask]``); this package imports
neither engine, and ``import onnxplug`` never imports this package.
"""
