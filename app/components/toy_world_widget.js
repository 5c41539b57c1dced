// The toy world in a notebook (anchordiv.widgets.ToyWorld, an anywidget): a thin host of
// toy_world.js's mountToyWorld, as toy_world.js's default export is Streamlit's. The kernel's
// widget is the server of docs/design.md's toy world protocol: its traits hold the markup ("_html",
// toy_world.html as shipped), the payload ("_payload", built by anchordiv.explorer.toy_world from
// the traits below) and the world's state, each read by the protocol's reader: the query ("query",
// an angle or [azimuth, elevation]), the sets ("a", "b"), "scale", "p" and "width". A release sets
// those traits and saves them once (a burst of keys is one release, as on the page); the kernel
// reads them and builds the payload again, whose change draws the world again, as a run of the
// page does. A change from Python (widget.p = 0.3) does the same.

import { showMarkup } from "./notebook_markup.js";
import { mountToyWorld } from "./toy_world.js";

// The release's fields the kernel keeps as traits (its world is the widget's own).
const STATE = ["query", "a", "b", "scale", "p", "width"];

function render({ model, el }) {
  showMarkup(model, el);
  const host = {
    report(state) {
      for (const name of STATE) model.set(name, state[name]);
      model.save_changes();
    },
  };
  let unmount = mountToyWorld(el, model.get("_payload"), host);
  const redraw = () => { unmount = mountToyWorld(el, model.get("_payload"), host); };
  model.on("change:_payload", redraw);
  return () => {
    model.off("change:_payload", redraw);
    unmount();
  };
}

export default { render };
