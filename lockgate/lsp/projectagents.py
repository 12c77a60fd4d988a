"""The agent names a spec's project configures (the nearest ``lockgate.toml``, or
``[tool.lockgate]`` in ``pyproject.toml``), read as ``lockgate validate`` reads them, so that the
editor's "agent is not configured" warnings (LG905) agree with the command line.

Read on the analysis thread: the configuration file is looked for on every analysis (a few
``stat`` calls up the folder tree; a ``pyproject.toml`` on the way is parsed again only when it
changed, see :func:`lockgate.engine.agents.config.find_config`) and parsed again only when it
changed.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def configured_agents(spec_path: str | None) -> tuple[str, ...]:
    """The agents the configuration nearest ``spec_path`` names; none for a document that is no
    file, or whose configuration cannot be read (the command line warns about that one)."""
    if spec_path is None:
        return ()
    from lockgate.engine.agents.config import find_config

    try:
        found = find_config(Path(spec_path).parent)
        stamp = found.stat().st_mtime_ns if found is not None else None
    except OSError:
        return ()
    return _agents_in(str(found), stamp) if found is not None and stamp is not None else ()


@functools.lru_cache(maxsize=32)
def _agents_in(config: str, stamp: int) -> tuple[str, ...]:
    from lockgate.engine.agents.config import load_config
    from lockgate.errors import ConfigError

    try:
        return tuple(load_config(config).agents)
    except (ConfigError, OSError) as exc:
        log.info("ignoring %s: %s", config, exc)
        return ()
