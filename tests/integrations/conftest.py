"""The integration tests' clusters listen on the loopback interface only.

Ray resolves a node address of 127.0.0.1 to the machine's routable address unless clusters are off
(its single-machine mode on macOS and Windows): this switch, read when ray is imported, keeps its
GCS, raylet and workers on 127.0.0.1. Dask's LocalCluster takes ``host="127.0.0.1"``.
"""

import os

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
