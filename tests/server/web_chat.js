// Drives the server's chat page in headless Chromium (the system browser through playwright-core):
// sends a message and records how the reply's text grew (streamed text arrives in several pieces), then
// starts a long reply and presses Stop mid-stream; then an error that arrives mid-stream (the server's
// answer replaced by one ending in a data: {"error"} event), the next turn's request (the error is not in
// it), and a conversation that outgrows the context (the page says so; dropping the oldest turn lets the
// message through). Prints one JSON object for the Python test to check.
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

    // Every request the page sends from here on, recorded; the first answered by a stream that fails after
    // one piece of text, as the server's stream does when generation fails mid-answer.
    const sent = [];
    let fail_next = true;
    await page.route("**/v1/chat/completions", async (route) => {
      sent.push(JSON.parse(route.request().postData()));
      if (!fail_next) return route.continue();
      fail_next = false;
      const events = [
        { choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
        { choices: [{ index: 0, delta: { content: "Half an answer" }, finish_reason: null }] },
        { error: { message: "generation failed: the step failed", type: "server_error", param: null,
                   code: "generation_failed" } },
      ];
      await route.fulfill({ status: 200, contentType: "text/event-stream",
                            body: events.map((e) => "data: " + JSON.stringify(e) + "\n\n").join("") + "data: [DONE]\n\n" });
    });
    await page.click("#new-chat");
    await page.fill("#max-tokens", "8");
    await page.fill("#input", "First question");
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled, null, { timeout: 10000 });
    out.midstream_bubble = await page.textContent(".assistant");
    out.midstream_bubble_is_error = await page.evaluate(() => document.querySelector(".assistant").classList.contains("error"));
    out.midstream_status = await page.textContent("#status");
    await page.fill("#input", "Second question");
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled &&
                                     document.querySelectorAll(".assistant").length === 2, null, { timeout: 60000 });
    out.after_error_request = sent[1];
    out.after_error_status = await page.textContent("#status");

    // Outgrowing the context (256 tokens): a long first turn, then a second that no longer fits with it.
    await page.click("#new-chat");
    await page.fill("#max-tokens", "40");
    await page.fill("#input", "Once upon a time there was a little girl named Lily. ".repeat(8));
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled, null, { timeout: 60000 });
    await page.fill("#input", "One day, a big dog came to the park to play with the ball. ".repeat(6));
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("send").disabled, null, { timeout: 60000 });
    out.overflow_status = await page.textContent("#status");
    out.overflow_bubble = await page.evaluate(() => { const b = document.querySelectorAll(".assistant"); return b[b.length - 1].textContent; });
    out.overflow_offers_drop = await page.isEnabled(".drop-oldest");
    const before = sent.length;
    await page.click(".drop-oldest");
    await page.waitForFunction((n) => !document.getElementById("send").disabled && document.querySelectorAll(".assistant").length === 2,
                               null, { timeout: 60000 });
    out.retry_request = sent[before];
    out.retry_status = await page.textContent("#status");
    out.retry_errors = await page.evaluate(() => document.querySelectorAll(".assistant.error").length);
    out.dropped = await page.evaluate(() => document.querySelectorAll(".dropped").length);
    out.page_errors = errors;
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
