"""The shared async retrieval core: embed, store, keyword, graph, fuse, LLM.

Imports nothing from `bot/`, `novel/` or `ingest/`; they import from here.
"""
