"""The Binder (repo2docker) setup in ``binder/`` is consistent with the package it installs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[3]
BINDER = REPO / "binder"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _requirements() -> dict[str, Requirement]:
    reqs = {}
    for line in (BINDER / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            reqs[canonicalize_name(req.name)] = req
    return reqs


def _pinned_version(req: Requirement) -> Version:
    (spec,) = req.specifier
    assert spec.operator == "==", f"binder/requirements.txt: pin {req} exactly (==)"
    return Version(spec.version)


def test_postbuild_is_an_executable_bash_script_that_installs_the_package():
    post = BINDER / "postBuild"
    assert os.access(post, os.X_OK), "binder/postBuild must be executable (chmod +x)"
    lines = post.read_text().splitlines()
    assert lines[0] == "#!/bin/bash"
    commands = [ln.strip() for ln in lines[1:] if ln.strip() and not ln.startswith("#")]
    assert commands[0] == "set -e", "set -e must come before any command"
    assert any(re.search(r"\bpip install\b.* -e \.(\s|$)", c) for c in commands), commands
    subprocess.run(["bash", "-n", str(post)], check=True)  # syntax check


def test_requirements_pin_every_runtime_dependency_within_the_package_ranges():
    reqs = _requirements()
    declared = [Requirement(d) for d in PYPROJECT["dependencies"]]
    declared += [Requirement(d) for d in PYPROJECT["optional-dependencies"]["torchrec"]]
    for dep in declared:
        name = canonicalize_name(dep.name)
        assert name in reqs, f"binder/requirements.txt lacks {dep.name} (pyproject: {dep})"
        version = _pinned_version(reqs[name])
        assert dep.specifier.contains(version, prereleases=True), (
            f"binder/requirements.txt pins {reqs[name]}, outside pyproject's {dep}")
        assert dep.extras <= reqs[name].extras, f"{dep.name}: extras {dep.extras} missing"


def test_binder_is_cpu_only_and_avoids_the_deprecated_pynvml_wrapper():
    reqs = _requirements()
    # the gpu extra also narrows base dependencies (dask, pandas) to RAPIDS' pins: those stay
    gpu = {canonicalize_name(Requirement(d).name)
           for d in PYPROJECT["optional-dependencies"]["gpu"]}
    gpu -= {canonicalize_name(Requirement(d).name) for d in PYPROJECT["dependencies"]}
    assert "cudf-cu13" in gpu
    assert not gpu & set(reqs), "Binder has no GPU: leave the gpu extra out"
    assert "pynvml" not in reqs
    assert _pinned_version(reqs["torch"]).local == "cpu", "use the CPU wheel of torch"
    assert "download.pytorch.org/whl/cpu" in (BINDER / "requirements.txt").read_text()


def test_python_runtime_and_torchrec_match_the_package_and_ci():
    match = re.fullmatch(r"python-(\d+\.\d+)\s*", (BINDER / "runtime.txt").read_text())
    assert match, "binder/runtime.txt must read python-X.Y"
    requires = PYPROJECT["requires-python"]
    assert Requirement(f"python{requires}").specifier.contains(match.group(1) + ".0")

    def torchrec_pin(where: str, text: str) -> str:
        found = re.findall(r"--no-deps torchrec==([\w.]+)", text)
        assert len(found) == 1, f"{where}: one 'pip install --no-deps torchrec==X' expected"
        return found[0]

    ci = REPO / ".ci" / "run"
    if not ci.exists():
        pytest.skip(".ci/run not present")
    # README's commands, as CI runs them
    readme = subprocess.run([str(ci), "--print"], capture_output=True, text=True, check=True)
    assert (torchrec_pin("binder/postBuild", (BINDER / "postBuild").read_text())
            == torchrec_pin("README's commands", readme.stdout))


def test_notebooks_leave_the_gpu_choice_to_detection():
    """Binder (and CI) have no GPU: notebooks start clusters through ``irs.start_cluster``,
    which falls back to CPU workers, never by asking for GPU workers outright."""
    forced = re.compile(r"LocalCUDACluster\(|gpu\s*=\s*True|dask[ -]cuda[ -]worker")
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                assert not forced.search(code), f"{path.name} cell {i} forces GPU workers"
