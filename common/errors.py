"""Domain errors raised by services and mapped to the API error envelope in one handler."""

from collections.abc import Mapping, Sequence


class ServiceError(Exception):
    """Base of the errors a service raises for its caller to turn into a response."""


class ValidationFailed(ServiceError):
    """Input that cannot be accepted; ``failures`` maps field paths to (code, description)."""

    def __init__(self, failures: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        self.failures = {path: list(items) for path, items in failures.items()}
        super().__init__(
            "; ".join(f"{path}: {d}" for path, items in failures.items() for _, d in items)
        )

    @classmethod
    def single(cls, path: str, code: str, description: str) -> "ValidationFailed":
        return cls({path: [(code, description)]})


class EntityNotFound(ServiceError):
    """A well-formed reference that matches nothing the caller may see."""

    def __init__(self, description: str = "The entity was not found.") -> None:
        self.description = description
        super().__init__(description)


class LabBusy(ServiceError):
    """A lab's share of the web workers is taken by other requests that wait on it: nothing
    was done, and the caller may ask again after ``retry_after_seconds``."""

    def __init__(self, lab_code: str, retry_after_seconds: float) -> None:
        self.lab_code = lab_code
        self.retry_after_seconds = retry_after_seconds
        super().__init__(f"Lab {lab_code} is busy with other requests; try again in a moment.")
