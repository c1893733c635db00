// BenchGen's page behaviour, loaded from the package (the CSP allows no inline script).
"use strict";

// A typed confirmation: the danger button stays disabled until the expected words are typed.
// Words, not characters: the page shows a run of spaces in a name as one (web/confirmations.py).
function wireConfirmations(root) {
  const words = (text) => text.trim().split(/\s+/).join(" ");
  root.querySelectorAll("[data-confirm-text]").forEach((form) => {
    const input = form.querySelector("[data-confirm-input]");
    const button = form.querySelector("button[type=submit]");
    if (!input || !button) return;
    const check = () => { button.disabled = words(input.value) !== words(form.dataset.confirmText); };
    input.addEventListener("input", check);
    check();
  });
}

// Copy buttons next to secrets shown once: hidden in the page, since without script they
// would do nothing.
function wireCopyButtons(root) {
  root.querySelectorAll("[data-copy]").forEach((button) => {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const target = document.getElementById(button.dataset.copy);
      if (!target) return;
      try {
        await navigator.clipboard.writeText(target.textContent.trim());
        button.textContent = "Copied";
      } catch (_) {
        const range = document.createRange();
        range.selectNodeContents(target);
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
        button.textContent = "Selected: press Ctrl+C";
      }
    });
  });
}

// Charts: the data comes in a JSON block beside the canvas, never in an inline script.
function wireCharts(root) {
  if (typeof Chart === "undefined") return;
  root.querySelectorAll("canvas[data-chart]").forEach((canvas) => {
    if (canvas.dataset.drawn) return;
    const source = document.getElementById(canvas.dataset.chart);
    if (!source) return;
    canvas.dataset.drawn = "1";
    new Chart(canvas, JSON.parse(source.textContent));
  });
}

// Live run log over server-sent events: appends lines, moves the progress bar, keeps the
// status badge by the heading in step, and reloads the page once the run has ended so the
// results appear.
function wireLiveLogs(root) {
  const badge = document.querySelector("[data-run-status]");
  root.querySelectorAll("[data-events]").forEach((box) => {
    if (box.dataset.listening) return;
    box.dataset.listening = "1";
    const log = box.querySelector(".log");
    const bar = box.querySelector("progress");
    const label = box.querySelector("[data-progress-label]");
    const status = box.querySelector("[data-status]");
    const source = new EventSource(box.dataset.events);
    source.addEventListener("log", (event) => {
      const line = document.createElement("div");
      line.textContent = event.data;
      log.appendChild(line);
      log.scrollTop = log.scrollHeight;
    });
    source.addEventListener("progress", (event) => {
      const data = JSON.parse(event.data);
      if (bar) { bar.max = data.total || 1; bar.value = data.done; }
      if (label) label.textContent = `${data.percent}%`;
      // The status is a live region: written only when it changes, so each change is read once.
      if (status && status.textContent !== data.status) status.textContent = data.status;
      if (badge) {
        badge.textContent = data.status;
        badge.className = `status status-${data.status}`;
      }
    });
    source.addEventListener("end", () => {
      source.close();
      window.location.reload();
    });
  });
}

// A running training job's page polls its progress as JSON: new log lines, loss points for
// the chart, the progress bar. Each poll is an ordinary request, so a sign-out stops it (the
// redirect to sign-in is refused here); the page reloads when the job ends.
function wireTrainingProgress(root) {
  root.querySelectorAll("[data-training-progress]").forEach((box) => {
    if (box.dataset.polling) return;
    box.dataset.polling = "1";
    const log = box.querySelector(".log");
    const bar = box.querySelector("progress");
    const label = box.querySelector("[data-progress-label]");
    const caption = box.querySelector("[data-chart-caption]");
    const status = document.querySelector("[data-training-status]");
    const canvas = box.querySelector("canvas");
    let after = box.dataset.after || "0";
    log.scrollTop = log.scrollHeight;
    const poll = async () => {
      let data;
      try {
        const url = `${box.dataset.trainingProgress}?after=${encodeURIComponent(after)}`;
        const response = await fetch(url, { redirect: "error", headers: { Accept: "application/json" } });
        if (!response.ok) return;
        data = await response.json();
      } catch (_) {
        return;
      }
      after = String(data.after);
      data.lines.forEach((text) => {
        const line = document.createElement("div");
        line.textContent = text;
        log.appendChild(line);
      });
      if (data.lines.length) log.scrollTop = log.scrollHeight;
      const chart = typeof Chart === "undefined" || !canvas ? null : Chart.getChart(canvas);
      if (chart && data.points.length) {
        chart.data.datasets[0].data.push(...data.points);
        chart.update();
        if (caption) caption.textContent = "Training loss by step.";
      }
      if (bar) { bar.max = data.total_steps || 1; bar.value = data.steps_done; }
      if (label) label.textContent = `${data.steps_done} of ${data.total_steps} steps (${data.percent}%)`;
      if (status) status.textContent = data.status;
      if (data.final) { window.location.reload(); return; }
      window.setTimeout(poll, data.more ? 0 : 2000);
    };
    window.setTimeout(poll, 2000);
  });
}

// The chat's answer brings its send form back, emptied (or holding a refused message). The
// agent may take a while: what the person typed meanwhile goes into the new form, not away
// with the old one.
function noteSentMessage(event) {
  const form = event.detail.elt;
  if (form.id === "send-form") form.dataset.sentText = form.querySelector("textarea").value;
}

// Sending a message or pressing a card's button swaps out the control that had the focus (the
// button is disabled meanwhile), which dropped a keyboard user back at the top of the page. A
// sent message brings the focus back to the new message box; Approve, Decline or a choice moves
// it to the turn they started, so a screen reader reads what came of it (htmx keeps the focus on
// that turn, by its id, while the page polls it).
let focusAfterSwap = null;

function noteWhereFocusGoes(event) {
  const asker = event.detail.elt;
  if (asker.id === "send-form") {
    focusAfterSwap = { asker, find: () => document.getElementById("message-text") };
  } else if (asker.closest("#transcript")) {
    focusAfterSwap = { asker, find: () => lastTurn(document) };
  }
}

function lastTurn(root) {
  const turns = root.querySelectorAll("#transcript article.turn");
  return turns.length ? turns[turns.length - 1] : null;
}

// Only the answer to the request that was noted: an earlier one settling late must not take
// the focus from where the person has moved since.
function putFocusBack(event) {
  const asker = event.detail.requestConfig ? event.detail.requestConfig.elt : null;
  if (!focusAfterSwap || asker !== focusAfterSwap.asker) return;
  const place = focusAfterSwap.find();
  focusAfterSwap = null;
  const lost = !document.activeElement || document.activeElement === document.body;
  if (lost && place) place.focus();
}

// The agent's reply replaces the whole transcript, and a live region that is itself new is not
// read out: the page's one lasting region says when a reply has come, and when a card waits.
let turnAnnounced = "";

function finishedTurn() {
  const turn = lastTurn(document);
  return turn && !turn.querySelector("[role=status]") ? turn : null;
}

function rememberShownReply() {
  const turn = finishedTurn();
  if (turn) turnAnnounced = turn.id;
}

function announceReply() {
  const news = document.getElementById("agent-news");
  const turn = finishedTurn();
  if (!news || !turn || turn.id === turnAnnounced) return;
  turnAnnounced = turn.id;
  const reply = turn.querySelector(".message.agent");
  const card = turn.querySelector(".proposal, .choices");
  let text = `The agent replied: ${reply ? reply.textContent.trim() : ""}`;
  if (card) text += " It waits for your answer: its buttons are above the message box.";
  news.textContent = text;
}

function keepTypingAfterSend(event) {
  const old = event.detail.target;
  if (old.id !== "send-form") return;
  const typed = old.querySelector("textarea");
  const fresh = event.detail.fragment.querySelector("textarea");
  if (typed && fresh && typed.value !== old.dataset.sentText) fresh.textContent = typed.value;
}

function wireAll(root) {
  wireConfirmations(root);
  wireCopyButtons(root);
  wireCharts(root);
  wireLiveLogs(root);
  wireTrainingProgress(root);
}

// htmx swaps only successful answers: a refusal from before the page's own handling (a
// session that ended, a lost connection) would otherwise leave the button doing nothing.
function sayRequestFailed(event) {
  const asker = event.detail.elt;
  const form = asker.closest("form") || asker;
  const status = event.detail.xhr ? event.detail.xhr.status : 0;
  let text = "The server cannot be reached, so nothing was sent. Check the connection and try again.";
  if (status === 401 || status === 403) {
    text = "This was refused: your session may have ended. Sign in again in another tab (what you typed stays here), then try again.";
  } else if (status === 429) {
    text = "Too many requests just now: wait a moment, then try again.";
  } else if (status) {
    text = `The server could not do this (error ${status}). Nothing was changed; try again.`;
  }
  let note = form.previousElementSibling;
  if (!note || !note.hasAttribute("data-request-failed")) {
    note = document.createElement("p");
    note.className = "error-text";
    note.setAttribute("role", "alert");
    note.setAttribute("data-request-failed", "");
    form.before(note);
  }
  note.textContent = text;
}

// A form that changes something is sent once: a double click, or a second click while a slow
// answer is on its way, would otherwise send it twice (two benchmarks, two tokens, two runs).
// The buttons are not disabled: that would drop the clicked button's name and value from the
// form. htmx forms are left to htmx (hx-disabled-elt), which cancels the submit event first.
function sendOnce(event) {
  const form = event.target;
  if (event.defaultPrevented || form.method !== "post") return;
  if (form.dataset.sending) {
    event.preventDefault();
    return;
  }
  form.dataset.sending = "1";
  form.setAttribute("aria-busy", "true");
}

// A page shown again from the back-forward cache, or whose navigation was stopped, may send
// its forms again.
function allowSendingAgain() {
  document.querySelectorAll("form[data-sending]").forEach((form) => {
    delete form.dataset.sending;
    form.removeAttribute("aria-busy");
  });
}

// A form shown again with its problems: the cursor goes to the first field to put right, so a
// keyboard or screen-reader user need not look for it (a field the page focuses itself wins).
function focusFirstProblem() {
  const field = document.querySelector('[aria-invalid="true"]');
  if (field && !document.querySelector("[autofocus]")) field.focus();
}

document.addEventListener("DOMContentLoaded", () => {
  wireAll(document);
  focusFirstProblem();
  rememberShownReply();
});
document.addEventListener("submit", sendOnce);
window.addEventListener("pageshow", allowSendingAgain);
if (window.navigation) window.navigation.addEventListener("navigateerror", allowSendingAgain);
document.addEventListener("htmx:afterSwap", (event) => wireAll(event.target));
document.addEventListener("htmx:beforeRequest", noteSentMessage);
document.addEventListener("htmx:beforeRequest", noteWhereFocusGoes);
document.addEventListener("htmx:afterSettle", putFocusBack);
document.addEventListener("htmx:afterSettle", announceReply);
document.addEventListener("htmx:oobBeforeSwap", keepTypingAfterSend);
document.addEventListener("htmx:responseError", sayRequestFailed);
document.addEventListener("htmx:sendError", sayRequestFailed);
// Once a request goes through again, what the last failure said no longer holds.
document.addEventListener("htmx:afterRequest", (event) => {
  if (event.detail.successful) {
    document.querySelectorAll("[data-request-failed]").forEach((note) => note.remove());
  }
});
