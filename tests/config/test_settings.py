import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _import_production(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings.production"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_settings_refuse_to_start_without_a_secret_key() -> None:
    result = _import_production({"DJANGO_ALLOWED_HOSTS": "api.example.com"})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_production_settings_refuse_to_start_without_allowed_hosts() -> None:
    result = _import_production({"DJANGO_SECRET_KEY": "x" * 50})
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS" in result.stderr


def test_production_settings_start_when_complete() -> None:
    result = _import_production(
        {"DJANGO_SECRET_KEY": "x" * 50, "DJANGO_ALLOWED_HOSTS": "api.example.com"}
    )
    assert result.returncode == 0, result.stderr


def test_embedded_default_uses_sqlite_and_the_filesystem_broker(tmp_path: Path) -> None:
    code = (
        "from django.conf import settings; import django; django.setup();"
        "print(settings.DATABASES['default']['ENGINE']); print(settings.CELERY_BROKER_URL)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.base", "VAR_DIR": str(tmp_path)})
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://"], result.stderr
    assert (tmp_path / "broker" / "queue").is_dir()
