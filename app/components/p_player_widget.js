// The p player in a notebook (anchordiv.widgets.PPlayer, an anywidget): a thin host of
// p_player.js's mountPlayer, as p_player.js's default export is Streamlit's. The kernel's widget is
// the server of docs/design.md §13's protocol: its traits hold the payload ("_payload", built by
// anchordiv.explorer.p_player), the markup ("_html", p_player.html as shipped), the released p
// ("p", one of the payload's positions) and the marks ("marks", with "_marks_open": whether more
// may be marked). A release or a toggle sets its trait and saves it, and the kernel reads it through
// read_reply's checks; a change from Python (widget.p = 0.3) draws the player again with that p as
// the server's, as a run of the page does. The page's history policy (page_history.js) is not
// mounted: a notebook keeps no state in its address.

import { showMarkup } from "./notebook_markup.js";
import { mountPlayer } from "./p_player.js";

// What the player draws: the payload, with the kernel's p and marks as they are now.
function current(model) {
  const payload = model.get("_payload");
  return { ...payload, p_now: model.get("p"), marks: { like: model.get("marks"), enabled: model.get("_marks_open") } };
}

function render({ model, el }) {
  showMarkup(model, el);
  const host = {
    report(reply) {
      for (const [name, value] of Object.entries(reply)) model.set(name, value);
      model.save_changes();
    },
  };
  let unmount = mountPlayer(el, current(model), host);
  // mountPlayer on the same element draws the same Player again (its tiles kept), with the
  // kernel's p as the server's p_now. A change this view made itself is drawn again too, as
  // Streamlit's run after a release is: the player's p_now then carries the release back, so a
  // later p from Python, even the one it had before, is a change that moves the slider.
  const redraw = () => { unmount = mountPlayer(el, current(model), host); };
  const events = ["change:p", "change:marks", "change:_marks_open", "change:_payload"];
  for (const event of events) model.on(event, redraw);
  return () => {
    for (const event of events) model.off(event, redraw);
    unmount();
  };
}

export default { render };
