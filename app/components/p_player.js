// The p player (app/p_player.py): plays a query's p path, its exact top-k at every slider position,
// computed once on the server, beside the baselines' grids, which p does not move. A move of p
// redraws the grid here, with no request to the server; on release (and on pause after Play) the
// new p is reported once, as the state value "p", and the server's one run updates the URL and the
// details. Each image carries a toggle that marks it "like the query" (for Find anchors' learned
// geometry); a click reports the query's marks at once, as the state value "marks". What the player
// receives and sends: docs/design.md §13, "The p player's protocol".
//
// This file draws; its rules (which p a drawing shows, Play's stops, when a release is reported)
// are in p_player_logic.js, and the page's history policy, which its Streamlit entry mounts, in
// page_history.js. Every text from the server is set with textContent (or as an attribute),
// never as markup. Two hosts draw the player through mountPlayer: Streamlit, through this module's
// default export, and a notebook, through p_player_widget.js (anchordiv.widgets). Each calls it
// again whenever the data changes; one Player per host element keeps the image elements across
// those calls.

import { formatP, isEndStop, nearestStep, playDirection, playStep, rankingAt, safeSource, sameOrder,
         PlayerMemory, ReleaseReport } from "./p_player_logic.js";
import { mountHistory } from "./page_history.js";

const PLAYERS = new WeakMap();  // host element -> its Player
// Each player's memory (PlayerMemory), by the payload's instance name: it outlives a host element,
// and no two players share one.
const MEMORIES = new Map();
// Play stops once per run of steps that show the same images (the data's "stops", as the sweep's
// GIF and strip do) and holds each long enough to read, the ends (p = 0, p = 1) twice as long.
const HOLD_MS = 1250;
const END_HOLD_MS = 2500;
// A change of ranking: tiles glide from where they are drawn to their new places, a tile that
// enters grows in from ENTER_OPACITY and one that leaves fades out where it stood, in this long.
const MOVE_MS = 250;
const ENTER_OPACITY = 0.5;

// Streamlit's entry: the page's history policy, then the player, each reply field a state value.
export default function ({ data, parentElement, setStateValue }) {
  mountHistory(window, data.companion_params);
  return mountPlayer(parentElement, data, {
    report: (reply) => { for (const [name, value] of Object.entries(reply)) setStateValue(name, value); },
  });
}

// Draws data (the payload) in element, which holds p_player.html's markup, for any host: the
// host's report(reply) is called with { p } on a release and { marks } on a toggle (the reply's
// fields, docs/design.md §13). Returns what unmounts the player.
export function mountPlayer(element, data, host) {
  if (!MEMORIES.has(data.instance)) MEMORIES.set(data.instance, new PlayerMemory());
  let player = PLAYERS.get(element);
  if (!player) {
    player = new Player(element, MEMORIES.get(data.instance));
    PLAYERS.set(element, player);
  }
  player.report = (p) => host.report({ p });
  player.reportMarks = (ids) => host.report({ marks: ids });
  player.show(data);
  return () => {
    player.pause(false);
    PLAYERS.delete(element);
  };
}

class Player {
  constructor(host, memory) {
    this.host = host;
    this.memory = memory;
    this.data = null;
    this.key = null;
    this.step = -1;
    this.tiles = [];
    this.playing = null;    // Play's timer for the next stop
    // Until the delay is over, the slider carries data-anchordiv-reporting: a page with one may
    // still ask the server for a run (the browser tests wait for it to go).
    this.releases = new ReleaseReport({
      memory,
      read: () => ({ p: this.data.p[this.step], pNow: this.data.p_now, playing: this.playing !== null }),
      report: (p) => this.report(p),
      settled: () => this.range.removeAttribute("data-anchordiv-reporting"),
    });
    this.drawn = null;      // the path's order the grid shows (indices into the tiles)
    this.dragging = false;  // a pointer holds the slider: the grid follows it with no glide
    this.baselineTiles = [];
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
    this.ranking = part("ranking");
    this.title = part("title");
    this.agreement = part("agreement");
    this.grid = part("grid");
    this.panels = part("panels");
    this.note = part("note");
    this.baselines = null;
    this.drawn = null;
    this.range.addEventListener("input", () => this.moveTo(Number(this.range.value), !this.dragging));
    this.range.addEventListener("change", () => {
      this.dragging = false;
      this.released();
    });
    this.range.addEventListener("pointerdown", () => {
      this.pause(false);
      this.dragging = true;
      window.addEventListener("pointerup", () => { this.dragging = false; }, { once: true });
    });
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
      this.releases.forget();  // a new path: the server's p is its p_now
      this.tiles = data.items.map((item) => this.makeTile(item));
      this.drawn = null;
    }
    this.like = new Set(data.marks.like.map(Number));
    this.markable = Boolean(data.marks.enabled);
    const baselines = JSON.stringify(data.baselines);
    if (baselines !== this.baselines) {
      this.baselines = baselines;
      this.drawBaselines(data.baselines);
    }
    this.step = -1;
    this.moveTo(nearestStep(data.p, target), false);
    this.drawMarks();
    // A release the server has not carried back is reported again by this host's Player, unless it
    // has reported it (another host's report may have been lost with its element).
    if (this.memory.released !== null) this.released();
    const active = document.activeElement;
    if (this.memory.keyboardRecent(performance.now()) && active !== this.range
        && (active === null || active === document.body)) {
      this.range.focus({ preventScroll: true });
    }
  }

  // Where a drawing of data puts p (PlayerMemory.target).
  target(data) {
    const previous = this.data === null ? null : { pNow: this.data.p_now, shown: this.data.p[this.step] };
    const { p, carried } = this.memory.target(data, previous);
    if (carried) this.releases.forget();  // the server has it: a later release of this p is news again
    return p;
  }

  // A tile: the image, its "like the query" toggle and its marks (✓obj, ✓sty) over it, and a
  // caption of two lines: rank and value (set per step), and the name as it fits one line (the
  // whole name in the tooltip and the image's alternative text).
  makeTile(item) {
    const tile = document.createElement("div");
    tile.className = "adp-tile";
    tile.setAttribute("role", "listitem");
    tile.setAttribute("data-anchordiv-id", String(Number(item.id)));
    tile.title = item.name;
    const image = document.createElement("img");
    image.className = "adp-img";
    image.alt = item.name;
    image.decoding = "async";
    image.src = safeSource(item.src);  // every image of the path is fetched now, once
    const caption = document.createElement("div");
    caption.className = "adp-caption";
    caption.setAttribute("data-anchordiv-caption", "");
    const head = document.createElement("div");
    head.className = "adp-caption-head";
    const line = document.createElement("div");
    line.className = "adp-caption-name";
    line.textContent = item.line;
    caption.append(head, line);
    const mark = document.createElement("button");
    mark.type = "button";
    mark.className = "adp-mark";
    mark.setAttribute("data-anchordiv-mark", String(Number(item.id)));
    mark.setAttribute("data-name", item.name);
    mark.addEventListener("click", () => this.toggleMark(Number(item.id)));
    tile.append(image, mark, caption);
    if (item.marks) {
      const marks = document.createElement("div");
      marks.className = "adp-marks";
      marks.textContent = item.marks;
      tile.append(marks);
    }
    return { element: tile, head, name: item.name, mark };
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
        tile.head.textContent = item.head;
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
    this.root.setAttribute("data-panels", String(baselines.length + 1));
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
    this.drawRanking(step);
    this.drawGrid(step, animate);
  }

  // Which of the path's runs of one set of images this step is in, and the p they span.
  drawRanking(step) {
    const ranking = rankingAt(this.data.p, this.data.runs, step);
    if (ranking === null) return;
    this.ranking.textContent = ranking.text;
    this.ranking.title = ranking.title;
  }

  // The captions follow every step; the tiles are laid out again only when the order changes,
  // and then (unless the slider is dragged or motion is reduced) glide there (see glide).
  drawGrid(step, animate) {
    const order = this.data.order[step];
    const shown = order.map((index, rank) => {
      const tile = this.tiles[index];
      tile.head.textContent = this.data.heads[step][rank];
      return tile.element;
    });
    if (sameOrder(this.drawn, order)) return;
    this.drawn = order.slice();
    const glide = animate && this.grid.isConnected && !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    const before = glide ? this.drawnPlaces() : null;
    this.settle();
    this.grid.replaceChildren(...shown);
    if (before) this.glide(shown, before);
  }

  // Where each tile of the grid is drawn now, a glide under way included: its centre relative to
  // the grid (a scroll between two changes moves nothing), its size and its opacity.
  drawnPlaces() {
    const origin = this.grid.getBoundingClientRect();
    const places = new Map();
    for (const element of this.grid.children) {
      if (element.classList.contains("adp-ghost")) continue;
      places.set(element, { ...centreOf(element, origin), width: element.offsetWidth, height: element.offsetHeight,
                            opacity: Number(getComputedStyle(element).opacity) });
    }
    return places;
  }

  // Ends every glide at once: the tiles stand at their places and the leaving ones are gone.
  settle() {
    for (const element of this.grid.children) {
      if (element.classList.contains("adp-ghost")) element.remove();
      else for (const animation of element.getAnimations()) animation.cancel();
    }
  }

  // Each tile that stays glides from where it was drawn to its new place, so the eye can follow
  // what moves, and never jumps back to start again; a tile that enters grows in at its place from
  // half opacity, so no place is ever empty; a tile that leaves fades out where it stood.
  glide(tiles, before) {
    const origin = this.grid.getBoundingClientRect();
    const timing = { duration: MOVE_MS, easing: "ease-in-out" };
    for (const element of tiles) {
      const old = before.get(element);
      if (!old) {
        element.animate([{ opacity: ENTER_OPACITY, transform: "scale(0.85)" }, { opacity: 1, transform: "none" }], timing);
        continue;
      }
      before.delete(element);
      const now = centreOf(element, origin);
      const dx = old.x - now.x;
      const dy = old.y - now.y;
      if (dx !== 0 || dy !== 0 || old.opacity < 1) {
        element.animate([{ transform: `translate(${dx}px, ${dy}px)`, opacity: old.opacity },
                         { transform: "none", opacity: 1 }], timing);
      }
    }
    for (const [element, old] of before) this.fadeOut(element, old);
  }

  // A copy of a leaving tile, inert and without the hooks of a shown one, fading where it stood.
  fadeOut(element, place) {
    const ghost = element.cloneNode(true);
    ghost.className = "adp-tile adp-ghost";
    ghost.removeAttribute("role");
    ghost.removeAttribute("data-anchordiv-id");
    ghost.setAttribute("aria-hidden", "true");
    ghost.inert = true;
    for (const part of ghost.querySelectorAll("[data-anchordiv-mark], [data-anchordiv-caption]")) {
      part.removeAttribute("data-anchordiv-mark");
      part.removeAttribute("data-anchordiv-caption");
    }
    ghost.style.left = `${place.x - place.width / 2}px`;
    ghost.style.top = `${place.y - place.height / 2}px`;
    this.grid.append(ghost);
    const fade = ghost.animate([{ opacity: place.opacity }, { opacity: 0, transform: "scale(0.85)" }],
                               { duration: MOVE_MS, easing: "ease-in", fill: "forwards" });
    fade.finished.then(() => ghost.remove(), () => ghost.remove());
  }

  onKey(event) {
    if (event.target === this.range) this.memory.keyPressed(performance.now());
    if (event.key === " " || event.code === "Space") {
      if (event.target === this.playButton) return;  // the button's own click plays or pauses
      event.preventDefault();
      this.toggle();
    } else if (event.target === this.range && this.playing !== null) {
      this.pause(false);  // a key on the slider takes p back from Play
    }
  }

  toggle() {
    if (this.playing !== null) this.pause(true);
    else this.play();
  }

  // From the stop after this step to p = 1 and back, each stop held (HOLD_MS) until Pause.
  play() {
    if (!this.data.enabled) return;
    const stops = this.data.stops;
    let direction = playDirection(stops, this.step);
    const advance = () => {
      const next = playStep(stops, this.data.runs, this.step, direction);
      direction = next.direction;
      this.moveTo(next.stop);
      this.playing = setTimeout(advance, isEndStop(stops, next.stop) ? END_HOLD_MS : HOLD_MS);
    };
    this.playButton.textContent = "Pause";
    this.playButton.setAttribute("aria-pressed", "true");
    advance();
  }

  pause(report) {
    if (this.playing === null) return;
    clearTimeout(this.playing);
    this.playing = null;
    this.playButton.textContent = "Play";
    this.playButton.setAttribute("aria-pressed", "false");
    if (report) this.released();
  }

  // A release of the p shown (ReleaseReport: one report per burst, if it is news).
  released() {
    this.range.setAttribute("data-anchordiv-reporting", "");
    this.releases.release(this.data.p[this.step]);
  }
}

// Where element is drawn (its transform included): its centre relative to the rectangle origin.
function centreOf(element, origin) {
  const rect = element.getBoundingClientRect();
  return { x: rect.left + rect.width / 2 - origin.left, y: rect.top + rect.height / 2 - origin.top };
}
