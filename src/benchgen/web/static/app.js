// BenchGen's page behaviour, loaded from the package (the CSP allows no inline script).
"use strict";

// A typed confirmation: the danger button stays disabled until the expected words are typed.
function wireConfirmations(root) {
  root.querySelectorAll("[data-confirm-text]").forEach((form) => {
    const input = form.querySelector("[data-confirm-input]");
    const button = form.querySelector("button[type=submit]");
    if (!input || !button) return;
    const check = () => { button.disabled = input.value.trim() !== form.dataset.confirmText; };
    input.addEventListener("input", check);
    check();
  });
}

// Copy buttons next to secrets shown once.
function wireCopyButtons(root) {
  root.querySelectorAll("[data-copy]").forEach((button) => {
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

// Live run log over server-sent events: appends lines, moves the progress bar, and reloads
// the page once the run has ended so the results appear.
function wireLiveLogs(root) {
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
      if (status) status.textContent = data.status;
    });
    source.addEventListener("end", () => {
      source.close();
      window.location.reload();
    });
  });
}

function wireAll(root) {
  wireConfirmations(root);
  wireCopyButtons(root);
  wireCharts(root);
  wireLiveLogs(root);
}

document.addEventListener("DOMContentLoaded", () => wireAll(document));
document.addEventListener("htmx:afterSwap", (event) => wireAll(event.target));
