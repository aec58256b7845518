// swarm web: the page. Every piece of team data goes in with textContent, never as HTML.
// requests.js (the requests waiting, answered), chart.js (the cost chart), member.js (a
// member's messages and log) and actions.js (send, add a task, stop) are loaded before this
// file, which starts the page.
"use strict";

const params = new URLSearchParams(location.search);
const token = params.get("token") || "";
let team = params.get("team") || ""; // "" until the session says (or the picker shows)
let role = "read-only";
let drafts = {}; // what the person typed into a request's fields, kept across redraws
let lastState = null;
let skew = 0; // the server's clock less this page's, when the last state came

// an API path of this team, with its query: api("state", {lines: 5}) -> "api/state?team=t&lines=5"
function api(path, extra) {
  const query = new URLSearchParams(extra || {});
  if (team) query.set("team", team);
  const text = query.toString();
  return "api/" + path + (text ? "?" + text : "");
}

// a change: POST `body` as JSON with the token in the header; {ok, status, answer}
async function change(path, body) {
  const response = await fetch(api(path), {
    method: "POST",
    headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  let answer = {};
  try { answer = await response.json(); } catch (error) { answer = { error: String(error) }; }
  return { ok: response.ok, status: response.status, answer: answer };
}

// a change whose outcome is told in `said`: "sending…", then `done(answer)` or the error
async function act(path, body, said, done) {
  said.className = "said";
  said.textContent = "sending…";
  try {
    const result = await change(path, body);
    if (result.ok) {
      said.textContent = done(result.answer);
    } else {
      said.className = "said bad";
      said.textContent = result.answer.error || ("refused: " + result.status);
    }
    return result.ok;
  } catch (error) {
    said.className = "said bad";
    said.textContent = "could not reach the server: " + error;
    return false;
  }
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// how long ago the instant `atMs` (the server's clock, ms since the epoch) was
function ago(atMs) {
  if (atMs === null || atMs === undefined) return "";
  const seconds = Math.max(0, (Date.now() + skew - atMs) / 1000);
  if (seconds < 60) return Math.round(seconds) + " s ago";
  if (seconds < 3600) return Math.round(seconds / 60) + " min ago";
  return Math.round(seconds / 3600) + " h ago";
}

// a span that says how long ago `atMs` was, and keeps saying it (`tick`)
function agoSpan(atMs) {
  const span = el("span", "ago", ago(atMs));
  if (atMs !== null && atMs !== undefined) span.dataset.at = String(atMs);
  return span;
}

// the ages grow on the page: the server sends nothing while the team does nothing
function tick() {
  for (const span of document.querySelectorAll("[data-at]")) span.textContent = ago(Number(span.dataset.at));
}

function tokens(usage) {
  if (!usage) return "";
  const total = Object.values(usage).reduce((a, b) => a + (Number(b) || 0), 0);
  return total >= 1000 ? (total / 1000).toFixed(1) + "k" : String(total);
}

function money(cost) {
  return cost === null || cost === undefined ? "" : "$" + Number(cost).toFixed(2);
}

function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.hidden = !text;
}

function renderMembers(members) {
  const body = document.querySelector("#members tbody");
  body.replaceChildren();
  for (const m of members) {
    const row = el("tr");
    const ctx = m.context_tokens && m.context_window
      ? Math.round((100 * m.context_tokens) / m.context_window) + "%" : "";
    const cells = [m.state, m.task || "", m.activity || "", ctx, tokens(m.usage), money(m.cost_usd)];
    const name = el("td");
    const open = el("button", "name", m.name);
    open.type = "button";
    open.title = "its messages and log";
    open.addEventListener("click", () => showMember(m.name));
    name.append(open);
    row.append(name);
    cells.forEach((value, i) => row.append(el("td", i === 1 || i === 2 ? "wrap" : "", value)));
    row.append(stopCell(m));
    body.append(row);
    for (const s of m.subagents || []) {
      if (s.state !== "running") continue;
      const sub = el("tr");
      [" › " + s.label, s.state, s.description, s.activity, "", tokens(s.usage), money(s.cost_usd), ""]
        .forEach((value, i) => sub.append(el("td", i === 2 || i === 3 ? "wrap" : "", value)));
      body.append(sub);
    }
  }
}

const COLUMNS = [["pending", "pending"], ["blocked", "blocked"], ["in_progress", "in progress"],
  ["failed", "failed"], ["completed", "completed"]];

function renderBoard(state) {
  const columns = { pending: [], blocked: [], in_progress: [], failed: state.failed || [], completed: [] };
  for (const [status, listed] of Object.entries(state.tasks || {})) {
    for (const task of listed) {
      const key = task.state === "blocked" ? "blocked" : status;
      (columns[key] || (columns[key] = [])).push(task);
    }
  }
  const board = document.getElementById("board");
  board.replaceChildren();
  for (const [key, title] of COLUMNS) {
    const column = el("div", "column");
    column.append(el("h3", "", title + " (" + columns[key].length + ")"));
    for (const task of columns[key].slice(-50)) {
      const card = el("div", "task");
      card.append(el("div", "", "#" + task.id + " " + (task.subject || "")));
      const meta = [];
      if (task.owner) meta.push("owner " + task.owner);
      const blockers = (state.blocked || {})[task.id];
      if (blockers && blockers.length) meta.push("waits for #" + blockers.join(", #"));
      if (meta.length) card.append(el("div", "meta", meta.join(" · ")));
      if (task.failure) card.append(el("div", "meta", task.failure));
      if (task.outputTail && task.outputTail.length) card.append(el("pre", "", task.outputTail.join("\n")));
      column.append(card);
    }
    if (!columns[key].length) column.append(el("div", "empty", "none"));
    board.append(column);
  }
}

function renderMessages(messages) {
  const list = document.getElementById("messages");
  list.replaceChildren();
  for (const m of messages.slice().reverse()) {
    const item = el("li");
    item.append(el("span", "who", m.sender), el("span", "", m.text), agoSpan(m.at_ms));
    list.append(item);
  }
  if (!messages.length) list.append(el("li", "empty", "no messages yet"));
}

function render(state) {
  lastState = state;
  if (typeof state.now_ms === "number") skew = state.now_ms - Date.now();
  document.getElementById("team").textContent = state.team;
  document.title = "swarm · " + state.team;
  const counts = COLUMNS.map(([k, t]) => t + " " + ((state.tasks || {})[k] || (k === "failed" ? state.failed : []) || []).length);
  document.getElementById("summary").textContent =
    [state.members.length + " members", money(state.cost_usd), state.store].filter(Boolean).join(" · ");
  document.getElementById("summary").title = counts.join(", ");
  renderRequests(state.requests || []);
  renderMembers(state.members || []);
  renderBoard(state);
  renderMessages(state.messages || []);
  renderCost(state.cost_series || [], state.cost_usd);
  renderActions(state);
  refreshMember();
}

function connect() {
  const link = document.getElementById("link");
  document.getElementById("team-page").hidden = false;
  const events = new EventSource(api("events", { token: token }));
  setInterval(tick, 5000);
  events.addEventListener("state", (event) => {
    link.textContent = "live";
    link.className = "link live";
    render(JSON.parse(event.data));
  });
  events.onerror = () => {
    link.textContent = "reconnecting…";
    link.className = "link down";
  };
}

// the page of another team of this server (or the picker: `name` "")
function teamHref(name) {
  const query = new URLSearchParams({ token: token });
  if (name) query.set("team", name);
  return "?" + query.toString();
}

async function pick() {
  document.getElementById("team").textContent = "all teams";
  document.getElementById("link").textContent = "";
  document.getElementById("picker").hidden = false;
  const list = document.getElementById("teams");
  const response = await fetch(api("teams"));
  const teams = response.ok ? (await response.json()).teams : [];
  list.replaceChildren();
  for (const t of teams) {
    const item = el("li");
    const link = el("a", "team-link", t.name);
    link.href = teamHref(t.name);
    item.append(link);
    const about = [t.members + " members", t.kind === "session" ? "a Claude Code session" : "", t.description || ""];
    item.append(el("span", "ago", about.filter(Boolean).join(" · ")));
    list.append(item);
  }
  if (!teams.length) list.append(el("li", "empty", "no teams under this config root"));
}

async function start() {
  const response = await fetch("api/session?token=" + encodeURIComponent(token));
  if (!response.ok) {
    notice("this page needs the URL swarm web printed, with its token");
    return;
  }
  const session = await response.json();
  role = session.role;
  if (session.allTeams) {
    const back = document.getElementById("all-teams");
    back.href = teamHref("");
    back.hidden = !team;
  }
  if (!team && session.team) team = session.team;
  if (!team) {
    await pick();
    return;
  }
  connect();
}

start();
