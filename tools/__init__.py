"""Tools of the repository, outside the package: not shipped in the wheel (pyproject lists
the wheel's packages), imported by tests, benchmarks and docs tools alike.

* :mod:`tools.lab`: a JupyterLab server and a headless Chromium page driving it.

Nothing here imports ``tests``; ``tests/unit/project/test_tool_imports.py`` checks it.
"""
