"""The one error type the sizing core raises for bad input."""


class SizingError(ValueError):
    """Bad input to the core. ``field`` names the offending input, dotted for nesting."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def require(condition: bool, field: str, message: str) -> None:
    """Raise a SizingError naming ``field`` unless ``condition`` holds."""
    if not condition:
        raise SizingError(field, message)
