"""The README's product listing command prints one screen."""

import json
import re
import subprocess

import pytest
from rest_framework.test import APIClient

from config.env import BASE_DIR


@pytest.mark.usefixtures("catalogue")
def test_the_readmes_product_command_prints_a_line_a_product(sandbox_api: APIClient) -> None:
    readme = (BASE_DIR / "README.md").read_text()
    (command,) = [c for c in re.findall(r"```sh\n(.*?)```", readme, re.DOTALL) if "/products" in c]
    url, formatter = re.fullmatch(
        r'curl -s "\$API(/v4\.0/products\?[^"]*)" -H "X-API-Key: \$SANDBOX_API_KEY" \| (.*)\n',
        command,
        flags=re.DOTALL,
    ).groups()  # type: ignore[union-attr]

    body = sandbox_api.get(url).json()
    printed = subprocess.run(
        ["bash", "-c", formatter], input=json.dumps(body), capture_output=True, text=True
    )

    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert [line.split(" | ")[0] for line in lines] == [p["sku"] for p in body["products"]]
    assert "GLOBAL-PHO-8X10 | " in printed.stdout
    assert "finish: gloss, lustre, matte" in printed.stdout
    assert 1 < len(lines) <= 60
