"""Where the work runs: local and remote Dask clusters (``cluster``), jobs and their named,
cancellable phases (``jobs``), and the live resource monitor behind the dashboard
(``monitor``).

Importing the package imports none of its modules (they load on first use)."""
