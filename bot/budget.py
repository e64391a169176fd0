"""Daily budgets of model tokens, per user and per chat (`LLM_DAILY_TOKENS_PER_USER`,
`LLM_DAILY_TOKENS_PER_CHAT`; 0 = no limit).

`Budget` keeps what each user and each chat spent since the last reset (SQLite `llm_spent`,
so a restart forgets nothing); the daily reset is a scheduled job (`bot.jobs`), at 00:00 UTC.
`BudgetedLLM` wraps the configured model: a call on behalf of someone whose budget, or whose
chat's, is spent raises `LLMError("budget")` before anything is sent — the scholar then answers
from the passages and says why (`bot/catalogs/answer_reasons.toml`) — and a call that runs
charges its tokens to both. Who is asking comes from the context the router sets around each
command (`paying`); a model call outside any command (a chapter a round's deadline writes)
is charged to no one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from retrieval.ports import LLM, LLMError, LLMRequest, LLMResponse, OnDelta
from retrieval.sqlite import SqliteOwner

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_spent (
    scope TEXT NOT NULL CHECK (scope IN ('user', 'chat')),
    key TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
"""


@dataclass(frozen=True, slots=True)
class Payer:
    """Who a model call is on behalf of: `platform:user_id` and the chat's key."""

    user: str
    chat: str


_payer: ContextVar[Payer | None] = ContextVar("llm_payer", default=None)


@contextmanager
def paying(payer: Payer) -> Iterator[None]:
    """Model calls made meanwhile (in this task and the tasks it starts) are `payer`'s."""
    token = _payer.set(payer)
    try:
        yield
    finally:
        _payer.reset(token)


@dataclass(frozen=True, slots=True)
class Spent:
    """Today's tokens, and the limits (0 = none)."""

    user: int
    chat: int
    user_limit: int
    chat_limit: int


class Budget(SqliteOwner):
    """`async with Budget(db_path, per_user=…, per_chat=…) as budget:`."""

    def __init__(self, db_path: Path | str, *, per_user: int = 0, per_chat: int = 0) -> None:
        super().__init__(db_path, _SCHEMA)
        self.per_user = per_user
        self.per_chat = per_chat
        self._spent: dict[tuple[str, str], int] = {}

    async def _loaded(self, db: aiosqlite.Connection) -> None:
        rows = await db.execute_fetchall("SELECT scope, key, tokens FROM llm_spent")
        self._spent = {(str(s), str(k)): int(t) for s, k, t in rows}

    def spent(self, payer: Payer) -> Spent:
        return Spent(
            self._spent.get(("user", payer.user), 0),
            self._spent.get(("chat", payer.chat), 0),
            self.per_user,
            self.per_chat,
        )

    def exhausted(self, payer: Payer) -> bool:
        """Whether the user's or the chat's budget is spent."""
        s = self.spent(payer)
        return bool(s.user_limit and s.user >= s.user_limit) or bool(
            s.chat_limit and s.chat >= s.chat_limit
        )

    async def charge(self, payer: Payer, tokens: int) -> None:
        if tokens <= 0:
            return
        for scope, key in (("user", payer.user), ("chat", payer.chat)):
            self._spent[(scope, key)] = self._spent.get((scope, key), 0) + tokens
            await self.db.execute(
                "INSERT INTO llm_spent (scope, key, tokens) VALUES (?, ?, ?) "
                "ON CONFLICT (scope, key) DO UPDATE SET tokens = tokens + excluded.tokens",
                (scope, key, tokens),
            )
        await self.db.commit()

    async def reset(self) -> None:
        """A new day: every budget is whole again."""
        await self.db.execute("DELETE FROM llm_spent")
        await self.db.commit()
        self._spent.clear()
        log.info("daily model-token budgets reset")


class BudgetedLLM:
    """The model behind a budget (it satisfies `retrieval.ports.LLM`)."""

    def __init__(self, inner: LLM, budget: Budget) -> None:
        self._inner = inner
        self._budget = budget

    @property
    def context_tokens(self) -> int:
        return self._inner.context_tokens

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        payer = _payer.get()
        if payer is not None and self._budget.exhausted(payer):
            log.info("refused a model call: the daily budget of %s in %s is spent", *_who(payer))
            raise LLMError("budget", "the daily model-token budget is spent")
        response = await self._inner.complete(request, on_delta)
        if payer is not None:
            await self._budget.charge(payer, response.input_tokens + response.output_tokens)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _who(payer: Payer) -> tuple[str, str]:
    return payer.user, payer.chat
