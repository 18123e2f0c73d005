// The picture box of teachgrad's widgets and exported pages: zoom, pan, fold, follow.
//
// graphBox(el, send) turns the element `el` into a box that shows one Graphviz drawing
// at a time (box.show(html)):
//   1. the drawing fits the box's width; the + / - / fit buttons, Ctrl+wheel (or a
//      pinch) zoom it, and dragging moves it. Panzoom, vendored beside this file, does
//      the transforms; the Python side (viz/_box.py) puts it in front of this code;
//   2. after each new drawing (a step of backward), the node that runs now (class
//      `current`) is moved into view when it is outside the box, so zooming in on a big
//      graph never loses it;
//   3. a click on a module frame asks Python to fold it into one box, a click on a
//      folded box to open it again: send({fold: [ident]}) or send({open: [idents]}).
//      Without `send` (an exported page has no Python to redraw) nothing is clickable.
//
// render() is anywidget's entry point (viz/_box.py exports it): the widget's `value` is
// the HTML. This file is a plain script, so an exported page can include it as it is.

const FOLLOW_MARGIN = 24; // px kept between the running node and the box's edge

function graphBox(el, send) {
  el.classList.add("tg-box");
  if (send) el.classList.add("tg-foldable");
  const bar = document.createElement("div");
  bar.className = "tg-box-bar";
  const view = document.createElement("div");
  view.className = "tg-box-view";
  const stage = document.createElement("div");
  stage.className = "tg-box-stage";
  view.appendChild(stage);
  el.replaceChildren(bar, view);

  // 1. zoom and pan: the stage moves inside the view; scale 1 is "fits the width".
  // Panzoom wants its element in the page, and a widget is drawn before it is put there.
  let pz = null;
  function zoomer() {
    if (pz === null && stage.isConnected) {
      pz = Panzoom(stage, { origin: "0 0", minScale: 0.2, maxScale: 10, step: 0.3, canvas: true });
    }
    return pz;
  }
  const button = (label, title, action) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = title;
    b.className = "tg-box-button";
    b.addEventListener("click", action);
    bar.appendChild(b);
  };
  button("+", "zoom in (or Ctrl + wheel)", () => zoomer()?.zoomIn());
  button("\u2212", "zoom out (or Ctrl + wheel)", () => zoomer()?.zoomOut());
  button("fit", "fit the width again", () => zoomer()?.reset());
  const hint = document.createElement("span");
  hint.className = "tg-box-hint";
  hint.textContent = send ? "drag to move \u00b7 click a frame to fold it" : "drag to move";
  bar.appendChild(hint);
  view.addEventListener("wheel", (event) => {
    // a plain wheel scrolls the notebook; with Ctrl (or a trackpad pinch) it zooms
    if ((event.ctrlKey || event.metaKey) && zoomer()) pz.zoomWithWheel(event);
  });

  // 2. follow the running node
  function follow() {
    const node = stage.querySelector("g.node.current");
    if (!node || !zoomer()) return;
    const r = node.getBoundingClientRect();
    const b = view.getBoundingClientRect();
    if (r.width === 0 || b.width === 0) return; // not on screen yet (a hidden tab or frame)
    const inside =
      r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom;
    if (inside) return;
    const scale = pz.getScale();
    const at = pz.getPan();
    const dx = b.left + b.width / 2 - (r.left + r.width / 2);
    const dy = Math.min(b.top + b.height / 2, b.top + FOLLOW_MARGIN + r.height / 2) - (r.top + r.height / 2);
    pz.pan(at.x + dx / scale, at.y + dy / scale, { animate: false, force: true });
  }

  // 3. clicks that fold and open (a drag that ends on a frame is not a click)
  let down = null;
  view.addEventListener("pointerdown", (event) => {
    down = [event.clientX, event.clientY];
  });
  stage.addEventListener("click", (event) => {
    if (!send || !down || Math.hypot(event.clientX - down[0], event.clientY - down[1]) > 4) return;
    const folded = event.target.closest("g.node.fold");
    const frame = event.target.closest("g.cluster.module, g.cluster.repeat");
    if (folded) {
      const idents = [...folded.classList].filter((c) => c.startsWith("opens-"));
      send({ open: idents.map((c) => c.slice("opens-".length)) });
    } else if (frame) {
      send({ fold: [frame.id.replace(/^cluster-/, "")] });
    }
  });

  function settle(frames) {
    // after layout, when the drawing's boxes are known; until the box is in the page
    if (zoomer()) follow();
    else if (frames > 0) requestAnimationFrame(() => settle(frames - 1));
  }

  function show(html) {
    stage.innerHTML = html;
    bar.hidden = !stage.querySelector("svg");
    requestAnimationFrame(() => settle(600)); // ten seconds at most
  }
  return { show, follow, zoomer };
}

function render({ model, el }) {
  const box = graphBox(el, (message) => model.send(message));
  const update = () => box.show(model.get("value"));
  update();
  model.on("change:value", update);
  return () => model.off("change:value", update);
}
