"""Recommendation models fitted from prepared interactions: Popularity, EASE, AutoEncoder.

Every model takes the user and item columns (``user_col``, ``item_col``), is fitted with
``model.fit(train)`` (``background=True``: a cluster job), saved as ``model.json`` +
``arrays.npz`` (never pickle) and loaded with :func:`load`. Top-K lists for many users come
from :func:`interactive_recsys.predict_topk`, on the cluster.

>>> import pandas as pd
>>> train = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [7, 8, 7]})
>>> Popularity().fit(train).items_.tolist()
[7, 8]
"""

from interactive_recsys.models._autoencoder import AutoEncoder
from interactive_recsys.models._base import MODELS, Model, ModelFormatError, load
from interactive_recsys.models._data import Interactions
from interactive_recsys.models._predict import predict_topk
from interactive_recsys.models._simple import EASE, Popularity

__all__ = ["EASE", "MODELS", "AutoEncoder", "Interactions", "Model", "ModelFormatError",
           "Popularity", "load", "predict_topk"]
