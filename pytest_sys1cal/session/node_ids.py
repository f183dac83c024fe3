"""The benchmark items' node ids, ``sys1cal::<model>[<family>/<instance id>]``: how they are named, and how
the ones given back to pytest as arguments (``pytest --sys1cal 'sys1cal::jev[bayes/…]'``) select renderings,
as a test file's node ids would. Imports nothing heavy: the id of a rendering is needed by advice too."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

from ..dataset import Dataset, Rendering
from ..errors import InputError
from .options import argument

SUITE = "sys1cal"  # the node id of the collector holding the items, where a test file's path would stand


def item_name(model: str, rendering: Rendering) -> str:
    """The item's name: ``<model>[<family>/<instance id>]`` (its node id is ``sys1cal::`` + this)."""
    return f"{model}[{rendering.family}/{rendering.short_id}]"


def node_id(model: str, rendering: Rendering) -> str:
    """The rendering's node id, as pytest prints it and takes it back: ``sys1cal::<model>[<family>/<id>]``."""
    return f"{SUITE}::{item_name(model, rendering)}"


def take_node_ids(args: list[str], invocation_dir: Path) -> list[str]:
    """Take the benchmark's node ids (``sys1cal::…``, or ``sys1cal`` alone when no such path exists) out of
    pytest's positional arguments, in place, and return them. pytest would look for them on disk and stop
    with "file or directory not found"; the real paths left in `args` are still collected as usual."""
    taken = [
        arg for arg in args if arg.startswith(f"{SUITE}::") or (arg == SUITE and not (invocation_dir / arg).exists())
    ]
    args[:] = [arg for arg in args if arg not in taken]
    return taken


_ITEM_ID = re.compile(rf"{SUITE}::(?P<model>[^\[\]:]+)(?:\[(?P<name>.+)\])?")


def select_renderings(
    node_ids: Sequence[str], model: str, dataset: Dataset, list_command: str
) -> tuple[Rendering, ...] | None:
    """The renderings that `node_ids` name, in dataset order; None when one of them names the whole suite
    (``sys1cal`` or ``sys1cal::<model>``, as a test file's path would). Raises InputError naming every id that
    is not an item of this run (another model's, a misspelt rendering, a gate) and the command that lists the
    ids."""
    by_name = {f"{r.family}/{r.short_id}": r for r in dataset.renderings}
    chosen: set[str] = set()
    everything = False
    problems = []
    for given in node_ids:
        match = _ITEM_ID.fullmatch(given)
        if given == SUITE or (match and match["model"] == model and match["name"] is None):
            everything = True
        elif match is None:
            problems.append(f"{given} is not the id of a rendering ({SUITE}::{model}[<family>/<instance id>])")
        elif match["model"] != model:
            problems.append(
                f"{given} is an item of model {match['model']}, but this run measures {model} "
                f"(run it with {argument('model', match['model'])})"
            )
        elif match["name"] not in by_name:
            close = difflib.get_close_matches(match["name"], list(by_name), n=1, cutoff=0.8)
            hint = f" (did you mean {SUITE}::{model}[{close[0]}]?)" if close else ""
            problems.append(f"{given}: dataset {dataset.name} has no rendering {match['name']}{hint}")
        else:
            chosen.add(match["name"])
    if problems:
        raise InputError(f"{'; '.join(problems)}. List this run's ids with: {list_command}")
    return None if everything else tuple(r for name, r in by_name.items() if name in chosen)
