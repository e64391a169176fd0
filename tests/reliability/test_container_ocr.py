"""README, Deployment: a scan is read by OCR in the container as the README says — the image has
tesseract (tests/reliability/test_secrets.py::test_docker_image_can_read_scanned_pages), compose
mounts the folder the command reads, and the bot is stopped first because one process owns the
data directory."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from bot.cli import _parser
from bot.lock import DataDirBusy, DataDirLock

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    """The `docker compose …` lines of the README's Deployment section, in order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## 部署与扩展", 1)[1].split("\n## ", 1)[0]
    return [ln.strip() for ln in section.splitlines() if ln.strip().startswith("docker compose")]


def test_compose_mounts_the_folder_the_readme_reads_scans_from() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    mounts = compose["services"]["bot"]["volumes"]
    inbox = [m for m in mounts if m.split(":")[1] == "/inbox"]
    assert inbox == ["./inbox:/inbox:ro"]
    [ocr] = [c for c in _readme_commands() if "--ocr" in c]
    argv = shlex.split(ocr)
    assert argv[:5] == ["docker", "compose", "run", "--rm", "bot"]
    args = _parser().parse_args(argv[6:])  # after `baibao`
    assert args.cmd == "ingest" and args.ocr == "chi_sim"
    assert [str(p) for p in args.ocr_files] == ["/inbox/扫描本.pdf"]


def test_the_readme_stops_the_bot_before_it_ingests_and_starts_it_after() -> None:
    commands = _readme_commands()
    run = next(i for i, c in enumerate(commands) if "baibao ingest" in c)
    assert commands[run - 1] == "docker compose stop bot"
    assert commands[run + 1] == "docker compose start bot"


def test_a_second_process_on_the_data_directory_is_told_to_stop_the_first(
    tmp_path: Path,
) -> None:
    """Why the bot is stopped: `baibao ingest` beside a running bot is refused, saying so."""
    with DataDirLock(tmp_path), pytest.raises(DataDirBusy) as busy:
        DataDirLock(tmp_path).acquire()
    assert "请先停止它" in str(busy.value) and "stop it first" in str(busy.value)
    assert re.search(r"PID \d+", str(busy.value))
