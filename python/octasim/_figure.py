"""What octasim.plot's figures share: the error they raise and a figure's axes."""


class ReportError(ValueError):
    """A report that is missing, not JSON, or lacks what a figure needs."""


def type_name(value):
    """A JSON value's type as an error message names it."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def new_axes(ax, figsize):
    """`ax`, or the axes of a new figure of `figsize` inches."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax
