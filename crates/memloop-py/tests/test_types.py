"""The installed package is typed: mypy (strict) checks it, and sees the
signatures a user's code calls, with a misuse caught."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

mypy = pytest.importorskip("mypy", reason="scripts/test-python.sh installs mypy")

USER_CODE = textwrap.dedent("""
    from memloop import Memory, MemoryLoop, TurnResult
    m = Memory("./d")
    hits: dict = m.search("q", filters={"user_id": "u"}, top_k=3)
    t: TurnResult = MemoryLoop(m).context("hi", user_id="u", session_id="s")
    reply: str | None = t.reply
""")


def run_mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *args],
                          capture_output=True, text=True)


def test_the_package_passes_strict_mypy():
    out = run_mypy("--strict", "-p", "memloop")
    assert out.returncode == 0, out.stdout + out.stderr


def test_user_code_is_checked_against_the_signatures(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(USER_CODE)
    out = run_mypy("--strict", "--allow-any-generics", str(good))
    assert out.returncode == 0, out.stdout
    bad = tmp_path / "bad.py"
    bad.write_text(USER_CODE + "m.search('q', filters={'user_id': 'u'}, top_k='three')\n")
    out = run_mypy(str(bad))
    assert out.returncode == 1 and "top_k" in out.stdout, out.stdout
