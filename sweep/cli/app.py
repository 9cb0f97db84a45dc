"""The ``sweep`` command line: parse options, call one library function, print.

Each command lives in a module of this package by what it works on (:mod:`.sweeps`, :mod:`.cubes`,
:mod:`.analyses`, :mod:`.profiles`) and is registered here, in the order ``sweep --help`` lists them.
Options shared by several commands are declared once (:mod:`.parameters`) and added to each command's
signature by :func:`.options.options`.
"""

from netsweep_jax.sweep.cli import analyses, cubes, helptext, profiles, sweeps

app = helptext.Typer(
    help="netsweep: is the network the bottleneck of my distributed training? "
    "Exact what-if sweeps of data-parallel training over bandwidth, utilization, "
    "compression ratio, node count and more.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for command in (
    sweeps.grid,
    sweeps.plan,
    sweeps.models,
    cubes.show,
    cubes.select,
    analyses.paper,
    analyses.validate,
    analyses.compare,
    analyses.need,
    analyses.calibrate,
    cubes.plot,
):
    app.command()(command)
app.add_typer(profiles.profile_app, name="profile")
