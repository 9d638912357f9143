"""``joulegym.datasets``: the public traces and profiles the package can read, fetched on demand (docs/api/datasets.md).

The registry and the fetcher live in :mod:`joulegym.workloads.datasets` (the workloads layer, so the envs may
resolve a real trace by name); this module is the short public name::

    from joulegym import datasets
    datasets.fetch("philly-103959")        # or: python -m joulegym data fetch philly-103959
    path = datasets.resolve("philly-103959")
"""

from joulegym.workloads.datasets import (
    DATA_DIR_ENV,
    DATA_URL_ENV,
    DATASETS,
    DataError,
    DataFile,
    Dataset,
    data_dir,
    dataset,
    fetch,
    is_present,
    listing,
    paths,
    resolve,
    status,
)

__all__ = ["DATASETS", "DATA_DIR_ENV", "DATA_URL_ENV", "DataError", "DataFile", "Dataset", "data_dir", "dataset",
           "fetch", "is_present", "listing", "paths", "resolve", "status"]
