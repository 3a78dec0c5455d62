// swarm dashboard: polls /api/v1/state (ingress.State's JSON) and draws it.
"use strict";

const POLL_MS = 2000;
let previous = null; // the last reading of the ingress counters, for rates

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "title") e.title = v;
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function duration(s) {
  if (!(s > 0)) return "–";
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${Math.floor(s % 60)}s`;
  return `${Math.floor(s)}s`;
}

function count(n) {
  if (!(n > 0)) return "0";
  if (n >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}

function shortID(id) {
  if (!id) return "–";
  const url = /^(?:ws|http)s?:\/\/([^/]+)/.exec(id); // a server without a peer id: its host:port
  if (url) return url[1];
  return id.length > 16 ? id.slice(0, 6) + "…" + id.slice(-6) : id;
}

function span(s) { return s ? `${s.start}:${s.end}` : "–"; }

// headroomColor: red without servers, else from amber (no free cache) to
// green (all free), darker as more servers host the block.
function headroomColor(servers, headroom) {
  if (servers === 0) return "#c0392b";
  const free = Math.max(0, Math.min(1, headroom / servers));
  const hue = 35 + free * 95;
  const light = Math.max(28, 48 - 4 * (servers - 1));
  return `hsl(${hue}, 60%, ${light}%)`;
}

function drawNode(st) {
  const n = st.node;
  const box = document.getElementById("node");
  box.replaceChildren();
  if (!n) { box.append("node: (older node)"); return; }
  box.append(`${n.role} `, n.id ? el("code", { title: n.id }, shortID(n.id)) : "",
    ` · version ${n.version} · up ${duration(n.now - n.started_at)}`);
}

function stat(k, v) { return el("div", { class: "stat" }, el("div", { class: "v" }, v), el("div", { class: "k" }, k)); }

function drawIngress(st) {
  const sec = document.getElementById("ingress");
  const g = st.ingress;
  sec.hidden = !g;
  if (!g) return;
  const now = Date.now() / 1000; // this browser's clock: sub-second polls
  let rate = "–", recent = "–";
  if (previous && now > previous.now) {
    const dt = now - previous.now;
    rate = ((g.requests - previous.g.requests) / dt).toFixed(2) + "/s";
    const dc = g.latency_count - previous.g.latency_count;
    if (dc > 0) recent = ((g.latency_seconds - previous.g.latency_seconds) / dc).toFixed(3) + " s";
  }
  previous = { now, g };
  const mean = g.latency_count > 0 ? (g.latency_seconds / g.latency_count).toFixed(3) + " s" : "–";
  const ttft = g.ttft_count > 0 ? (g.ttft_seconds / g.ttft_count).toFixed(3) + " s" : "–";
  const codes = Object.entries(g.errors_by_code || {}).map(([c, n]) => `${c}: ${n}`).join(", ");
  document.getElementById("ingress-stats").replaceChildren(
    stat("requests", count(g.requests)), stat("request rate", rate), stat("in flight", g.inflight),
    stat("mean latency", mean), stat("latency (last poll)", recent), stat("mean TTFT", ttft),
    stat("errors", g.errors + (codes ? ` (${codes})` : "")),
    stat("tokens in / out", `${count(g.prompt_tokens)} / ${count(g.completion_tokens)}`));
}

function drawPlan(st) {
  const sec = document.getElementById("plan");
  const p = st.plan;
  sec.hidden = !p;
  if (!p) return;
  const body = document.getElementById("plan-body");
  if (!p.epoch) { body.replaceChildren("no plan committed yet"); return; }
  const rows = (p.moves || []).map(m => el("tr", { class: "move-row" },
    el("td", {}, m.step), el("td", {}, el("code", { title: m.server }, shortID(m.server))),
    el("td", {}, `${span(m.from)} → ${span(m.to)}`), el("td", {}, m.progress)));
  body.replaceChildren(
    el("div", {}, `epoch ${p.epoch} · ${p.status} · ${(p.moves || []).length} moves` + (p.abort_reason ? ` (aborted: ${p.abort_reason})` : "")),
    rows.length ? el("table", {}, el("tr", {}, el("th", {}, "step"), el("th", {}, "server"), el("th", {}, "move"), el("th", {}, "progress")), ...rows) : "");
}

const COLUMNS = [
  ["peer id"], ["name / provider"], ["span"], ["state"], ["reachability"], ["device"], ["tau (ms/block)", "num"], ["load", "num"],
  ["sessions", "num"], ["tokens served", "num"], ["version"], ["uptime", "num"], ["seen", "num"],
];

function serverRow(s, now) {
  let state = s.state || "–";
  if (s.moving_to) state += ` → ${span(s.moving_to)}`;
  if (s.draining) state += ` (draining ${span(s.draining)})`;
  const load = s.cache_bytes_capacity > 0
    ? Math.round(100 * (1 - s.cache_bytes_free / s.cache_bytes_capacity)) + "%" : "–";
  const seen = s.heartbeat_age ? s.heartbeat_age.toFixed(1) + " s ago" : (s.rtt ? `rtt ${(s.rtt * 1000).toFixed(1)} ms` : "–");
  const cls = "state-" + (s.state || "").toLowerCase().split(" ")[0];
  return el("tr", { class: "server-row", "data-id": s.id || s.endpoint },
    el("td", {}, el("code", { title: (s.id || "") + "\n" + (s.endpoint || "") }, shortID(s.id || s.endpoint))),
    el("td", {}, [s.public_name, s.provider].filter(Boolean).join(" / ") || "–"),
    el("td", {}, s.full_range ? `${span(s.span)} (replica)` : span(s.span)),
    el("td", {}, el("span", { class: "badge " + cls, title: s.error || "" }, state)),
    el("td", { class: "reach" }, s.reachability || "–"),
    el("td", {}, s.device || "–"),
    el("td", { class: "num" }, s.tau > 0 ? (s.tau * 1000).toFixed(3) : "–"),
    el("td", { class: "num", title: "attention cache in use" }, load),
    el("td", { class: "num" }, s.sessions),
    el("td", { class: "num" }, count(s.tokens_served || 0)),
    el("td", {}, s.version || "–"),
    el("td", { class: "num" }, s.started_at ? duration(now - s.started_at) : "–"),
    el("td", { class: "num" }, seen));
}

function drawModel(m, now) {
  const cells = (m.coverage || []).map((n, b) => {
    const h = (m.headroom || [])[b] || 0;
    return el("div", {
      class: "cov-cell", "data-block": b, "data-servers": n,
      style: `background: ${headroomColor(n, h)}`,
      title: `block ${b}: ${n} server(s), ${n ? Math.round(100 * h / n) : 0}% cache free`,
    }, el("span", { class: "n" }, n), el("span", {}, b));
  });
  const head = el("tr", {}, ...COLUMNS.map(([name, cls]) => el("th", cls ? { class: cls } : {}, name)));
  const servers = [...(m.servers || [])].sort((a, b) => (a.span.start - b.span.start) || (a.id || "").localeCompare(b.id || ""));
  return el("div", { class: "model", "data-model": m.name },
    el("h2", {}, m.name, " ", el("span", { class: "badge " + m.health }, m.health),
      el("span", { class: "muted" }, ` · ${m.blocks} blocks · ${servers.length} servers` +
        (m.replicas ? ` · ${m.replicas} replicas` : "") + (m.uncovered && m.uncovered.length ? ` · uncovered ${m.uncovered.join(", ")}` : ""))),
    el("div", { class: "muted legend" }, "servers per block (color: free attention cache, green = room, amber = full, red = no server)"),
    el("div", { class: "coverage" }, ...cells),
    el("table", { class: "servers" }, head, ...servers.map(s => serverRow(s, now))));
}

function draw(st) {
  const now = st.node ? st.node.now : Date.now() / 1000;
  drawNode(st);
  drawIngress(st);
  drawPlan(st);
  const models = st.models || [];
  document.getElementById("models").replaceChildren(...(models.length ? models.map(m => drawModel(m, now))
    : [el("section", {}, "no servers known yet")]));
  document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString();
  document.body.dataset.ready = "1";
}

async function poll() {
  try {
    const r = await fetch("/api/v1/state", { cache: "no-store" });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    draw(await r.json());
  } catch (e) {
    document.getElementById("status").textContent = "cannot read /api/v1/state: " + e.message;
  }
  setTimeout(poll, POLL_MS);
}

poll();
