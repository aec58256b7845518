// swarm web: what the page changes besides answers (full token only): a message sent to a
// member or to everyone, a task added, a member stopped. Uses app.js's el, change and act.
"use strict";

let actionsReady = false;
const stopArmed = new Set(); // members whose Stop was pressed once: the second press stops

function setUpActions() {
  actionsReady = true;
  const sendForm = document.getElementById("send-form");
  sendForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = document.getElementById("send-text");
    const body = { to: document.getElementById("send-to").value, text: text.value };
    const sent = await act("send", body, document.getElementById("send-said"),
      (answer) => "sent to " + answer.sent_to.join(", ") +
        (answer.dead && answer.dead.length ? " (not running: " + answer.dead.join(", ") + ")" : ""));
    if (sent) text.value = "";
  });
  const taskForm = document.getElementById("task-form");
  taskForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const subject = document.getElementById("task-subject");
    const description = document.getElementById("task-description");
    const blocked = document.getElementById("task-blocked");
    const body = { subject: subject.value, description: description.value, blockedBy: blocked.value };
    const added = await act("tasks", body, document.getElementById("task-said"),
      (answer) => "added task #" + answer.id);
    if (added) {
      subject.value = "";
      description.value = "";
      blocked.value = "";
    }
  });
}

function renderActions(state) {
  const section = document.getElementById("act");
  section.hidden = role !== "full";
  if (role !== "full") return;
  if (!actionsReady) setUpActions();
  const select = document.getElementById("send-to");
  const chosen = select.value;
  const names = ["*"].concat((state.members || []).map((m) => m.name).filter((n) => n !== "team-lead"));
  if (Array.from(select.options).map((o) => o.value).join("\n") === names.join("\n")) return;
  select.replaceChildren(...names.map((name) => {
    const option = el("option", "", name === "*" ? "everyone (*)" : name);
    option.value = name;
    return option;
  }));
  if (names.includes(chosen)) select.value = chosen;
}

// the members table's last cell: Stop (press twice) for a running teammate, full token only
function stopCell(m) {
  const cell = el("td");
  const running = m.state !== "stopped" && m.state !== "dead" && m.name !== "team-lead";
  if (role !== "full" || !running) return cell;
  const armed = stopArmed.has(m.name);
  const button = el("button", armed ? "deny armed" : "deny", armed ? "Stop: sure?" : "Stop");
  button.type = "button";
  button.dataset.member = m.name;
  button.title = "ask it to shut down, as swarm stop does; swarm start brings it back";
  button.addEventListener("click", async () => {
    if (!stopArmed.has(m.name)) {
      stopArmed.add(m.name);
      button.className = "deny armed";
      button.textContent = "Stop: sure?";
      return;
    }
    stopArmed.delete(m.name);
    button.disabled = true;
    const said = el("span", "said");
    cell.append(said);
    await act("members/" + encodeURIComponent(m.name) + "/stop", {}, said,
      () => "stopping (it has 10 s to answer)");
  });
  cell.append(button);
  return cell;
}
