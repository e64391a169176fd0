"""Ingest: PDF · EPUB · TXT · Markdown · Bible table → typed chunks with metadata → the core."""
