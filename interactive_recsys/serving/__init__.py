"""Serving: a fitted workflow's per-row steps as a ``torch.nn.Module`` that runs without
this package (``Workflow.to_torch()``).

The module holds the fitted constants and vocabularies; ``torch.jit.script`` compiles it
and ``torch.jit.save`` writes a file that ``torch.jit.load`` runs in any process with
PyTorch, where ``interactive_recsys`` need not be installed. Its ``forward(tensors,
strings, nulls=None)`` gives what ``wf.transform`` gives for the same rows
(:class:`TorchTransform`); its numeric part, :class:`NumericTransform`, is what
``torch.export`` takes.

Examples
--------
>>> import os, tempfile, pandas as pd, torch, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> raw = pd.DataFrame({"item": ["x", "y", "x"], "price": [1.0, 9.0, 5.0]})
>>> wf = irs.Workflow((["item"] >> ops.Categorify(num_buckets=4))
...                   + (["price"] >> ops.LogOp() >> ops.Normalize()))
>>> _ = wf.fit(raw)
>>> path = os.path.join(tempfile.mkdtemp(), "transform.pt")
>>> torch.jit.save(torch.jit.script(wf.to_torch()), path)
>>> served = torch.jit.load(path)   # needs PyTorch only
>>> out = served({"price": torch.tensor([5.0])}, {"item": ["never seen"]})
>>> out["item"].tolist() == wf.transform(pd.DataFrame({"item": ["never seen"],
...                                                    "price": [5.0]}))["item"].tolist()
True
"""

from interactive_recsys.serving._transform import NumericTransform, TorchTransform

__all__ = ["NumericTransform", "TorchTransform"]
