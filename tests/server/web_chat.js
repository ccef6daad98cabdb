// Drives the server's chat page in headless Chromium (the system browser through playwright-core):
// sends a message and records how the reply's text grew (streamed text arrives in several pieces), then
// starts a long reply and presses Stop mid-stream. Prints one JSON object for the Python test to check.
//   node tests/server/web_chat.js http://127.0.0.1:PORT [api-key]
"use strict";
const { chromium } = require("playwright-core");

const url = process.argv[2];
const apiKey = process.argv[3] || "";
const executablePath = process.env.HFS_CHROMIUM || "/usr/bin/chromium";

// Records every distinct length the newest assistant bubble's text takes, as the page updates it.
function watchReply() {
  window.__lengths = [];
  const log = document.getElementById("log");
  new MutationObserver(() => {
    const bubbles = log.querySelectorAll(".assistant");
    const last = bubbles[bubbles.length - 1];
    const n = last ? last.textContent.length : 0;
    const seen = window.__lengths;
    if (seen.length === 0 || seen[seen.length - 1] !== n) seen.push(n);
  }).observe(log, { childList: true, subtree: true, characterData: true });
}

async function main() {
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  const out = {};
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url);
    out.title = await page.title();
    await page.waitForFunction(() => document.getElementById("model").textContent !== "…");
    out.model = await page.textContent("#model");
    if (apiKey) await page.fill("#api-key", apiKey);
    await page.fill("#temperature", "0");

    // A short reply: streamed in pieces, complete when Send is enabled again.
    await page.fill("#max-tokens", "40");
    await page.evaluate(watchReply);
    await page.fill("#input", "Once upon a time");
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled &&
                                     document.querySelectorAll(".assistant").length === 1, null, { timeout: 60000 });
    out.reply = await page.textContent(".assistant");
    out.lengths = await page.evaluate(() => window.__lengths);
    out.status = await page.textContent("#status");

    // A long reply stopped mid-stream: Stop once some text has arrived.
    await page.click("#new-chat");
    await page.fill("#max-tokens", "100000");
    await page.evaluate(watchReply);
    await page.fill("#input", "Tell me a long story");
    await page.click("#send");
    await page.waitForFunction(() => {
      const b = document.querySelector(".assistant");
      return b && b.textContent.length > 20;
    }, null, { timeout: 60000 });
    await page.click("#stop");
    await page.waitForFunction(() => !document.getElementById("send").disabled, null, { timeout: 10000 });
    out.stopped_status = await page.textContent("#status");
    out.stopped_reply_length = (await page.textContent(".assistant")).length;
    // The reply stays as it was once stopped.
    await page.waitForTimeout(500);
    out.after_stop_length = (await page.textContent(".assistant")).length;
    out.page_errors = errors;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
