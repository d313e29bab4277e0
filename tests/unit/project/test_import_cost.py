"""What ``import interactive_recsys`` loads: the package root and the commands that need no
cluster stay off Dask's collections, distributed and the widgets, which load on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ["dask.dataframe", "distributed", "ipywidgets", "bokeh", "torch"]


def _loaded_after(code: str) -> dict[str, bool]:
    probe = code + f"\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import interactive_recsys",
    "import interactive_recsys as irs; from interactive_recsys import ops; "
    "node = ['a'] >> ops.Categorify() >> ops.LogOp()",
    "import interactive_recsys.datasets",
    "from interactive_recsys.datasets import criteo_to_torchrec",
])
def test_the_root_and_the_criteo_path_load_no_heavy_package(code: str) -> None:
    assert _loaded_after(code) == dict.fromkeys(HEAVY, False)


def test_irs_criteo_local_runs_without_dask(tmp_path) -> None:
    rows = ["1\t" + "\t".join(["3"] * 13) + "\t" + "\t".join(["a1b2"] * 26),
            "0\t" + "\t".join([""] * 13) + "\t" + "\t".join([""] * 26)]
    (tmp_path / "day_0").write_text("\n".join(rows) + "\n")
    loaded = _loaded_after(
        "from interactive_recsys.cli._main import main\n"
        f"assert main(['criteo', {str(tmp_path / 'day_0')!r}, {str(tmp_path / 'out')!r}, "
        "'--local', '--quiet']) == 0")
    assert loaded == dict.fromkeys(HEAVY, False)
    assert (tmp_path / "out" / "day_0_sparse_contig_freq.npy").exists()


def test_a_lazy_name_loads_on_first_use_and_is_the_real_object() -> None:
    import interactive_recsys as irs
    from interactive_recsys.io._dataset import Dataset
    from interactive_recsys.runtime import cluster
    from interactive_recsys.workflow._workflow import Workflow

    assert (irs.Workflow, irs.Dataset, irs.cluster, irs.connect) == (
        Workflow, Dataset, cluster, cluster.connect)
    assert set(irs.__all__) <= set(dir(irs))


def test_star_import_gives_every_public_name() -> None:
    names: dict = {}
    exec("from interactive_recsys import *", names)
    import interactive_recsys as irs

    assert {n: names[n] for n in irs.__all__} == {n: getattr(irs, n) for n in irs.__all__}


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    import interactive_recsys as irs

    with pytest.raises(AttributeError, match="'interactive_recsys' has no attribute 'Workflw'"):
        irs.Workflw  # noqa: B018
