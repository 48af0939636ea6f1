import re

import pytest
from django.test import Client


@pytest.mark.django_db
def test_the_home_page_says_what_the_service_is_with_links_for_each_reader() -> None:
    response = Client().get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Print-on-demand fulfilment" in html and "Sandbox" in html
    sections = re.findall(r'<h2 id="[a-z]+">(.+?)</h2>', html)
    assert sections == ["For merchants", "For operators", "For developers"]
    links = re.findall(r'<a href="(/[^"]*)"', html)
    assert {
        "/dashboard/signup",
        "/dashboard/login",
        "/v4.0/redoc",
        "/v4.0/docs",
        "/admin/",
        "/admin/backoffice/bulkjob/",
        "/healthz",
        "/v4.0/schema",
    } <= set(links)
    for link in links:
        answer = Client().get(link)
        # Each page exists: served, or a redirect to sign in first.
        assert answer.status_code in (200, 302, 503), (link, answer.status_code)
        if answer.status_code == 302:
            assert "login" in answer["Location"], (link, answer["Location"])
