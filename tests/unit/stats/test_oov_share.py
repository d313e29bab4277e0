"""The out-of-vocabulary share the embedding report shows is of the non-null lookups, as the
Build tab's and ``irs run --oov-budget``'s: checked against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.stats._embedding_report import EmbeddingReport
from interactive_recsys.stats._lookup_loss import lookup_loss

THRESHOLD = 4


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = 8000
    ids = (rng.zipf(1.4, rows) % 3000).astype(str).astype(object)
    ids[rng.random(rows) < 0.2] = None
    return pd.DataFrame({"C3": pd.array(ids, dtype="string")})


def _rate_columns(row: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in row.items() if k.startswith(("OOV", "null"))}


def test_report_rates_say_what_they_are_a_share_of(frame):
    counts = frame["C3"].value_counts()  # independent: pandas, nulls left out
    lost = counts[counts < THRESHOLD].sum()
    nonnull_share = lost / frame["C3"].notna().sum()
    assert f"{nonnull_share:.2%}" != f"{lost / len(frame):.2%}"  # the two shares differ
    wf = irs.Workflow(["C3"] >> ops.Categorify(freq_threshold=THRESHOLD)).fit(frame)
    for report in (EmbeddingReport(wf), EmbeddingReport(frame, freq_threshold=THRESHOLD)):
        (row,) = report.rows()
        assert _rate_columns(row) == {
            "null % of lookups": f"{100 * frame['C3'].isna().mean():.2f}",
            "OOV % of non-null lookups": f"{100 * nonnull_share:.2f}"}
        assert report.tables["C3"].oov_share == pytest.approx(nonnull_share, abs=1e-12)
        assert report.table_dict("C3")["oov_share"] == pytest.approx(nonnull_share, abs=1e-12)
        assert "OOV % of non-null lookups" in repr(report)
    # the same share as the loss counted in the written ids (``irs run --oov-budget``)
    loss = lookup_loss(wf, wf.transform(frame))["C3"]
    assert (loss.lost, loss.lookups) == (lost, frame["C3"].notna().sum())
    assert loss.share == pytest.approx(nonnull_share, abs=1e-12)
