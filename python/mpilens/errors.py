"""Errors mpilens reports to its users: one clear line each."""


class MpilensError(Exception):
    """Base class of the errors the command line prints as one line (exit status 2)."""


class LaunchError(MpilensError):
    """The job cannot be started under mpilens (launcher, program or MPI not usable)."""


class ConfigError(MpilensError):
    """An MPILENS_* setting or a command-line option has a value mpilens does not accept."""


class RunDirectoryError(MpilensError):
    """A run directory is missing, unreadable, or holds no usable data."""
