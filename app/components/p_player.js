// The p player (app/p_player.py): plays a query's p path, its exact top-k at every slider position,
// computed once on the server (anchordiv.explorer.p_player.player_data), beside the baselines'
// grids, which p does not move. A move of p redraws the
// grid here, with no request to the server; on release (and on pause after Play) the new p is
// reported once, as the state value "p", and the server's one run updates the URL and the details.
//
// Each image carries a toggle that marks it "like the query" (for Find anchors' learned geometry);
// a click reports the query's marks at once, as the state value "marks" (a list of gallery ids).
//
// Every text from the server is set with textContent (or as an attribute), never as markup.
// Streamlit calls this function again whenever the data changes; one Player per host element
// keeps the visitor's p and the image elements across those calls.

const PLAYERS = new WeakMap();
// The p the visitor last released, until a drawing from the server carries it back (its p_now),
// and when the slider last had the keyboard. Kept outside the players: a busy server can
// redraw the player with the p it had before the release (a run under way when the keys were
// pressed, on the same path or a new query's), even on a new host element, and the visitor's p
// must win over that p, and be reported again by a new player (the old one's report may be lost).
const RELEASED = { p: null };
const KEYBOARD = { at: -Infinity };
const KEYBOARD_MS = 3000;      // a redraw this soon after a key on the slider gives the keyboard back
const REPORT_DELAY_MS = 300;   // quick key presses in a row are one release: one run, not one per step
const SWEEP_SECONDS = 2.5;     // Play: from p = 0 to p = 1 (or back) in this long
const MOVE_MS = 160;           // how long a tile takes to glide to its new rank

export default function ({ data, parentElement, setStateValue }) {
  keepOneEntryPerControl();
  let player = PLAYERS.get(parentElement);
  if (!player) {
    player = new Player(parentElement);
    PLAYERS.set(parentElement, player);
  }
  player.report = (p) => setStateValue("p", p);
  player.reportMarks = (ids) => setStateValue("marks", ids);
  player.show(data);
  return () => {
    player.pause(false);
    PLAYERS.delete(parentElement);
  };
}

const formatP = (p) => p.toFixed(2);

// Streamlit pushes a browser history entry whenever a run changes the page's query string, so each
// release of p (each move of any one control) was one more step for Back. Installed once for the
// page: a change of the same one parameter as the last entry's, or of none, replaces that entry; a
// change of anything else (another control, another page: a new view) pushes one.
function keepOneEntryPerControl() {
  if (window.anchordivHistory) return;
  const push = history.pushState.bind(history);
  let last = null;  // the one parameter the current entry changed
  window.anchordivHistory = (state, unused, url) => {
    const changed = changedParameters(location.href, url);
    if (changed.length === 0 || (changed.length === 1 && changed[0] === last)) {
      history.replaceState(state, unused, url);
      return;
    }
    last = changed.length === 1 ? changed[0] : null;
    push(state, unused, url);
  };
  history.pushState = window.anchordivHistory;
}

// The query-string parameters whose values differ between two addresses; "gallery" only when it
// was there before: the app adds it beside a view's first parameter, to name the gallery it means.
function changedParameters(from, to) {
  const before = new URL(from);
  const after = new URL(to ?? from, from);
  if (before.pathname !== after.pathname) return ["(page)", "(path)"];
  const names = new Set([...before.searchParams.keys(), ...after.searchParams.keys()]);
  if (!before.searchParams.has("gallery")) names.delete("gallery");
  return [...names].filter((name) => before.searchParams.getAll(name).join("\n") !== after.searchParams.getAll(name).join("\n"));
}

// Only the server's own addresses (no scheme: a path such as /media/...) or inline PNG data.
const safeSource = (src) =>
  typeof src === "string" && (/^data:image\/png;base64,/.test(src) || !/^[a-z][a-z0-9+.-]*:/i.test(src)) ? src : "";

class Player {
  constructor(host) {
    this.host = host;
    this.data = null;
    this.key = null;
    this.step = -1;
    this.tiles = [];
    this.frame = null;
    this.timer = null;
    this.reported = null;
    this.places = null;     // each shown tile's place in the grid, as last painted
    this.baselineTiles = [];
    this.placing = null;    // the frame that will read the places
    this.like = new Set();  // the gallery ids marked like the query
    this.bind();
  }

  bind() {
    const root = this.host.querySelector("[data-anchordiv-player]");
    const part = (name) => root.querySelector(`.adp-${name}`);
    this.root = root;
    this.label = part("label");
    this.playButton = part("play");
    this.range = part("range");
    this.value = part("value");
    this.title = part("title");
    this.agreement = part("agreement");
    this.grid = part("grid");
    this.panels = part("panels");
    this.note = part("note");
    this.baselines = null;
    this.range.addEventListener("input", () => this.moveTo(Number(this.range.value)));
    this.range.addEventListener("change", () => this.released());
    this.range.addEventListener("pointerdown", () => this.pause(false));
    this.playButton.addEventListener("click", () => this.toggle());
    root.addEventListener("keydown", (event) => this.onKey(event));
  }

  show(data) {
    if (!this.root.isConnected) this.bind();
    const target = this.target(data);
    this.data = data;
    this.label.textContent = data.label;
    this.label.title = data.help;
    this.range.setAttribute("aria-label", data.label);
    this.range.max = String(data.p.length - 1);
    this.range.disabled = this.playButton.disabled = !data.enabled;
    if (data.key !== this.key) {
      this.pause(false);
      this.key = data.key;
      this.reported = null;  // a new path: the server's p is its p_now
      this.tiles = data.items.map((item) => this.makeTile(item));
    }
    const marks = data.marks || { like: [], enabled: false };
    this.like = new Set(marks.like.map(Number));
    this.markable = Boolean(marks.enabled);
    const baselines = JSON.stringify(data.baselines);
    if (baselines !== this.baselines) {
      this.baselines = baselines;
      this.drawBaselines(data.baselines);
    }
    this.step = -1;
    this.moveTo(nearestStep(data.p, target), false);
    this.drawMarks();
    if (RELEASED.p !== null) this.released();  // reported unless this player has reported it
    const active = document.activeElement;
    if (performance.now() - KEYBOARD.at < KEYBOARD_MS && active !== this.range
        && (active === null || active === document.body)) {
      this.range.focus({ preventScroll: true });
    }
  }

  // Where a drawing of data puts p: the visitor's release while the server has not carried it
  // back; else the server's p on a first drawing (a link, a reload, a return to the page) or when
  // the server's p changed (Back); else the p shown, which the visitor may be moving (Play, a drag).
  target(data) {
    if (RELEASED.p !== null && nearestStep(data.p, RELEASED.p) === nearestStep(data.p, data.p_now)) {
      RELEASED.p = this.reported = null;  // the server has it: a later release of this p is news again
    }
    if (RELEASED.p !== null) return RELEASED.p;
    if (this.data === null || data.p_now !== this.data.p_now) return data.p_now;
    return this.data.p[this.step];
  }

  makeTile(item) {
    const tile = document.createElement("div");
    tile.className = "adp-tile";
    tile.setAttribute("role", "listitem");
    tile.setAttribute("data-anchordiv-id", String(Number(item.id)));
    const image = document.createElement("img");
    image.className = "adp-img";
    image.alt = item.name;
    image.decoding = "async";
    image.src = safeSource(item.src);  // every image of the path is fetched now, once
    const caption = document.createElement("div");
    caption.className = "adp-caption";
    caption.setAttribute("data-anchordiv-caption", "");
    const mark = document.createElement("button");
    mark.type = "button";
    mark.className = "adp-mark";
    mark.setAttribute("data-anchordiv-mark", String(Number(item.id)));
    mark.setAttribute("data-name", item.name);
    mark.addEventListener("click", () => this.toggleMark(Number(item.id)));
    tile.append(image, mark, caption);
    return { element: tile, caption, name: item.name, mark };
  }

  // The baselines' grids (cosine, ITI): p does not move them, so they are drawn once per query.
  drawBaselines(baselines) {
    for (const element of this.panels.querySelectorAll('[data-panel]:not([data-panel="0"])')) element.remove();
    this.baselineTiles = [];
    baselines.forEach((baseline, index) => {
      const panel = String(index + 1);
      const title = document.createElement("div");
      title.className = "adp-title";
      title.textContent = baseline.title;
      const agreement = document.createElement("div");
      agreement.className = "adp-agreement";
      agreement.textContent = baseline.agreement;
      const grid = document.createElement("div");
      grid.className = "adp-grid";
      grid.setAttribute("role", "list");
      grid.setAttribute("data-anchordiv-grid", baseline.title);
      const tiles = baseline.tiles.map((item) => {
        const tile = this.makeTile(item);
        tile.caption.textContent = item.caption;
        return tile;
      });
      this.baselineTiles.push(...tiles);
      grid.append(...tiles.map((tile) => tile.element));
      for (const element of [title, agreement, grid]) {
        element.setAttribute("data-panel", panel);
        this.panels.append(element);
      }
    });
    this.root.style.setProperty("--adp-panels", String(baselines.length + 1));
  }

  toggleMark(id) {
    if (this.like.has(id)) this.like.delete(id);
    else if (this.markable) this.like.add(id);
    else return;
    this.drawMarks();
    this.reportMarks([...this.like]);
  }

  // Every toggle shows whether its image is marked (an image may be in several grids), including
  // the player's tiles not shown at this step. Drawn when the marks or the tiles change, never per
  // step of p.
  drawMarks() {
    for (const { mark: button } of [...this.tiles, ...this.baselineTiles]) {
      const on = this.like.has(Number(button.getAttribute("data-anchordiv-mark")));
      const name = button.getAttribute("data-name");
      button.textContent = on ? "✓" : "+";
      button.setAttribute("aria-pressed", String(on));
      button.setAttribute("aria-label", `${on ? "Unmark" : "Mark"} ${name} as like the query`);
      button.title = on ? "Marked like the query: click to unmark"
        : this.markable ? "Mark as like the query (Find anchors learns a geometry from your marks)"
        : "No more marks for this query (Find anchors says why)";
      button.disabled = !on && !this.markable;
    }
  }

  moveTo(step, animate = true) {
    const data = this.data;
    step = Math.max(0, Math.min(data.p.length - 1, step));
    if (step === this.step) return;
    this.step = step;
    const p = formatP(data.p[step]);
    this.range.value = String(step);
    this.range.setAttribute("aria-valuetext", `p = ${p}`);
    this.value.textContent = p;
    this.title.textContent = data.title.split("{p}").join(p);
    this.agreement.textContent = data.agreement[step];
    this.note.textContent = data.notes.length ? data.notes[data.note[step]] : "";
    this.drawGrid(step, animate);
  }

  drawGrid(step, animate) {
    const shown = this.data.order[step].map((index, rank) => {
      const tile = this.tiles[index];
      tile.caption.textContent = `${this.data.heads[step][rank]}\n${tile.name}`;
      return tile.element;
    });
    const glide = animate && !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    const before = glide ? this.places : null;
    this.grid.replaceChildren(...shown);
    // Where the tiles now stand is read in the next frame, when the browser lays the page out to
    // paint it anyway: reading it here would lay the whole page out twice in every step.
    cancelAnimationFrame(this.placing);
    this.placing = requestAnimationFrame(() => {
      this.places = this.placesOf(shown);
      if (before) this.glide(shown, before, this.places);
    });
  }

  // Each tile's place in its grid (relative to the grid, so a scroll between two steps moves nothing).
  placesOf(tiles) {
    const origin = this.grid.getBoundingClientRect();
    return new Map(tiles.map((tile) => {
      const rect = tile.getBoundingClientRect();
      return [tile, { left: rect.left - origin.left, top: rect.top - origin.top }];
    }));
  }

  // Each tile that stays in the grid glides from its old place to its new one, so the eye can
  // follow what moves; a tile that enters fades in.
  glide(tiles, before, after) {
    for (const element of tiles) {
      const old = before.get(element);
      const now = after.get(element);
      if (!old) {
        element.animate([{ opacity: 0 }, { opacity: 1 }], { duration: MOVE_MS });
      } else if (old.left !== now.left || old.top !== now.top) {
        element.animate([{ transform: `translate(${old.left - now.left}px, ${old.top - now.top}px)` },
                         { transform: "none" }], { duration: MOVE_MS, easing: "ease-out" });
      }
    }
  }

  onKey(event) {
    if (event.target === this.range) KEYBOARD.at = performance.now();
    if (event.key === " " || event.code === "Space") {
      if (event.target === this.playButton) return;  // the button's own click plays or pauses
      event.preventDefault();
      this.toggle();
    } else if (event.target === this.range && this.frame !== null) {
      this.pause(false);  // a key on the slider takes p back from Play
    }
  }

  toggle() {
    if (this.frame !== null) this.pause(true);
    else this.play();
  }

  play() {
    if (!this.data.enabled) return;
    const last = this.data.p.length - 1;
    let position = this.step >= last ? last : this.step;
    let direction = this.step >= last ? -1 : 1;
    let previous = null;
    const advance = (now) => {
      if (previous !== null) position += (direction * (now - previous) * last) / (1000 * SWEEP_SECONDS);
      previous = now;
      if (position >= last) [position, direction] = [2 * last - position, -1];
      if (position <= 0) [position, direction] = [-position, 1];
      this.moveTo(Math.round(position));
      this.frame = requestAnimationFrame(advance);
    };
    this.frame = requestAnimationFrame(advance);
    this.playButton.textContent = "Pause";
    this.playButton.setAttribute("aria-pressed", "true");
  }

  pause(report) {
    if (this.frame === null) return;
    cancelAnimationFrame(this.frame);
    this.frame = null;
    this.playButton.textContent = "Play";
    this.playButton.setAttribute("aria-pressed", "false");
    if (report) this.released();
  }

  // Until the delay is over, the slider carries data-anchordiv-reporting: a page with one may still
  // ask the server for a run (the browser tests wait for it to go).
  released() {
    RELEASED.p = this.data.p[this.step];
    clearTimeout(this.timer);
    this.range.setAttribute("data-anchordiv-reporting", "");
    this.timer = setTimeout(() => {
      this.range.removeAttribute("data-anchordiv-reporting");
      const p = this.data.p[this.step];
      if (this.frame !== null || p === (this.reported ?? this.data.p_now)) return;
      this.reported = p;
      this.report(p);
    }, REPORT_DELAY_MS);
  }
}

function nearestStep(positions, p) {
  let best = 0;
  for (let i = 1; i < positions.length; i += 1) {
    if (Math.abs(positions[i] - p) < Math.abs(positions[best] - p)) best = i;
  }
  return best;
}
