"""The README is a manual a newcomer reads through: short, in a fixed order, every setting in
it, and every link (to the docs and within them) leading somewhere."""

import re
from pathlib import Path

from config.env import BASE_DIR

README = BASE_DIR / "README.md"


def test_the_readme_is_a_short_manual_in_a_newcomers_order() -> None:
    text = README.read_text()

    assert len(text.splitlines()) <= 350
    sections = re.findall(r"^## (.+)$", re.sub(r"(?ms)^```.*?^```", "", text), re.MULTILINE)
    assert sections[0] == "Two commands"
    assert sections[1].startswith("Quickstart")
    for later in ("Settings", "Commands", "Deployment", "Benchmarks", "Where to read more"):
        assert later in sections, later
    assert sections.index("Settings") < sections.index("Commands") < sections.index("Deployment")
    assert sections[-1] == "Where to read more"


def test_every_setting_the_settings_read_is_in_the_readme() -> None:
    text = README.read_text()
    read = set()
    for module in (BASE_DIR / "config" / "settings").glob("*.py"):
        read |= set(re.findall(r"env\.[a-z_]+\(\s*\"([A-Z][A-Z0-9_]+)\"", module.read_text()))
    wildcards = re.findall(r"`([A-Z][A-Z0-9_]*_)\*`", text)

    assert len(read) > 50
    for name in sorted(read):
        named = f"`{name}`" in text or any(name.startswith(w) for w in wildcards)
        assert named, name


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings of a Markdown file."""
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text())
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_of_the_readme_and_the_docs_leads_somewhere() -> None:
    pages = [README, *sorted((BASE_DIR / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            file, _, anchor = target.partition("#")
            linked = (page.parent / file) if file else page
            assert linked.exists(), (page.name, target)
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), (page.name, target)
            checked += 1
    assert checked > 20
