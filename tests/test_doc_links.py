"""Every relative link in README.md and docs/ leads somewhere: to a file of the checkout and, where it
names an anchor, to a heading of that file (GitHub's anchors); every path of the checkout the pages
name (a bench command, a test, a raw output) exists. Pure text: no build, no network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])

FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
# A path into the checkout's own folders, as the pages name them in prose, code spans and commands.
CHECKOUT_PATH = re.compile(r"(?<![\w./<-])((?:bench|tests|docs|sample_extension|ciq_build|cmake|scripts)/[\w./+-]*[\w/])")
# A module of the package, or a name in one, as the pages' prose names it (`ciq_build.tune.executor`).
DOTTED_NAME = re.compile(r"(?<![\w./])ciq_build(?:\.[A-Za-z_]\w*)+")
# Named by the pages, written by a command they show, not committed.
WRITTEN_BY_A_COMMAND = {"bench/peers/cuda-samples/ciq/FDTD3d_kernels.json"}
# The dated results log keeps the paths of its time; the rest says how things are now.
CURRENT_PAGES = [page for page in PAGES if page.name != "LOG.md"]


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a link or heading in a code block is not one)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation (backticks included) dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file, with GitHub's -1, -2 for repeated ones."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = _anchor(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The targets of the page's inline links outside code, external ones left out."""
    targets = []
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                targets.append(target)
    return targets


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def broken(page: Path) -> list[str]:
    """'<target>: <what is wrong>' for each link of the page that leads nowhere."""
    problems = []
    for target in links(page):
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            problems.append(f"{target}: no file {_shown(linked)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{target}: no heading with the anchor #{anchor} in {_shown(linked)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    assert broken(page) == [], f"{page.relative_to(REPO)} has broken links"


def missing_paths(text: str) -> list[str]:
    """The checkout paths a page names that do not exist."""
    named = {found.group(1) for found in CHECKOUT_PATH.finditer(text)}
    return sorted(path for path in named - WRITTEN_BY_A_COMMAND if not (REPO / path).exists())


@pytest.mark.parametrize("page", CURRENT_PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_path_a_page_names_exists(page: Path) -> None:
    assert missing_paths(page.read_text(encoding="utf-8")) == [], (
        f"{page.relative_to(REPO)} names paths that are not in the checkout (moved? say where they are now)")


def _names_something(dotted: str) -> bool:
    """A module or package of the checkout, or a word of the module its last part is looked up in."""
    parts = dotted.split(".")
    module = REPO.joinpath(*parts)
    if module.with_suffix(".py").exists() or (module / "__init__.py").exists():
        return True
    parent = REPO.joinpath(*parts[:-1])
    return any(source.exists() and re.search(rf"\b{parts[-1]}\b", source.read_text(encoding="utf-8"))
               for source in (parent.with_suffix(".py"), parent / "__init__.py"))


def missing_names(text: str) -> list[str]:
    """The package names (`ciq_build.x.y`) a page's prose names that the package does not have."""
    named = {name for line in _prose_lines(text) for name in DOTTED_NAME.findall(line)}
    return sorted(name for name in named if not _names_something(name))


@pytest.mark.parametrize("page", CURRENT_PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_module_a_page_names_exists(page: Path) -> None:
    assert missing_names(page.read_text(encoding="utf-8")) == [], (
        f"{page.relative_to(REPO)} names modules or names the package does not have (moved? say where they are now)")


def test_the_name_check_knows_modules_names_in_them_and_code_blocks() -> None:
    text = ("`ciq_build.tune.executor`, `ciq_build.cli.main`, `ciq_build.core.causes.Cause`, ciq_build.nowhere,\n"
            "`ciq_build.cli.no_such_name`\n```json\n{\"engine\": \"ciq_build.ga\"}\n```\n")
    assert missing_names(text) == ["ciq_build.cli.no_such_name", "ciq_build.nowhere"]


def test_the_path_check_sees_prose_code_and_commands() -> None:
    text = ("run `python bench/nowhere/run.py --seeds 3`, raw docs/results/gone.txt; "
            "tests/test_doc_links.py is here, ciq/<target>.json and <build>/bench/x are not checkout paths")
    assert missing_paths(text) == ["bench/nowhere/run.py", "docs/results/gone.txt"]


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## Several targets: `tune --all`, `tune A B`\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#several-targets-tune---all-tune-a-b) [self](#a-heading)\n"
                    "# A heading\n[gone](missing.md) [bad](other.md#nowhere) `[code](missing.md)`\n"
                    "```\n[fenced](missing.md)\n```\n[web](https://example.invalid/x)\n")
    assert [problem.split(":")[0] for problem in broken(page)] == ["missing.md", "other.md#nowhere"]


def test_the_readme_and_results_stay_short() -> None:
    for name in ("README.md", "docs/RESULTS.md"):
        count = len((REPO / name).read_text(encoding="utf-8").splitlines())
        assert count <= 300, f"{name} has {count} lines; reference text belongs on a page under docs/"


def test_every_shown_command_quotes_the_cmake_dir_it_substitutes() -> None:
    # Unquoted, `-Dciq_build_DIR=$(python -m ciq_build --cmake-dir)` splits an install path with a space
    # (a venv under "/tmp/new user") into two arguments, and CMake ignores the second: find_package fails.
    shown = [REPO / "README.md", REPO / "sample_extension" / "README.md", *PAGES,
             *(path for path in (REPO / "bench" / "peers").glob("*/CMakeLists.txt")),
             *(REPO / "ciq_build").rglob("*.py"), *(REPO / "cmake").glob("*.cmake")]
    unquoted = [f"{path.relative_to(REPO)}:{number}" for path in dict.fromkeys(shown)
                for number, line in enumerate(path.read_text().splitlines(), 1)
                if re.search(r"=\$\(python -m ciq_build --cmake-dir\)", line)]
    assert not unquoted, f'write -Dciq_build_DIR="$(python -m ciq_build --cmake-dir)" at {unquoted}'


def test_the_commands_tune_options_table_has_a_row_for_each_declared_tune_option() -> None:
    # The page says it is every tune option; --architecture, --executor and --cmake-arg had no row (Ray's own
    # options are docs/ray.md's).
    from ciq_build.core.options import declared
    from ciq_build.tune.tune_options import TuneOptions

    section = (REPO / "docs" / "commands.md").read_text().split("## `tune` options")[1].split("\n## ")[0]
    rows = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    missing = [how.flag for _, how in declared(TuneOptions) if not any(f"`{how.flag}" in row for row in rows)]
    assert missing == [], missing
