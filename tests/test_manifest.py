"""Run manifests: fingerprints change with content, and `is_current` tells an unchanged stage."""

from __future__ import annotations

import json
from pathlib import Path

from earlydx.jsonl import read_jsonl, write_jsonl
from earlydx.manifest import config_hash, file_fingerprint, is_current, read_manifest, write_manifest


def test_fingerprint_follows_content(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_text("x\n1\n")
    first = file_fingerprint(f)
    f.write_text("x\n2\n")
    assert file_fingerprint(f)["sha256"] != first["sha256"]


def test_is_current_tracks_config_and_inputs(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "t.csv").write_text("a\n1\n")
    out = tmp_path / "out"
    cfg = {"seed": 1, "w": 0}
    assert not is_current(out, cfg, [inp])
    manifest = write_manifest(out, "stage", cfg, [inp], extra={"counts": {"rows": 1}})
    assert read_manifest(out)["counts"] == {"rows": 1}
    assert manifest["config_hash"] == config_hash(cfg)
    assert is_current(out, cfg, [inp])
    assert not is_current(out, {"seed": 2, "w": 0}, [inp])
    (inp / "t.csv").write_text("a\n2\n")
    assert not is_current(out, cfg, [inp])


def test_jsonl_roundtrip_and_error_names_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"a": 1}, {"b": [1, 2]}])
    assert read_jsonl(path) == [{"a": 1}, {"b": [1, 2]}]
    path.write_text(json.dumps({"a": 1}) + "\n{broken\n")
    try:
        read_jsonl(path)
    except ValueError as exc:
        assert "p.jsonl:2" in str(exc)
    else:  # pragma: no cover - the assertion is the point
        raise AssertionError("malformed JSONL was accepted")
