"""The training-to-serving guide runs as printed.

Its ``pycon`` blocks are one doctest, run in order in one namespace in a scratch folder (the
page's line numbers kept, so a failure names its line), and its ``serve.py`` runs in a fresh
interpreter where ``import interactive_recsys`` fails: it prints what the page shows, which is
what ``wf.transform`` gives for the same rows.
"""

from __future__ import annotations

import ast
import doctest
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import HANG_S

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guide" / "training-to-serving.md"
TEXT = GUIDE.read_text(encoding="utf-8")

#: Put before ``serve.py``: from then on ``import interactive_recsys`` fails.
NO_PACKAGE = textwrap.dedent("""
    import importlib.abc, sys

    class NoPackage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "interactive_recsys":
                raise ImportError("interactive_recsys is not installed here")

    sys.meta_path.insert(0, NoPackage())
    try:
        import interactive_recsys  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("interactive_recsys could be imported")
""")


def fenced(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", TEXT, re.S | re.M)


def pycon_only() -> str:
    """The page with every line outside its ``pycon`` blocks blanked (line numbers kept; a
    fence line would otherwise end up in the expected output above it)."""
    kept, inside = [], False
    for line in TEXT.splitlines():
        if line.startswith("```"):
            inside = line == "```pycon"
            kept.append("")
        else:
            kept.append(line if inside else "")
    return "\n".join(kept) + "\n"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[doctest.TestResults, str, dict, Path]:
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("guide")
    test = doctest.DocTestParser().get_doctest(pycon_only(), {}, GUIDE.name, str(GUIDE), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with pd.option_context("display.width", 80, "display.max_columns", 20):
            results = runner.run(test, out=report.write, clear_globs=False)
    finally:
        os.chdir(cwd)
    return results, report.getvalue(), test.globs, folder


def test_every_example_runs_as_printed(ran) -> None:
    results, report, _, _ = ran
    assert len(fenced("pycon")) >= 10
    assert results.attempted >= 40
    assert results.failed == 0, report


def test_the_page_s_collision_rates_are_what_hash_bucket_gives(ran) -> None:
    """The share of rows whose HashBucket bucket also holds another value, counted from
    HashBucket's own output on the page's data, for each bucket count the page prints."""
    import interactive_recsys as irs
    from interactive_recsys import ops

    _, _, globs, _ = ran
    items = globs["items"]
    printed = re.findall(r"^(\d+) (0\.\d+)$", TEXT, re.M)
    assert [int(n) for n, _ in printed] == [1_000, 10_000, 100_000]
    for buckets, rate in printed:
        hashed = irs.Workflow(["item"] >> ops.HashBucket(num_buckets=int(buckets))).fit(items)
        bucket = hashed.transform(items)["item"]
        shared = bucket.map(items.groupby(bucket)["item"].nunique()) > 1
        assert float(rate) == pytest.approx(shared.mean(), abs=1e-12), buckets


def test_the_served_file_runs_without_the_package_and_gives_the_transform(ran) -> None:
    _, _, globs, folder = ran
    (serve,) = [block for block in fenced("python") if block.startswith("# serve.py")]
    shown = TEXT.split(serve, 1)[1]
    printed = re.match(r"```\n\n```text\n(.*?)\n```", shown, re.S)
    assert printed, "the guide no longer shows what serve.py prints"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", NO_PACKAGE + serve], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == printed[1]

    served = ast.literal_eval(done.stdout)
    request = pd.DataFrame({"user": ["dan", "zoe"], "item": ["w", None], "price": [3.0, None],
                            "clicked": [0, 0]})
    offline = globs["wf2"].transform(request)
    assert sorted(served) == ["item", "price", "user"]  # the label is not needed
    for column in ("user", "item"):
        assert served[column] == offline[column].tolist()
    price = np.float32(served["price"])
    expected = offline["price"].to_numpy(np.float32)
    assert (np.abs(price - expected) <= np.spacing(np.abs(expected))).all()  # within 1 ulp
    # what the page says of these rows: an unseen user, a null item, a missing price
    assert served["user"][1] == 2 and served["item"][1] == 1
    day1 = globs["day1"]
    by_hand = (np.log1p(day1["price"].fillna(0)) - np.log1p(day1["price"].fillna(0)).mean())
    assert globs["wf"].transform(day1)["price"].to_numpy() == pytest.approx(
        (by_hand / np.log1p(day1["price"].fillna(0)).std(ddof=0)).to_numpy(), rel=1e-5)
