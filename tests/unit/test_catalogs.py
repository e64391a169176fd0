"""The string catalogues: `bot/catalogs/*.toml` read through `kernel.i18n`.

A malformed catalogue file is a developer's mistake and says which file and key; every shipped
catalogue loads, is used by a module and travels in the wheel.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from bot.i18n import CATALOGS
from kernel.i18n import Catalog, CatalogError, read_catalog

ROOT = Path(__file__).resolve().parents[2]

# Every module that holds a catalogue, and the names it is known by.
HOLDERS = {
    "bot.presenters.answer": ("T", "REASONS"),
    "bot.presenters.cast": ("T",),
    "bot.presenters.novel_messages": ("T",),
    "bot.presenters.scholar": ("T",),
    "bot.presenters.graph": ("T",),
    "bot.presenters.scripture": ("T",),
    "bot.i18n": ("T",),
    "bot.transports.discord": ("T",),
    "bot.commands.settings": ("T",),
    "bot.commands.corpus": ("T",),
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "room.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_catalogue_file_reads_in_order_with_its_placeholders_and_escapes(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path,
        '# rounds\n[b_second]\nzh = "第 {n} 章"\nen = "Chapter {n}"\n\n'
        '[a_first]\nzh = "「引号」\\"\\\\ 与\\n换行"\nen = ""\n',
    )
    assert list(read_catalog(path).items()) == [
        ("b_second", ("第 {n} 章", "Chapter {n}")),
        ("a_first", ('「引号」"\\ 与\n换行', "")),
    ]
    catalog = Catalog.from_toml(path)
    assert catalog("en", "b_second", n=3) == "Chapter 3"
    assert catalog("en", "a_first") == '「引号」"\\ 与\n换行'  # empty English falls back
    assert catalog.keys() == {"a_first", "b_second"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[greet]\nzh = "你好"\nen = hello\n', r"room\.toml: .*line 3"),
        ('[greet]\nen = "hello"\n', r"room\.toml, \[greet\]: zh is missing"),
        ('[greet]\nzh = "你好"\n', r"room\.toml, \[greet\]: en is missing"),
        ('[greet]\nzh = "你好"\nen = 3\n', r"room\.toml, \[greet\]: en must be a string"),
        ('[greet]\nzh = ["你好"]\nen = "hi"\n', r"room\.toml, \[greet\]: zh must be a string"),
        ('greet = "你好"\n', r"room\.toml, \[greet\]: must be a table with zh and en, not str"),
        (
            '[greet]\nzh = "你好"\nen = "hi"\nfr = "salut"\n',
            r"room\.toml, \[greet\]: unknown field\(s\) fr; only zh and en",
        ),
    ],
    ids=["bad-toml", "no-zh", "no-en", "en-not-string", "zh-a-list", "not-a-table", "extra"],
)
def test_a_malformed_catalogue_file_names_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(CatalogError, match=message):
        read_catalog(path)


def test_a_missing_catalogue_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"absent\.toml"):
        read_catalog(tmp_path / "absent.toml")


def test_a_catalogue_is_read_on_first_use_not_on_import(tmp_path: Path) -> None:
    path = _write(tmp_path, "[greet]\nzh = 1\n")
    catalog = Catalog.from_toml(path)  # a module's import: nothing parsed yet
    with pytest.raises(CatalogError, match=r"\[greet\]"):
        catalog("zh", "greet")
    path.write_text('[greet]\nzh = "你好"\nen = "hello"\n', encoding="utf-8")
    assert Catalog.from_toml(path)("en", "greet") == "hello"


def test_every_holder_loads_its_catalogue() -> None:
    for module, names in HOLDERS.items():
        loaded = importlib.import_module(module)
        for name in names:
            catalog = getattr(loaded, name)
            assert isinstance(catalog, Catalog), (module, name)
            assert catalog.keys(), (module, name)


def test_every_shipped_catalogue_is_valid_and_used() -> None:
    files = sorted(CATALOGS.glob("*.toml"))
    assert files
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "bot").rglob("*.py"))
    used = set(re.findall(r'\bcatalog\("([a-z_]+)"\)', sources))
    assert {p.stem for p in files} == used
    for path in files:
        assert read_catalog(path), path.name


def test_the_wheel_carries_the_catalogues() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["bot"]
    for path in CATALOGS.glob("*.toml"):
        inside = path.relative_to(ROOT / "bot").as_posix()
        assert any(fnmatch(inside, pattern) for pattern in patterns), inside


def test_every_fact_a_question_can_ask_for_is_named_in_both_languages() -> None:
    """A declined fact question names what it asked (`what_<kind>_<detail>`): a pair with no
    key was an internal error (谁是甄秘, a person's definition, before its key existed)."""
    from retrieval.answer.asks import FACT_ASKS, asked_for

    strings = read_catalog(ROOT / "bot/catalogs/answer.toml")
    for kind, detail in sorted(FACT_ASKS):
        zh, en = strings.get(f"what_{kind}_{detail}", ("", ""))
        assert zh and en, (kind, detail)
    asked = asked_for("甄秘是谁？")
    assert (asked.kind, asked.detail) in FACT_ASKS


def test_a_person_s_identity_no_passage_states_is_declined_by_name() -> None:
    from bot.presenters.answer import answer_reply
    from retrieval.answer.asks import asked_for
    from retrieval.answer.result import not_addressed_answer

    unstated = asked_for("甄秘是谁？")
    for lang, said in (("zh", "所问的身份"), ("en", "the identity")):
        answer = not_addressed_answer("甄秘是谁？", [], lang, "extractive", unstated=unstated)
        assert said in answer_reply(answer).plain()
