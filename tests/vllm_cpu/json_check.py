"""One check the vLLM-on-CPU tests share: does a generated text parse as JSON valid under a schema?"""

from __future__ import annotations

import json
from typing import Any


def matches(text: str, schema: dict[str, Any]) -> bool:
    """``text`` is JSON and validates against ``schema`` (jsonschema)."""
    import jsonschema

    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False
