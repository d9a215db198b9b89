"""Read a YAML file into Python data, with failures as one-line errors of the caller's type.

The target configuration and the stub's settings are both YAML files a person edits by hand; a
missing file or a syntax error in either should read the same way and name the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_yaml(path: Path, error: type[Exception], what: str = "the configuration") -> Any:
    """The parsed document; ``error(message)`` when the file cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise error(f"{path}: cannot read {what} (not UTF-8 text: is it the right file?)") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML ({exc})") from None
