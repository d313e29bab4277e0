"""The DSSTNE model: a user's multi-hot item vector in, a sigmoid score per item out.

Trained with PyTorch from :class:`~interactive_recsys.Loader` batches: each user's items
are one ``list<int64>`` column, so a batch's input is jagged (flat ``values`` + ``offsets``),
and the first layer is an ``EmbeddingBag`` (the sparse input layer: a sum of the rows of the
user's items, never a dense ``[batch, n_items]`` input). Hidden layers follow, then a dense
output layer with one logit per item; the loss is binary cross-entropy against the user's
multi-hot vector. Input items are dropped at random during training (``dropout``; a
denoising autoencoder), so the model learns to predict held-out items from the others.
Runs on a GPU when the worker has one (``torch.cuda.is_available()``).

Examples
--------
>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> train = pd.DataFrame({"user_id": rng.integers(0, 30, 300), "item_id": rng.integers(0, 20, 300)})
>>> model = AutoEncoder(hidden=8, epochs=2).fit(train)
>>> sorted(model.arrays_)
['b0', 'b_out', 'w0', 'w_out']
>>> model.arrays_["w_out"].shape
(20, 8)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from interactive_recsys.loader import Loader
from interactive_recsys.models._base import Model, register
from interactive_recsys.models._data import Interactions
from interactive_recsys.params import Param


@register
class AutoEncoder(Model):
    """Sparse autoencoder of user item vectors (DSSTNE's MovieLens model), in PyTorch.

    Parameters
    ----------
    hidden : int, default 256
        Width of each hidden layer.
    layers : int, default 1
        Number of hidden layers (1: input -> hidden -> output, DSSTNE's three layers).
    epochs : int, default 20
    batch_size : int, default 64
        Users per batch.
    lr : float, default 1e-3
        Adam's learning rate.
    dropout : float, default 0.5
        Fraction of a user's input items dropped at random in training.
    weight_decay : float, default 0.0
        Adam's L2 penalty.
    seed : int, default 0
        Seed of the weights, the batch order and the dropout.
    user_col, item_col : the user and item id columns.
    """

    hidden = Param(256, kind="int", low=1, doc="Width of each hidden layer.")
    layers = Param(1, kind="int", low=1, doc="Number of hidden layers.")
    epochs = Param(20, kind="int", low=1, doc="Passes over the users.")
    batch_size = Param(64, kind="int", low=1, doc="Users per batch.")
    lr = Param(1e-3, kind="number", low=0, closed="neither", doc="Adam's learning rate.")
    dropout = Param(0.5, kind="number", low=0, high=1, closed="left",
                    doc="Fraction of a user's input items dropped.")
    weight_decay = Param(0.0, kind="number", low=0, must="a number >= 0", doc="Adam's L2 penalty.")
    seed = Param(0, kind="int", low=0, doc="Seed of the weights, batches and dropout.")

    @classmethod
    def array_shapes(cls, params: dict[str, Any], n_items: int) -> dict[str, tuple[int, ...]]:
        """The shapes ``_network`` gives its parameters."""
        h = params["hidden"]
        shapes = {"w0": (n_items, h), "b0": (h,), "w_out": (n_items, h), "b_out": (n_items,)}
        for i in range(1, params["layers"]):
            shapes.update({f"w{i}": (h, h), f"b{i}": (h,)})
        return shapes

    @classmethod
    def fit_arrays(cls, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
        with _one_thread():
            return cls._train(params, data)

    @classmethod
    def _train(cls, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        import torch

        torch.manual_seed(params["seed"])
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = _network(data.n_items, params["hidden"], params["layers"]).to(device)
        optimizer = _Adam(list(net.parameters()), params["lr"], params["weight_decay"])
        loss_fn = torch.nn.BCEWithLogitsLoss()
        generator = torch.Generator(device=device).manual_seed(params["seed"])
        keep = 1.0 - params["dropout"]
        with tempfile.TemporaryDirectory(prefix="irs-autoencoder-") as tmp:
            path = os.path.join(tmp, "users.parquet")
            pq.write_table(pa.Table.from_pandas(data.item_lists(), preserve_index=False), path)
            loader = Loader(path, params["batch_size"], shuffle=True, seed=params["seed"],
                            epochs=params["epochs"], cat_cols=["items"], cont_cols=[],
                            label_cols=[], output="torch", device=device, readers=0)
            net.train()
            for batch in loader:
                values, offsets = batch.sparse.feature("items")
                values, offsets = values.long(), offsets.long()
                rows = torch.repeat_interleave(torch.arange(len(batch), device=device),
                                               offsets.diff())
                target = torch.zeros(len(batch), data.n_items, device=device)
                target[rows, values] = 1.0
                weights = (torch.rand(len(values), generator=generator, device=device)
                           < keep).float() / keep
                logits = _forward(net, values, offsets[:-1], weights)
                loss = loss_fn(logits, target)
                net.zero_grad()
                loss.backward()
                optimizer.step()
        return {name: p.detach().cpu().numpy().astype(np.float32)
                for name, p in net.named_parameters()}

    @classmethod
    def score_arrays(cls, params: dict[str, Any], arrays: dict[str, np.ndarray],
                     indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad(), _one_thread():
            net = _network(arrays["w_out"].shape[0], params["hidden"], params["layers"])
            net.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in arrays.items()})
            logits = _forward(net, torch.from_numpy(np.asarray(indices, np.int64)),
                              torch.from_numpy(np.asarray(indptr[:-1], np.int64)), None)
            return torch.sigmoid(logits).numpy()


class _Adam:
    """Adam (Kingma & Ba 2015) with L2 weight decay, as ``torch.optim.Adam`` computes it.

    Written out because importing ``torch.optim`` imports TorchDynamo: 8 s on a busy 2-core
    machine, several times the training itself on MovieLens 100k.
    """

    def __init__(self, params: list[Any], lr: float, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        import torch

        self.params, self.lr, self.weight_decay = params, lr, weight_decay
        self.betas, self.eps, self.steps = betas, eps, 0
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    def step(self) -> None:
        import torch

        self.steps += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.steps, 1 - b2 ** self.steps
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                if p.grad is None:
                    continue
                g = p.grad if not self.weight_decay else p.grad + self.weight_decay * p
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, (v / c2).sqrt_().add_(self.eps), value=-self.lr / c1)


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Torch on one CPU thread: the cluster runs one task per core, and torch's own threads
    on a busy machine slow a step down 10-70x (measured: Adam step 4 ms -> 150 ms)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _network(n_items: int, hidden: int, layers: int) -> Any:
    """Parameters ``w0, b0`` (input: ``[n_items, hidden]`` rows summed per user), ``w1, b1``...
    (hidden layers) and ``w_out, b_out`` (``[n_items, hidden]``, ``[n_items]``)."""
    import torch

    net = torch.nn.Module()
    scale = 1.0 / np.sqrt(hidden)
    net.register_parameter("w0", torch.nn.Parameter(torch.randn(n_items, hidden) * scale * 0.1))
    net.register_parameter("b0", torch.nn.Parameter(torch.zeros(hidden)))
    for i in range(1, layers):
        net.register_parameter(f"w{i}", torch.nn.Parameter(torch.randn(hidden, hidden) * scale))
        net.register_parameter(f"b{i}", torch.nn.Parameter(torch.zeros(hidden)))
    net.register_parameter("w_out", torch.nn.Parameter(torch.randn(n_items, hidden) * scale))
    net.register_parameter("b_out", torch.nn.Parameter(torch.zeros(n_items)))
    net.layers = layers
    return net


def _forward(net: Any, values: Any, offsets: Any, weights: Any) -> Any:
    import torch
    import torch.nn.functional as F

    h = F.embedding_bag(values, net.w0, offsets, mode="sum", per_sample_weights=weights)
    h = torch.tanh(h + net.b0)
    for i in range(1, net.layers):
        h = torch.tanh(h @ getattr(net, f"w{i}") + getattr(net, f"b{i}"))
    return h @ net.w_out.T + net.b_out
