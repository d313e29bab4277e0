"""A small DLRM-style model trained on processed synthetic Criteo with ``irs.Loader`` (CPU).

``python -m benchmarks dlrm [--rows 300000] [--steps 300] [--batch-size 1024]`` generates
Criteo-shaped data, runs the standard workflow (Categorify C1..C26; FillMissing, Clip,
log1p, Normalize I1..I13), writes it as parquet, keeps the last file for validation, trains
for ``--steps`` steps and reports the training loss and the validation log-loss and AUC.

The model: one ``torch.nn.EmbeddingBag`` per categorical column (fed straight from the
loader's jagged batches, so multi-hot columns work the same way), a bottom MLP over the
dense block, DLRM's pairwise dot-product interaction of all the vectors, and a top MLP.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HELP = "train a small DLRM-style model on processed synthetic Criteo (CPU, loss and AUC)"
WORK = Path(__file__).resolve().parent / "work"


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (ties in ``scores`` count one half), from ranks.

    >>> auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]))
    0.75
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=np.float64)
    pos, neg = int(labels.sum()), int((~labels).sum())
    if pos == 0 or neg == 0:
        raise ValueError("AUC needs both positive and negative labels.")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), np.float64)
    sorted_scores = scores[order]
    # average rank of each run of equal scores
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def _mlp(sizes: Sequence[int], last_relu: bool = True) -> Any:
    import torch

    layers: list[Any] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(torch.nn.Linear(a, b))
        if last_relu or i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def make_model(cardinalities: dict[str, int], n_dense: int, dim: int = 16,
               bottom: Sequence[int] = (64,), top: Sequence[int] = (64, 32)) -> Any:
    """A DLRM: sparse embeddings per key + bottom MLP -> dot interactions -> top MLP -> a logit."""
    import torch

    class DLRM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.keys = list(cardinalities)
            self.bags = torch.nn.ModuleDict({
                k: torch.nn.EmbeddingBag(n, dim, mode="sum", sparse=True)
                for k, n in cardinalities.items()})
            self.bottom = _mlp([n_dense, *bottom, dim])
            n_vec = len(self.keys) + 1
            self.top = _mlp([dim + n_vec * (n_vec - 1) // 2, *top, 1], last_relu=False)
            self.pairs = torch.triu_indices(n_vec, n_vec, offset=1)

        def forward(self, dense: Any, sparse: Any) -> Any:
            x = self.bottom(dense)
            vectors = [x]
            for k in self.keys:
                values, offsets = sparse.feature(k)
                vectors.append(self.bags[k](values, offsets[:-1]))
            stacked = torch.stack(vectors, dim=1)  # [B, n_vec, dim]
            dots = torch.bmm(stacked, stacked.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
            return self.top(torch.cat([x, dots], dim=1)).squeeze(1)

    return DLRM()


def cardinalities(loader: Any) -> dict[str, int]:
    """Embedding table sizes of the loader's categorical columns, from the schema."""
    sizes = {}
    for k in loader.columns.cat:
        n = loader.schema[k].cardinality
        if n is None:
            raise ValueError(f"Column {k!r} has no cardinality in the schema; fit the workflow "
                             "(Categorify records it) or give the sizes yourself.")
        sizes[k] = int(n)
    return sizes


def train(model: Any, loader: Any, steps: int, lr: float = 0.05,
          log_every: int = 50) -> list[dict[str, float]]:
    """Train for ``steps`` batches (more epochs as needed); the mean loss every ``log_every``."""
    import torch

    sparse_params = [p for n, p in model.named_parameters() if n.startswith("bags.")]
    dense_params = [p for n, p in model.named_parameters() if not n.startswith("bags.")]
    optimizers = [torch.optim.Adagrad(sparse_params, lr=lr),
                  torch.optim.Adam(dense_params, lr=lr / 25)]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    history, running, step = [], [], 0
    # sparse embedding gradients: their invariants hold by construction, skip the checks
    with torch.sparse.check_sparse_tensor_invariants(enable=False):
        while step < steps:
            for batch in loader:
                loss = loss_fn(model(batch.dense, batch.sparse), batch.labels)
                for opt in optimizers:
                    opt.zero_grad()
                loss.backward()
                for opt in optimizers:
                    opt.step()
                running.append(loss.item())
                step += 1
                if step % log_every == 0 or step == steps:
                    history.append({"step": step, "loss": float(np.mean(running))})
                    running = []
                if step == steps:
                    break
    return history


def evaluate(model: Any, loader: Any) -> dict[str, float]:
    """Log-loss and AUC of ``model`` over one pass of ``loader``."""
    import torch

    model.eval()
    labels, scores = [], []
    with torch.no_grad():
        for batch in loader:
            scores.append(torch.sigmoid(model(batch.dense, batch.sparse)).numpy())
            labels.append(batch.labels.numpy())
    y, p = np.concatenate(labels), np.clip(np.concatenate(scores), 1e-7, 1 - 1e-7)
    logloss = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    return {"rows": len(y), "logloss": logloss, "auc": auc(y, p), "positive_rate": float(y.mean())}


def prepare(rows: int, workdir: Path, files: int = 5, seed: int = 0) -> Path:
    """Generate, process and write synthetic Criteo (cached in ``workdir``)."""
    import interactive_recsys as irs
    from interactive_recsys import ops

    out = workdir / f"criteo-{rows}-processed"
    if (out / "_SUCCESS").exists():
        return out
    raw = irs.datasets.synthetic_criteo(rows=rows, seed=seed, path=workdir / f"criteo-{rows}",
                                        rows_per_file=-(-rows // files))
    ds = irs.Dataset(str(raw), tags={"label": ["target"]})
    cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify(freq_threshold=2)
    conts = ([f"I{i}" for i in range(1, 14)]
             >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
    wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=str(workdir / "workflow"))
    wf.fit(ds)
    wf.transform(ds).to_parquet(out, overwrite=True)
    return out


def split_files(processed: Path) -> tuple[list[str], list[str]]:
    """All files but the last for training, the last for validation."""
    files = sorted(str(p) for p in processed.glob("part.*.parquet"))
    return files[:-1], files[-1:]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=300_000, help="synthetic Criteo rows")
    parser.add_argument("--steps", type=int, default=300, help="training steps")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (1: the loader's threads get the other "
                        "cores; more threads spin badly on a busy machine)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    import interactive_recsys as irs

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    processed = prepare(args.rows, WORK / "dlrm")
    train_files, valid_files = split_files(processed)
    train_loader = irs.Loader(train_files, args.batch_size, seed=args.seed, drop_last=True)
    valid_loader = irs.Loader(valid_files, 8192, shuffle=False)
    model = make_model(cardinalities(train_loader), len(train_loader.columns.cont))
    started = time.perf_counter()
    history = train(model, train_loader, args.steps, args.lr)
    seconds = time.perf_counter() - started
    metrics = evaluate(model, valid_loader)
    result = {"rows": args.rows, "steps": args.steps, "batch_size": args.batch_size,
              "train_seconds": round(seconds, 2), "history": history, "valid": metrics}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dlrm", description=HELP)
    add_arguments(parser)
    run(parser.parse_args())
