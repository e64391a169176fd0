"""Import rules, read statically from the source (no module is imported):

- no import cycle among the product's modules (every import counts, deferred ones inside
  functions too: a cycle there is still two modules that each need the other);
- the domain packages (`retrieval`, `novel`) import nothing from `bot` and no chat SDK;
- `novel` imports no chat concept either (replies, actors: `bot/` presents its typed results).
- neither domain package defines a chat concept (a reply, a chat identity, a button, a poll, a
  poll's answer, a posted message …) or names a chat platform: the chat layer (`bot/`)
  presents their typed results;
- `novel` never holds a chat's message or poll id either: where a ballot was posted is the
  ballot room's (`bot/ballot/`), and a member reaches the room as plain ids.
- the domain packages build no `Catalog` of user messages: they return typed facts (a reason
  and its fields) and `bot/` words them;
- the shared kernel (`kernel/`: the catalogue's mechanism, the refusal type) imports none of
  the rooms, so every room can import it; and a refusal is one convention: no room defines a
  refusal type of its own (they raise `kernel.refusal.Refused`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "retrieval", "novel", "ingest", "kernel")
ROOMS = ("bot", "retrieval", "novel", "ingest")
DOMAIN = ("retrieval", "novel")
CHAT_SDKS = ("discord", "telegram")
# Modules that speak chat (what a reply looks like, who asks on which platform).
CHAT_MODULES = ("retrieval.reply", "retrieval.requests", "bot.reply", "bot.actor")
# What only the chat layer may define (`bot/reply.py`, `bot/actor.py`, `bot/router.py`, the
# ballot's room).
CHAT_CONCEPTS = frozenset(
    {"Reply", "Actor", "Block", "Button", "Poll", "Attachment", "Citation", "Posted"}
    | {"Invocation", "PollAnswer", "PostedBallot", "VoteButton", "BallotPosted", "BallotPost"}
)
PLATFORM_NAMES = re.compile(r"discord|telegram", re.IGNORECASE)
# A platform's name, or a chat's message or poll id, anywhere in a module (comments included).
CHAT_WORDS = re.compile(r"discord|telegram|poll_id|message_id", re.IGNORECASE)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def product_modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _imported(
    tree: ast.AST, module: str, is_package: bool, known: Collection[str] = ()
) -> Iterator[str]:
    """Every module name an import statement names. `from a import b` names `a.b` when that
    is one of the `known` modules (importing a submodule: the package is only its parent),
    else `a` (a name the module `a` defines)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in known else base


def import_graph() -> dict[str, set[str]]:
    """Module → the product modules it imports (a package's `__init__` stands for it)."""
    modules = product_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = set(_imported(tree, name, path.name == "__init__.py", modules))
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_deferred_and_relative_imports() -> None:
    graph = import_graph()
    assert "retrieval.synonyms" in graph["retrieval.text"]  # imported inside a method
    assert "retrieval.types" in graph["retrieval.search"]


def test_no_import_cycles_among_product_modules() -> None:
    assert find_cycles(import_graph()) == []


def test_domain_packages_import_no_chat_layer() -> None:
    offending: list[str] = []
    for name, path in product_modules().items():
        if name.split(".")[0] not in DOMAIN:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target in _imported(tree, name, path.name == "__init__.py"):
            top = target.split(".")[0]
            if top == "bot" or top in CHAT_SDKS:
                offending.append(f"{name} imports {target}")
    assert offending == []


def test_the_writers_room_imports_no_chat_concept() -> None:
    offending: list[str] = []
    for name, path in product_modules().items():
        if name.split(".")[0] != "novel":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target in _imported(tree, name, path.name == "__init__.py"):
            if any(target == c or target.startswith(c + ".") for c in CHAT_MODULES):
                offending.append(f"{name} imports {target}")
    assert offending == []


def _defined_names(tree: ast.Module) -> Iterator[str]:
    """The names a module defines at its top level (classes, functions, assignments)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


def test_the_definition_finder_sees_classes_and_constants() -> None:
    tree = ast.parse("class Reply: ...\nPOLL_ANSWER = 'poll'\nx: int = 1\ndef f(): ...")
    assert set(_defined_names(tree)) == {"Reply", "POLL_ANSWER", "x", "f"}


def _chat_words(
    package: str, words: re.Pattern[str], concepts: Collection[str] = CHAT_CONCEPTS
) -> tuple[list[str], list[str]]:
    """(chat concepts `package` defines, `module:line` of each word of `words` it says)."""
    defined: list[str] = []
    named: list[str] = []
    for name, path in product_modules().items():
        if name.split(".")[0] != package:
            continue
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        defined += [f"{name}.{n}" for n in _defined_names(tree) if n in concepts]
        named += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}" for m in words.finditer(text)]
    return defined, named


def test_retrieval_defines_no_chat_concept_and_names_no_platform() -> None:
    assert _chat_words("retrieval", PLATFORM_NAMES) == ([], [])


def test_the_writers_room_names_no_platform_and_holds_no_message_id() -> None:
    """Issue 41: `Member.platform`, `BallotPost` (message and poll ids), the native-poll rule
    and a `"telegram"` check once lived in novel/. (`novel.reading.Actor` is a clause's actor,
    who does what a sentence says, not a chat's: the one name left out of the check.)"""
    assert _chat_words("novel", CHAT_WORDS, CHAT_CONCEPTS - {"Actor"}) == ([], [])


def test_the_chat_word_finder_sees_every_spelling() -> None:
    said = "class Member:\n    platform = 'Telegram'  # a Discord poll_id\n    message_id: str"
    assert [m.group().lower() for m in CHAT_WORDS.finditer(said)] == [
        "telegram",
        "discord",
        "poll_id",
        "message_id",
    ]


def _names_catalog(node: ast.expr) -> bool:
    """`Catalog` or `i18n.Catalog`."""
    if isinstance(node, ast.Name):
        return node.id == "Catalog"
    return isinstance(node, ast.Attribute) and node.attr == "Catalog"


def _catalogues(tree: ast.AST) -> Iterator[int]:
    """The lines where a module builds a `Catalog(...)` (by name or as `i18n.Catalog`) or loads
    one from a file (`Catalog.from_toml(...)`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if _names_catalog(func):
                yield node.lineno
            elif (
                isinstance(func, ast.Attribute)
                and func.attr == "from_toml"
                and _names_catalog(func.value)
            ):
                yield node.lineno


def test_the_catalogue_finder_sees_every_spelling() -> None:
    tree = ast.parse(
        "T = Catalog({})\nU = i18n.Catalog({})\nV = dict(Catalog=1)\n"
        "W = Catalog.from_toml(p)\nX = i18n.Catalog.from_toml(p)\nY = Other.from_toml(p)"
    )
    assert list(_catalogues(tree)) == [1, 2, 4, 5]


def test_the_domain_packages_build_no_catalogue_of_user_messages() -> None:
    built: list[str] = []
    for name, path in product_modules().items():
        if name.split(".")[0] not in DOMAIN:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        built += [f"{name}:{line}" for line in _catalogues(tree)]
    assert built == []


def test_the_kernel_imports_no_room() -> None:
    offending: list[str] = []
    for name, path in product_modules().items():
        if name.split(".")[0] != "kernel":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target in _imported(tree, name, path.name == "__init__.py"):
            if target.split(".")[0] in ROOMS or target.split(".")[0] in CHAT_SDKS:
                offending.append(f"{name} imports {target}")
    assert offending == []


REFUSALS = re.compile(r"^Refus(al|ed)$")


def test_a_refusal_is_one_convention_in_every_room() -> None:
    """Issue 41: the scholar returned a `Refusal` value, the writers' room raised its own
    `Refused`; now every room raises `kernel.refusal.Refused`, and none defines another."""
    defined = [
        f"{name}.{n}"
        for name, path in product_modules().items()
        if name.split(".")[0] in ROOMS
        for n in _defined_names(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if REFUSALS.match(n)
    ]
    assert defined == []
