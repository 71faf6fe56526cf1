"""How long `eddy validate` takes on a generated 5,000-line app (target: under 2 s).

Run: .venv/bin/python bench/validate_large_app.py [lines]
"""

from __future__ import annotations

import sys
import time

from eddy.lang import check
from eddy.plan import build_plan

BLOCK = """define stream In{i} (id int, room int, temp double, label string);
@info(name='filter-{i}')
from In{i}[temp > 30.0 and room >= 100 and room < 110]
select id, room, temp * 1.8 + 32.0 as fahrenheit, str:upper(label) as label
insert into Hot{i};
@info(name='avg-{i}')
from Hot{i}#window.length(100)
select room, avg(fahrenheit) as avgF, count() as n
group by room
having n > 2L
insert into Avg{i};
"""


def generate(lines: int) -> str:
    per_block = BLOCK.count("\n")
    return "".join(BLOCK.format(i=i) for i in range(lines // per_block + 1))


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    text = generate(lines)
    check("define stream S (a int); from S select a insert into O;")  # grammar load
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        build_plan(check(text))
        best = min(best, time.perf_counter() - started)
    print(f"validate {text.count(chr(10))} lines: best of 3 = {best:.3f} s")


if __name__ == "__main__":
    main()
