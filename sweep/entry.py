"""The ``sweep`` console script: signals are handled before anything heavy is imported."""

import sys


def main():
    """Install the SIGTERM handler, import the CLI and run it; an interrupt while
    starting up is one line and exit code 130/143 too."""
    from sweep import interrupts

    interrupts.install()
    try:
        from sweep.cli import app
    except (KeyboardInterrupt, interrupts.Interrupted) as e:
        print("error: interrupted", file=sys.stderr)
        sys.exit(interrupts.exit_code(e))
    app()
