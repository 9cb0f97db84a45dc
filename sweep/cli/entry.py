"""The ``sweep`` console script: signals are handled before anything heavy is imported."""

import sys


def main() -> None:
    """Install the SIGTERM handler, import the CLI and run it. An interrupt while
    starting up is one line and exit code 130/143 too, and so is a usage error (exit 2).

    Its imports stay inside: the handler is installed before Typer and the CLI (and what they
    import) are loaded, so that an early Ctrl-C or SIGTERM is handled too."""
    from netsweep_jax.sweep.core import interrupts

    interrupts.install()
    try:
        import typer

        from netsweep_jax.sweep.cli.app import app

        code = app(standalone_mode=False)
    except typer.Abort:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:
        # A usage error (unknown option, missing value, ...): Typer would draw a box. Its
        # class lives in click or in Typer's copy of it, by version; both carry these.
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):
            raise
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"error: {e.format_message()}{hint}", file=sys.stderr)
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, interrupts.Interrupted) as e:
        print("error: interrupted", file=sys.stderr)
        sys.exit(interrupts.exit_code(e))
    sys.exit(code or 0)
