"""The Report page's reading of the reproduction report (anchordiv.explorer.report)."""
from __future__ import annotations

import pytest

from anchordiv.explorer.report import REPORT_FOLDER, read_report


def test_the_shipped_report_reads_into_sections_with_its_figures_and_data():
    title, sections = read_report()
    assert title == "anchordiv reproduction report"
    assert sections[0].title == "Study" and sections[1].title.startswith("1. Object vs style")
    kinds = [block.kind for section in sections for block in section.blocks]
    assert kinds.count("image") >= 5 and kinds.count("data") >= 3
    for section in sections:
        for block in section.blocks:
            if block.kind in ("image", "data"):
                assert block.path.parent == REPORT_FOLDER.resolve() and block.path.is_file()
            else:
                assert "![" not in block.text  # every figure became an image block


def test_links_outside_the_folder_stay_text(tmp_path):
    (tmp_path / "report.md").write_text("# R\n## One\n![x](../secret.png)\n![y](missing.png)\nData: [a](a.csv)\n")
    (tmp_path.parent / "secret.png").write_bytes(b"png")
    _, sections = read_report(tmp_path)
    assert [block.kind for block in sections[0].blocks] == ["text"]
    assert "../secret.png" in sections[0].blocks[0].text


def test_no_report_names_the_command(tmp_path):
    with pytest.raises(ValueError, match="anchordiv reproduce --out"):
        read_report(tmp_path)


def test_each_experiment_has_its_verdict():
    _, sections = read_report()
    verdicts = {section.title: section.verdict for section in sections}
    assert verdicts["Study"] is None
    assert verdicts["1. Object vs style anchors: the p sweep (paper Fig. 3, left)"].startswith("Holds:")
    assert sum(verdict is not None for verdict in verdicts.values()) >= 6
    assert not any(verdict and "**" in verdict for verdict in verdicts.values())
    outcomes = {section.short_title: section.outcome for section in sections}
    assert outcomes["1. Object vs style anchors"] == "Holds" and outcomes["2. Anchor budget"] == "Partly holds"
    assert outcomes["Study"] is None and all(len(title) <= 40 for title in outcomes)
    # A colon inside brackets belongs to the aside: the outcome is never cut inside it.
    assert all(outcome.count("(") == outcome.count(")") for outcome in outcomes.values() if outcome), outcomes
    assert "Does not show the ImageNet trend (CUB-like: flat or inconsistent)" in outcomes.values()


def test_the_page_opens_with_the_outcomes_before_the_figures(library):
    from app_pages import APP, TIMEOUT
    from test_app import AppTest

    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.switch_page("views/report.py").run()
    assert not app.exception
    glance = app.table[0].value
    assert app.subheader[0].value == "At a glance" and list(glance.columns) == ["experiment", "on the built-in world"]
    assert ["1. Object vs style anchors", "Holds"] in glance.values.tolist()


def test_a_figure_or_table_the_report_cannot_use_is_refused_alone(tmp_path):
    """A decompression bomb or a damaged PNG among the report's figures, and a table that is not a
    CSV, are ValueErrors naming the file (the page shows each as an error box in its place)."""
    from PIL import Image

    from anchordiv.explorer.report import report_figure, report_table
    from anchordiv.images import MAX_PIXELS

    side = int(MAX_PIXELS ** 0.5) + 100
    Image.new("1", (side, side)).save(tmp_path / "bomb.png")  # a few kB on disk
    (tmp_path / "cut.png").write_bytes((tmp_path / "bomb.png").read_bytes()[:60])
    (tmp_path / "table.csv").write_bytes(b'a,b\n"open,2\n')
    (tmp_path / "report.md").write_text("# R\n## One\n![b](bomb.png)\n![c](cut.png)\nData: [t](table.csv)\n")
    _, sections = read_report(tmp_path)
    blocks = {block.path.name: block for block in sections[0].blocks if block.path is not None}
    for name, read in (("bomb.png", report_figure), ("cut.png", report_figure), ("table.csv", report_table)):
        with pytest.raises(ValueError, match=name.replace(".", r"\.")):
            read(blocks[name].path)


def test_tables_split_from_the_text_keep_their_cells_whole():
    """Each Markdown table of the report is a table block of its own; its frame holds every cell in
    full (an escaped "|" inside a cell stays in that cell), and no text block keeps a table row."""
    from anchordiv.explorer.report import markdown_table_frame

    _, sections = read_report()
    tables = [block for section in sections for block in section.blocks if block.kind == "table"]
    assert len(tables) >= 7
    assert not any("|---" in block.text for section in sections for block in section.blocks if block.kind == "text")
    widest = max((markdown_table_frame(block.text) for block in tables), key=lambda frame: frame.shape[1])
    assert widest.shape == (11, 13) and widest.iloc[0, 1] == "0.004 [0.004, 0.004]"
    frame = markdown_table_frame("| a | b \\| c |\n|---|---|\n| 1 | x \\| y |")
    assert list(frame.columns) == ["a", "b \\| c"] and frame.values.tolist() == [["1", "x \\| y"]]


# The visible box of each table, figure and caption on the page: the element itself, or the box of
# its own that scrolls it sideways; none may reach past the right edge of the page's column.
PAST_THE_COLUMN_JS = """() => {
  const column = document.querySelector('[data-testid="stMainBlockContainer"]');
  const right = column.getBoundingClientRect().right - parseFloat(getComputedStyle(column).paddingRight);
  const past = [];
  for (const element of column.querySelectorAll(
      'table, [data-testid="stDataFrame"], [data-testid="stImage"] img, [data-testid="stImageCaption"]')) {
    if (element.getBoundingClientRect().width === 0) continue;  // in a hidden tab
    let box = element;
    while (box !== column && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    const visible = (box === column ? element : box).getBoundingClientRect();
    if (visible.right > right + 1) past.push(`${element.tagName} ${element.innerText.slice(0, 40)}: ${visible.right} > ${right}`);
  }
  return past;
}"""

# Starts watching the page's layout, as window.anchordivSettled: a promise that resolves once the
# layout has held still for 300 ms (its boxes read at each frame) with its images loaded, so that a
# table is measured after the grid that draws it has sized itself. Two pages settle at once.
START_SETTLING_JS = """() => { window.anchordivSettled = new Promise(resolve => {
  const boxes = () => JSON.stringify([...document.querySelectorAll('[data-testid="stMainBlockContainer"] *')]
    .map(element => { const box = element.getBoundingClientRect(); return [box.left, box.right, box.top, box.bottom]; }));
  let last = boxes(), since = performance.now();
  const check = now => {
    const current = boxes();
    if (current !== last || ![...document.images].every(image => image.complete)) { last = current; since = now; }
    if (now - since >= 300) resolve(true); else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}); }"""
SETTLED_JS = "() => window.anchordivSettled"

SHOWN_CAPTIONS_JS = """() => [...document.querySelectorAll('[data-testid="stImageCaption"]')]
  .filter(caption => caption.getBoundingClientRect().width > 0).map(caption => caption.innerText)"""


def open_tab(page, number: int) -> None:
    """Tab ``number`` of the report, with each of its expanders opened."""
    page.get_by_role("tab").nth(number).click()
    for summary in page.locator('[data-testid="stExpander"] summary').all():
        if summary.is_visible():
            summary.click()


@pytest.mark.slow
def test_the_report_page_fits_its_tables_and_shows_whole_captions_at_two_widths(app_url, browser, tmp_path):
    """In a real browser at 1500 and 1000 px (two pages, side by side): in every tab, each table,
    figure and caption stays inside the page's column (a wide table scrolls in its own box), and each
    figure's caption is its label in the report, whole."""
    from test_browser import new_page, page_report, wait_until_idle

    url, log_path = app_url
    _, sections = read_report()
    pages = {width: new_page(browser, width, 1200) for width in (1500, 1000)}
    for page in pages.values():
        page.goto(url.rstrip("/") + "/report", wait_until="commit")
    for page in pages.values():
        page.get_by_text("reproduction report").first.wait_for(timeout=120_000)
        wait_until_idle(page)
    for number, section in enumerate(sections):
        labels = [block.text for block in section.blocks if block.kind == "image"]
        for page in pages.values():
            open_tab(page, number)
        for page in pages.values():
            page.wait_for_function(f"() => ({SHOWN_CAPTIONS_JS})().length >= {len(labels)}", timeout=30_000)
            page.evaluate(START_SETTLING_JS)
        for width, page in pages.items():
            page.evaluate(SETTLED_JS)
            past = page.evaluate(PAST_THE_COLUMN_JS)
            assert not past, f"{width} px, {section.title}: {past}\n{page_report(page, log_path)}"
            captions = page.evaluate(SHOWN_CAPTIONS_JS)
            assert [caption.strip() for caption in captions] == labels, f"{width} px, {section.title}"
    for width, page in pages.items():
        page.screenshot(path=str(tmp_path / f"report-{width}.png"), full_page=True)
