"""The examples a merchant copies say what the API documentation says."""

import re

from config.env import BASE_DIR


def test_the_quickstarts_signature_check_is_the_documentations_snippet() -> None:
    introduction = (BASE_DIR / "api" / "introduction.md").read_text()
    (documented,) = re.findall(r"```python\n(.*?)```", introduction, flags=re.DOTALL)
    example = (BASE_DIR / "examples" / "callback_verified.py").read_text()
    assert documented.strip() in example
    receiver = (BASE_DIR / "examples" / "callback_receiver.py").read_text()
    assert "from callback_verified import callback_verified" in receiver
