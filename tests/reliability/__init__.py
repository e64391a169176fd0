"""Reliability guarantees, each with its proof (see docs/RELIABILITY.md)."""
