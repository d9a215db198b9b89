"""Every example configuration in the repository is valid, to an editor and to paysuite.

The examples are ``examples/*.yaml`` and the YAML blocks of README.md and docs/*.md that start
with a ``# yaml-language-server: $schema=...`` line. What that line promises (an editor finds
nothing to flag) is checked with the shipped schema and plain jsonschema, as an editor would; then
paysuite's own reader accepts the file too (references resolved, the checks no schema makes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from paysuite.cli import main
from paysuite_core.config_schema import SCHEMAS, schema
from paysuite_core.target_config import parse_target_config
from stub_server.settings import StubSettings, settings_from_mapping

ROOT = Path(__file__).resolve().parents[2]
HEADER = re.compile(r"# yaml-language-server: \$schema=(\S+)\n")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples() -> list[tuple[str, str, str]]:
    """(where, schema name, text) of every example."""
    found = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        header = HEADER.match(text)
        assert header, f"{path.name} does not start with the yaml-language-server line"
        assert (path.parent / header[1]).is_file(), f"{path.name}: {header[1]} does not exist"
        found.append((path.name, header[1], text))
    for doc in DOCS:
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            if header := HEADER.match(block):
                found.append((doc.name, header[1], block))
    return [
        (where, Path(ref).name.removesuffix(".schema.json"), text) for where, ref, text in found
    ]


EXAMPLES = examples()


def test_the_examples_cover_the_files_a_person_writes() -> None:
    assert {name for _, name, _ in EXAMPLES} == {"target", "stub"}
    assert {where for where, _, _ in EXAMPLES} >= {"target.yaml", "stub.yaml", "README.md"}


@pytest.mark.parametrize(("where", "name", "text"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_every_example_is_valid_to_an_editor_and_to_paysuite(
    where: str, name: str, text: str
) -> None:
    data = yaml.safe_load(text)
    jsonschema.validate(data, schema(name))  # also checks the schema against draft 2020-12
    if name == "target":
        config = parse_target_config(data, env={})
        assert config.base_url == data["base_url"].rstrip("/")
    else:  # an example shows settings, so it changes some
        assert settings_from_mapping(data) != StubSettings()


@pytest.mark.parametrize("name", SCHEMAS)
def test_paysuite_schema_writes_the_shipped_schema(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", name]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written == schema(name)
    jsonschema.Draft202012Validator.check_schema(written)
