"""The documentation keeps up with the code.

- The documents made from the code (docs/cli-reference.md from the commands' parsers,
  docs/summary.schema.json and the summary outline) are what `python docs/generate.py` writes now,
  so none can drift; every option has help text and a row in the reference.
- The README and the guides in docs/ use only options the commands have, link only to files and
  headings that exist, and the README stays a short front page whose quick start is true.
- Every module is named in docs/architecture.md.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from docs import generate
from tests.conftest import REPO

README = REPO / "README.md"
ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text()
PACKAGES = ("analysis", "cs336_profile", "nsys_runs")
GUIDES = sorted([README, *(REPO / "docs").glob("*.md")])
README_MOST_LINES = 160  # a front page: what it is, the quick start, an example per command, links

pytest.importorskip("torch", reason="the runner's parser, part of the reference, needs torch")
COMMANDS = generate.commands()
OPTIONS = [(command, action.option_strings[-1], action.help)
           for command, parser in COMMANDS.items() for action in generate.options(parser)]


# ----------------------------------------------------------------------------- the generated documents
@pytest.fixture(scope="module")
def documents():
    return generate.documents()


@pytest.mark.parametrize("document", [generate.REFERENCE, generate.SCHEMA, generate.ARCHITECTURE],
                         ids=lambda path: path.name)
def test_the_committed_document_is_what_the_code_makes(documents, document):
    assert document.read_text() == documents[document], \
        f"{document.relative_to(REPO)} differs from what the code makes: run `make docs` (python docs/generate.py)"


def test_the_generate_command_runs_from_anywhere_and_finds_nothing_stale(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "docs" / "generate.py"), "--check"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_generate_command_finds_and_rewrites_a_stale_document(tmp_path, monkeypatch, capsys):
    for name in ("REFERENCE", "SCHEMA", "ARCHITECTURE"):
        copy = tmp_path / getattr(generate, name).name
        copy.write_text(getattr(generate, name).read_text())
        monkeypatch.setattr(generate, name, copy)
    generate.REFERENCE.write_text(generate.REFERENCE.read_text().replace("`--verbose`", "`--loud`"))
    assert generate.main(["--check"]) == 1
    assert capsys.readouterr().out.endswith("cli-reference.md: out of date\n")
    assert "`--loud`" in generate.REFERENCE.read_text()  # --check writes nothing
    assert generate.main([]) == 0
    assert generate.main(["--check"]) == 0
    assert generate.REFERENCE.read_text() == (REPO / "docs" / "cli-reference.md").read_text()


@pytest.mark.parametrize("command,option,help_text", OPTIONS, ids=[f"{c}:{o}" for c, o, _ in OPTIONS])
def test_every_option_has_help_text(command, option, help_text):
    assert help_text and help_text.strip(), f"`{command} {option}` has no help text"


def _reference_sections() -> dict[str, str]:
    """The committed reference's text under each command's heading."""
    parts = re.split(r"^## (.+)$", generate.REFERENCE.read_text(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.parametrize("command,option", sorted({(c, o) for c, o, _ in OPTIONS}))
def test_every_option_is_in_its_commands_reference_section(command, option):
    section = _reference_sections().get(command)
    assert section is not None, f"docs/cli-reference.md has no section `## {command}`"
    assert re.search(rf"^\| [^|]*`{re.escape(option)}[ `]", section, re.MULTILINE), \
        f"docs/cli-reference.md does not list `{command} {option}`"


# ----------------------------------------------------------------------------- the README and the guides
def test_the_readme_is_a_front_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MOST_LINES, \
        f"README.md has {len(lines)} lines: details belong in docs/ (the README links to them)"
    first_screen = "\n".join(lines[:30])
    assert "## Quick start" in first_screen and "make report" in first_screen and "make test" in first_screen


def test_the_quick_starts_make_targets_exist():
    makefile = (REPO / "Makefile").read_text()
    named = set(re.findall(r"`make (\w[\w-]*)`|^make (\w[\w-]*)", README.read_text(), re.MULTILINE))
    targets = {target for pair in named for target in pair if target}
    assert {"report", "test", "docs"} <= targets
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"README.md names `make {target}`; the Makefile has no such target"


def _code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def _command_lines() -> list[tuple[str, str]]:
    """(file, command line) of each line of a bash block that runs one of the project's commands."""
    found = []
    for path in GUIDES:
        for block in _code_blocks(path.read_text(), "bash"):
            for line in block.replace("\\\n", " ").splitlines():
                if line.startswith("#"):  # a command shown in a comment is checked as well
                    line = line[re.search(r"\b(torchrun|python|analyze-nsys)\b|$", line).start():]
                if re.search(r"analyze-nsys|-m (cs336_profile|nsys_runs)\.", line):
                    found.append((path.relative_to(REPO).as_posix(), line.strip()))
    return found


# `python -m MODULE` commands of the reference by module: an example of any other module of the project fails.
MODULES = {name.removeprefix("python -m "): name for name, _, _ in generate.COMMANDS if name.startswith("python -m ")}


def _invocation(line: str) -> tuple[str, list[str]]:
    """The command a line runs (by its name in the reference) and the words given to it."""
    words = shlex.split(line, comments=True)
    for i, word in enumerate(words):
        if word == "analyze-nsys":
            rest = words[i + 1:]
            return ("analyze-nsys diff", rest[1:]) if rest[:1] == ["diff"] else ("analyze-nsys", rest)
        if word == "-m" and words[i + 1] in MODULES:
            return MODULES[words[i + 1]], words[i + 2:]
    raise AssertionError(f"no command of the project in {line!r}")


def _unknown_options(command: str, words: list[str]) -> list[str]:
    if command == "python -m cs336_profile.launch":  # the launcher's options, then the runner's
        own = COMMANDS[command]._option_string_actions
        return _unknown_options("python -m cs336_profile.run",
                                [w for i, w in enumerate(words) if w not in own and words[i - 1:i] != ["--nproc-per-node"]])
    if command == "python -m cs336_profile.run":
        subcommand, words = (words[0], words[1:]) if words and not words[0].startswith("-") else ("bench", words)
        command = f"{command} {subcommand}"
        if command not in COMMANDS:
            return [subcommand]
    known = COMMANDS[command]._option_string_actions
    return [word for word in words if word.startswith("-") and not re.fullmatch(r"-\d.*", word)
            and word.split("=")[0] not in known]


@pytest.mark.parametrize("path,line", _command_lines(), ids=lambda value: value[:60])
def test_every_example_uses_options_its_command_has(path, line):
    command, words = _invocation(line)
    assert not _unknown_options(command, words), f"{path}: `{line}` uses what `{command}` does not have"


def test_the_examples_are_checked():
    # The check above must see the README's examples of every command it shows.
    commands = {_invocation(line)[0] for path, line in _command_lines() if path == "README.md"}
    assert {"analyze-nsys", "analyze-nsys diff", "python -m cs336_profile.run", "python -m nsys_runs.sweep"} <= commands
    assert _unknown_options("analyze-nsys", ["--verbose", "--loud"]) == ["--loud"]
    assert _unknown_options("python -m cs336_profile.run", ["memory", "--size", "2.7B", "--sizes"]) == ["--sizes"]
    assert _unknown_options("python -m cs336_profile.run", ["--sizes", "small", "--size"]) == ["--size"]
    assert _unknown_options("python -m cs336_profile.launch", ["--nproc-per-node", "2", "--parallel", "fsdp", "--x"]) == ["--x"]


def _links() -> list[tuple[str, str]]:
    """(file, target) of every relative Markdown link outside code in the README and docs/."""
    found = []
    for path in GUIDES:
        text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
        text = re.sub(r"`[^`\n]*`", "", text)
        found += [(path.relative_to(REPO).as_posix(), target) for target in re.findall(r"\]\(([^)\s]+)\)", text)
                  if not re.match(r"[a-z]+:", target)]
    return found


@pytest.mark.parametrize("path,target", _links())
def test_every_link_leads_somewhere(path, target):
    file, _, anchor = target.partition("#")
    linked = (REPO / path).parent / file if file else REPO / path
    assert linked.resolve().is_file(), f"{path} links to {target}: no such file"
    if anchor:
        headings = re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", linked.read_text(), flags=re.MULTILINE | re.DOTALL),
                              re.MULTILINE)
        assert anchor in {generate.slug(heading) for heading in headings}, f"{path} links to {target}: no such heading"


def test_the_links_are_checked():
    assert ("README.md", "docs/cli-reference.md") in _links()
    assert generate.slug("python -m cs336_profile.run bench") == "python--m-cs336_profilerun-bench"
    assert generate.slug("Analyzing: `analyze-nsys`") == "analyzing-analyze-nsys"


# ----------------------------------------------------------------------------- the architecture
MODULE_FILES = sorted(path.relative_to(REPO) for package in PACKAGES for path in (REPO / package).rglob("*.py")
                      if path.name != "__init__.py")


@pytest.mark.parametrize("module", MODULE_FILES, ids=str)
def test_every_module_is_named_in_the_architecture(module):
    # Top-level modules by file name (`config.py`), modules of a subpackage with its folder
    # (`load/inputs.py`, `questions/nsys_a.py`), as the layout tree writes them.
    parts = module.parts[1:]
    name = "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
    assert re.search(rf"(?<![\w/]){re.escape(name)}\b", ARCHITECTURE), f"docs/architecture.md does not name {module}"
