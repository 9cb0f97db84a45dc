"""``python -m netsweep_jax.sweep.cli``: the ``sweep`` command."""

from netsweep_jax.sweep.cli.entry import main

main()
