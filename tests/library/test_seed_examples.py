"""The examples of the public API documents (../shared/seeds 000_*, 001_*) run unchanged."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from tests.support.seed_examples.extract import SEEDS, examples

HERE = pathlib.Path(__file__).parents[1] / "support" / "seed_examples"
COPIES = sorted(HERE.glob("seed_*.py"))


def test_all_six_examples_are_here():
    assert len(COPIES) == 6


@pytest.mark.parametrize("path", COPIES, ids=lambda p: p.stem)
def test_seed_example_runs_unchanged(path):
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok:")


@pytest.mark.skipif(not SEEDS.is_dir(), reason="../shared/seeds is not beside this checkout")
def test_copies_match_the_seed_documents():
    found = {}
    for seed in sorted(SEEDS.glob("00[01]_*.txt")):
        for number, code in enumerate(examples(seed.read_text()), start=1):
            found[f"seed_{seed.name[:3]}_{number}.py"] = code
    assert found == {p.name: p.read_text() for p in COPIES}
