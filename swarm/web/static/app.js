// swarm web: the page. Every piece of team data goes in with textContent, never as HTML.
"use strict";

const params = new URLSearchParams(location.search);
const token = params.get("token") || "";
let role = "read-only";
let drafts = {}; // what the person typed into a request's fields, kept across redraws

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function ago(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 60) return Math.round(seconds) + " s ago";
  if (seconds < 3600) return Math.round(seconds / 60) + " min ago";
  return Math.round(seconds / 3600) + " h ago";
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
    const cells = [m.name, m.state, m.task || "", m.activity || "", ctx, tokens(m.usage), money(m.cost_usd)];
    cells.forEach((value, i) => row.append(el("td", i === 2 || i === 3 ? "wrap" : "", value)));
    body.append(row);
    for (const s of m.subagents || []) {
      if (s.state !== "running") continue;
      const sub = el("tr");
      [" › " + s.label, s.state, s.description, s.activity, "", tokens(s.usage), money(s.cost_usd)]
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
    item.append(el("span", "who", m.sender), el("span", "", m.text), el("span", "ago", ago(m.age_s)));
    list.append(item);
  }
  if (!messages.length) list.append(el("li", "empty", "no messages yet"));
}

async function post(id, verb, body, said) {
  said.className = "said";
  said.textContent = "sending…";
  try {
    const response = await fetch("api/requests/" + encodeURIComponent(id) + "/" + verb, {
      method: "POST",
      headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (response.ok) {
      said.textContent = verb === "deny" ? "denied" : verb === "answer" ? "answered" : "approved";
      delete drafts[id];
    } else {
      said.className = "said bad";
      said.textContent = answer.error || ("refused: " + response.status);
      // the card may leave the page at once (answered elsewhere): say it where it stays
      notice(id + ": " + said.textContent);
    }
  } catch (error) {
    said.className = "said bad";
    said.textContent = "could not reach the server: " + error;
  }
}

function field(id, name, placeholder) {
  const input = el("input");
  input.placeholder = placeholder;
  input.value = (drafts[id] || {})[name] || "";
  input.addEventListener("input", () => { (drafts[id] = drafts[id] || {})[name] = input.value; });
  return input;
}

function renderRequest(r) {
  const card = el("article", "request");
  card.dataset.id = r.id;
  card.append(el("div", "head", (r.agent || r.teammate) + " asks: " + r.tool + " — " + r.summary));
  card.append(el("div", "description", r.id + " · " + r.kind + " · " + ago(r.age_s)));
  if (r.description && r.kind !== "plan_approval_request") {
    card.append(el("div", "description", "the teammate's description (unverified): " + r.description));
  }
  card.append(el("pre", "", (r.content || []).join("\n")));
  const said = el("div", "said");
  const actions = el("div", "actions");
  if (role === "full" && r.cannot_answer) {
    actions.append(el("span", "empty", "cannot answer from here: " + r.cannot_answer));
  } else if (role === "full") {
    if (r.questions && r.questions.length) {
      const inputs = r.questions.map((q, i) => {
        const box = el("div", "question");
        const labels = q.options.map((o, n) => (n + 1) + ") " + o.label).join("  ");
        box.append(el("div", "", (i + 1) + ". " + q.question + (q.multiSelect ? " (several: 1,3)" : "")));
        if (labels) box.append(el("div", "description", labels));
        const input = field(r.id, "q" + i, "an option's number or label, or your words");
        box.append(input);
        card.append(box);
        return input;
      });
      const send = el("button", "approve", "Answer");
      send.addEventListener("click", () => post(r.id, "answer", { answers: inputs.map((x) => x.value) }, said));
      actions.append(send);
    } else {
      const approve = el("button", "approve", "Approve");
      approve.addEventListener("click", () => post(r.id, "approve", {}, said));
      actions.append(approve);
    }
    const reason = field(r.id, "reason", "reason (sent to the teammate)");
    const deny = el("button", "deny", "Deny");
    deny.addEventListener("click", () => post(r.id, "deny", { reason: reason.value }, said));
    actions.append(reason, deny);
  } else {
    actions.append(el("span", "empty", "read-only: answer with the full token"));
  }
  card.append(actions, said);
  return card;
}

function renderRequests(requests) {
  document.getElementById("request-count").textContent = "(" + requests.length + ")";
  const box = document.getElementById("requests");
  const focused = document.activeElement;
  const keep = focused && focused.closest && focused.closest(".request");
  if (keep && requests.some((r) => r.id === keep.dataset.id)) {
    // the person is typing in a request still waiting: redraw the others around it
    for (const old of Array.from(box.children)) if (old !== keep) old.remove();
    for (const r of requests) if (r.id !== keep.dataset.id) box.append(renderRequest(r));
    return;
  }
  box.replaceChildren(...requests.map(renderRequest));
  if (!requests.length) box.append(el("div", "empty", "nothing waiting"));
}

function render(state) {
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
}

function connect() {
  const link = document.getElementById("link");
  const events = new EventSource("api/events?token=" + encodeURIComponent(token));
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

async function start() {
  const response = await fetch("api/session?token=" + encodeURIComponent(token));
  if (!response.ok) {
    notice("this page needs the URL swarm web printed, with its token");
    return;
  }
  role = (await response.json()).role;
  connect();
}

start();
