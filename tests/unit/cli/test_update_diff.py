"""``irs update`` prints what changed per column (``irs.vocabulary_diff``) as aligned text:
the numbers against pandas, the columns lined up."""

import re

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli


def _block(out: str, title: str) -> list[str]:
    """The lines of the block whose title starts with ``title``, up to the next unindented
    line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line)
    return block


def test_the_diff_table_after_an_update(tmp_path, capsys):
    rng = np.random.default_rng(5)
    fit = pd.DataFrame({"item": rng.choice([f"i{k}" for k in range(30)], 900),
                        "price": rng.normal(10.0, 2.0, 900)})
    day = pd.DataFrame({"item": rng.choice([f"i{k}" for k in range(20, 60)], 700),
                        "price": rng.normal(12.0, 2.0, 700)})
    fit.to_parquet(tmp_path / "fit.parquet")
    day.to_parquet(tmp_path / "day.parquet")
    irs.Workflow((["item"] >> ops.Categorify()) + (["price"] >> ops.Normalize())).fit(
        irs.Dataset(str(tmp_path / "fit.parquet"))).save(tmp_path / "wf")
    assert cli.main(["update", "--workflow", str(tmp_path / "wf"), "--input",
                     str(tmp_path / "day.parquet"), "--output", str(tmp_path / "wf2"),
                     "--local", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"What changed from {tmp_path / 'wf'} to {tmp_path / 'wf2'}" in out

    # pandas: the values of the day unseen in the fit, their share of both days' rows
    old, both = set(fit["item"]), pd.concat([fit["item"], day["item"]])
    new = set(day["item"]) - old
    share = both.value_counts()[list(new)].sum() / len(both)
    vocab = _block(out, "Vocabularies (Categorify):")
    assert vocab[0].split() == ["column", "present", "old_size", "new_size", "new_values",
                                "dropped_values", "changed_ids", "new_share"]
    assert vocab[1].split() == ["item", "both", f"{len(old)}", f"{len(old | new)}",
                                f"{len(new)}", "0", "0", f"{share:.2%}"]
    # numbers right-aligned under their names: every line ends at the same column
    assert len({len(line) for line in vocab}) == 1

    prices, std = pd.concat([fit["price"], day["price"]]), fit["price"].std(ddof=0)
    mean_shift = (prices.mean() - fit["price"].mean()) / std
    std_shift = (prices.std(ddof=0) - std) / std
    stats = _block(out, "Statistics (shifts in the old output's units: mean and std in old "
                        "stds):")
    assert stats[0].split() == ["column", "operator", "present", "mean_shift", "std_shift"]
    assert stats[1].split() == ["price", "Normalize", "both", f"{mean_shift:+.4f}",
                                f"{std_shift:+.4f}"]
    assert len({len(line) for line in stats}) == 1
    assert re.search(rf"\n  item +both +{len(old)} ", out)  # names left-aligned
