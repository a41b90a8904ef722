"""Errors a user can act on. The CLI prints their message and exits 2; pages show it in a box."""


class UserError(Exception):
    """Bad input or an impossible request: the message names what is wrong and where."""
