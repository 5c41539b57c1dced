"""Report: the shipped reproduction report (its figures and tables), so a demo goes from "this is the
method" to "this is the evidence" without leaving the app."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from anchordiv.app.errors import attempt
from anchordiv.app.url_state import follow_page_link, link_notes
from anchordiv.explorer.report import markdown_table_frame, read_report, report_figure, report_table


@st.cache_data(show_spinner=False)
def report():
    return read_report()


@st.cache_data(show_spinner=False)
def data_table(path) -> pd.DataFrame:
    return report_table(path)


@st.cache_data(show_spinner=False, max_entries=32)
def figure(path):
    return report_figure(path)


def at_a_glance(sections) -> None:
    """Each experiment's outcome (holds, partly holds, does not hold) first, one row each; the
    figures behind it are in its tab."""
    rows = [(section.short_title, section.outcome) for section in sections if section.outcome]
    if rows:
        st.subheader("At a glance")
        st.table(pd.DataFrame(rows, columns=["experiment", "on the built-in world"]), hide_index=True)
        st.caption("Each tab below holds the experiment's verdict in full, its figure, its table and its data.")


def main() -> None:
    # The report has no settings: its link is read as every page's is, and all it holds is named.
    follow_page_link()
    link_notes()
    title, sections = attempt(report, "Cannot show the reproduction report", stop=True)
    st.title(title)
    st.caption("Written by `python -m anchordiv reproduce --out docs/reproduction/builtin-world` on the built-in "
               "world and model; every figure below is read from that folder.")
    at_a_glance(sections)
    for tab, section in zip(st.tabs([section.short_title for section in sections]), sections):
        with tab:
            if section.short_title != section.title:
                st.subheader(section.title)
            for index, block in enumerate(section.blocks):
                if block.kind == "text":
                    st.markdown(block.text)
                elif block.kind == "table":
                    # st.table keeps the cells' Markdown (bold marks) and scrolls sideways in its own
                    # box when the columns are wider than the page, where st.markdown ran past it.
                    st.table(markdown_table_frame(block.text), hide_index=True, width="stretch")
                elif block.kind == "image":
                    image = attempt(lambda: figure(block.path), "Cannot show this figure")
                    if image is not None:
                        st.image(image, caption=block.text)
                else:
                    with st.expander(f"Data: {block.text}"):
                        table = attempt(lambda: data_table(block.path), "Cannot read this table")
                        if table is None:
                            continue
                        st.dataframe(table, hide_index=True, width="stretch")
                        st.download_button(f"Download {block.text}", table.to_csv(index=False).encode(),
                                           block.path.name, "text/csv", key=f"report_{section.title}_{index}")


main()
