"""The one error of a command that cannot run as asked, apart from the flag tables
(``cli_flags``) so that the settings readers (``tls``, ``target_config``) can raise it without
standing on the command line's code."""


class UsageError(Exception):
    """A command cannot run as asked (a bad option or configuration, a target that refuses to
    start a run): exit status 2; the message is the one-line reason."""


class Failure(Exception):
    """A command that ran and failed on its own terms (a database it cannot open, a target that
    refused a transaction): the message is the whole line printed, exit status 1."""


#: conform's name for it: the run cannot start (``conformance.preflight`` raises it too).
SetupError = UsageError
