"""Evidence audit and gold-conditioned rationales (DESIGN §1, §2, §5).

Stages:
    python -m rationale.audit build_dir=DIR out_dir=AUDIT      # supported / partial / unsupported + evidence
    python -m rationale.build audit_dir=AUDIT out_dir=SFT      # sft_train.jsonl (chat messages)

Modules: `lexical` (the knowledge-based auditor; knowledge in rationale/knowledge/*.yaml, compiled by
`kb`, text parsers in `textparse`), `llm_audit` (LLM auditor prompt, schema and reply validation),
`auditor` (frame-level audit shared by the stage and benchmarks/auditor.py), `writer` (template and
LLM rationales, the final list), `prompts` (versioned templates in rationale/templates), `fixtures`
(a tiny hand-written build for tests and smoke runs).
"""
