from rest_framework.parsers import JSONParser


class JsonBodyParser(JSONParser):
    """JSON bodies under every media type the specification declares for requests."""

    media_type = "application/json"
    accepted_media_types = ("application/json", "text/json", "application/json-patch+json")

    @staticmethod
    def accepts(content_type: str) -> bool:
        base = content_type.split(";", 1)[0].strip().lower()
        return base in JsonBodyParser.accepted_media_types or (
            base.startswith("application/") and base.endswith("+json")
        )
