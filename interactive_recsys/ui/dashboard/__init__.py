"""The live dashboard: GPU and host memory, spilling, the task stream and job progress."""

from interactive_recsys.ui.dashboard._dashboard import BOKEHJS, Dashboard

__all__ = ["BOKEHJS", "Dashboard"]
