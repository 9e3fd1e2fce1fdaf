"""The one error type the sizing core raises for bad input."""


class SizingError(ValueError):
    """Bad input to the core. ``field`` names the offending input, dotted for nesting."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NoValidSplit(SizingError):
    """None of the allowed GPU counts can split this model on this GPU (heads that do not
    divide, more stages than layers): a statement about the pair, not bad input."""


def require(condition: bool, field: str, message: str) -> None:
    """Raise a SizingError naming ``field`` unless ``condition`` holds."""
    if not condition:
        raise SizingError(field, message)
