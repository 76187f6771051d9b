"""Copy the runnable examples out of the API documents in ../shared/seeds, verbatim.

Run from the repo root: python tests/support/seed_examples/extract.py
"""

from __future__ import annotations

import pathlib
import re

HERE = pathlib.Path(__file__).parent
SEEDS = HERE.parents[3] / "shared" / "seeds"


def examples(text: str) -> list[str]:
    """Each example runs from its first `import` line to `asyncio.run(main())`."""
    pattern = re.compile(r"^import asyncio\n.*?^asyncio\.run\(main\(\)\)\n", re.S | re.M)
    return pattern.findall(text)


def main() -> None:
    for seed in sorted(SEEDS.glob("00[01]_*.txt")):
        for number, code in enumerate(examples(seed.read_text()), start=1):
            (HERE / f"seed_{seed.name[:3]}_{number}.py").write_text(code)


if __name__ == "__main__":
    main()
