"""The software-speed constants per stack preset and GPU die, as ``validate --llm`` fits them, written as data.

``python -m netsweep_jax.sweep.analysis.llm_constants [--out PATH] [--force]`` runs ``validate --llm``'s fit of
the shipped runs file (:func:`sweep.analysis.llm_validation.run_validation`, its default training sources) and
writes its ``trained`` constants, for every stack preset (:data:`sweep.model.stacks.STACKS`) and GPU die
(:data:`sweep.analysis.llm_fit.DIES`), to ``sweep/data/llm_constants.json`` (default; an existing file is kept
without ``--force``), which ``--stack`` reads (:func:`sweep.model.stacks.constants`).

The file holds its provenance: the runs file and its SHA-256, the training groups and row ids, the date, the fit's
loss (mean squared log(predicted / measured) over the training rows), and for each stack and die where its
matrix efficiency comes from. The fit has one efficiency per stack preset and die, one memory efficiency and
the NIC utilization held at NCCL's measured 0.92: a stack with no training row on a die takes the die's pooled
efficiency, fitted on every training row on it (said so), and a die with no training row the documented default.
So ``sweep plan --stack S`` on a run's own layout predicts what ``validate --llm`` predicts for it
(``tests/test_stacks.py`` checks every shipped row).
"""

import argparse
import datetime
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from netsweep_jax.sweep.analysis import llm_validation
from netsweep_jax.sweep.analysis.llm_fit import DIES, Validation
from netsweep_jax.sweep.analysis.llm_predict import efficiency_of
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import cli_message
from netsweep_jax.sweep.io.paths import check_new_file, write_atomically
from netsweep_jax.sweep.io.runs import DATASET
from netsweep_jax.sweep.model.compute import die
from netsweep_jax.sweep.model.stacks import CONSTANTS_FILE, STACKS

COMMAND = "python -m netsweep_jax.sweep.analysis.llm_constants"


def document(v: Validation, date: str) -> dict[str, Any]:
    """The constants file's content from a validation of the shipped runs file (its ``trained`` fit)."""
    fit = v.fits["trained"]
    train = [r for r in v.runs if r.id in set(fit.rows)]
    measured = np.array([r.value for r in train], np.float64)
    index = [i for i, r in enumerate(v.runs) if r.id in set(fit.rows)]
    predicted = v.outputs["trained"]["predicted"][index]
    loss = float(np.mean(np.log(predicted / measured) ** 2))
    stacks: dict[str, dict[str, dict[str, Any]]] = {}
    for name in STACKS:
        stacks[name] = {}
        for d in DIES:
            rows = [r for r in train if die(r.gpu) == d]
            own = [r for r in rows if r.preset == name]
            if f"efficiency {name}/{d}" in fit.fitted:
                said = (
                    f"fitted on {', '.join(sorted({r.group for r in own}))} ({len(own)} {name} rows on {d})"
                )
            elif f"efficiency {d}" in fit.fitted:
                said = (
                    f"the {d}'s pooled fit: {', '.join(sorted({r.group for r in rows}))} ({len(rows)} {d} rows "
                    f"of {', '.join(sorted({r.preset for r in rows}))}; none of {name} on {d})"
                )
            else:
                said = f"default: no training row on {d}"
            stacks[name][d] = {"efficiency": efficiency_of(fit.efficiency, name, d), "from": said}
    return {
        "written_by": COMMAND,
        "date": date,
        "runs_file": "/".join(DATASET.parts[-3:]),
        "runs_sha256": hashlib.sha256(DATASET.read_bytes()).hexdigest(),
        "fit": "validate --llm's trained constants, per stack preset and GPU die (sweep/analysis/llm_validation.py's protocol)",
        "training_groups": sorted({r.group for r in train}),
        "training_rows": [r.id for r in train],
        "loss": loss,
        "memory_efficiency": fit.memory_efficiency,
        "utilization": fit.utilization,
        "utilization_from": "held at NCCL's measured share of the NICs' line rate (llm_fit.NIC_UTILIZATION)"
        if "utilization" not in fit.fitted
        else "fitted",
        "stacks": stacks,
    }


def write(out: str | Path = CONSTANTS_FILE, force: bool = False, date: str | None = None) -> Path:
    """Fit (the shipped runs file, the default training sources) and write the constants file to ``out``."""
    check_new_file(out, force=force, suffixes=(".json",))
    v = llm_validation.run_validation(DATASET)  # its default training sources (DEFAULT_TRAIN)
    text = json.dumps(document(v, date or datetime.date.today().isoformat()), indent=1) + "\n"
    return write_atomically(out, lambda path: path.write_text(text), overwrite=force)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=CONSTANTS_FILE, help="the file to write (JSON)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out")
    args = parser.parse_args(argv)
    try:
        print(f"wrote {write(args.out, args.force)}")
    except InputError as e:
        print(f"error: {cli_message(e)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
