"""The house rules of the package, checked on its source: one job per module, imports one way, no cycles.

Each rule is read off the code with `ast` (imports inside functions included), so a change that breaks
one fails here with the module and line to look at."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.runs import REPO

PACKAGE = REPO / "pytest_sys1cal"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 200
# The pytest glue: what the lower layers (recording/, measuring, the store, other versions) must not reach back
# into. First components of module names under the package: the session/ wing is glue as a whole.
GLUE = {"plugin", "session"}
ERROR_ROOTS = {"InputError", "MeasurementError"}
# Names of the shared vocabulary: defined in vocabulary.py and nowhere else.
VOCABULARY = {
    "PRIMITIVES",
    "LABELS",
    "SCORE_LEVELS",
    "FAMILY_NAMES",
    "PASSED",
    "FAILED",
    "INCONCLUSIVE",
    "NOT_MEASURED",
    "RECORD_MODES",
    "REPORT_SCHEMA",
    "MANIFEST_SCHEMA",
    "TREND_SCHEMA",
    "REPLAY_CACHE_SCHEMA",
}
# What the pure parts must not import: they run without pytest (commands, reports read back) and
# without the recording stack.
FORBIDDEN = {
    "analysis": {"pytest", "_pytest", "vcr", "httpx"},
    "report": {"pytest", "_pytest", "vcr", "httpx"},
    "gates": {"pytest", "_pytest"},
    "generate": {"pytest", "_pytest", "vcr", "httpx"},
    "commands": {"pytest", "_pytest", "vcr", "httpx"},
}

# Parts of the package a part must not import: the analysis is handed its data (it reads no dataset and
# knows no generator) and knows nothing of gates (the gates read the analysis, never the other way); nothing
# below the glue reaches a renderer (report/): the report document's typed home is document.py, at the top;
# the store and other versions replayed offline take plain values, never the pytest session's glue.
_SESSION_GLUE = {f"pytest_sys1cal.{name}" for name in GLUE}
_RENDERERS = "pytest_sys1cal.report"
FORBIDDEN_INTERNAL = {
    "analysis": {"pytest_sys1cal.dataset", "pytest_sys1cal.generate", "pytest_sys1cal.gates", _RENDERERS},
    "gates": {_RENDERERS},
    "store": {*_SESSION_GLUE, _RENDERERS},
    "versions": {*_SESSION_GLUE, _RENDERERS},
    "recording": {_RENDERERS},
    "models": {_RENDERERS},
    "generate": {_RENDERERS},
}
# Who may call a renderer: the renderers themselves, the commands and the pytest session's glue (which writes the
# run's outputs); every other module of the package, the top-level spine included, may not.
RENDERER_CALLERS = ("report", "commands", "session")
# Calls that open or read a file: the analysis makes none.
FILE_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports(path: Path) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file, at any depth, relative ones resolved."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, node.lineno
            # `from . import x` / `from .pkg import module`: the names may be modules themselves.
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)


def internal_graph() -> dict[str, set[str]]:
    known = {module_name(p) for p in modules()}
    graph: dict[str, set[str]] = {}
    for path in modules():
        name = module_name(path)
        targets = set()
        for imported, _line in imports(path):
            # An import of a.b.c also runs a and a.b (their __init__): count the deepest known module.
            parts = imported.split(".")
            for depth in range(len(parts), 0, -1):
                candidate = ".".join(parts[:depth])
                if candidate in known:
                    if candidate != name:
                        targets.add(candidate)
                    break
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    graph = internal_graph()
    # A package __init__ that imports its own submodules is not a cycle of the design; leave those edges out.
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    assert find_cycle(graph) is None, f"import cycle: {' → '.join(find_cycle(graph) or [])}"


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_60_lines() -> None:
    long = []
    for path in modules():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, "functions over 60 lines:\n" + "\n".join(long)


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_pure_parts_import_no_pytest_or_http(part: str) -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {imported}"
        for path in sorted((PACKAGE / part).rglob("*.py"))
        for imported, line in imports(path)
        if imported.split(".")[0] in FORBIDDEN[part]
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("part", sorted(FORBIDDEN_INTERNAL))
def test_parts_import_no_forbidden_part_of_the_package(part: str) -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {imported}"
        for path in sorted((PACKAGE / part).rglob("*.py"))
        for imported, line in imports(path)
        if any(imported == name or imported.startswith(name + ".") for name in FORBIDDEN_INTERNAL[part])
    ]
    assert not found, "\n".join(found)


def test_only_the_glue_and_the_commands_call_a_renderer() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {imported}"
        for path in modules()
        if path.relative_to(PACKAGE).parts[0] not in RENDERER_CALLERS
        for imported, line in imports(path)
        if imported == _RENDERERS or imported.startswith(_RENDERERS + ".")
    ]
    assert not found, "\n".join(found)


def folder_of(module: str) -> str:
    """A module's folder under the package; a top-level module (the spine, the shared ground) is its own node."""
    parts = module.split(".")
    return parts[1] + "/" if len(parts) > 2 else ".".join(parts[1:]) or "__init__"


def test_no_import_cycle_between_folders() -> None:
    """Folders import one way: with every module of a folder merged into one node, the graph has no cycle (so
    no folder reaches up into a folder, or a top-level module, that reaches down into it)."""
    graph: dict[str, set[str]] = {}
    for name, targets in internal_graph().items():
        graph.setdefault(folder_of(name), set()).update(
            folder_of(t) for t in targets if folder_of(t) != folder_of(name) and t != "pytest_sys1cal"
        )
    assert find_cycle(graph) is None, f"folder cycle: {' → '.join(find_cycle(graph) or [])}"


def test_the_analysis_opens_no_file() -> None:
    found = [
        f"{path.relative_to(REPO)}:{node.lineno} calls {name}()"
        for path in sorted((PACKAGE / "analysis").rglob("*.py"))
        for node in ast.walk(tree(path))
        if isinstance(node, ast.Call)
        and (name := getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in FILE_CALLS
    ]
    assert not found, "\n".join(found)


def test_each_shared_name_is_defined_once_in_vocabulary() -> None:
    defined = []
    for path in modules():
        for node in tree(path).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            names |= {e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)}
            defined += [(name, path.name) for name in names & VOCABULARY if path.name != "vocabulary.py"]
    assert not defined, f"defined outside vocabulary.py: {defined}"


def test_every_file_the_package_cites_is_in_the_repository() -> None:
    cited = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:md|yaml|json|py))\b")
    missing = []
    for path in modules():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for name in cited.findall(line):
                if (
                    name.count("/")
                    and not (REPO / name).exists()
                    and not (PACKAGE / name).exists()
                    or name.endswith(".md")
                    and not name.count("/")
                    and not any(REPO.rglob(name))
                ):
                    missing.append(f"{path.relative_to(REPO)}:{number} cites {name}")
    assert not missing, "\n".join(missing)


def _internal(path: Path) -> Iterator[tuple[str, int]]:
    """(module of this package, line) of every import of `path` that names one."""
    for imported, line in imports(path):
        if imported.startswith("pytest_sys1cal."):
            yield imported.removeprefix("pytest_sys1cal."), line


def test_no_class_over_200_lines() -> None:
    long = [
        f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length} lines)"
        for path in modules()
        for node in ast.walk(tree(path))
        if isinstance(node, ast.ClassDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_CLASS_LINES
    ]
    assert not long, "classes over 200 lines:\n" + "\n".join(long)


def test_recording_is_a_lower_layer_that_imports_no_glue() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in sorted((PACKAGE / "recording").rglob("*.py"))
        for name, line in _internal(path)
        if name.split(".")[0] in GLUE
    ]
    assert not found, "\n".join(found)


def test_measuring_imports_nothing_from_recording_or_the_glue() -> None:
    found = [
        f"measure.py:{line} imports {name}"
        for name, line in _internal(PACKAGE / "measure.py")
        if name.split(".")[0] in GLUE | {"recording"}
    ]
    assert not found, "\n".join(found)


def test_every_exception_class_derives_from_one_of_the_two_roots() -> None:
    """Each exception class of the package derives, through its bases in the package, from InputError (the
    user's input is wrong: exit 4) or MeasurementError (a rendering, a statistic or the run could not be
    measured). A signal is not an error: session/signals.py's Terminated is a KeyboardInterrupt (SIGTERM taken
    like Ctrl-C, which pytest's own interrupt handling must see), and `is_exception` does not count it."""
    classes: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path in modules():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [ast.unparse(base).split(".")[-1] for base in node.bases]
                where[node.name] = f"{path.relative_to(REPO)}:{node.lineno}"

    def roots(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name in ERROR_ROOTS:
            return {name}
        return {r for base in classes.get(name, []) if base not in seen for r in roots(base, seen | {name})}

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        bases = classes.get(name, [])
        return any(
            b in ("Exception", "BaseException")
            or b.endswith(("Error", "Exception"))
            and b not in classes
            or b in classes
            and b not in seen
            and is_exception(b, seen | {name})
            for b in bases
        )

    strays = [
        f"{where[name]} {name}({', '.join(classes[name])})"
        for name in classes
        if name not in ERROR_ROOTS and is_exception(name) and not roots(name)
    ]
    assert not strays, "exception classes outside the two roots:\n" + "\n".join(strays)


def test_options_are_read_only_in_options_py() -> None:
    """Every option and ini key is resolved once, into Settings, in options.py: nowhere else asks pytest."""
    found = [
        f"{path.relative_to(REPO)}:{node.lineno} {ast.unparse(node)[:80]}"
        for path in modules()
        if path.name != "options.py"
        for node in ast.walk(tree(path))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("getoption", "getini")
    ]
    assert not found, "\n".join(found)


def test_every_module_a_docstring_names_exists() -> None:
    """A bare module name in the package's text (``engine.py``) names a file of the repository."""
    named = re.compile(r"(?<![\w/.-])([a-z_][\w]*\.py)\b")
    files = {p.name for p in REPO.rglob("*.py") if ".ci" not in p.parts and "venv" not in str(p)}
    missing = [
        f"{path.relative_to(REPO)}:{number} names {name}"
        for path in modules()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for name in named.findall(line)
        if name not in files
    ]
    assert not missing, "\n".join(missing)


def _layout_blocks() -> dict[str, str]:
    """docs/architecture.md's "Project layout" tree as {folder: its text}: each `name/` entry of the package with
    the lines that continue it, and "" for the package's top level (every other line under `pytest_sys1cal/`)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree_lines = text.split("## Project layout", 1)[1].split("    pytest_sys1cal/\n", 1)[1].split("\n    docs/", 1)[0]
    blocks: dict[str, str] = {"": ""}
    current = ""
    for line in tree_lines.splitlines():
        entry = re.match(r"      (\S.*?)\s{2,}|      (\S+)$", line)
        if entry:
            names = [name.strip() for name in (entry.group(1) or entry.group(2)).split(",")]
            current = names[0][:-1] if names[0].endswith("/") else ""
            blocks.setdefault(current, "")
            # The modules an entry names before its description are top-level ones (`commands/, __main__.py`).
            blocks[""] += " " + " ".join(name for name in names if not name.endswith("/"))
            if not current:
                continue
        blocks[current] += " " + line
    return blocks


def test_the_architecture_layout_lists_every_module() -> None:
    """docs/architecture.md's "Project layout" mirrors the tree: every module of the package is named in the entry
    of its own folder (a top-level module on a top-level line)."""
    blocks = _layout_blocks()
    missing = []
    for path in modules():
        if path.name == "__init__.py":
            continue
        folder = "/".join(path.relative_to(PACKAGE).parts[:-1])
        if not re.search(rf"(?<![\w/]){re.escape(path.name)}\b", blocks.get(folder, "")):
            missing.append(str(path.relative_to(PACKAGE)))
    assert not missing, f"modules docs/architecture.md's layout does not name under their own folder: {missing}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(blocks) - {""} == folders, f"layout folders {sorted(set(blocks) - {''})} vs the tree's {sorted(folders)}"


def test_every_flag_the_package_names_is_an_option_it_defines() -> None:
    """Messages, help texts and generated files name flags in words; each `--sys1cal…` they name is one that
    options.py defines, so a renamed option cannot leave a message pointing at a flag that no longer exists."""
    from pytest_sys1cal.session.options import OPTIONS

    defined = {option.flag for option in OPTIONS} | {"--sys1cal", "--sys1cal-dry-run"}
    named = re.compile(r"--sys1cal(?:-[a-z0-9]+)*")
    unknown = [
        f"{path.relative_to(REPO)}:{number} names {flag}"
        for path in modules()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for flag in named.findall(line)
        if flag not in defined
    ]
    assert not unknown, "\n".join(unknown)


# Where a verdict is decided: gates/rows.py (GateSummary, outcome, passes) from the words vocabulary.py defines.
DECIDERS = {"gates/rows.py", "vocabulary.py"}


def verdict_decisions(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, what) of each place `tree` spells out a verdict to decide with it: the literal "FAILED" (docstrings
    aside), or a comparison of what reads a verdict or an outcome (its source names one) with one of their words.
    Comparing with the enums (``gate.verdict == Verdict.FAILED``) is typed, and not counted here."""
    from pytest_sys1cal.gates.rows import Outcome
    from pytest_sys1cal.vocabulary import Verdict

    words = {str(word) for word in (*Verdict, *Outcome)}
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented) and node.body and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == str(Verdict.FAILED) and id(node) not in docstrings:
            yield node.lineno, f"the literal {node.value!r}"
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            spelled = [
                element.value
                for operand in operands
                for element in (operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand])
                if isinstance(element, ast.Constant) and element.value in words
            ]
            reading = [
                ast.unparse(operand) for operand in operands if re.search("verdict|outcome", ast.unparse(operand), re.I)
            ]
            if spelled and reading:
                yield node.lineno, f"{reading[0]} compared with {spelled[0]!r}"


def test_only_the_gates_rows_decide_a_verdict_from_its_word() -> None:
    """A run's outcome is counted in one place (gates/rows.py's GateSummary); nothing else re-reads verdicts by
    their words, so a verdict renamed in vocabulary.py cannot leave a stale comparison behind."""
    found = [
        f"{path.relative_to(REPO)}:{line} {what}"
        for path in modules()
        if str(path.relative_to(PACKAGE)) not in DECIDERS
        for line, what in verdict_decisions(tree(path))
    ]
    assert not found, "\n".join(found)


def test_the_verdict_rule_sees_a_decision_by_word() -> None:
    """The check can fail: the three comparisons the issue found, and a word hidden in a tuple, are seen; the
    enum and a verdict word that is only a message's text are not."""
    source = """
if not any(g.get("verdict") == "FAILED" for g in gates): pass
failed = [g["name"] for g in gates if g["verdict"] == "passed"]
if absolute["outcome"] in ("failed", "undecided"): pass
ok = gate.verdict == Verdict.FAILED
said = "FAILED: " + ", ".join(names)
"""
    found = list(verdict_decisions(ast.parse(source)))
    assert sorted(line for line, _ in found) == [2, 2, 3, 4], found


def test_the_modules_kept_on_one_worker_exist_and_share_a_module_fixture() -> None:
    """tests/conftest.py keeps these on one xdist worker so that their module-scoped fixtures are built once: a
    renamed file would silently drop out, and one without such a fixture gains nothing from it."""
    from tests.conftest import ONE_WORKER_MODULES, work_unit

    for module in sorted(ONE_WORKER_MODULES):
        path = REPO / module
        assert path.is_file(), module
        assert 'scope="module"' in path.read_text(encoding="utf-8"), module
        assert work_unit(f"{module}::test_a[x::y]") == work_unit(f"{module}::test_b") == module
    assert work_unit("tests/test_plugin.py::test_a") == "tests/test_plugin.py::test_a"


@pytest.mark.e2e
def test_the_suite_collects_without_xdist() -> None:
    """The conftest's scheduler hook is xdist's: without xdist (`-p no:xdist`, or not installed) an unknown hook
    would stop every run before its first test."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "--co", "-q", "tests/test_layout.py"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "tests collected" in done.stdout, (done.stdout + done.stderr)[-2000:]
