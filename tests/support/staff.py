"""Staff in the admin: a test client signed in as a user (made by ``staff_user_save``, so with
its role's groups), without the sign-in form."""

from typing import Any

from django.test import Client

from staff.services import staff_user_save


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def staff_client(username: str, *, administrator: bool = False) -> Client:
    """A client signed in as a staff user of the role: an operator, or an administrator."""
    user, _ = staff_user_save(username=username, administrator=administrator)
    return signed_in(user)


def admin_sign_in(page: Any, base_url: str, username: str, password: str) -> None:
    """Sign in to the admin through its form in the browser (Playwright ``page``)."""
    page.goto(f"{base_url}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("text=Site administration")
