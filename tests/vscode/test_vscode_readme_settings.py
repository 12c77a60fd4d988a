"""The extension README's settings table lists every setting the extension contributes, with
the default package.json gives it: a setting missing there is one users never learn of."""

from __future__ import annotations

import json
import re
from pathlib import Path

EXTENSION = Path(__file__).resolve().parents[2] / "vscode"


def test_every_contributed_setting_is_in_the_readme_table_with_its_default() -> None:
    properties = json.loads((EXTENSION / "package.json").read_text())["contributes"]["configuration"]["properties"]
    rows = dict(re.findall(r"^\| `(lockgate\.[\w.]+)` \| `([^`]*)` \|", (EXTENSION / "README.md").read_text(), re.M))
    assert set(rows) == set(properties)
    for name, schema in properties.items():
        default = schema["default"]
        assert rows[name] == (default if isinstance(default, str) else json.dumps(default)), name
