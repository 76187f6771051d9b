"""Render speed of the chat's live Markdown: CPU time per delta for a 1,000- and a
4,000-delta answer on a virtual 100x40 terminal, beside a plain print of the same deltas.

The renderer must stay linear (4,000 deltas cost at most 4.5x 1,000) and keep up with
2,000 deltas per second.   Run: .venv/bin/python bench/render.py
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from toolnexus_cli.render.markdown_stream import MarkdownStream  # noqa: E402

SECTION = """## Step {n}

Streaming answers arrive as **small deltas**, and the renderer must keep `up` with them.
Each paragraph wraps across the terminal width, with *emphasis* and a [link](https://example.com).

- first point about item {n}
- second point, a little longer than the first one
- third point with `inline code`

| name | value | note |
|------|-------|------|
| a{n} | {n}   | fine |
| b{n} | {m}   | also fine |

```python
def step_{n}(x: int) -> int:
    return x * {n} + 1
```

"""


def deltas(count: int) -> list[str]:
    """`count` word-sized deltas of a realistic answer, as a model streams them."""
    pieces: list[str] = []
    n = 0
    while len(pieces) < count:
        n += 1
        pieces += [word + " " for word in SECTION.format(n=n, m=n * 2).split(" ")]
    return pieces[:count]


def virtual_console() -> Console:
    return Console(
        file=io.StringIO(), width=100, height=40, force_terminal=True, color_system="truecolor"
    )


def time_renderer(parts: list[str]) -> float:
    stream = MarkdownStream(virtual_console())
    start = time.process_time()
    for part in parts:
        stream.text(part)
    stream.finish()
    return time.process_time() - start


def time_print(parts: list[str]) -> float:
    out = io.StringIO()
    start = time.process_time()
    for part in parts:
        print(part, end="", file=out, flush=True)
    return time.process_time() - start


def main() -> None:
    runs = 9
    time_renderer(deltas(200))  # warm-up: first-use costs (lexers, caches) are not per delta
    print(
        f"python {sys.version.split()[0]} | virtual terminal 100x40 | median of {runs} runs"
        " after a warm-up"
    )
    print(f"{'deltas':>7} {'renderer µs/delta':>18} {'print µs/delta':>15} {'deltas/s':>10}")
    totals = {}
    rows = []
    for count in (1000, 4000):
        parts = deltas(count)
        rendered = statistics.median(time_renderer(parts) for _ in range(runs))
        printed = statistics.median(time_print(parts) for _ in range(runs))
        totals[count] = rendered
        rows.append(
            {
                "deltas": len(parts),
                "renderer_us_per_delta": round(rendered / len(parts) * 1e6, 2),
                "print_us_per_delta": round(printed / len(parts) * 1e6, 3),
                "deltas_per_s": round(len(parts) / rendered),
            }
        )
        print(
            f"{len(parts):>7} {rendered / len(parts) * 1e6:>18.1f} "
            f"{printed / len(parts) * 1e6:>15.2f} {len(parts) / rendered:>10.0f}"
        )
    ratio = totals[4000] / totals[1000]
    rate = 4000 / totals[4000]
    print(
        f"4,000 / 1,000 total = {ratio:.2f}x (target <= 4.5x: "
        f"{'MET' if ratio <= 4.5 else 'MISSED'}); "
        f"{rate:.0f} deltas/s (target >= 2,000: {'MET' if rate >= 2000 else 'MISSED'})"
    )
    from results import record  # bench/results.py, beside this file

    record(
        "render",
        {
            "python": sys.version.split()[0],
            "runs": runs,
            "rows": rows,
            "ratio_4000_over_1000": round(ratio, 3),
            "linear_met": ratio <= 4.5,
            "deltas_per_s_at_4000": round(rate),
            "rate_met": rate >= 2000,
        },
    )


if __name__ == "__main__":
    main()
