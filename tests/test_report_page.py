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
            if block.kind != "text":
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
