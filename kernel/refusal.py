"""One convention for a request a room will not carry out: the room raises `Refused`.

A refusal is not a failure: the request was understood and the answer is no (an empty
question, a filter naming a source the library does not hold, a vote after the deadline). The
room raises `Refused(reason, **fields)` wherever it decides, however deep, in one line; the
chat layer catches it where it words that room's results: `reason` is the key of the room's
catalogue entry and `fields` fill it in. A room never words a refusal itself.
"""

from __future__ import annotations


class Refused(Exception):
    """A request refused: `reason` (the catalogue key that words it) and its fields."""

    def __init__(self, reason: str, **fields: object) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fields = fields
