"""The last line of defence of the ``lockgate`` command: an error that no command turned into
a message becomes one line on stderr and exit status 1, never a Python traceback.

Commands still report the errors they expect themselves (with their own exit codes); this only
catches what slips through. ``LOCKGATE_DEBUG=1`` lets the exception (and its traceback) through.
"""

from __future__ import annotations

import os

import click

DEBUG_ENV = "LOCKGATE_DEBUG"


class CommandError(click.ClickException):
    """A command's refusal, shown as every command shows one: ``error: MESSAGE`` on stderr
    (click's own ``Error: MESSAGE`` read as a different kind of message); exit status 1."""

    def show(self, file=None) -> None:  # type: ignore[no-untyped-def, override]
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class SafeGroup(click.Group):
    """A click group whose unexpected exceptions become a :class:`CommandError`, as do the
    commands' plain :class:`click.ClickException` (usage errors keep click's usage text)."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.UsageError, CommandError, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise  # click reports these itself (a broken pipe: silently, exit 1)
        except click.ClickException as exc:
            raise CommandError(exc.format_message()) from exc
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            raise CommandError(describe(exc)) from exc


def describe(exc: Exception) -> str:
    """One line for an exception: what went wrong, without Python's framing where it adds nothing."""
    from ..errors import LockgateError

    if isinstance(exc, LockgateError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{where}: {exc.strerror}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (f"internal error: {type(exc).__name__}{': ' + first if first else ''} "
            f"(set {DEBUG_ENV}=1 for the traceback)")
