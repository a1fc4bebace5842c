#!/usr/bin/env node
// Renders one of our pages (a harness timeline or a `locksmith-bench --html` report) in
// Debian's headless Chromium and fails when the page logs an error or throws, or when what it
// should show is missing: the SVG, round axis ticks, a legend entry for every mark drawn (and
// nothing drawn without one), holder bars, the violation; for the bench page its table,
// charts and target legend. Optionally saves a PNG of the picture.
//
//   node docs/pictures/check.mjs [--screenshot OUT.png] timeline PAGE.html [REQUIRED...]
//   node docs/pictures/check.mjs [--screenshot OUT.png] bench PAGE.html
//
// REQUIRED (timeline): marks the picture must show, e.g. `violation`, `token`, `lost`,
// `fault:failover`, `fault:pause`, `fault:clock`, `write-rejected`, `holders:2`.
// No dependencies: the DevTools protocol runs over `--remote-debugging-pipe` (fds 3 and 4,
// NUL-terminated JSON), so neither a WebSocket client nor a port is needed. Env: CHROMIUM
// (the browser, default /usr/bin/chromium), PICTURES_TIMEOUT_MS (default 60000).
// Exit status 0 when the page holds up, 1 when it does not, 2 on bad usage or no browser.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const USAGE =
  "usage: check.mjs [--screenshot OUT.png] (timeline PAGE.html [REQUIRED...] | bench PAGE.html)";

function usage(message) {
  console.error(`check: ${message}\n${USAGE}`);
  process.exit(2);
}

// ------------------------------------------------------------------ arguments

const argv = process.argv.slice(2);
let screenshot = null;
if (argv[0] === "--screenshot") {
  screenshot = argv[1] ? resolve(argv[1]) : usage("--screenshot needs a file");
  argv.splice(0, 2);
}
const [kind, page, ...required] = argv;
if (kind !== "timeline" && kind !== "bench") usage(`unknown page kind '${kind ?? ""}'`);
if (!page || !existsSync(page)) usage(`no page at '${page ?? ""}'`);
if (kind === "bench" && required.length > 0) usage("the bench page takes no REQUIRED marks");
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(chromium)) {
  console.error(`check: no browser at ${chromium} (apt-get install chromium, or set CHROMIUM)`);
  process.exit(2);
}
const timeoutMs = Number(process.env.PICTURES_TIMEOUT_MS || 60000);

// ------------------------------------------------------------------ the browser

const profile = mkdtempSync(join(tmpdir(), "locksmith-pictures-"));
const browser = spawn(
  chromium,
  [
    "--headless",
    // CI runs as root, where Chromium's sandbox cannot start; the pages are our own files.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
    `--user-data-dir=${profile}`,
    "about:blank",
  ],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
);
let browserLog = "";
browser.stderr.on("data", (d) => {
  browserLog = (browserLog + d).slice(-4000);
});
const toBrowser = browser.stdio[3];
const fromBrowser = browser.stdio[4];

let nextId = 1;
const pending = new Map();
const listeners = [];
let buffer = Buffer.alloc(0);
fromBrowser.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  let end;
  while ((end = buffer.indexOf(0)) >= 0) {
    const text = buffer.subarray(0, end).toString("utf8");
    buffer = buffer.subarray(end + 1);
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      continue;
    }
    if (message.id !== undefined && pending.has(message.id)) {
      const { ok, fail, method } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) fail(new Error(`${method}: ${message.error.message}`));
      else ok(message.result);
    } else if (message.method) {
      for (const listener of listeners) listener(message);
    }
  }
});

function send(method, params = {}, sessionId = undefined) {
  const id = nextId++;
  const message = { id, method, params };
  if (sessionId) message.sessionId = sessionId;
  return new Promise((ok, fail) => {
    pending.set(id, { ok, fail, method });
    toBrowser.write(JSON.stringify(message) + "\0");
  });
}

function waitFor(method, sessionId) {
  return new Promise((ok) => {
    listeners.push((m) => {
      if (m.method === method && m.sessionId === sessionId) ok(m.params);
    });
  });
}

// Prints the verdict, closes the browser (killed if it has not gone within 3 s), removes its
// profile once it has exited, and exits.
let finished = false;
function finish(status, lines) {
  if (finished) return;
  finished = true;
  clearTimeout(deadline);
  for (const line of lines) console.log(line);
  process.exitCode = status;
  const done = () => {
    try {
      // Its helper processes may still be writing there for a moment.
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch {
      // A profile left in the temporary directory is not worth failing over.
    }
    process.exit(status);
  };
  if (browser.exitCode !== null || browser.signalCode !== null) return done();
  browser.once("exit", done);
  setTimeout(() => browser.kill("SIGKILL"), 3000).unref();
  setTimeout(done, 6000).unref();
  try {
    toBrowser.write(JSON.stringify({ id: nextId++, method: "Browser.close" }) + "\0");
  } catch {
    browser.kill("SIGKILL");
  }
}

const deadline = setTimeout(() => {
  finish(1, [`check: ${page}: no answer from the browser within ${timeoutMs} ms`, browserLog]);
}, timeoutMs);
browser.on("exit", (code, signal) => {
  if (!finished) finish(2, [`check: the browser exited (${code ?? signal})`, browserLog]);
});
browser.on("error", (e) => finish(2, [`check: cannot start ${chromium}: ${e.message}`]));

// ------------------------------------------------------------------ what each page must show

// Runs in the page: returns { problems: [...], seen: "..." }.
function inspectTimeline(required) {
  const problems = [];
  const all = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const svg = document.querySelector("svg.timeline");
  if (!svg) return { problems: ["no svg.timeline"], seen: "" };
  const box = svg.getBoundingClientRect();
  if (box.width < 100 || box.height < 100) problems.push(`the svg is ${box.width}x${box.height}`);

  // Round ticks: 0, then equal steps of 1, 2 or 5 x 10^k in the unit shown.
  const labels = all("g.axis g.tick text").map((t) => t.textContent.trim());
  problems.push(...roundTicks(labels, "time axis"));

  problems.push(...textsInside(svg, "timeline"));

  const holds = all("g.hold");
  if (holds.length === 0) problems.push("no holder bar (g.hold)");
  for (const h of holds) {
    const r = h.querySelector("rect");
    if (!r || r.getBBox().width <= 0) problems.push(`an empty holder bar for ${h.dataset.client}`);
  }

  // Legend: every mark drawn has an entry, and every entry names something drawn.
  const legend = svg.querySelector("g.legend");
  if (!legend) problems.push("no legend (g.legend)");
  const entries = legend ? all("g.legend-entry", legend) : [];
  const key = (mark, attr) => mark + (attr ? `:${attr}` : "");
  const listed = new Set(
    entries.map((e) => key(e.dataset.mark, e.dataset.client ?? e.dataset.fault)),
  );
  const drawn = new Set();
  for (const h of holds) {
    drawn.add(key("holder", h.dataset.client));
    if (h.dataset.open === "true") drawn.add("open-hold");
  }
  if (all("g.hold .token").length > 0) drawn.add("token");
  for (const f of all("g.fault")) drawn.add(key("fault", f.dataset.fault));
  if (all("rect.fault-span").length > 0) drawn.add("fault-span");
  for (const m of all("text.mark")) drawn.add(m.dataset.mark);
  if (all("rect.violation").length > 0) drawn.add("violation");
  for (const d of drawn) if (!listed.has(d)) problems.push(`drawn but not in the legend: ${d}`);
  for (const l of listed) if (!drawn.has(l)) problems.push(`in the legend but not drawn: ${l}`);

  // The legend is inside the picture and its entries do not overlap.
  const svgBox = svg.getBoundingClientRect();
  const boxes = entries.map((e) => [e, e.getBoundingClientRect()]);
  for (const [e, b] of boxes) {
    if (b.left < svgBox.left - 1 || b.right > svgBox.right + 1 || b.bottom > svgBox.bottom + 1) {
      problems.push(`legend entry '${e.textContent}' lies outside the picture`);
    }
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i][1], boxes[j][1]];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) {
        problems.push(`legend entries overlap: '${boxes[i][0].textContent}' and '${boxes[j][0].textContent}'`);
      }
    }
  }

  for (const r of required) {
    const [mark, arg] = r.split(":");
    if (mark === "holders") {
      const n = new Set(holds.map((h) => h.dataset.client)).size;
      if (n < Number(arg)) problems.push(`${n} holder(s), expected at least ${arg}`);
    } else if (!drawn.has(key(mark, arg))) {
      problems.push(`required but not drawn: ${r}`);
    }
  }
  const seen = `${holds.length} hold(s), ${labels.length} ticks (${labels[1] ?? ""} apart), legend: ${[...listed].join(", ")}`;
  return { problems, seen };
}

function inspectBench() {
  const problems = [];
  const all = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const rows = all("table tr").slice(1);
  if (rows.length === 0) problems.push("no target row in the table");
  const targets = rows.map((r) => r.cells[0]?.textContent.trim() ?? "");
  const legend = document.querySelector(".legend");
  if (!legend) problems.push("no legend (.legend)");
  const listed = legend ? all(".legend-entry", legend).map((e) => e.dataset.target) : [];
  for (const t of targets) if (!listed.includes(t)) problems.push(`target ${t} not in the legend`);
  for (const l of listed) if (!targets.includes(l)) problems.push(`legend names ${l}, not in the table`);
  const measured = all(".legend-entry[data-measured='true']").length;

  const throughput = document.querySelector("svg.throughput");
  const latency = document.querySelector("svg.latency");
  if (!throughput) problems.push("no throughput chart (svg.throughput)");
  if (!latency) problems.push("no latency chart (svg.latency)");
  if (throughput) {
    const bars = all("rect.bar", throughput).length;
    if (bars !== measured) problems.push(`${bars} throughput bar(s) for ${measured} measured target(s)`);
    problems.push(...roundTicks(all("g.tick text", throughput).map((t) => t.textContent.trim()), "throughput axis"));
  }
  if (latency) {
    const lines = all("polyline", latency).length;
    if (lines !== measured) problems.push(`${lines} latency curve(s) for ${measured} measured target(s)`);
    problems.push(...roundTicks(all("g.tick text", latency).map((t) => t.textContent.trim()), "latency axis"));
  }
  for (const svg of all("svg")) {
    const b = svg.getBoundingClientRect();
    if (b.width < 100 || b.height < 20) problems.push(`an svg of ${b.width}x${b.height}`);
    problems.push(...textsInside(svg, svg.getAttribute("class") ?? "svg"));
  }
  const seen = `${targets.length} target(s): ${targets.join(", ")}; legend: ${listed.join(", ")}`;
  return { problems, seen };
}

// Shared by both: labels such as `0 ms, 200 ms`, `0 s, 1 s` or `0, 20000` start at 0 and go
// up in equal steps of 1, 2 or 5 x 10^k, all in one unit.
function roundTicks(labels, axis) {
  if (labels.length < 2) return [`${axis}: ${labels.length} tick(s)`];
  const all = labels.join(", ");
  const parsed = labels.map((l) => /^(\d+(?:\.\d+)?)(?: (µs|ms|s))?$/.exec(l));
  if (parsed.some((m) => m === null)) return [`${axis}: a tick label is not a number: ${all}`];
  if (new Set(parsed.map((m) => m[2] ?? "")).size !== 1) return [`${axis}: mixed units: ${all}`];
  const values = parsed.map((m) => Number(m[1]));
  if (values[0] !== 0) return [`${axis}: the first tick is ${labels[0]}, not 0: ${all}`];
  const step = values[1] - values[0];
  for (let i = 1; i < values.length; i++) {
    if (Math.abs(values[i] - values[i - 1] - step) > step * 1e-6) return [`${axis}: uneven ticks: ${all}`];
  }
  const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
  if (![1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6)) {
    return [`${axis}: a step of ${step} is not 1, 2 or 5 x 10^k: ${all}`];
  }
  return [];
}

// Shared by both: every text of an SVG lies inside it (a label cut at the edge is a bug).
function textsInside(svg, what) {
  const box = svg.getBoundingClientRect();
  const problems = [];
  for (const t of svg.querySelectorAll("text")) {
    const b = t.getBoundingClientRect();
    if (b.width === 0) continue;
    if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1) {
      problems.push(`${what}: the text '${t.textContent}' runs out of the picture`);
    }
  }
  return problems;
}

// ------------------------------------------------------------------ the run

async function main() {
  const errors = [];
  listeners.push((m) => {
    if (m.method === "Runtime.exceptionThrown") {
      const d = m.params.exceptionDetails;
      errors.push(`uncaught: ${d.exception?.description ?? d.text}`);
    } else if (m.method === "Runtime.consoleAPICalled" && ["error", "assert"].includes(m.params.type)) {
      errors.push(`console.${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description).join(" ")}`);
    } else if (m.method === "Log.entryAdded" && m.params.entry.level === "error") {
      errors.push(`${m.params.entry.source} error: ${m.params.entry.text}`);
    }
  });

  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const s = (method, params) => send(method, params, sessionId);
  await s("Runtime.enable");
  await s("Log.enable");
  await s("Page.enable");
  await s("Emulation.setDeviceMetricsOverride", {
    width: 1200,
    height: 900,
    deviceScaleFactor: 1,
    mobile: false,
  });
  const loaded = waitFor("Page.loadEventFired", sessionId);
  const nav = await s("Page.navigate", { url: pathToFileURL(resolve(page)).href });
  if (nav.errorText) throw new Error(`cannot open ${page}: ${nav.errorText}`);
  await loaded;
  // One frame after load, so layout (and any late console message) is done.
  await s("Runtime.evaluate", {
    expression: "new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))",
    awaitPromise: true,
  });

  const inspect = kind === "timeline" ? inspectTimeline : inspectBench;
  const result = await s("Runtime.evaluate", {
    // The functions are sent as source; the helpers are defined first so inspect can call them.
    expression: `(() => { ${roundTicks}; ${textsInside}; return (${inspect})(${JSON.stringify(required)}); })()`,
    returnByValue: true,
  });
  if (result.exceptionDetails) {
    throw new Error(`the check itself failed: ${result.exceptionDetails.exception?.description}`);
  }
  const { problems, seen } = result.result.value;

  if (screenshot) {
    const selector = kind === "timeline" ? "svg.timeline" : "body";
    const rect = await s("Runtime.evaluate", {
      expression: `(() => { const b = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
        return { x: b.left + scrollX, y: b.top + scrollY, width: b.width, height: b.height }; })()`,
      returnByValue: true,
    });
    const clip = { ...rect.result.value, scale: 1 };
    const shot = await s("Page.captureScreenshot", { format: "png", clip, captureBeyondViewport: true });
    writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
  }

  const lines = [];
  for (const e of errors) lines.push(`check: ${page}: ${e}`);
  for (const p of problems) lines.push(`check: ${page}: ${p}`);
  if (lines.length > 0) {
    lines.push(`check: ${page}: FAILED (${seen})`);
    finish(1, lines);
  } else {
    if (screenshot) lines.push(`check: wrote ${screenshot}`);
    lines.push(`check: ${page}: ok (${kind}: ${seen})`);
    finish(0, lines);
  }
}

main().catch((e) => finish(1, [`check: ${page}: ${e.message}`]));
