"""The notebook report: a notebook run and rendered to one static HTML page, widgets included,
with every HTML fragment sanitized and every secret redacted.
"""

from interactive_recsys.report._notebook_report import ReportError, notebook_html, notebook_report

__all__ = ["ReportError", "notebook_html", "notebook_report"]
