import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from merchants.models import Merchant


def setup_demo() -> str:
    out = io.StringIO()
    call_command("setup_demo", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_setup_demo_prints_the_keys_and_urls_and_keeps_them_for_a_shell(
    settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    settings.VAR_DIR = tmp_path
    settings.SANDBOX_BASE_URL = "http://127.0.0.1:8200"
    settings.DEMO_IMAGE_ENABLED = True

    first = setup_demo()

    printed = dict(re.findall(r"^([A-Z_]+)=(\S+)$", first, flags=re.MULTILINE))
    assert printed["API"] == "http://127.0.0.1:8200"
    assert printed["DEMO_IMAGE_URL"] == "http://127.0.0.1:8200/demo/photo.jpg"
    assert printed["SANDBOX_API_KEY"].startswith("sk_sandbox_")
    assert printed["LIVE_API_KEY"].startswith("sk_live_")
    demo = Merchant.objects.get(name="Demo Merchant")
    sandbox = demo.environments.get(kind="Sandbox")
    assert printed["SANDBOX_SIGNING_SECRET"] == sandbox.callback_signing_secret
    assert printed["SANDBOX_SIGNING_SECRET"].startswith("whsec_")
    assert printed["DASHBOARD_URL"] == "http://127.0.0.1:8200/dashboard/login"
    assert printed["DASHBOARD_EMAIL"] == "demo@example.com"
    assert demo.user is not None and not demo.user.is_staff
    assert demo.user.username == "demo@example.com"
    assert demo.user.check_password(printed["DASHBOARD_PASSWORD"])
    demo_file = tmp_path / "demo.env"
    assert demo_file.stat().st_mode & 0o777 == 0o600
    exported = dict(re.findall(r"^export ([A-Z_]+)=(\S+)$", demo_file.read_text(), re.MULTILINE))
    assert exported == printed

    # A later run on another port: the same merchant and keys, this run's URLs.
    settings.SANDBOX_BASE_URL = "http://127.0.0.1:8300"
    second = dict(re.findall(r"^([A-Z_]+)=(\S+)$", setup_demo(), flags=re.MULTILINE))
    assert Merchant.objects.filter(name="Demo Merchant").count() == 1
    assert second == {
        **printed,
        "API": "http://127.0.0.1:8300",
        "DEMO_IMAGE_URL": "http://127.0.0.1:8300/demo/photo.jpg",
        "DASHBOARD_URL": "http://127.0.0.1:8300/dashboard/login",
    }


@pytest.mark.django_db
def test_setup_demo_gives_a_new_dashboard_password_when_the_kept_one_is_gone(
    settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    settings.VAR_DIR = tmp_path
    first = dict(re.findall(r"^([A-Z_]+)=(\S+)$", setup_demo(), flags=re.MULTILINE))
    demo_file = tmp_path / "demo.env"
    demo_file.write_text(
        "".join(
            line + "\n"
            for line in demo_file.read_text().splitlines()
            if "DASHBOARD_PASSWORD" not in line
        )
    )

    second = dict(re.findall(r"^([A-Z_]+)=(\S+)$", setup_demo(), flags=re.MULTILINE))

    assert second["DASHBOARD_PASSWORD"] != first["DASHBOARD_PASSWORD"]
    user = Merchant.objects.get(name="Demo Merchant").user
    assert user is not None
    assert user.check_password(second["DASHBOARD_PASSWORD"])
    assert not user.check_password(first["DASHBOARD_PASSWORD"])


@pytest.mark.django_db
def test_setup_demo_without_its_keys_file_says_how_to_get_a_key(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.VAR_DIR = tmp_path
    setup_demo()
    (tmp_path / "demo.env").unlink()

    output = setup_demo()

    assert "exists but its keys are no longer kept" in output
    assert "SANDBOX_API_KEY" not in output
