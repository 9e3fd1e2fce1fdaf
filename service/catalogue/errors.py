"""The catalogue's one error: a slug that names no row (or more than one, through an alias)."""


class NotFound(LookupError):
    """``slug`` names no row of ``kind``; ``field`` is the input that carried it.

    ``suggestions`` are the closest known slugs (or, when ``ambiguous``, every row the short name
    could mean). ``status`` is 404 for a looked-up resource and 422 for a reference inside a body.
    """

    def __init__(
        self,
        *,
        field: str,
        slug: str,
        kind: str,
        suggestions: list[str],
        ambiguous: bool = False,
        status: int = 404,
    ) -> None:
        self.field = field
        self.slug = slug
        self.kind = kind
        self.suggestions = suggestions
        self.ambiguous = ambiguous
        self.status = status
        if ambiguous:
            message = f"{slug!r} could mean more than one {kind}: {', '.join(suggestions)}"
        elif suggestions:
            message = f"no {kind} {slug!r}; closest: {', '.join(suggestions)}"
        else:
            message = f"no {kind} {slug!r}"
        super().__init__(message)
        self.message = message
