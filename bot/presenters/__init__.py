"""Presenters: domain results → `Reply`s in the chat's language."""
