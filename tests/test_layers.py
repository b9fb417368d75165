"""The layering. The analysis package is built in floors, each importing only the floors below it:
load → core → trace → questions → compare → report → app (docs/architecture.md). Every module's
imports are parsed (inside functions too) and checked against its floor; the summary's types
import nothing of the analysis; the questions' shared helpers import no question; ``import
analysis`` (the facade) loads nothing. And the render package only draws: following its imports
through the analysis package, none reaches the loader, the attribution rule, the labelling, the
question computations or the summary that runs them."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

ANALYSIS = REPO / "analysis"
RENDER = ANALYSIS / "report"
# Modules (and their submodules) the render layer must never import, directly or through another.
FORBIDDEN_MODULES = ("analysis.load", "analysis.core.attribution", "analysis.questions", "analysis.trace",
                     "analysis.compare", "analysis.app")
FORBIDDEN_NAMES = {("analysis.core.phases", "label_ops")}
# What the render layer receives from the floors below it: plain data, no computation.
RENDER_MAY_IMPORT = ("analysis.questions.records",)
FLOORS = ("load", "core", "trace", "questions", "compare", "report", "app")
# The one name a floor may take from the package itself (the facade's other names are above every floor).
FROM_THE_PACKAGE = {("analysis", "__version__")}


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
           if (_within(module, FORBIDDEN_MODULES) and not _within(module, RENDER_MAY_IMPORT))
           or (module, name) in FORBIDDEN_NAMES]
    assert not bad, bad


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor_of(module: str) -> int | None:
    """The floor of an ``analysis`` module (its first subpackage), None for the package itself."""
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 else None


def test_every_module_of_the_analysis_lives_on_a_floor():
    flat = [str(path.relative_to(REPO)) for path in ANALYSIS.glob("*.py") if path.name != "__init__.py"]
    assert not flat, flat
    folders = sorted(p.name for p in ANALYSIS.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert folders == sorted(FLOORS)


def test_every_floor_imports_only_the_floors_below_it():
    bad = []
    for path in sorted(ANALYSIS.rglob("*.py")):
        own = _module_name(path)
        if own == "analysis":
            continue  # the facade: it names what the floors offer, imported on first use
        for module, name in imports(path):
            if module_file(module) is None:
                continue
            if module == "analysis":
                if (module, name) not in FROM_THE_PACKAGE:
                    bad.append(f"{own} imports analysis.{name} (the facade)")
            elif floor_of(module) > floor_of(own):
                bad.append(f"{own} ({FLOORS[floor_of(own)]}) imports {module} ({FLOORS[floor_of(module)]})")
    assert not bad, bad


def test_the_summary_types_import_nothing_of_the_analysis():
    found = [module for module, _ in imports(ANALYSIS / "trace" / "summary_schema.py") if module_file(module) is not None]
    assert not found, found


def test_the_questions_shared_helpers_import_no_question():
    allowed = ("analysis.questions.shared", "analysis.questions.question", "analysis.questions.records")
    bad = [f"{path.relative_to(REPO)} imports {module}"
           for path in sorted((ANALYSIS / "questions" / "shared").rglob("*.py"))
           for module, _ in imports(path) if _within(module, ("analysis.questions",)) and not _within(module, allowed)]
    assert not bad, bad


def test_the_layering_check_sees_a_floor_reaching_up(tmp_path):
    core = tmp_path / "analysis" / "core"
    core.mkdir(parents=True)
    (core / "late.py").write_text("def f():\n    from analysis.app.cli import main\n    return main\n")
    (module, name), = imports(core / "late.py")
    assert floor_of(module) > floor_of("analysis.core.late")


def test_importing_the_facade_loads_no_floor_until_a_name_is_used():
    code = ("import sys, analysis\n"
            "assert not [m for m in sys.modules if m.startswith('analysis.')], sorted(sys.modules)\n"
            "assert 'pandas' not in sys.modules\n"
            "from analysis import analyze_trace, answer_questions, load_trace, render_report\n"
            "assert sorted(analysis.__all__) == sorted(['__version__', 'analyze_trace', 'answer_questions', 'load_trace', 'render_report'])\n"
            "assert all(callable(f) for f in (analyze_trace, answer_questions, load_trace, render_report))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


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
