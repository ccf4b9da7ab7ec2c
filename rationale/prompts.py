"""The versioned prompt templates of rationale/templates, rendered with Jinja2 (StrictUndefined: a
missing variable is an error, never an empty string).

Files and versions:
- audit_v1.jinja               evidence auditor prompt ("audit-v1")
- rationale_v1.jinja           gold-conditioned rationale writer prompt ("rationale-v1")
- template_rationale_v1.jinja  offline rationale from the audited evidence ("template-rationale-v1")
- system_v1.txt                system turn of every SFT example ("system-v1"); eval.generate must use
                               the same file so that training and inference prompts agree.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
SYSTEM_PROMPT_FILE = TEMPLATES_DIR / "system_v1.txt"
SYSTEM_PROMPT_VERSION = "system-v1"


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, autoescape=False)


def resolve_template(name: str | Path) -> Path:
    """A template path: as given when it exists, else the file of that name in rationale/templates.

    Raises:
        FileNotFoundError: neither exists.
    """
    path = Path(name)
    if path.is_file():
        return path
    packaged = TEMPLATES_DIR / path.name
    if packaged.is_file():
        return packaged
    raise FileNotFoundError(f"template not found: {name} (nor {packaged})")


def render(name: str | Path, **variables: Any) -> str:
    """Render a template file (a path, or a file name in rationale/templates) with `variables`."""
    path = resolve_template(name)
    if path.parent == TEMPLATES_DIR:
        template = _env().get_template(path.name)
    else:
        template = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False).from_string(
            path.read_text(encoding="utf-8"))
    return template.render(**variables).strip()


def load_system_prompt(path: str | Path | None = None) -> str:
    """The system turn of SFT examples (and of inference with the post-trained model)."""
    return resolve_template(path or SYSTEM_PROMPT_FILE).read_text(encoding="utf-8").strip()
