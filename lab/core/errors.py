"""The one error type for bad input from a person: arguments, spec files, stores and run files (exit 2)."""


class InputError(ValueError):
    """Bad input a user can fix; the message names the parameter or file and what is allowed.

    A subclass of ValueError, so library callers may catch either. The command line reports it in
    one line with exit status 2; any other exception there is a bug and gets its own status.
    """
