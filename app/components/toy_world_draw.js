// The toy world's pictures (toy_world.js decides what they show): line charts, bars, the circle and
// the sphere, drawn in SVG or on a canvas from plain numbers. Every text is set with textContent.

const SVG = "http://www.w3.org/2000/svg";
export const SET_COLOURS = { A: "#1f77b4", B: "#d62728" };  // app/learn_gallery.py SET_COLOURS
const NEAR_COSINE = "#8c8c8c";
const NEAR_DIVERGENCE = "#2ca02c";
// A chart's plotting box in its 400 x 220 viewBox: room for the axes' numbers.
const BOX = { left: 44, right: 356, top: 12, bottom: 186 };

export function svgElement(tag, attributes = {}, text = null) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== null) element.textContent = text;
  return element;
}

function clear(element) {
  while (element.firstChild) element.removeChild(element.firstChild);
}

function extent(values) {
  let low = Infinity;
  let high = -Infinity;
  for (const value of values) {
    if (value < low) low = value;
    if (value > high) high = value;
  }
  if (!(high > low)) return [low - 0.5, high + 0.5];
  return [low, high];
}

function short(value) {
  if (Math.abs(value) < 1e-9) return "0";
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 1 ? value.toFixed(1) : value.toPrecision(2);
}

// A line chart in svg (viewBox 400 x 220) of series over xs: each { ys, colour, dash, right } (right:
// on the right axis, its own scale); marks: vertical lines { x, colour, dash, width }; xTicks.
export function lineChart(svg, { xs, series, xDomain, xTicks, xLabel, marks = [] }) {
  clear(svg);
  const [x0, x1] = xDomain ?? extent(xs);
  const px = (x) => BOX.left + ((x - x0) / (x1 - x0)) * (BOX.right - BOX.left);
  svg.append(svgElement("rect", { x: BOX.left, y: BOX.top, width: BOX.right - BOX.left, height: BOX.bottom - BOX.top,
                                  class: "atw-box" }));
  for (const mark of marks) {
    svg.append(svgElement("line", { x1: px(mark.x), x2: px(mark.x), y1: BOX.top, y2: BOX.bottom, stroke: mark.colour,
                                    "stroke-width": mark.width ?? 1, "stroke-dasharray": mark.dash ?? "none",
                                    opacity: mark.opacity ?? 0.6 }));
  }
  for (const tick of xTicks) {
    svg.append(svgElement("text", { x: px(tick), y: BOX.bottom + 14, class: "atw-tick", "text-anchor": "middle" },
                          short(tick)));
  }
  svg.append(svgElement("text", { x: (BOX.left + BOX.right) / 2, y: 216, class: "atw-axis", "text-anchor": "middle" },
                        xLabel));
  const sides = { left: [], right: [] };
  for (const line of series) sides[line.right ? "right" : "left"].push(...line.ys);
  const ranges = Object.fromEntries(Object.entries(sides).filter(([, ys]) => ys.length).map(([side, ys]) => [side, extent(ys)]));
  for (const [side, [y0, y1]] of Object.entries(ranges)) {
    const x = side === "left" ? BOX.left - 4 : BOX.right + 4;
    const anchor = side === "left" ? "end" : "start";
    svg.append(svgElement("text", { x, y: BOX.top + 8, class: "atw-tick", "text-anchor": anchor }, short(y1)));
    svg.append(svgElement("text", { x, y: BOX.bottom, class: "atw-tick", "text-anchor": anchor }, short(y0)));
  }
  for (const line of series) {
    const [y0, y1] = ranges[line.right ? "right" : "left"];
    const py = (y) => BOX.bottom - ((y - y0) / (y1 - y0)) * (BOX.bottom - BOX.top);
    const points = xs.map((x, i) => `${px(x).toFixed(2)},${py(line.ys[i]).toFixed(2)}`).join(" L");
    svg.append(svgElement("path", { d: `M${points}`, fill: "none", stroke: line.colour, "stroke-width": line.width ?? 1.6,
                                    "stroke-dasharray": line.dash ?? "none", class: line.className ?? "" }));
  }
}

// Bars of probabilities, one per anchor, coloured by set; labels when there is room for them.
export function barChart(svg, { values, sets, texts }) {
  clear(svg);
  const top = Math.max(...values, 1e-12);
  const width = (BOX.right - BOX.left + 36) / Math.max(values.length, 1);
  svg.append(svgElement("text", { x: BOX.left - 4, y: BOX.top + 8, class: "atw-tick", "text-anchor": "end" }, short(top)));
  svg.append(svgElement("text", { x: BOX.left - 4, y: BOX.bottom, class: "atw-tick", "text-anchor": "end" }, "0"));
  values.forEach((value, i) => {
    const height = (value / top) * (BOX.bottom - BOX.top);
    const x = BOX.left + i * width;
    const bar = svgElement("rect", { x: x + width * 0.1, y: BOX.bottom - height, width: width * 0.8, height,
                                     fill: SET_COLOURS[sets[i]] });
    bar.append(svgElement("title", {}, `${texts[i]}: p = ${value.toFixed(3)}`));
    svg.append(bar);
    if (values.length <= 16) {
      svg.append(svgElement("text", { x: x + width / 2, y: BOX.bottom + 14, class: "atw-tick", "text-anchor": "middle" },
                            texts[i].split(" ")[0]));
    }
  });
}

// The circle world in svg (viewBox -1.45 .. 1.45): the circle, the two neighbourhoods as rings just
// outside it (cosine at 1.1, divergence at 1.2), the anchors sized by tilted probability (each with
// data-set and data-index, for dragging) and the query's arrow and handle.
export function circleWorld(svg, { profile, near, anchors, query }) {
  clear(svg);
  svg.append(svgElement("circle", { cx: 0, cy: 0, r: 1, class: "atw-ring", "data-anchordiv-ring": "" }));
  for (const [flags, radius, colour] of [[near.near_by_cosine, 1.1, NEAR_COSINE], [near.near_by_divergence, 1.2, NEAR_DIVERGENCE]]) {
    let d = "";
    flags.forEach((on, i) => {
      if (!on) return;
      const a0 = ((profile.angle[i] - 0.5) * Math.PI) / 180;
      const a1 = ((profile.angle[i] + 0.5) * Math.PI) / 180;
      d += `M${(radius * Math.cos(a0)).toFixed(4)},${(-radius * Math.sin(a0)).toFixed(4)}`
        + `L${(radius * Math.cos(a1)).toFixed(4)},${(-radius * Math.sin(a1)).toFixed(4)}`;
    });
    svg.append(svgElement("path", { d, stroke: colour, "stroke-width": 0.05, fill: "none" }));
  }
  const [qx, qy] = query;
  svg.append(svgElement("line", { x1: 0, y1: 0, x2: qx, y2: -qy, class: "atw-query-arrow" }));
  for (const anchor of anchors) {
    const dot = svgElement("circle", { cx: anchor.u[0], cy: -anchor.u[1], r: 0.035 + 0.16 * Math.sqrt(anchor.probability),
                                       fill: SET_COLOURS[anchor.set], class: "atw-anchor", "data-set": anchor.setIndex,
                                       "data-index": anchor.index, "data-anchordiv-anchor": anchor.text });
    dot.append(svgElement("title", {}, `${anchor.text}: p = ${anchor.probability.toFixed(3)} (drag to move, click twice to remove)`));
    svg.append(dot);
  }
  const handle = svgElement("circle", { cx: qx, cy: -qy, r: 0.07, class: "atw-query", "data-anchordiv-query": "" });
  handle.append(svgElement("title", {}, "the query x: drag it round the circle"));
  svg.append(handle);
}

// Viridis, coarsely: t in [0, 1] -> an rgb string.
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
export function viridis(t) {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const k = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - k;
  const [r, g, b] = VIRIDIS[k].map((value, j) => Math.round(value + f * (VIRIDIS[k + 1][j] - value)));
  return `rgb(${r},${g},${b})`;
}

// A map of values over the sphere's grid (profile.columns azimuths x profile.rows elevations,
// azimuth fastest, elevation from -90 up) on canvas, with the anchors and the query marked.
export function sphereMap(canvas, profile, values, { anchors, query }) {
  const context = canvas.getContext("2d");
  const { columns, rows } = profile;
  const cell = { w: canvas.width / columns, h: canvas.height / rows };
  const [low, high] = extent(values);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < columns; c++) {
      context.fillStyle = viridis((values[r * columns + c] - low) / (high - low));
      context.fillRect(c * cell.w, canvas.height - (r + 1) * cell.h, cell.w + 0.5, cell.h + 0.5);
    }
  }
  const at = ([azimuth, elevation]) => [((azimuth + 180) / 360) * (canvas.width - cell.w) + cell.w / 2,
                                        canvas.height - (((elevation + 90) / 180) * (canvas.height - cell.h) + cell.h / 2)];
  for (const anchor of anchors) {
    const [x, y] = at(anchor.angles);
    context.beginPath();
    context.arc(x, y, 5, 0, 2 * Math.PI);
    context.fillStyle = SET_COLOURS[anchor.set];
    context.fill();
    context.strokeStyle = "white";
    context.stroke();
  }
  const [x, y] = at(query);
  context.strokeStyle = "white";
  context.lineWidth = 2;
  context.beginPath();
  context.moveTo(x - 6, y - 6); context.lineTo(x + 6, y + 6); context.moveTo(x + 6, y - 6); context.lineTo(x - 6, y + 6);
  context.stroke();
  context.lineWidth = 1;
}

// The sphere seen from outside, orthographically, turned by view ({ yaw, pitch } in degrees): the
// grid's directions (directions, one per profile row) as dots coloured by divergence (the divergence neighbourhood ringed in green),
// the anchors sized by tilted probability and the query; the far side faded.
export function sphereView(canvas, view, { profile, directions, nearDivergence, anchors, query }) {
  const context = canvas.getContext("2d");
  const radius = canvas.width * 0.42;
  const centre = canvas.width / 2;
  context.clearRect(0, 0, canvas.width, canvas.height);
  context.beginPath();
  context.arc(centre, centre, radius, 0, 2 * Math.PI);
  context.strokeStyle = "#bbb";
  context.stroke();
  const place = (u) => {
    const [x, y, depth] = project(view, u);
    return [centre + radius * x, centre - radius * y, depth];
  };
  const [low, high] = extent(profile.divergence);
  profile.divergence.forEach((value, i) => {
    const [x, y, depth] = place(directions[i]);
    if (depth < 0) return;
    context.fillStyle = nearDivergence[i] ? NEAR_DIVERGENCE : viridis((value - low) / (high - low));
    context.fillRect(x - 1.5, y - 1.5, 3, 3);
  });
  for (const anchor of anchors) {
    const [x, y, depth] = place(anchor.u);
    context.globalAlpha = depth < 0 ? 0.25 : 1;
    context.beginPath();
    context.arc(x, y, 4 + 14 * Math.sqrt(anchor.probability), 0, 2 * Math.PI);
    context.fillStyle = SET_COLOURS[anchor.set];
    context.fill();
  }
  const [x, y, depth] = place(query);
  context.globalAlpha = depth < 0 ? 0.35 : 1;
  context.beginPath();
  context.arc(x, y, 7, 0, 2 * Math.PI);
  context.fillStyle = "black";
  context.fill();
  context.globalAlpha = 1;
}

// Screen coordinates (x right, y up, in units of the sphere's radius) and depth (> 0: the near side)
// of direction u, the sphere turned by yaw about the vertical axis, then by pitch about the screen's x.
export function project({ yaw, pitch }, u) {
  const a = (yaw * Math.PI) / 180;
  const b = (pitch * Math.PI) / 180;
  const x = Math.cos(a) * u[0] - Math.sin(a) * u[1];
  const toward = Math.sin(a) * u[0] + Math.cos(a) * u[1];
  return [x, Math.cos(b) * u[2] - Math.sin(b) * toward, Math.sin(b) * u[2] + Math.cos(b) * toward];
}

// The direction drawn at screen coordinates (x, y) on the near side (project inverted), or null off the sphere.
export function unproject({ yaw, pitch }, x, y) {
  const rest = 1 - x * x - y * y;
  if (rest < 0) return null;
  const depth = Math.sqrt(rest);
  const a = (yaw * Math.PI) / 180;
  const b = (pitch * Math.PI) / 180;
  const z = Math.cos(b) * y + Math.sin(b) * depth;
  const toward = -Math.sin(b) * y + Math.cos(b) * depth;
  return [Math.cos(a) * x + Math.sin(a) * toward, -Math.sin(a) * x + Math.cos(a) * toward, z];
}
