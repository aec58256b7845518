// swarm web: the requests waiting for a person, each with its content in full and, with the
// full token, its buttons: Approve, Deny with a reason, Answer for a question. Uses app.js's
// el, agoSpan, notice, change, drafts and role.
"use strict";

async function post(id, verb, body, said) {
  said.className = "said";
  said.textContent = "sending…";
  try {
    const result = await change("requests/" + encodeURIComponent(id) + "/" + verb, body);
    const answer = result.answer;
    if (result.ok) {
      said.textContent = verb === "deny" ? "denied" : verb === "answer" ? "answered" : "approved";
      delete drafts[id];
    } else {
      said.className = "said bad";
      said.textContent = answer.error || ("refused: " + result.status);
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
  const about = el("div", "description", r.id + " · " + r.kind + " · ");
  about.append(agoSpan(r.at_ms));
  card.append(about);
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
