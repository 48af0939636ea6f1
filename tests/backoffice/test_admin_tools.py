"""The tools' forms in the admin explain the sheet's columns and offer templates to fill in."""

import csv
import io

import openpyxl
import pytest

from backoffice.rows import RESUBMISSION_COLUMNS, SHIPPING_COLUMNS
from tests.support.staff import staff_client

pytestmark = pytest.mark.django_db
TOOLS = "/admin/backoffice/bulkjob"


@pytest.mark.parametrize(("kind", "columns"), [("resubmission", RESUBMISSION_COLUMNS),
                                               ("shipping", SHIPPING_COLUMNS)])  # fmt: skip
def test_each_form_explains_its_columns_and_links_both_templates(
    kind: str, columns: tuple[tuple[str, str], ...]
) -> None:
    html = staff_client("ada", administrator=True).get(f"{TOOLS}/{kind}/").content.decode()

    explained = html[html.index('id="columns"') :]
    for title, meaning in columns:
        assert f"<code>{title}</code>" in explained
        assert meaning.replace("'", "&#x27;") in explained
    assert f'href="{TOOLS}/template/{kind}.csv"' in html
    assert f'href="{TOOLS}/template/{kind}.xlsx"' in html


def test_the_templates_hold_the_tools_column_titles() -> None:
    client = staff_client("ada", administrator=True)
    titles = [title for title, _ in RESUBMISSION_COLUMNS]

    as_csv = client.get(f"{TOOLS}/template/resubmission.csv")
    as_xlsx = client.get(f"{TOOLS}/template/resubmission.xlsx")
    shipping = client.get(f"{TOOLS}/template/shipping.csv")

    assert as_csv["Content-Type"] == "text/csv"
    assert 'filename="resubmission-template.csv"' in as_csv["Content-Disposition"]
    assert list(csv.reader(io.StringIO(as_csv.content.decode()))) == [titles]
    book = openpyxl.load_workbook(io.BytesIO(as_xlsx.content))
    assert [[c.value for c in row] for row in book.worksheets[0].iter_rows()] == [titles]
    assert shipping.content.decode().strip() == "Lab Order Id,Skip Row,Message,Last Activity"


def test_an_operator_gets_the_resubmission_template_only() -> None:
    client = staff_client("olga")

    assert client.get(f"{TOOLS}/template/resubmission.csv").status_code == 200
    refused = client.get(f"{TOOLS}/template/shipping.xlsx")
    assert refused.status_code == 403 and refused["Content-Type"].startswith("text/html")
    assert client.get(f"{TOOLS}/template/resubmission.pdf").status_code == 404
