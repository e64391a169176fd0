"""The shared kernel: what every room uses and no room owns.

- `kernel.refusal`: the one convention for a request a room will not carry out (`Refused`);
- `kernel.i18n`: the user-message catalogue's mechanism (`Catalog`), the reply languages
  (`Lang`) and the rule that tells them apart in a user's words (`detect_language`);
- `kernel.child`: a child process of ours over a socket pair (its frames, its environment, its
  end), for the Qdrant Edge shard's process and ingest's reading process.

Every room (`bot`, `retrieval`, `novel`, `ingest`) may import it; it imports none of them
(tests/unit/test_import_rules.py).
"""
