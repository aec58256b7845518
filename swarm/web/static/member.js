// swarm web: one member's messages in and out (a thread, oldest first) and the last lines of
// its log, opened by clicking its name. Everything is text (textContent). Uses app.js's el, api.
"use strict";

let memberShown = "";
let memberLoading = false;

function showMember(name) {
  memberShown = name;
  document.getElementById("member").hidden = false;
  document.getElementById("member-name").textContent = name;
  refreshMember();
  document.getElementById("member").scrollIntoView({ block: "start" });
}

function closeMember() {
  memberShown = "";
  document.getElementById("member").hidden = true;
}

async function fetchJson(url) {
  const response = await fetch(url);
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || ("refused: " + response.status));
  return answer;
}

// the member's thread and log again (called on each new state while a member is shown)
async function refreshMember() {
  if (!memberShown || memberLoading) return;
  memberLoading = true;
  const name = memberShown;
  const path = "members/" + encodeURIComponent(name) + "/";
  const process = document.getElementById("log-process").checked;
  const lines = document.getElementById("log-lines").value;
  try {
    const [thread, log] = await Promise.all([
      fetchJson(api(path + "thread")),
      fetchJson(api(path + "log", process ? { lines: lines, process: "1" } : { lines: lines }))
        .catch((error) => ({ lines: [], note: String(error.message || error) })),
    ]);
    if (name === memberShown) {
      renderThread(thread);
      renderLog(log);
    }
  } catch (error) {
    notice(name + ": " + (error.message || error));
  } finally {
    memberLoading = false;
  }
}

function renderThread(thread) {
  const list = document.getElementById("thread");
  list.replaceChildren();
  for (const m of thread.messages) {
    const item = el("li", "message " + m.direction);
    const who = m.direction === "in" ? m.from + " → " + thread.member : thread.member + " → " + m.to.join(", ");
    item.append(el("span", "who", who), el("span", "ago", clockOf(m.ts)));
    if (m.kind !== "message") item.append(el("span", "ago", m.kind));
    item.append(el("div", "text", m.text));
    list.append(item);
  }
  if (!thread.messages.length) list.append(el("li", "empty", "no messages yet"));
}

function renderLog(log) {
  document.getElementById("log-note").textContent = log.note || "";
  const box = document.getElementById("log");
  const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  box.textContent = (log.lines || []).map((line) => line.line).join("\n") || "(nothing yet)";
  if (stick) box.scrollTop = box.scrollHeight;
}

function clockOf(ts) {
  const when = new Date(ts);
  return isNaN(when.getTime()) ? "" : when.toLocaleTimeString();
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("member-close").addEventListener("click", closeMember);
  document.getElementById("log-lines").addEventListener("change", refreshMember);
  document.getElementById("log-process").addEventListener("change", refreshMember);
});
