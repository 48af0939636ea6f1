import logging
from pathlib import Path

import pytest
from django.core import mail

from dashboard.services import registration_signup


@pytest.mark.django_db
def test_each_mail_is_a_file_in_the_folder_and_one_line_names_it(
    settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    settings.EMAIL_BACKEND = "common.mail.FolderEmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    settings.LIVE_BASE_URL = "http://127.0.0.1:8200"
    caplog.set_level(logging.INFO, logger="common.mail")

    registration_signup(
        name="Newcomer Prints",
        email="newcomer@example.com",
        password="a-long-enough-passphrase",
    )
    mail.send_mail("Second", "Another body.", "from@example.com", ["b@example.com"])

    files = sorted((tmp_path / "mail").iterdir())
    assert len(files) == 2 and all(f.suffix == ".eml" for f in files)
    first = next(f for f in files if "newcomer@example.com" in f.read_text())
    assert "Subject: Confirm your email address" in first.read_text()
    assert "http://127.0.0.1:8200/dashboard/verify?token=" in first.read_text()
    lines = [r.getMessage() for r in caplog.records if r.name == "common.mail"]
    assert lines == [
        f"Mail 'Confirm your email address' to newcomer@example.com: {first}",
        f"Mail 'Second' to b@example.com: {next(f for f in files if f != first)}",
    ]
