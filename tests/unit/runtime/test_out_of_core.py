"""Out of core: workers limited to a few hundred MB process a dataset several times larger."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys.cli._main import standard_criteo_workflow
from interactive_recsys.datasets import synthetic_criteo

WORKER_MEMORY = 700 * 2**20


@pytest.mark.slow
def test_dataset_larger_than_worker_memory(tmp_path):
    data = synthetic_criteo(rows=5_000_000, seed=3, path=tmp_path / "in", rows_per_file=500_000)
    in_memory = sum(pq.read_table(f).nbytes for f in sorted(data.glob("*.parquet")))
    assert in_memory > 2.5 * WORKER_MEMORY  # ~3x what one worker may hold
    with irs.cluster.start_cluster(n_workers=2, memory_limit=WORKER_MEMORY, dashboard=False) \
            as client, client.cluster:
        ds = irs.Dataset(str(data), part_size="32MB")
        assert ds.npartitions >= 8
        wf = standard_criteo_workflow()
        wf.fit(ds)
        summary = wf.transform(ds).to_parquet(tmp_path / "out")
    assert summary["num_rows"] == 5_000_000
    out = pq.read_table(tmp_path / "out")
    assert out.num_rows == 5_000_000
    # the first input file, transformed in this process, equals the cluster's first rows
    first = pq.read_table(sorted(data.glob("*.parquet"))[0]).to_pandas(types_mapper=pd.ArrowDtype)
    expected = pa.Table.from_pandas(wf.transform(first), preserve_index=False)
    assert out.slice(0, len(first)).equals(expected.cast(out.schema))
    c3 = out["C3"].to_numpy()
    assert c3.min() >= 1 and c3.max() < wf.output_schema["C3"].cardinality
