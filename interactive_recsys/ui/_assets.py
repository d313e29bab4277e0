"""Find the browser-side sources of the custom widgets (the top-level ``widgets/`` folder).

In a wheel they are the data package ``interactive_recsys._widgets``; in a source checkout
(editable install) the same files are read from ``widgets/`` next to the package.

>>> widget_asset("dag.js").name
'dag.js'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def widget_asset(name: str) -> Path:
    """Path of ``widgets/<name>``; raises FileNotFoundError naming the places looked in."""
    places = []
    try:
        places.append(Path(str(resources.files("interactive_recsys._widgets") / name)))
    except ModuleNotFoundError:
        pass
    places.append(Path(__file__).resolve().parents[2] / "widgets" / name)
    for path in places:
        if path.is_file():
            return path
    raise FileNotFoundError(f"widget asset {name!r} not found in {[str(p) for p in places]}; "
                            "reinstall interactive-recsys (pip install -e .)")
