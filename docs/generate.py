"""Write the documents that are made from the code: ``python docs/generate.py`` (or ``make docs``).

- ``docs/cli-reference.md``: every command's arguments and options, from the commands' own
  argparse parsers;
- ``docs/summary.schema.json``: the JSON schema of a trace summary, from its record types;
- the summary outline in ``docs/architecture.md``: the block after ``<!-- summary-outline -->``.

``--check`` writes nothing and exits 1 naming the documents that differ from what the code makes.
``tests/test_docs.py`` fails whenever a committed document differs, so none can drift. The runner's
parser imports torch: generate where ``make install-test`` installed it.
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `python docs/generate.py` puts docs/ first on the path, not the repository
    sys.path.insert(0, str(REPO))

REFERENCE = REPO / "docs" / "cli-reference.md"
SCHEMA = REPO / "docs" / "summary.schema.json"
ARCHITECTURE = REPO / "docs" / "architecture.md"
OUTLINE_BLOCK = re.compile(r"(<!-- summary-outline -->\n```text\n)(.*?)(```)", re.DOTALL)
WIDTH = 100  # descriptions not written by hand are wrapped at this width, as `--help` would on a wide terminal

# Each command a user types, and the function that builds its parser (subcommands are found in it).
COMMANDS = (
    ("analyze-nsys", "analysis.app.cli", "_analyze_parser"),
    ("analyze-nsys diff", "analysis.app.cli", "_diff_parser"),
    ("python -m cs336_profile.run", "cs336_profile.run", "build_parser"),
    ("python -m cs336_profile.launch", "cs336_profile.launch", "build_parser"),
    ("python -m nsys_runs.sweep", "nsys_runs.sweep", "build_parser"),
    ("python -m nsys_runs.scale_trace", "nsys_runs.scale_trace", "build_parser"),
)
INTRO = {
    "analyze-nsys": "Analyze nsys traces and write the report, JSON and CSV (the analyzer; `pip install cs336-profile`).",
    "python -m cs336_profile.run": "The runner: time the model's steps and run the experiments (needs the `runner` extra).",
    "python -m cs336_profile.launch": "torchrun's launch of a data-parallel run, its endings in one line each.",
    "python -m nsys_runs.sweep": "Every configuration of a grid as its own `nsys profile` run.",
    "python -m nsys_runs.scale_trace": "A larger valid export made by repeating a trace's measured steps (for benchmarks).",
}


# ----------------------------------------------------------------------------- the parsers
def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command line by the name a user types, subcommands as ``COMMAND SUBCOMMAND``."""
    found: dict[str, argparse.ArgumentParser] = {}
    for name, module, builder in COMMANDS:
        parser = getattr(importlib.import_module(module), builder)()
        found[name] = parser
        for action in _subcommand_actions(parser):
            found.update({f"{name} {sub}": subparser for sub, subparser in action.choices.items()})
    return found


def _subcommand_actions(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    return [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's options (``--help`` aside), in the order they were added."""
    return [action for action in parser._actions
            if action.option_strings and not isinstance(action, argparse._HelpAction)]


# ----------------------------------------------------------------------------- the CLI reference
def cli_reference() -> str:
    """docs/cli-reference.md: a section per command, a table per group of its arguments."""
    parsers = commands()
    lines = ["# Command-line reference", "",
             "Made by `python docs/generate.py` (`make docs`) from the commands' own parsers; "
             "`tests/test_docs.py` fails when this file differs from what that command writes, so edit the "
             "parsers' help, not this file. The same help, formatted for a terminal, is each command's `--help`.", ""]
    lines += [f"- [`{name}`](#{slug(name)})" + (f": {INTRO[name]}" if name in INTRO else "") for name in parsers]
    for name, parser in parsers.items():
        lines += ["", f"## {name}", "", *_command(name, parser)]
    return "\n".join(lines) + "\n"


def _command(name: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = ["```text", f"usage: {_synopsis(name, parser)}", "```", ""]
    raw = issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter)
    for text in (parser.description, parser.epilog):
        if text:
            lines += ["```text", *_text(text, raw), "```", ""]
    for group in parser._action_groups:
        actions = [action for action in group._group_actions if not isinstance(action, argparse._HelpAction)]
        if not actions:
            continue
        title = {"positional arguments": "Arguments", "options": "Options", "optional arguments": "Options"}
        lines += [f"**{title.get(group.title, group.title[:1].upper() + group.title[1:])}**", "",
                  "| argument | meaning |", "| --- | --- |"]
        lines += [f"| {_invocation(action)} | {'**Required.** ' if action.required and action.option_strings else ''}"
                  f"{_cell(_meaning(action))} |" for action in actions]
        lines.append("")
    for group in parser._mutually_exclusive_groups:
        names = ", ".join(f"`{action.option_strings[-1]}`" for action in group._group_actions)
        lines += [f"{'Exactly' if group.required else 'At most'} one of {names}.", ""]
    return lines[:-1]


def _synopsis(name: str, parser: argparse.ArgumentParser) -> str:
    """``COMMAND [options] POSITIONAL...``: the required options named, the others as [options]."""
    parts = [name]
    optional = [action for action in options(parser) if not action.required]
    parts += [f"{action.option_strings[-1]} {_value(action)}".rstrip() for action in options(parser) if action.required]
    if optional:
        parts.append("[options]")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parts.append("{" + ",".join(action.choices) + "} ...")
        elif not action.option_strings:
            parts.append(_value(action))
    return " ".join(parts)


def _value(action: argparse.Action) -> str:
    """The value an argument takes, written as argparse's usage writes it."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        metavar = action.metavar
    elif action.choices is not None:
        metavar = "{" + ",".join(str(choice) for choice in action.choices) + "}"
    else:
        metavar = action.dest if not action.option_strings else action.dest.upper()
    forms = {None: metavar, "?": f"[{metavar}]", "*": f"[{metavar} ...]", "+": f"{metavar} [{metavar} ...]",
             argparse.PARSER: f"{metavar} ..."}
    return forms[action.nargs] if action.nargs in forms else " ".join([metavar] * action.nargs)


def _invocation(action: argparse.Action) -> str:
    if isinstance(action, argparse._SubParsersAction):
        return "`{" + ",".join(action.choices) + "}`"
    if not action.option_strings:
        return f"`{_value(action)}`"
    value = _value(action)
    return ", ".join(f"`{option} {value}`" if value else f"`{option}`" for option in action.option_strings)


def _meaning(action: argparse.Action) -> str:
    if isinstance(action, argparse._SubParsersAction):
        return "; ".join(f"`{choice.dest}`: {choice.help}" for choice in action._choices_actions)
    return " ".join((action.help or "").split())


def _text(text: str, raw: bool) -> list[str]:
    """A description or epilog as ``--help`` shows it: kept as written when raw, else wrapped."""
    if not raw:
        return textwrap.wrap(" ".join(text.split()), WIDTH)
    lines = []
    for line in textwrap.dedent(text).strip("\n").splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        lines += textwrap.wrap(line, WIDTH, subsequent_indent=indent) or [""]
    return lines


def _cell(text: str) -> str:
    """Help text for a Markdown table cell: pipes escaped; outside code spans, `<`, `>` and `*` too."""
    pieces = text.replace("|", "\\|").split("`")
    for i in range(0, len(pieces), 2):
        pieces[i] = pieces[i].replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")
    return "`".join(pieces)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` dropped,
    spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


# ----------------------------------------------------------------------------- the summary's schema
def summary_schema_json() -> str:
    """docs/summary.schema.json: the summary's JSON schema, as analysis.app.analyze makes it."""
    from analysis.app.analyze import summary_schema

    return json.dumps(summary_schema(), indent=1) + "\n"


def summary_outline(schema: dict, path: str = "") -> list[str]:
    """``path: type`` per property of the schema, depth first (``*`` any key, ``[]`` any item)."""
    if "anyOf" in schema:
        (inner,) = [option for option in schema["anyOf"] if option.get("type") != "null"]
        lines = summary_outline(inner, path)
        return [lines[0] + " | null", *lines[1:]]
    kind = schema.get("type", "any")
    lines = [f"{path or '$'}: {kind}"] if path else []
    if kind == "array":
        item = schema["items"]
        if item.get("type") == "object" or "anyOf" in item:
            lines += summary_outline(item, f"{path}[]")
        else:
            lines[-1] += f" of {item.get('type', 'any')}"
    if kind == "object":
        for name, item in schema.get("properties", {}).items():
            lines += summary_outline(item, f"{path}.{name}" if path else name)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            lines += summary_outline(extra, f"{path}.*")
    return lines


def architecture_with_outline(text: str) -> str:
    """docs/architecture.md with its summary outline block made from the schema (the rest as it is)."""
    from analysis.app.analyze import summary_schema

    if not OUTLINE_BLOCK.search(text):
        raise SystemExit(f"{ARCHITECTURE.relative_to(REPO)} has no `<!-- summary-outline -->` block")
    outline = "".join(line + "\n" for line in summary_outline(summary_schema()))
    return OUTLINE_BLOCK.sub(lambda block: block.group(1) + outline + block.group(3), text, count=1)


# ----------------------------------------------------------------------------- all of them
def documents() -> dict[Path, str]:
    """Every generated document by its path, with the content the code makes now."""
    return {REFERENCE: cli_reference(), SCHEMA: summary_schema_json(),
            ARCHITECTURE: architecture_with_outline(ARCHITECTURE.read_text())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python docs/generate.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a document is out of date")
    args = parser.parse_args(argv)
    stale = {path: text for path, text in documents().items() if not path.exists() or path.read_text() != text}
    for path, text in stale.items():
        if not args.check:
            path.write_text(text)
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        print(f"{shown}: {'out of date' if args.check else 'written'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
