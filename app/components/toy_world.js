// The Learn page's toy world (app/toy_world.py), computed and drawn in the page: drag the query or
// an anchor round the circle (or over the sphere, and turn the sphere), click the circle to add an
// anchor, click one twice to remove it, move s, p and the arc's width, and every figure follows at
// the next frame with no request to the server. On release (the end of a drag, a slider let go or
// stepped by a key, an anchor added or removed) the world's state is reported once the burst is
// over (p_player_logic.js's ReleaseReport, as the p player reports), as the state value
// "released", and the server's one run keeps the page's settings (and its link) with it. A set the
// library cannot fit is refused in its words, and the world stays: its anchors and query drawn, so
// they can be moved, added or removed back. The numbers are anchordiv.lesson's (toy_world_math.js;
// tests/test_toy_world_math.py holds them to it). What the component receives and sends:
// docs/design.md, "The toy world's protocol". Two hosts mount it through mountToyWorld: Streamlit,
// through this module's default export, and a notebook, through toy_world_widget.js
// (anchordiv.widgets.ToyWorld).

import * as toy from "./toy_world_math.js";
import { barChart, circleWorld, lineChart, project, SET_COLOURS, sphereMap, sphereView, unproject } from "./toy_world_draw.js";
import { mountHistory } from "./page_history.js";
import { ReleaseReport } from "./p_player_logic.js";

const WORLDS = new WeakMap();  // host element -> its ToyWorld
// A press that moves less than this (CSS pixels) before it is let go is a click, not a drag.
const CLICK_PX = 4;
// Where a click on the circle picture adds an anchor: this close to the circle (in its radius).
const RING_REACH = 0.3;
const THETA_TICKS = [0, 90, 180, 270, 360];
// Two clicks on one anchor this close together remove it.
const DOUBLE_CLICK_MS = 500;
// The world's sliders: what each reads and moves of the state, and the world it belongs to (none: both).
const SLIDERS = {
  scale: { get: (state) => state.scale, set: (state, value) => { state.scale = value; }, text: (value) => value.toFixed(1) },
  p: { get: (state) => state.p, set: (state, value) => { state.p = value; }, text: (value) => value.toFixed(2) },
  width: { world: "circle", get: (state) => state.width, set: (state, value) => { state.width = value; },
           text: (value) => `${value}°` },
  theta: { world: "circle", get: (state) => state.query, set: (state, value) => { state.query = value; },
           text: (value) => `${value}°` },
  azimuth: { world: "sphere", get: (state) => state.query[0], set: (state, value) => { state.query = [value, state.query[1]]; },
             text: (value) => `${value}°` },
  elevation: { world: "sphere", get: (state) => state.query[1], set: (state, value) => { state.query = [state.query[0], value]; },
               text: (value) => `${value}°` },
};

// Streamlit's entry: the page's history policy (the p player mounts it on Explore; the Learn page
// has none), then the world, whose released state is the state value "released".
export default function ({ data, parentElement, setStateValue }) {
  mountHistory(window, data.companion_params);
  return mountToyWorld(parentElement, data, { report: (state) => setStateValue("released", state) });
}

// Draws data (the payload) in element, which holds toy_world.html's markup; host.report(state) is
// called with the world's state on each release. Returns what unmounts it.
export function mountToyWorld(element, data, host) {
  let world = WORLDS.get(element);
  if (!world) {
    world = new ToyWorld(element.querySelector("[data-anchordiv-toy-world]"));
    WORLDS.set(element, world);
  }
  world.report = host.report;
  world.show(data);
  return () => { world.stop(); WORLDS.delete(element); };
}

// Whole degrees, as the page's settings keep the query and as a dragged anchor lands.
function wholeDegrees(value) {
  return Math.round(value) + 0;
}

// theta in [0, 360) from an angle in degrees.
function circleAngle(value) {
  return ((wholeDegrees(value) % 360) + 360) % 360;
}

class ToyWorld {
  constructor(root) {
    this.root = root;
    this.find = (selector) => root.querySelector(selector);
    this.state = null;
    this.data = null;
    this.frame = null;
    this.press = null;     // the pointer press under way: { kind, set, index, x, y, moved }
    this.deferred = null;  // data that came during a press, shown once it ends
    this.addTo = 0;        // the set a click adds to
    this.fitted = { key: null, geometry: null, error: null };
    this.view = { yaw: -30, pitch: 20 };
    // A burst of releases (arrow keys held on a slider) is one report, once it is over, and only
    // if the state is news: not the one last reported, nor (before any) the server's.
    this.releases = new ReleaseReport({
      memory: {},
      read: () => ({ p: JSON.stringify(this.reported()), pNow: JSON.stringify(this.serverState()), playing: this.press !== null }),
      report: () => this.report(this.reported()),
      settled: () => this.root.removeAttribute("data-anchordiv-reporting"),
    });
    this.bindControls();
    this.bindCircle();
    this.bindSphere();
  }

  stop() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
  }

  // The payload's state becomes the world's, unless a press is under way (then once it ends).
  show(data) {
    if (this.press !== null) {
      this.deferred = data;
      return;
    }
    if (this.data !== null && JSON.stringify(this.serverState()) !== JSON.stringify(this.serverState(data))) {
      this.releases.forget();  // the server's state is new: any release is news again
    }
    this.data = data;
    this.state = { world: data.world, query: structuredClone(data.query), sets: structuredClone(data.sets),
                   scale: data.scale, p: data.p, width: data.width };
    this.root.dataset.world = data.world;
    for (const [name, slider] of Object.entries(SLIDERS)) {
      const bounds = data.controls[name];
      const input = this.find(`.atw-${name}`);
      Object.assign(input, { min: bounds.min, max: bounds.max, step: bounds.step });
      if (!slider.world || slider.world === data.world) input.value = String(slider.get(this.state));
    }
    this.find(".atw-hint").textContent = data.hint;
    this.draw();
  }

  // -- what the controls do ---------------------------------------------------------------------
  bindControls() {
    for (const [name, slider] of Object.entries(SLIDERS)) {
      const input = this.find(`.atw-${name}`);
      input.addEventListener("input", () => { slider.set(this.state, Number(input.value)); this.draw(); });
      input.addEventListener("change", () => { slider.set(this.state, Number(input.value)); this.draw(); this.release(); });
    }
    for (const button of this.root.querySelectorAll(".atw-add")) {
      button.addEventListener("click", () => {
        this.addTo = Number(button.dataset.set);
        for (const other of this.root.querySelectorAll(".atw-add")) {
          other.setAttribute("aria-pressed", String(other === button));
        }
      });
    }
  }

  // What a release reports of the world's state (docs/design.md, "The toy world's protocol").
  reported(state = this.state) {
    return { world: state.world, query: state.query, a: state.sets[0], b: state.sets[1], scale: state.scale, p: state.p,
             width: state.width };
  }

  // The state the server sent (data, or the data shown), as a release would report it.
  serverState(data = this.data) {
    return this.reported(data);
  }

  // Whether the query or an anchor is being dragged: a release due then waits for the drag's own.
  dragging() {
    return this.press !== null && this.press.moved && (this.press.kind === "query" || this.press.kind === "anchor");
  }

  // A release: reported once the burst it may be part of is over (ReleaseReport). Until then the
  // world carries data-anchordiv-reporting (the browser tests wait for it to go).
  release() {
    this.root.setAttribute("data-anchordiv-reporting", "");
    this.releases.release(JSON.stringify(this.reported()));
  }

  say(message) {
    this.find(".atw-message").textContent = message;
  }

  // A press on an element of a picture starts a drag or, let go where it began, a click.
  startPress(event, press) {
    event.preventDefault();
    event.currentTarget.setPointerCapture(event.pointerId);
    this.press = { ...press, x: event.clientX, y: event.clientY, moved: false };
  }

  movePress(event, moveTo) {
    if (this.press === null) return;
    if (Math.hypot(event.clientX - this.press.x, event.clientY - this.press.y) >= CLICK_PX) this.press.moved = true;
    if (this.press.moved) {
      moveTo(event);
      this.draw();
    }
  }

  // The press let go: a drag of the query or an anchor is released; a press that did not move is a
  // click (click(press)), and a second click on one anchor within DOUBLE_CLICK_MS removes it.
  endPress(click) {
    const press = this.press;
    this.press = null;
    if (press === null) return;
    if (press.moved && (press.kind === "query" || press.kind === "anchor")) this.release();
    else if (!press.moved && press.kind === "anchor") this.clickAnchor(press);
    else if (!press.moved) click(press);
    if (this.deferred !== null) {
      const data = this.deferred;
      this.deferred = null;
      this.show(data);
    }
  }

  // An anchor added to set k at direction angles (a theta, or [azimuth, elevation]), unless the set
  // is full or holds that direction already (the library's rules, in its words).
  addAnchor(k, angles) {
    const set = this.state.sets[k];
    const name = "AB"[k];
    if (set.length >= this.data.max_anchors) {
      this.say(`Set ${name} has ${set.length} anchors, the most the toy world takes: remove one first.`);
      return;
    }
    const u = toy.direction([angles].flat());
    if (set.some((other) => toy.sameDirection(toy.direction([other].flat()), u))) {
      this.say(`Set ${name} already has an anchor at ${toy.directionLabel(u)}.`);
      return;
    }
    set.push(angles);
    this.say("");
    this.draw();
    this.release();
  }

  // A dragged anchor follows the pointer, but never onto a direction another anchor of its set
  // holds (two anchors of one direction are a set the library refuses to read): there it waits.
  moveAnchor({ set, index }, angles) {
    const u = toy.direction([angles].flat());
    const taken = this.state.sets[set].some((other, k) => k !== index && toy.sameDirection(toy.direction([other].flat()), u));
    if (!taken) this.state.sets[set][index] = angles;
  }

  clickAnchor({ set, index }) {
    const now = performance.now();
    const last = this.lastClick;
    this.lastClick = { set, index, at: now };
    if (last && last.set === set && last.index === index && now - last.at <= DOUBLE_CLICK_MS) {
      this.lastClick = null;
      this.removeAnchor(set, index);
    }
  }

  removeAnchor(k, index) {
    if (k === 0 && this.state.sets[0].length === 1) {
      this.say("Set A needs at least one anchor: add another before removing this one.");
      return;
    }
    this.state.sets[k].splice(index, 1);
    this.say("");
    this.draw();
    this.release();
  }

  // -- the circle -------------------------------------------------------------------------------
  // The point of the circle picture under a pointer event, in the circle's coordinates (y up).
  circlePoint(event) {
    const svg = this.find(".atw-world");
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(svg.getScreenCTM().inverse());
    return [point.x, -point.y];
  }

  bindCircle() {
    const svg = this.find(".atw-world");
    svg.addEventListener("pointerdown", (event) => {
      const target = event.target;
      if (target.hasAttribute("data-anchordiv-query")) this.startPress(event, { kind: "query" });
      else if (target.hasAttribute("data-anchordiv-anchor")) {
        this.startPress(event, { kind: "anchor", set: Number(target.dataset.set), index: Number(target.dataset.index) });
      } else this.startPress(event, { kind: "background" });
    });
    svg.addEventListener("pointermove", (event) => this.movePress(event, () => {
      const [x, y] = this.circlePoint(event);
      const angle = circleAngle((Math.atan2(y, x) * 180) / Math.PI);
      if (this.press.kind === "query") this.state.query = angle;
      else if (this.press.kind === "anchor") this.moveAnchor(this.press, angle);
    }));
    svg.addEventListener("pointerup", (event) => this.endPress((press) => {
      const [x, y] = this.circlePoint(event);
      if (press.kind === "background" && Math.abs(Math.hypot(x, y) - 1) <= RING_REACH) {
        this.addAnchor(this.addTo, circleAngle((Math.atan2(y, x) * 180) / Math.PI));
      }
    }));
    svg.addEventListener("pointercancel", () => this.endPress(() => {}));
  }

  // -- the sphere -------------------------------------------------------------------------------
  // The screen point under a pointer event on the sphere's canvas, in units of its radius (y up).
  spherePoint(event) {
    const canvas = this.find(".atw-sphere");
    const box = canvas.getBoundingClientRect();
    const radius = box.width * 0.42;
    return [(event.clientX - box.left - box.width / 2) / radius, -(event.clientY - box.top - box.height / 2) / radius];
  }

  // Whole-degree [azimuth, elevation] of a unit vector, azimuth in [-180, 180].
  static sphereAngles(u) {
    return [wholeDegrees((Math.atan2(u[1], u[0]) * 180) / Math.PI),
            wholeDegrees((Math.asin(Math.max(-1, Math.min(1, u[2]))) * 180) / Math.PI)];
  }

  // The anchor (or the query) drawn nearest the screen point, on the near side, within 0.08 radii.
  sphereTarget([x, y]) {
    let best = null;
    let bestDistance = 0.08;
    const consider = (angles, press) => {
      const [px, py, depth] = project(this.view, toy.direction(angles));
      const distance = Math.hypot(px - x, py - y);
      if (depth >= 0 && distance < bestDistance) { best = press; bestDistance = distance; }
    };
    consider(this.state.query, { kind: "query" });
    this.state.sets.forEach((set, k) => set.forEach((angles, index) => consider(angles, { kind: "anchor", set: k, index })));
    return best;
  }

  bindSphere() {
    const canvas = this.find(".atw-sphere");
    canvas.addEventListener("pointerdown", (event) => {
      this.startPress(event, this.sphereTarget(this.spherePoint(event)) ?? { kind: "turn", view: { ...this.view } });
      this.press.point = this.spherePoint(event);
    });
    canvas.addEventListener("pointermove", (event) => this.movePress(event, () => {
      const point = this.spherePoint(event);
      if (this.press.kind === "turn") {
        this.view = { yaw: this.press.view.yaw + 90 * (point[0] - this.press.point[0]),
                      pitch: Math.max(-90, Math.min(90, this.press.view.pitch - 90 * (point[1] - this.press.point[1]))) };
        return;
      }
      const u = unproject(this.view, ...point);
      if (u === null) return;
      if (this.press.kind === "query") this.state.query = ToyWorld.sphereAngles(u);
      else this.moveAnchor(this.press, ToyWorld.sphereAngles(u));
    }));
    canvas.addEventListener("pointerup", (event) => this.endPress((press) => {
      const u = press.kind === "turn" ? unproject(this.view, ...this.spherePoint(event)) : null;
      if (u !== null) this.addAnchor(this.addTo, ToyWorld.sphereAngles(u));
    }));
    canvas.addEventListener("pointercancel", () => this.endPress(() => {}));
    for (const selector of [".atw-map-divergence", ".atw-map-cosine"]) this.bindMap(this.find(selector));
  }

  // On a map of the sphere, a press or a drag puts the query where the pointer is.
  bindMap(canvas) {
    const moveQuery = (event) => {
      const box = canvas.getBoundingClientRect();
      const x = Math.min(Math.max((event.clientX - box.left) / box.width, 0), 1);
      const y = Math.min(Math.max((event.clientY - box.top) / box.height, 0), 1);
      this.state.query = [wholeDegrees(-180 + 360 * x), wholeDegrees(90 - 180 * y)];
    };
    canvas.addEventListener("pointerdown", (event) => {
      this.startPress(event, { kind: "query" });
      this.press.moved = true;
      moveQuery(event);
      this.draw();
    });
    canvas.addEventListener("pointermove", (event) => this.movePress(event, moveQuery));
    canvas.addEventListener("pointerup", () => this.endPress(() => {}));
    canvas.addEventListener("pointercancel", () => this.endPress(() => {}));
  }

  // -- drawing ----------------------------------------------------------------------------------
  // Draws at the next frame, once however many changes come before it.
  draw() {
    if (this.frame === null) this.frame = requestAnimationFrame(() => { this.frame = null; this.render(); });
  }

  // The geometry of the sets, kind, scale and weighting (fitted again only when one of them
  // changed: p alone re-weighs it), with the server's k-means labels while the sets are the ones
  // the server fitted.
  geometry() {
    const { world, sets, scale } = this.state;
    const key = JSON.stringify([world, sets, scale, this.data.kind, this.data.weighting]);
    if (this.fitted.key !== key) {
      const same = JSON.stringify(sets) === JSON.stringify(this.data.sets);
      try {
        const geometry = toy.toyGeometry({ sets: sets.map((set) => set.map((angles) => toy.direction([angles].flat()))),
                                           kind: this.data.kind, scale, p: this.state.p, weighting: this.data.weighting,
                                           labels: same ? this.data.labels : null });
        this.fitted = { key, geometry, error: null };
      } catch (error) {
        this.fitted = { key, geometry: null, error: error.message };
      }
    }
    return this.fitted;
  }

  render() {
    const { geometry, error } = this.geometry();
    for (const [name, slider] of Object.entries(SLIDERS)) {
      if (slider.world && slider.world !== this.state.world) continue;
      const value = slider.get(this.state);
      this.find(`.atw-${name}-value`).textContent = slider.text(value);
      const input = this.find(`.atw-${name}`);
      if (Number(input.value) !== value) input.value = String(value);  // a drag moves the query's sliders too
    }
    if (geometry === null) {
      this.renderRefused(error);
      return;
    }
    this.root.removeAttribute("data-anchordiv-refused");
    if (this.find(".atw-message").textContent.startsWith("Cannot fit")) this.say("");
    const model = toy.modelAt(geometry, this.state.p);
    const query = toy.direction([this.state.query].flat());
    const tilt = toy.tilt(geometry, query, model);
    let position = 0;
    const anchors = geometry.anchors.flatMap((set, k) => set.map((u, index) => ({
      u, index, set: geometry.names[k], setIndex: k, angles: this.state.sets[k][index],
      text: tilt.texts[position], probability: tilt.probabilities[position++],
    })));
    if (this.state.world === "circle") this.renderCircle(geometry, model, query, anchors);
    else this.renderSphere(geometry, model, query, anchors);
    barChart(this.find(".atw-tilt"), { values: tilt.probabilities, sets: tilt.sets, texts: tilt.texts });
    this.renderShare(geometry, query);
    const notes = this.find(".atw-notes");
    notes.replaceChildren(...geometry.notes.map((note) => Object.assign(document.createElement("li"), { textContent: note })));
    if (!tilt.exact) {
      notes.append(Object.assign(document.createElement("li"), {
        textContent: "This model is not a list of anchors (it is smooth), so the bars show the softmax tilt over the "
                     + "anchors as a readable stand-in; the curves are the model's own." }));
    }
  }

  // The library refuses the sets (error, in its words): the world keeps its anchors and query, drawn
  // unsized, so they can still be dragged, added or removed; the figures that need a model are empty.
  renderRefused(error) {
    this.root.setAttribute("data-anchordiv-refused", "");
    this.say(`Cannot fit the toy model: ${error}`);
    const anchors = this.state.sets.flatMap((set, k) => set.map((angles, index) => {
      const u = toy.direction([angles].flat());
      return { u, index, angles, set: "AB"[k], setIndex: k, probability: 0,
               text: `${"AB"[k]}${index + 1} ${toy.directionLabel(u)}` };
    }));
    const query = toy.direction([this.state.query].flat());
    if (this.state.world === "circle") {
      this.find(".atw-world-title").textContent = `The world: the query at ${toy.degreesText(this.state.query)}; `
        + "no model, so no tilt and no neighbourhoods";
      circleWorld(this.find(".atw-world"), { profile: { angle: [] }, near: { near_by_cosine: [], near_by_divergence: [] },
                                             anchors, query });
    } else {
      this.find(".atw-world-title").textContent = "The sphere (drag it to turn it): no model, so no divergence";
      sphereView(this.find(".atw-sphere"), this.view, { profile: { divergence: [] }, directions: [], nearDivergence: [],
                                                         anchors, query });
    }
    for (const name of ["kappa", "divergence", "tilt", "share"]) this.find(`.atw-${name}`).replaceChildren();
    for (const name of ["divergence", "cosine"]) {
      const canvas = this.find(`.atw-map-${name}`);
      canvas.getContext("2d").clearRect(0, 0, canvas.width, canvas.height);
    }
    this.find(".atw-share-note").textContent = "";
    this.find(".atw-notes").replaceChildren();
  }

  renderCircle(geometry, model, query, anchors) {
    const profile = toy.circleProfile(model, geometry.scale, this.state.query);
    const near = toy.equalSizeNeighbourhoods(profile, this.state.width);
    this.find(".atw-world-title").textContent = `The world: anchors sized by tilted probability; the query at `
      + `${toy.degreesText(this.state.query)}; grey: its ${near.count} nearest directions by cosine, green: by divergence`;
    circleWorld(this.find(".atw-world"), { profile, near, anchors, query });
    const marks = [...anchors.map((anchor) => ({ x: circleAngle(anchor.angles), colour: SET_COLOURS[anchor.set] })),
                   { x: this.state.query, colour: "black", dash: "3 3", opacity: 1 }];
    lineChart(this.find(".atw-kappa"), { xs: profile.angle, xDomain: [0, 360], xTicks: THETA_TICKS, marks,
                                         xLabel: "direction θ (degrees)",
                                         series: [{ ys: profile.kappa, colour: "#636efa" }] });
    lineChart(this.find(".atw-divergence"), {
      xs: profile.angle, xDomain: [0, 360], xTicks: THETA_TICKS, marks, xLabel: "direction θ (degrees)",
      series: [{ ys: profile.divergence, colour: "#2ca02c" },
               { ys: profile.cosine_distance, colour: "#8c8c8c", dash: "5 4", right: true }] });
  }

  renderSphere(geometry, model, query, anchors) {
    const [azimuth, elevation] = this.state.query;
    const profile = toy.sphereProfile(model, geometry.scale, azimuth, elevation);
    if (!this.grid || this.grid.length !== profile.azimuth.length) {
      this.grid = profile.azimuth.map((a, i) => toy.sphereDirection(a, profile.elevation[i]));
    }
    const width = 40;  // the neighbourhood on the sphere: as many grid points as a cap of this width holds
    const near = toy.equalSizeNeighbourhoods(profile, width);
    this.find(".atw-world-title").textContent = `The sphere (drag it to turn it): the query at `
      + `(${toy.degreesText(azimuth)}, ${toy.degreesText(elevation)}); green: its ${near.count} nearest grid `
      + `directions by divergence (as many as a ${width}° cap holds)`;
    sphereView(this.find(".atw-sphere"), this.view, { profile, directions: this.grid, nearDivergence: near.near_by_divergence,
                                                       anchors, query });
    const marks = { anchors, query: this.state.query };
    sphereMap(this.find(".atw-map-divergence"), profile, profile.divergence, marks);
    sphereMap(this.find(".atw-map-cosine"), profile, profile.cosine_distance, marks);
  }

  renderShare(geometry, query) {
    const svg = this.find(".atw-share");
    const note = this.find(".atw-share-note");
    if (!geometry.isMixture) {
      svg.replaceChildren();
      note.textContent = "Set B is empty, so set A's model is the whole model and p changes nothing. Add anchors to B.";
      return;
    }
    const ps = toy.linspace01(21);
    const shareA = toy.responsibilityCurve(geometry, query, ps);
    lineChart(svg, { xs: ps, xDomain: [0, 1], xTicks: [0, 0.25, 0.5, 0.75, 1], xLabel: "p",
                     marks: [{ x: this.state.p, colour: "black", dash: "3 3", opacity: 1 }],
                     series: [{ ys: shareA, colour: SET_COLOURS.A }, { ys: shareA.map((r) => 1 - r), colour: SET_COLOURS.B }] });
    const even = toy.evenShareP(geometry, query);
    note.textContent = `Under ${this.data.weighting} weights at s = ${this.state.scale.toFixed(1)}, A takes half of `
      + `this query's tilt at p = ${even.toFixed(2)}.`;
  }
}
