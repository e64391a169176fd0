"""What every model adapter shares: retries, timeouts, a concurrency cap, token estimates.

Adapters classify their SDK's failures as `Transient` (worth another attempt) or `LLMError`
(final); `RetryingLLM` owns the client's lifecycle and hands one attempt to `with_retries`, so
Claude and OpenAI-compatible servers retry, back off and give up in exactly the same way.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import random
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypeVar

from retrieval.ports import LLMError, LLMRequest, LLMResponse, OnDelta
from retrieval.sentences import split_sentences

log = logging.getLogger(__name__)

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]


class SdkClient(Protocol):
    """What the base class needs of an SDK's async client: closing it."""

    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=SdkClient)


class Transient(Exception):
    """One attempt failed in a way another attempt may fix (429, 5xx, connection, timeout)."""

    def __init__(self, kind: str, detail: str = "", retry_after: float | None = None) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`max_retries` extra attempts after the first; each attempt bounded by `timeout_s`."""

    max_retries: int = 3
    timeout_s: float = 60.0
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    # A server asking us to wait longer than this is treated as "give up now".
    max_retry_after_s: float = 60.0

    def backoff(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        """Full-jitter exponential backoff for retry number `attempt` (0-based)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2.0**attempt))
        return ceiling * (0.5 + 0.5 * rng())


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """`retry-after-ms` or `retry-after` (seconds; HTTP dates are ignored) → seconds."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = lowered.get(key)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def kind_for_status(status: int) -> str | None:
    """HTTP status → transient kind, or None when retrying cannot help (400, 401, 404 …)."""
    if status == 429:
        return "rate_limited"
    if status in (408, 504):
        return "timeout"
    if status >= 500 or status == 529:
        return "unavailable"
    return None


class _Response(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


class StatusError(Protocol):
    """An SDK's HTTP-status error, as far as the retry decision reads it."""

    @property
    def status_code(self) -> int: ...

    @property
    def message(self) -> str: ...

    @property
    def response(self) -> _Response: ...


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """What an SDK raises, by class (Anthropic's and OpenAI's SDKs share one hierarchy).

    The order of the checks matters: a timeout is a connection error, and a status error and
    an invalid response are both the SDK's base error, which `in_stream` names when the SDK
    raises it for an error event inside a stream (HTTP 200)."""

    timeout: type[Exception]
    connection: type[Exception]
    status: type[StatusError]
    invalid_response: type[Exception]
    in_stream: tuple[type[Exception], ...] = ()


class RetryingLLM(abc.ABC, Generic[ClientT]):
    """The shared work of every model adapter: the SDK client's lifecycle, retries with jittered
    backoff, the per-attempt timeout, the process-wide concurrency cap, the context window and
    the mapping of SDK failures. A subclass names its SDK client (`_open`) and the SDK's error
    classes (`errors`), its models' windows (`_context_window`) and one attempt (`_attempt`,
    plain or streamed)."""

    name = "llm"
    native_citations = False
    default_model = ""
    errors: ClassVar[SdkErrors]

    def __init__(
        self,
        api_key: str | None,
        model: str = "",
        *,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        semaphore: asyncio.Semaphore | None = None,
        context_tokens: int = 0,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._client = self._open(api_key, base_url, timeout_s)
        self.model = model or self.default_model
        self._sleep = sleep
        self._context_tokens = context_tokens or self._context_window(self.model)
        self._policy = policy or RetryPolicy(max_retries=max_retries, timeout_s=timeout_s)
        self._semaphore = semaphore

    @property
    def context_tokens(self) -> int:
        return self._context_tokens

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        return await with_retries(
            lambda: self._attempt(request, on_delta),
            self._policy,
            semaphore=self._semaphore,
            sleep=self._sleep,
            name=self.name,
        )

    async def aclose(self) -> None:
        """Release the SDK's HTTP client."""
        await self._client.close()

    @contextlib.contextmanager
    def _sdk_errors(self, emitted: Callable[[], bool] = lambda: False) -> Iterator[None]:
        """Map what the SDK raises inside the block into the error tree.

        A transient failure after text was already streamed to the user is final: another
        attempt would stream the answer twice.
        """
        try:
            yield
        except (Transient, LLMError):
            raise
        except Exception as err:
            failure = self._classify(err)
            if failure is None:
                raise  # a bug, not a model failure: let it surface as it is
            if isinstance(failure, Transient) and emitted():
                failure = LLMError(failure.kind, "failed mid-stream")
            raise failure from err

    @abc.abstractmethod
    def _open(self, api_key: str | None, base_url: str | None, timeout_s: float) -> ClientT:
        """The SDK's client, with the SDK's own retries off (`with_retries` does them)."""

    @abc.abstractmethod
    def _context_window(self, model: str) -> int:
        """The model's context window in tokens."""

    @abc.abstractmethod
    async def _attempt(self, request: LLMRequest, on_delta: OnDelta | None) -> LLMResponse:
        """One call to the provider; raise `Transient` for what a retry may fix."""

    def _classify(self, err: Exception) -> Transient | LLMError | None:
        """An SDK failure as `Transient` or final `LLMError`; None for what is not the SDK's
        (a bug, not a model failure: it surfaces as it is)."""
        sdk = self.errors
        if isinstance(err, sdk.timeout):
            return Transient("timeout", str(err)[:200])
        if isinstance(err, sdk.connection):
            return Transient("unavailable", str(err)[:200])
        if isinstance(err, sdk.status):
            kind = self._status_kind(err)
            if kind is None:
                return LLMError("unavailable", f"HTTP {err.status_code}: {err.message}"[:300])
            return Transient(kind, str(err)[:200], retry_after_seconds(err.response.headers))
        if isinstance(err, sdk.invalid_response | ValueError | KeyError):
            return LLMError("malformed", f"{type(err).__name__}: {err}"[:300])
        if isinstance(err, sdk.in_stream):
            return Transient("unavailable", str(err)[:200])  # the server gave up mid-answer
        return None

    def _status_kind(self, err: StatusError) -> str | None:
        """The transient kind of an HTTP error status; None when retrying cannot help."""
        return kind_for_status(err.status_code)


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    semaphore: asyncio.Semaphore | None = None,
    sleep: Sleep = asyncio.sleep,
    rng: Callable[[], float] = random.random,
    name: str = "llm",
) -> T:
    """Run `attempt` until it succeeds, fails finally, or the retries run out.

    The semaphore (the process-wide concurrency cap) is held only while an attempt runs, never
    during a backoff sleep. Each attempt gets `policy.timeout_s`; running out counts as a
    transient "timeout".
    """
    tries = 0
    while True:
        try:
            if semaphore is not None:
                async with semaphore:
                    return await _timed(attempt, policy.timeout_s)
            return await _timed(attempt, policy.timeout_s)
        except Transient as err:
            if tries >= policy.max_retries:
                raise LLMError(err.kind, err.detail) from err
            if err.retry_after is not None and err.retry_after > policy.max_retry_after_s:
                raise LLMError(err.kind, f"retry-after {err.retry_after:.0f}s") from err
            delay = policy.backoff(tries, rng)
            if err.retry_after is not None:
                delay = max(delay, err.retry_after)
            log.warning("%s attempt %d failed (%s); retrying in %.2fs", name, tries + 1, err, delay)
            tries += 1
            await sleep(delay)


async def _timed(attempt: Callable[[], Awaitable[T]], timeout_s: float) -> T:
    try:
        async with asyncio.timeout(timeout_s):
            return await attempt()
    except TimeoutError:
        raise Transient("timeout", f"no complete answer within {timeout_s:g}s") from None


# ---- tokens -------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")

# Deliberately pessimistic: newer tokenizers spend more than one token per Chinese character,
# and a prompt that does not fit fails outright, while one that fits loosely costs nothing.
CJK_TOKENS_PER_CHAR = 1.5
OTHER_CHARS_PER_TOKEN = 3.0


def estimate_tokens(text: str) -> int:
    """A conservative token count without a tokenizer (no network, no model files)."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return int(cjk * CJK_TOKENS_PER_CHAR + other / OTHER_CHARS_PER_TOKEN) + 1


def truncate_to_sentences(text: str, max_tokens: int) -> str:
    """The longest prefix of whole sentences within `max_tokens` ("" if not even one fits)."""
    if estimate_tokens(text) <= max_tokens:
        return text
    kept: list[str] = []
    used = 0
    for sentence in split_sentences(text):
        cost = estimate_tokens(sentence)
        if used + cost > max_tokens:
            break
        kept.append(sentence)
        used += cost
    return "".join(kept).rstrip()


@dataclass(frozen=True, slots=True)
class Budget:
    """How many prompt tokens a request may spend: the window minus the reply and a margin."""

    context_tokens: int
    reply_tokens: int
    margin_tokens: int = 256

    @property
    def prompt_tokens(self) -> int:
        return max(0, self.context_tokens - self.reply_tokens - self.margin_tokens)


def fit_texts(texts: list[str], available: int, per_item_overhead: int = 16) -> list[str]:
    """Keep texts in rank order while they fit; drop from the end (lowest rank) first.

    A text that is too long on its own is cut at a sentence boundary, only when it is the
    first (best) one, so the prompt never carries a passage cut mid-sentence and never drops
    the best passage for lack of room when a part of it fits.
    """
    kept: list[str] = []
    used = 0
    for i, text in enumerate(texts):
        cost = estimate_tokens(text) + per_item_overhead
        if used + cost <= available:
            kept.append(text)
            used += cost
            continue
        if i == 0:
            cut = truncate_to_sentences(text, available - per_item_overhead)
            if cut:
                kept.append(cut)
        break
    return kept
