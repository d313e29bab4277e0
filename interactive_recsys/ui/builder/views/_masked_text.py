"""A text field for a path or URL that never shows, nor sends back to the page, a credential.

A URL with a password typed (or passed) into the builder's Dataset or Output field is kept in
the kernel, and the field shows it redacted by the one redaction rule
(:func:`~interactive_recsys.redact.redact_text`). The page holds only the redacted text, so
a notebook saved with its widget state, a file people commit, holds no credential.
:attr:`MaskedText.real_value` is what the builder reads: the URL with its password while the
field still shows its redacted form, else what the field shows.

>>> field = MaskedText()
>>> field.value = "https://ann:S3CR3T@h.example/data/"
>>> field.value, field.real_value
('https://***@h.example/data/', 'https://ann:S3CR3T@h.example/data/')
>>> field.value = "other/"  # typed over: the URL is forgotten
>>> field.real_value
'other/'
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from interactive_recsys.redact import redact_text
from interactive_recsys.ui.builder._codegen import holds_credential


class MaskedText(w.Text):
    """An ipywidgets ``Text`` whose value is shown with its credentials masked."""

    def __init__(self, **kwargs: Any) -> None:
        self._real: str | None = None
        super().__init__(**kwargs)
        self.observe(self._mask, "value")
        self._mask({"new": self.value})

    def _mask(self, change: dict[str, Any]) -> None:
        text = change["new"]
        if holds_credential(text):
            self._real = text
            self.value = redact_text(text)  # observed again: the masked text is kept
        elif self._real is not None and text != redact_text(self._real):
            self._real = None

    @property
    def real_value(self) -> str:
        """The value with its credentials while the field shows their masked form."""
        if self._real is not None and self.value == redact_text(self._real):
            return self._real
        return self.value
