"""Code shared by two or more EarlyDx stages: paths, run manifests, interchange schemas, JSONL I/O,
ICD helpers and the LLM client layer (`earlydx.llm`)."""

__version__ = "0.1.0"
