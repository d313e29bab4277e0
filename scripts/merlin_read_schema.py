"""Run inside the merlin-core 23.08 venv: read DIR/.merlin/schema.pbtxt and schema.json with
Merlin's own readers and print what it understood as JSON
(tests/unit/io/test_merlin_core_reader.py)."""

import json
import sys
import warnings

warnings.simplefilter("ignore")  # merlin-core warns about optional Triton/TensorFlow mappings

from merlin.io import Dataset  # noqa: E402
from merlin.schema.io.tensorflow_metadata import TensorflowMetadata  # noqa: E402

directory = sys.argv[1]
schema = TensorflowMetadata.from_proto_text_file(directory + "/.merlin").to_merlin_schema()
from_json = TensorflowMetadata.from_json_file(directory + "/.merlin").to_merlin_schema()
assert from_json == schema, (from_json, schema)
out = {}
for name, col in schema.column_schemas.items():
    out[name] = {
        "tags": sorted(t.value if hasattr(t, "value") else str(t) for t in col.tags),
        "dtype": col.dtype.to_numpy.name if col.dtype.element_type.value != "unknown" else None,
        "is_list": col.is_list, "is_ragged": col.is_ragged,
        "domain": {k: v for k, v in col.properties.get("domain", {}).items()},
        "int_domain": (None if col.int_domain is None else
                       {"min": col.int_domain.min, "max": col.int_domain.max}),
        "value_count": col.properties.get("value_count"),
        "embedding_sizes": col.properties.get("embedding_sizes"),
    }
# NVTabular and the Merlin dataloader open the folder: merlin.io.Dataset reads .merlin/schema.json
ds = Dataset(directory, engine="parquet", cpu=True)
out["__dataset__"] = {n: sorted(t.value if hasattr(t, "value") else str(t) for t in c.tags)
                      for n, c in ds.schema.column_schemas.items()}
print(json.dumps(out))
