"""The writers' room: blueprint, rounds of proposals and votes, chapters with versions."""
