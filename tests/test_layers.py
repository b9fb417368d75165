"""The layering: the render package only draws. Every module of ``analysis/report`` is parsed and
its imports followed through the analysis package; none may reach the loader, the attribution
rule, the labelling, the question computations or the summary that runs them."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

ANALYSIS = REPO / "analysis"
RENDER = ANALYSIS / "report"
# Modules (and their submodules) the render layer must never import, directly or through another.
FORBIDDEN_MODULES = ("analysis.load", "analysis.core.attribution", "analysis.questions", "analysis.app.answers",
                     "analysis.trace.summary", "analysis.trace.step_timeline", "analysis.app.cache", "analysis.app.cli")
FORBIDDEN_NAMES = {("analysis.core.phases", "label_ops")}
# What the render layer receives from the questions: plain data, no computation.
RENDER_MAY_IMPORT = ("analysis.questions.records",)


def module_file(name: str) -> Path | None:
    """The source file of an ``analysis`` module, None for other packages."""
    if name != "analysis" and not name.startswith("analysis."):
        return None
    path = REPO / Path(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, imported name or None) of every import statement in the file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                file = module_file(submodule)
                found.append((submodule, None) if file is not None and file.exists() else (node.module, alias.name))
    return found


def reachable_imports(start: list[Path]) -> dict[tuple[str, str | None], Path]:
    """Every import reachable from the ``start`` files through analysis modules, with the file
    that makes it."""
    seen_files, found, todo = set(), {}, list(start)
    while todo:
        path = todo.pop()
        if path in seen_files:
            continue
        seen_files.add(path)
        for module, name in imports(path):
            found.setdefault((module, name), path)
            file = module_file(module)
            if file is not None and file.exists():
                todo.append(file)
    return found


def test_the_render_package_reaches_no_loader_labelling_or_question_code():
    render_files = sorted(RENDER.rglob("*.py"))
    assert len(render_files) >= 8
    bad = [f"{path.relative_to(REPO)} imports {module}{'.' + name if name else ''}"
           for (module, name), path in reachable_imports(render_files).items()
           if (any(module == f or module.startswith(f + ".") for f in FORBIDDEN_MODULES)
               and not any(module == r or module.startswith(r + ".") for r in RENDER_MAY_IMPORT))
           or (module, name) in FORBIDDEN_NAMES]
    assert not bad, bad


def test_the_check_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "late.py"
    module.write_text("def draw():\n    from analysis.load import load_trace\n    return load_trace\n")
    assert ("analysis.load", "load_trace") in imports(module)


def test_analysis_code_outside_the_render_package_draws_nothing():
    drawing = ("jinja2", "matplotlib")
    bad = [f"{path.relative_to(REPO)} imports {module}"
           for path in sorted(ANALYSIS.rglob("*.py")) if RENDER not in path.parents
           for module, _ in imports(path) if module.split(".")[0] in drawing]
    assert not bad, bad
