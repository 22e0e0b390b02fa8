// graphrag-ray explorer: a community tree, reports, a WebGL graph of each community and its
// neighbourhood, entity search and the index's facts. Data arrive as scripts calling
// GR.put(key, value) (see graphrag_ray/explore/site.py); each view loads only its own files.
"use strict";

const GR = (window.GR = { data: {}, waiting: {}, errors: [], renderer: null });

function recordError(message) {
  GR.errors.push(String(message));
  const box = document.getElementById("errors");
  if (box) { box.hidden = false; box.textContent = GR.errors.join("\n"); }
}
window.addEventListener("error", (event) => recordError(event.message || event.type));
window.addEventListener("unhandledrejection", (event) => recordError(event.reason));

GR.put = (key, value) => {
  GR.data[key] = value;
  for (const resolve of GR.waiting[key] || []) resolve(value);
  delete GR.waiting[key];
};

function load(key) {
  return new Promise((resolve, reject) => {
    if (key in GR.data) return resolve(GR.data[key]);
    const waiting = (GR.waiting[key] = GR.waiting[key] || []);
    waiting.push(resolve);
    if (waiting.length > 1) return;
    const script = document.createElement("script");
    script.src = `data/${key}.js`;
    script.onerror = () => reject(new Error(`cannot load data/${key}.js`));
    document.head.appendChild(script);
  });
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
  "#ff9da7", "#9c755f", "#bab0ac"];
function colourOf(type) {
  let hash = 0;
  for (const c of type || "") hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return PALETTE[hash % PALETTE.length];
}

// ---- the community tree -------------------------------------------------------------------
let communities = new Map(); // id -> {id, level, parent, title, size, rating, file, children}

function indexTree() {
  const { columns, rows } = GR.data.tree;
  for (const row of rows) {
    const c = Object.fromEntries(columns.map((name, i) => [name === "community" ? "id" : name, row[i]]));
    c.children = [];
    communities.set(c.id, c);
  }
  for (const c of communities.values()) {
    if (c.parent >= 0 && communities.has(c.parent)) communities.get(c.parent).children.push(c.id);
  }
  for (const c of communities.values()) c.children.sort((a, b) => communities.get(b).size - communities.get(a).size);
}

function treeItem(c) {
  const link = element("a", { href: `#c=${c.id}`, text: c.title });
  const meta = element("span", { class: "meta", text: ` ${c.size} entities` + (c.rating != null ? ` · rating ${c.rating}` : "") });
  const toggle = element("span", { class: "toggle", text: c.children.length ? "▸" : "" });
  const item = element("li", { "data-community": c.id, "data-level": c.level }, toggle, link, meta);
  if (c.children.length) toggle.addEventListener("click", () => expand(item, c));
  return item;
}

function expand(item, c, open = null) {
  let list = item.querySelector(":scope > ul");
  if (!list) {
    list = element("ul");
    for (const child of c.children) list.append(treeItem(communities.get(child)));
    item.append(list);
    list.hidden = true;
  }
  list.hidden = open === null ? !list.hidden : !open;
  item.querySelector(":scope > .toggle").textContent = list.hidden ? "▸" : "▾";
}

function renderTree() {
  const roots = [...communities.values()].filter((c) => c.level === 0).sort((a, b) => b.size - a.size);
  const tree = document.getElementById("tree");
  tree.replaceChildren(...roots.map(treeItem));
  document.getElementById("tree-heading").textContent = `Communities (${roots.length} at level 0, ${communities.size} in all)`;
}

function revealInTree(id) {
  const path = [];
  for (let c = communities.get(id); c; c = communities.get(c.parent)) path.unshift(c);
  let scope = document.getElementById("tree");
  for (const c of path) {
    const item = scope.querySelector(`:scope > li[data-community="${c.id}"]`);
    if (!item) return;
    if (c.id !== id) expand(item, c, true);
    scope = item.querySelector(":scope > ul") || scope;
    if (c.id === id) {
      document.querySelectorAll(".tree a.selected").forEach((a) => a.classList.remove("selected"));
      const link = item.querySelector(":scope > a");
      link.classList.add("selected");
      link.scrollIntoView({ block: "nearest" });
    }
  }
}

// ---- one community ------------------------------------------------------------------------
async function openCommunity(id, highlight = null) {
  const c = communities.get(id);
  if (!c) return recordError(`no community ${id}`);
  showView("community");
  revealInTree(id);
  const bucket = await load(`communities/${c.file}`);
  const view = bucket[id];
  document.getElementById("placeholder").hidden = true;
  renderReport(c, view);
  renderDetails(view);
  drawGraph(view.graph, highlight);
}

function renderReport(c, view) {
  const report = document.getElementById("report");
  report.dataset.community = c.id;
  if (!view.report) {
    report.replaceChildren(element("h2", { text: c.title }), element("p", { text: "No report for this community." }));
    return;
  }
  const r = view.report;
  const findings = element("ol", { class: "findings" },
    ...r.findings.map((f) => element("li", {}, element("strong", { text: f.summary }), element("br"), f.explanation)));
  report.replaceChildren(
    element("h2", { text: r.title }),
    element("p", {}, element("span", { class: "rating", text: `rating ${r.rating}` }),
      ` level ${view.level} · ${view.size} entities · `, element("span", { class: "meta", text: r.rating_explanation || "" })),
    element("p", { class: "summary", text: r.summary }),
    element("h3", { text: "Findings" }), findings);
}

function table(headers, rows) {
  return element("table", {}, element("tr", {}, ...headers.map((h) => element("th", { text: h }))),
    ...rows.map((row) => element("tr", {}, ...row.map((cell) => element("td", { text: cell == null ? "" : String(cell) })))));
}

function renderDetails(view) {
  document.getElementById("details").replaceChildren(
    element("h3", { text: `Entities (${view.members.length} of ${view.size}, by degree)` }),
    table(["name", "type", "degree", "description"], view.members),
    element("h3", { text: `Relationships (${view.relationships.length} strongest)` }),
    table(["source", "target", "weight", "description"], view.relationships));
}

function drawGraph(data, highlight) {
  const container = document.getElementById("graph");
  if (GR.renderer) { GR.renderer.kill(); GR.renderer = null; }
  const graph = new graphology.Graph({ multi: false, type: "undirected" });
  data.nodes.forEach(([title, type, x, y, degree, member], i) => {
    graph.addNode(String(i), {
      label: title, x: x || 0, y: y || 0, size: Math.min(16, 3 + Math.sqrt(degree || 0) * (member ? 1.5 : 0.8)),
      color: title === highlight ? "#d62728" : member ? colourOf(type) : "#c8c8c8",
      zIndex: member ? 1 : 0,
    });
  });
  for (const [a, b, weight] of data.edges) {
    if (!graph.hasEdge(String(a), String(b))) graph.addEdge(String(a), String(b), { size: 0.5 + 2 * weight, color: "#ccc" });
  }
  // Every label on small graphs; on large ones only the bigger (higher-degree) nodes'.
  GR.renderer = new Sigma(graph, container, { renderEdgeLabels: false, zIndex: true,
    labelRenderedSizeThreshold: graph.order <= 200 ? 0 : 6, labelDensity: 0.2 });
  container.dataset.nodes = graph.order;
  container.dataset.edges = graph.size;
  const members = data.nodes.filter((n) => n[5]).length;
  document.getElementById("graph-caption").textContent =
    `Graph: ${members} of ${data.members_total} members` + (data.nodes.length > members ? ` and ${data.nodes.length - members} outside neighbours (grey)` : "") +
    ". Drag to pan, scroll to zoom.";
}

// ---- search -------------------------------------------------------------------------------
async function names() {
  const files = GR.data.facts.name_files;
  const parts = await Promise.all([...Array(files).keys()].map((i) => load(`names/${i}`)));
  return parts.flat();
}

let searchTimer = null;
function onSearch(event) {
  clearTimeout(searchTimer);
  const query = event.target.value.trim().toUpperCase();
  searchTimer = setTimeout(async () => {
    const results = document.getElementById("search-results");
    if (query.length < 2) return results.replaceChildren();
    const found = (await names()).filter(([title]) => title.includes(query))
      .sort((a, b) => (a[0].startsWith(query) ? 0 : 1) - (b[0].startsWith(query) ? 0 : 1) || a[0].length - b[0].length)
      .slice(0, 20);
    results.replaceChildren(...found.map(([title, type, community]) => {
      const item = element("li", { "data-community": community, text: `${title} (${type})` });
      item.addEventListener("click", () => {
        results.replaceChildren();
        if (community >= 0) openCommunity(community, title).catch(recordError);
      });
      return item;
    }));
    if (!found.length) results.append(element("li", { text: "no entity has that in its name" }));
  }, 150);
}

// ---- facts --------------------------------------------------------------------------------
const cost = (usd) => (usd == null ? "unknown (no price for the model)" : `$${usd.toFixed(4)}`);

function renderFacts() {
  const f = GR.data.facts;
  const total = f.llm_total || {};
  const rows = (object) => Object.entries(object || {}).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v]);
  document.getElementById("facts-view").replaceChildren(
    element("h2", { text: `Index ${f.version}` }),
    element("p", { text: `Built ${f.created_at} from ${f.input}: ${f.corpus.documents} documents, ${f.corpus.chunks} chunks, ${f.corpus.tokens} tokens (extraction: ${f.extraction_method}).` }),
    element("h3", { text: "Communities per level" }), table(["level", "communities"], rows(f.communities_per_level)),
    element("h3", { text: "Tables" }), table(["table", "rows"], rows(f.tables)),
    element("h3", { text: "LLM usage and cost" }),
    element("p", { text: total.calls ? `${f.model}: ${total.calls} calls, ${total.prompt_tokens} prompt + ${total.completion_tokens} completion tokens, ${total.rate_limited || 0} rate-limited, ${cost(total.cost_usd)}` : "No LLM calls (offline build)." }),
    table(["stage", "calls", "prompt tokens", "completion tokens", "429s", "cost"],
      Object.entries(f.llm_by_stage || {}).map(([stage, u]) => [stage, u.calls, u.prompt_tokens,
        u.completion_tokens, u.rate_limited, cost(u.cost_usd)])),
    element("h3", { text: "Stage timings (s)" }), table(["stage", "seconds"], rows(f.timings_s)),
    element("h3", { text: "Query methods" }),
    table(["method", "what it does"], (f.query_methods || []).map((m) => [m.method, m.help])),
    element("h3", { text: "Plots" }),
    element("div", { class: "plots" }, ...f.plots.map((name) => element("img", { src: `plots/${name}`, alt: name }))));
}

function showView(name) {
  document.getElementById("community-view").hidden = name !== "community";
  document.getElementById("facts-view").hidden = name !== "facts";
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash === "facts") { renderFacts(); showView("facts"); return; }
  const match = /^c=(-?\d+)$/.exec(hash);
  showView("community");
  if (match) openCommunity(Number(match[1])).catch(recordError);
}

window.addEventListener("DOMContentLoaded", () => {
  try {
    indexTree();
    renderTree();
    document.getElementById("search").addEventListener("input", onSearch);
    window.addEventListener("hashchange", route);
    route();
    document.body.dataset.ready = "true";
  } catch (error) {
    recordError(error && error.stack ? error.stack : error);
  }
});
