"""The documentation keeps up with the code: every command-line option has help text and is in
README.md, and every module is named in docs/architecture.md."""
from __future__ import annotations

import argparse
import re

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text()
ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text()
PACKAGES = ("analysis", "cs336_profile", "nsys_runs")


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Each command line of the project (subcommands apart) by the name a user types."""
    from analysis import cli
    from nsys_runs import sweep

    commands = {"analyze-nsys": cli._analyze_parser(), "analyze-nsys diff": cli._diff_parser(),
                "python -m nsys_runs.sweep": sweep.build_parser()}
    try:
        from cs336_profile import run
    except ImportError:  # the runner needs torch
        return commands
    runner = run.build_parser()
    commands["python -m cs336_profile.run"] = runner
    for action in runner._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands.update({f"python -m cs336_profile.run {name}": sub for name, sub in action.choices.items()})
    return commands


def _options() -> list[tuple[str, str, str | None]]:
    """(command, option, help) of every option of every command, --help aside."""
    return [(command, action.option_strings[-1], action.help)
            for command, parser in _commands().items() for action in parser._actions
            if action.option_strings and not isinstance(action, argparse._HelpAction)]


OPTIONS = _options()


@pytest.mark.parametrize("command,option,help_text", OPTIONS, ids=[f"{c}:{o}" for c, o, _ in OPTIONS])
def test_every_option_has_help_text(command, option, help_text):
    assert help_text and help_text.strip(), f"`{command} {option}` has no help text"


@pytest.mark.parametrize("command,option", sorted({(c, o) for c, o, _ in OPTIONS}))
def test_every_option_is_in_the_readme(command, option):
    assert re.search(rf"{re.escape(option)}\b", README), f"README.md does not mention `{command} {option}`"


MODULES = sorted(path.relative_to(REPO) for package in PACKAGES for path in (REPO / package).rglob("*.py")
                 if path.name != "__init__.py")


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_every_module_is_named_in_the_architecture(module):
    # Top-level modules by file name (`config.py`), modules of a subpackage with its folder
    # (`load/inputs.py`, `questions/nsys_a.py`), as the layout tree writes them.
    parts = module.parts[1:]
    name = "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
    assert re.search(rf"(?<![\w/]){re.escape(name)}\b", ARCHITECTURE), f"docs/architecture.md does not name {module}"
