"""Errors of the sweep library; the command layer maps them to azure.cli.core.azclierror classes.

Minimal placeholder (created for core/storage.py); the owner of this module extends it.
"""


class SweepError(Exception):
    """Base class of every error the library raises on purpose."""


class SpecError(SweepError):
    """A parameter specification or sweep file is invalid."""


class StorageError(SweepError):
    """Listing files in Azure Storage failed (credentials, missing container/share, unreachable endpoint)."""
