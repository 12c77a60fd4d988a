"""The last line of defence of the ``lockgate`` command: an error that no command turned into
a message becomes one line on stderr and exit status 1, never a Python traceback; a file it could
not read or write (a full disk) exit status 74; Ctrl-C that no command handled itself one line
and exit status 130.

Commands still report the errors they expect themselves (with their own exit codes); this only
catches what slips through. ``LOCKGATE_DEBUG=1`` lets the exception (and its traceback) through.
"""

from __future__ import annotations

import io
import os
import sys
import traceback

import click

#: The exit status of an interrupted command: 128 + SIGINT, as shells report a command ended by
#: Ctrl-C. Left to click, Ctrl-C prints "Aborted!" and exits 1, which ``validate`` and ``verify``
#: use to say that they found errors or a broken chain.
EXIT_INTERRUPTED = 130

#: The exit status of a command that could not read or write a file, standard output included (a
#: full disk): sysexits' EX_IOERR. Not 1, which ``validate`` and ``verify`` use to say that they
#: found errors or a broken chain, and ``run`` that the run failed.
EXIT_IO = 74

DEBUG_ENV = "LOCKGATE_DEBUG"


class CommandError(click.ClickException):
    """A command's refusal, shown as every command shows one: ``error: MESSAGE`` on stderr
    (click's own ``Error: MESSAGE`` read as a different kind of message); exit status 1."""

    def show(self, file=None) -> None:  # type: ignore[no-untyped-def, override]
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class IOFailure(CommandError):
    """A file (or standard output) the command could not read or write: exit status :data:`EXIT_IO`."""

    exit_code = EXIT_IO


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
        except KeyboardInterrupt:
            if os.environ.get(DEBUG_ENV):
                raise
            _interrupted(ctx)
        except OSError as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            raise IOFailure(describe(exc)) from exc
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            raise CommandError(describe(exc)) from exc


def _interrupted(ctx: click.Context) -> None:
    """Say that the command was interrupted (on a line of its own: the terminal shows ``^C``
    where the cursor was) and exit with :data:`EXIT_INTERRUPTED`, without waiting for worker
    threads still in a call."""
    from .interrupt import exit_now

    command = f"lockgate {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "lockgate"
    click.echo(f"\n{command}: interrupted", err=True)
    exit_now(EXIT_INTERRUPTED)


def describe(exc: Exception) -> str:
    """One line for an exception: what went wrong, without Python's framing where it adds nothing."""
    from ..errors import LockgateError

    if isinstance(exc, LockgateError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename:
            return f"cannot use {exc.filename}: {exc.strerror}"
        failed = _file_of(exc)
        return f"cannot {failed}: {exc.strerror}" if failed else exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (f"internal error: {type(exc).__name__}{': ' + first if first else ''} "
            f"(set {DEBUG_ENV}=1 for the traceback)")


def _file_of(exc: OSError) -> str | None:
    """``write FILE`` (or ``read FILE``) for an OSError that names no file, as a failed write to
    standard output or to an ``-o`` file (a full disk) does: the file object held by the frame
    whose call failed (``click.echo``'s ``file``, pathlib's ``f``). None when it holds none."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    files = [value for value in frames[-1].f_locals.values() if isinstance(value, io.IOBase)] if frames else []
    return f"{_verb(files[0])} {_name(files[0])}" if len(files) == 1 else None


def _verb(file: io.IOBase) -> str:
    mode = str(getattr(file, "mode", ""))
    return "write" if set(mode) & set("wax+") else "read"


def _name(file: io.IOBase) -> str:
    if file in (sys.stdout, sys.__stdout__) or getattr(file, "name", None) == "<stdout>":
        return "to standard output"
    if file in (sys.stderr, sys.__stderr__) or getattr(file, "name", None) == "<stderr>":
        return "to standard error"
    return str(getattr(file, "name", "a file"))
