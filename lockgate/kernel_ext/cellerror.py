"""The error a refused ``%flow`` line or a ``%%flow`` cell that binds nothing raises: the cell
fails, shown without a traceback.

IPython shows a plain :class:`UsageError` as one line on stderr and records no ``error``
output, so a saved notebook, papermill (which looks for an ``error`` output to fail a run) and
a reader of the outputs see no failed cell, and the next cell's ``NameError`` is the first
sign. Any other exception takes IPython's ordinary path: an ``error`` output, whose traceback
is what the exception's ``_render_traceback_()`` returns when it defines one.
"""

from __future__ import annotations

from IPython.core.error import UsageError


class FlowCellError(UsageError):
    """A ``%%flow`` cell that binds nothing (an invalid spec, name or ``--flow``), a refused
    ``%flow`` line (``%flow approve`` of a step that is not a waiting gate, an unknown option),
    or a refused ``spec.start(...)`` (inputs the flow refuses, an agent nothing provides).

    A :class:`UsageError` for callers that catch one; the message (the diagnostics, with the
    cell's line numbers) is the whole traceback shown.
    """

    def _render_traceback_(self) -> list[str]:
        return f"{type(self).__name__}: {self}".splitlines()
