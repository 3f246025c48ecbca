"""Errors mpilens reports to its users: one clear line each.

Every error class of mpilens derives from MpilensError, the base: the command line catches it,
prints its message as one line (``mpilens: MESSAGE``) and exits with status 2; a script using the
package can catch it to handle whatever mpilens refuses. Anything else escaping is a bug.
"""


class MpilensError(Exception):
    """Base class of every mpilens error: the command line prints it as one line (exit status 2)."""


class LaunchError(MpilensError):
    """The job cannot be started under mpilens (launcher, program or MPI not usable)."""


class ConfigError(MpilensError):
    """An MPILENS_* setting or a command-line option has a value mpilens does not accept."""


class RunDirectoryError(MpilensError):
    """A run directory is missing, unreadable, or holds no usable data."""
