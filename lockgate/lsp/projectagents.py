"""The agent names a spec's project configures (the nearest ``lockgate.toml``, or
``[tool.lockgate]`` in ``pyproject.toml``), read as ``lockgate validate`` reads them, so that the
editor's "agent is not configured" warnings (LG905) agree with the command line.

Read on the analysis thread: the configuration file is looked for on every analysis (a few
``stat`` calls up the folder tree; a ``pyproject.toml`` on the way is parsed again only when it
changed, see :func:`lockgate.engine.agents.config.find_config`) and parsed again only when it
changed: when its modification time, size or inode differ (the time alone misses a second
write within one tick of a coarse file system clock).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProjectAgents:
    """The agents a spec's project configures, or, in ``problem``, why its configuration could
    not be read (then which agents it configures is unknown, as ``lockgate validate`` says)."""

    agents: tuple[str, ...] = ()
    problem: str | None = None


def configured_agents(spec_path: str | None) -> ProjectAgents:
    """What the configuration nearest ``spec_path`` names; nothing for a document that is no
    file or has no configuration."""
    if spec_path is None:
        return ProjectAgents()
    from lockgate.engine.agents.config import find_config
    from lockgate.errors import ConfigError

    try:
        found = find_config(Path(spec_path).parent)
        if found is None:
            return ProjectAgents()
        stat = found.stat()
    except ConfigError as exc:  # a broken pyproject.toml on the way up
        return ProjectAgents(problem=str(exc))
    except OSError:
        return ProjectAgents()
    return _agents_in(str(found), (stat.st_mtime_ns, stat.st_size, stat.st_ino))


@functools.lru_cache(maxsize=32)
def _agents_in(config: str, stamp: tuple[int, int, int]) -> ProjectAgents:
    """The agents ``config`` names, parsed once per ``stamp`` (its mtime, size and inode)."""
    from lockgate.engine.agents.config import load_config
    from lockgate.errors import ConfigError

    try:
        return ProjectAgents(tuple(load_config(config).agents))
    except ConfigError as exc:
        return ProjectAgents(problem=str(exc))
    except OSError as exc:  # gone or unreadable since it was found: as if there were none
        log.info("ignoring %s: %s", config, exc)
        return ProjectAgents()
