"""The one error type users see: bad input, reported in one line, exit code 2."""


class InputError(ValueError):
    """Bad user input: a value that breaks a rule, or a malformed file.

    The message is one line that names the value (option, file, line) and the rule;
    the CLI prints it and exits with code 2.
    """


def where(path, line=None):
    """``'path'`` or ``'path:line'``, for messages that point at input."""
    return f"{path}:{line}" if line is not None else f"{path}"
