"""The one error type for bad input from a person (exit 2), and how to tell an interrupt in disguise."""


class InputError(ValueError):
    """Bad input a user can fix; the message names the parameter or file and what is allowed.

    A subclass of ValueError, so library callers may catch either. The command line reports it in
    one line with exit status 2; any other exception there is a bug and gets its own status.
    """


def interrupted(exc: BaseException | None) -> bool:
    """Whether Ctrl-C caused `exc`, through its chain of causes.

    A Numba kernel that returns arrays calls back into Python to box each one (a memoised unpickle of the
    `numpy.ndarray` class, well under a microsecond); a SIGINT that arrived during the kernel fires there,
    and for a returned tuple the error is dropped on the way out, so the dispatcher raises
    SystemError("... returned a result with an exception set") from the KeyboardInterrupt."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
