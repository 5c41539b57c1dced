// What each notebook widget's adapter does first (anchordiv.widgets; p_player_widget.js,
// toy_world_widget.js): the component's shipped markup, the kernel's "_html" trait (the component's
// .html file as the explorer's page is given it, never a visitor's text: every text of a payload
// is set as text), becomes the widget's element's content, which p_player_widget.css's
// .adp-notebook themes with the notebook's own colours and font.
export function showMarkup(model, el) {
  const markup = document.createElement("template");
  markup.innerHTML = model.get("_html");
  el.replaceChildren(markup.content);
  el.classList.add("adp-notebook");
}
