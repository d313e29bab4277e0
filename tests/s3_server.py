"""A real S3-protocol server for tests: moto's standalone server in its own process.

The tests reach it over HTTP through s3fs with ``endpoint_url`` (as s3fs's own test suite
does), never through a mock inside the test process. :func:`start` picks a free port on
127.0.0.1 and waits until the server answers; :meth:`S3Server.stop` kills it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    process: subprocess.Popen
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self, key: str = "testing", secret: str = "testing") -> dict:
        """``storage_options`` for s3fs (the same dict works for pandas, pyarrow and Dask)."""
        return {"key": key, "secret": secret,
                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"}}

    def new_bucket(self) -> str:
        """A fresh bucket (s3fs's mkdir of a new bucket fails on moto: boto3 makes it)."""
        import boto3

        name = f"irs-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                     aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)


def start(timeout: float = 60.0, env: dict[str, str] | None = None) -> S3Server:
    """Start a server; ``env`` adds environment variables (e.g. moto's
    ``INITIAL_NO_AUTH_ACTION_COUNT``, which turns authentication on)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                                str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, **(env or {})})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto's server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return S3Server(process, port)
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"moto's server did not answer on port {port} in {timeout} s")
