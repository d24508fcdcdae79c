"""Fixtures: a fresh data directory per test, the real embedding model
(MEMLOOP_MODEL_DIR, set by scripts/test-python.sh), a loopback Anthropic
stub. The package under test is the installed wheel, never the source tree."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE))  # the stub module, not the package

import memloop  # noqa: E402
from anthropic_stub import AnthropicStub  # noqa: E402

if os.environ.get("MEMLOOP_ALLOW_SOURCE_IMPORT") != "1":
    assert "site-packages" in memloop.__file__, (
        f"memloop was imported from {memloop.__file__}: the tests run against the installed wheel "
        "(scripts/test-python.sh)"
    )


@pytest.fixture
def memory(tmp_path: pathlib.Path) -> memloop.Memory:
    return memloop.Memory(tmp_path / "data")


@pytest.fixture
def stub():
    s = AnthropicStub()
    yield s
    s.close()


def llm_config(stub: AnthropicStub) -> dict:
    return {
        "provider": "anthropic",
        "model": "claude-stub",
        "base_url": stub.base_url,
        "api_key": "sk-test",
        "max_retries": 0,
        "timeout_secs": 10,
    }
