// Drives a real VS Code (code-server) in headless Chromium through what a person does with the
// extension. `node drive.mjs SCENARIO`:
//   attach-and-follow: set the token, see the paused worker, attach, read a value in the debug
//     console, continue; then follow the job's next breakpoint over the /dap WebSocket and
//     continue the whole job from the view.
//   child-sessions: start the workspace's launch configuration that follows a job with one
//     child session per worker; both ranks appear as sessions; continue the job from the view.
//   stacks-and-pause: show the merged stacks of a hung job (JOB_ID) in the Ray Stacks view,
//     see two ranks waiting in one frame, pause one of them from there; it shows up paused in
//     the Ray view; continue it from the view.
//   live-breakpoints: a gutter breakpoint on a live job's two running ranks, Pause from the
//     view; then the breakpoint made a capture point ("Edit Mode..."), its captures listed in
//     the Ray Captures view, and one opened from there as a read-only stop.
// Started by tests/e2e/test_vscode_extension.py, which runs the Ray job, the bridge and
// code-server, and checks afterwards that the job finished with the right results.
//
// Environment: CODE_SERVER_URL, WORKSPACE, BRIDGE_TOKEN, SETTINGS_FILE, SCREENSHOTS, CHROMIUM.
// Exit status 0 when every step was seen; otherwise 1, with a screenshot `failure-SCENARIO.png`.

import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`drive.mjs needs ${name}`);
  return value;
};
const workspace = env('WORKSPACE');
const screenshots = env('SCREENSHOTS');
const STEP_TIMEOUT = 60_000;

function say(text) {
  console.log(`${new Date().toISOString().slice(11, 23)} ${text}`);
}

/** True once the command palette is open and has the keyboard focus. */
function paletteFocused(page, timeout) {
  return page
    .waitForFunction(() => document.activeElement?.closest('.quick-input-widget') != null, null, { timeout })
    .then(() => true, () => false);
}

/**
 * Opens the quick input with `key` and types `text` into it. Looks before typing, as a person
 * does: text typed while the editor still has the focus lands in the open file. A press that the
 * page took before it was ready is pressed again.
 */
async function quickInput(page, key, text) {
  const input = page.locator('.quick-input-widget input');
  for (let press = 1; ; press++) {
    await page.keyboard.press(key);
    if (await paletteFocused(page, 5_000)) break;
    if (press === 3) throw new Error(`the quick input did not open for ${text}`);
  }
  await input.fill(text);
  if ((await input.inputValue()) !== text || !(await page.evaluate(() => document.activeElement?.closest('.quick-input-widget') != null))) {
    throw new Error(`the quick input lost ${text}`);
  }
}

async function runCommand(page, title) {
  await quickInput(page, 'F1', `>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

/**
 * Puts the cursor on `line` of the open file, and waits until the status bar says so: keys
 * typed into "Go to Line" before its box had the focus, or Enter pressed before it offered the
 * line, once left the cursor on line 1, and the breakpoint toggled next landed there.
 */
async function goToLine(page, line) {
  await quickInput(page, 'F1', `:${line}`);
  // Enter before the box offers the line is lost (the box stays open, the cursor on line 1).
  await page.locator('.quick-input-list .monaco-list-row', { hasText: `go to line ${line}` }).first().waitFor();
  await page.keyboard.press('Enter');
  await page.locator('.statusbar-item', { hasText: `Ln ${line}, Col` }).waitFor();
}

/** The debug console's answer to an expression, as shown. */
async function evaluate(page, expression, expected) {
  await runCommand(page, 'Debug Console: Focus on Debug Console View');
  const input = page.locator('.repl-input-wrapper .monaco-editor');
  await input.waitFor();
  await input.click();
  await page.keyboard.type(expression);
  await page.keyboard.press('Enter');
  const answer = page.locator('.repl .monaco-list-row .evaluation-result', { hasText: expected }).last();
  await answer.waitFor({ timeout: STEP_TIMEOUT });
  return answer.innerText();
}

/** The stop the Ray view lists for the job's worker (its row's label). */
async function nextStop(pane) {
  const row = pane.locator('.monaco-list-row[aria-label*="steps.py:"]').first();
  await row.waitFor({ timeout: STEP_TIMEOUT });
  return row.getAttribute('aria-label');
}

function setUserSetting(key, value) {
  const file = env('SETTINGS_FILE');
  const settings = JSON.parse(readFileSync(file, 'utf8'));
  settings[key] = value;
  writeFileSync(file, JSON.stringify(settings, null, 2));
}

/** The Ray view, opened; with the token set through the command, as a person does. */
async function openRayViewWithToken(page) {
  await runCommand(page, 'View: Show Run and Debug');
  const ray = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Ray(?! Stacks| Captures)/ }) });
  await ray.waitFor();
  if ((await ray.locator('.pane-header').getAttribute('aria-expanded')) === 'false') await ray.locator('.pane-header').click();
  await ray.getByText('The raydap bridge did not accept the token.').waitFor();
  await page.locator('.statusbar-item', { hasText: 'Ray: token refused' }).waitFor();
  say('without a token the view says the token was refused');
  await runCommand(page, 'Ray: Set Bridge Token');
  const secret = page.locator('.quick-input-widget input[type="password"]');
  await secret.waitFor();
  await secret.fill(env('BRIDGE_TOKEN'));
  await page.keyboard.press('Enter');
  return ray;
}

/** Click an inline button of a tree row. VS Code shows it only while the row is hovered, and
 * a row whose record changes (a paused time counting) is redrawn under a still mouse, hidden
 * again: so hover and try, again until it is clicked. */
async function clickInline(row, name, within = 60_000) {
  const deadline = Date.now() + within;
  for (;;) {
    await row.hover();
    try {
      await row.getByRole('button', { name }).click({ timeout: 2_000 });
      return;
    } catch (error) {
      if (error?.name !== 'TimeoutError' || Date.now() > deadline) throw error;
    }
  }
}

/** Click a button of the job's row, then wait for `done`. A record that changes as the
 * button is clicked redraws the row, and VS Code then runs the command without its row: it
 * asks which job, and a person picks it. */
async function onJobRow(page, job, button, done) {
  const jobId = ((await job.getAttribute('aria-label')) ?? '').match(/^Job (\w+)/)?.[1];
  await clickInline(job, button);
  const asked = page.locator('.quick-input-widget', { hasText: 'Which job?' });
  await done.or(asked).first().waitFor();
  if (await asked.isVisible()) {
    await asked.locator('.monaco-list-row', { hasText: jobId ?? '' }).first().click();
    say(`the view asked which job for ${button} (its row was redrawn as it was clicked): picked it`);
  }
  await done.waitFor();
}

async function continueJobFromView(page, ray) {
  const job = ray.locator('.monaco-list-row', { hasText: /^Job / }).first();
  await onJobRow(page, job, 'Continue Job', page.locator('.statusbar-item', { hasText: 'Ray: 0 paused' }));
  say('continued the job from the view: nothing is paused any more');
}

async function attachAndFollow(page) {
  const ray = await openRayViewWithToken(page);
  // 1. The paused worker is listed, with where it stopped.
  const worker = ray.locator('.monaco-list-row', { hasText: 'steps.py:3' }).first();
  await worker.waitFor();
  const row = await worker.getAttribute('aria-label');
  if (!row?.startsWith('step, steps.py:3')) throw new Error(`the worker's row reads ${row}`);
  await page.locator('.statusbar-item', { hasText: 'Ray: 1 paused' }).waitFor();
  say(`the view lists the worker: ${row}`);

  // 2. Attach (DAP over TCP): the call stack shows the paused frame, in the workspace's file.
  // The row shows how long the worker has been paused, so it is redrawn every second: a click
  // as it is redrawn runs Attach without its row, and VS Code asks which worker (as for a job).
  const frame = page.locator('.debug-call-stack .monaco-list-row', { hasText: 'train_step' }).first();
  await clickInline(worker, 'Attach');
  const asked = page.locator('.quick-input-widget', { hasText: 'Attach to which paused worker?' });
  await frame.or(asked).first().waitFor();
  if (await asked.isVisible()) {
    await asked.locator('.monaco-list-row', { hasText: 'steps.py:3' }).first().click();
    say('the view asked which worker to attach to (its row was redrawn as it was clicked): picked it');
  }
  await frame.waitFor();
  const frameText = (await frame.innerText()).replace(/\s+/g, ' ');
  if (!frameText.includes('steps.py') || !frameText.includes('3:')) throw new Error(`the frame reads ${frameText}`);
  const folder = basename(workspace);
  const tab = page.locator(`.tabs-container .tab.active .${folder}-name-dir-icon.steps\\.py-name-file-icon`);
  await tab.waitFor(); // the editor opened steps.py from the workspace, not from _ray_pkg_<hash>
  say(`attached: the call stack shows ${frameText}, opened from ${folder}/`);

  // 3. The debug console evaluates in the worker.
  const answer = await evaluate(page, 'loss * 8', '8.0');
  say(`the debug console says loss * 8 = ${answer}`);
  await page.locator('.debug-view-content .monaco-list-row', { hasText: 'loss' }).first().waitFor();
  await page.screenshot({ path: join(screenshots, 'vscode-paused-session.png') });

  // 4. Continue from the debug toolbar; then end this session.
  await page.locator('.debug-toolbar [aria-label^="Continue"]').click();
  await page.locator('.debug-toolbar [aria-label^="Disconnect"]').click();
  await page.locator('.debug-toolbar').waitFor({ state: 'hidden' });
  say('continued and disconnected');

  // 5. The job's next breakpoint, followed over the /dap WebSocket, then the whole job continued.
  setUserSetting('raydap.transport', 'websocket');
  const job = ray.locator('.monaco-list-row', { hasText: /^Job / }).first();
  // Following the job joins its next stop whenever it comes: step(1)'s breakpoint(), on this
  // worker or another. (Waiting for the view to list a stop other than the first was racy:
  // the same worker stopping at the same line again reads the same in the view.)
  const nextFrame = page.locator('.debug-call-stack .monaco-list-row', { hasText: 'train_step' }).first();
  await onJobRow(page, job, 'Follow Job', nextFrame);
  say(`the view lists the next stop: ${await nextStop(ray)}`);
  const second = await evaluate(page, 'n + 100', '101');
  say(`following the job over WebSocket: the second stop has n + 100 = ${second}`);
  await page.screenshot({ path: join(screenshots, 'vscode-follow-job.png') });
  await continueJobFromView(page, ray);
}

async function childSessions(page) {
  const ray = await openRayViewWithToken(page);
  await ray.locator('.monaco-list-row', { hasText: /^Job .*2 paused/ }).waitFor();
  say('the view lists both ranks of the job');
  // Clicking a worker reveals where it stopped, in the workspace's copy of the file.
  await ray.locator('.monaco-list-row', { hasText: 'steps.py:3' }).first().click();
  await page.locator(`.tabs-container .tab.active .${basename(workspace)}-name-dir-icon.steps\\.py-name-file-icon`).waitFor();
  await page.locator('.statusbar-item', { hasText: /^Ln 3, Col 1$/ }).waitFor(); // the cursor is on line 3
  say('clicking a rank revealed steps.py:3 from the workspace');
  await runCommand(page, 'Debug: Select and Start Debugging');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Ray: ranks' }).first().click();
  // One child session per rank, each named after its worker, each stopped in train_step.
  const rows = page.locator('.debug-call-stack .monaco-list-row');
  const labels = () => rows.evaluateAll((found) => found.map((r) => r.getAttribute('aria-label') ?? ''));
  const deadline = Date.now() + STEP_TIMEOUT;
  let names = [];
  while ((names = (await labels()).filter((l) => /session rank \(pid \d+/i.test(l))).length < 2) {
    if (Date.now() > deadline) throw new Error(`the call stack shows ${JSON.stringify(await labels())}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  say(`one child session per rank: ${names.join(' | ')}`);
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: 'train_step' }).first().waitFor();
  await continueJobFromView(page, ray);
}

async function stacksAndPause(page) {
  const ray = await openRayViewWithToken(page);
  await page.locator('.statusbar-item', { hasText: 'Ray: 0 paused' }).waitFor();
  // The bridge's hang watch calls the job hung: a warning names the straggler, and its button
  // (Show and the straggler) opens the job's merged stacks at it.
  const notice = page.locator('.notification-toast', { hasText: `Ray job ${env('JOB_ID')} looks hung` });
  await notice.waitFor();
  const text = (await notice.textContent()) ?? '';
  if (!/Straggler: .* in compute/.test(text)) throw new Error(`the hang notification reads ${text}`);
  say(`a notification says the job looks hung: ${text.slice(0, 160)}`);
  const show = notice.getByRole('button', { name: /^Show / });
  const straggler = ((await show.textContent()) ?? '').replace(/^Show /, '').trim();
  await show.click();
  const stacks = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Ray Stacks/ }) });
  // Room for the whole tree: the Run pane folded away (the tree is virtual: rows out of
  // view are not in the page).
  const fold = async (header, expanded) => {
    await header.waitFor();
    if ((await header.getAttribute('aria-expanded')) === String(!expanded)) await header.click();
  };
  await fold(page.locator('.pane-header', { hasText: /^Run$/ }), false);
  await fold(ray.locator('.pane-header'), false);
  // The command focuses the view; VS Code has been seen to leave it folded all the same when
  // the job's quick pick was still closing: unfold it, as a person would.
  await fold(stacks.locator('.pane-header'), true);
  const waiting = stacks.locator('.monaco-list-row', { hasText: 'wait_for_peers' }).first();
  await waiting.waitFor();
  const label = await waiting.getAttribute('aria-label');
  if (!/hung\.py:\d+ · 2 of 3/.test(label ?? '')) throw new Error(`the waiting frame reads ${label}`);
  await stacks.locator('.monaco-list-row', { hasText: 'compute' }).first().waitFor();
  say(`the stacks view merges the waiting ranks: ${label}`);
  // Opened at the straggler: its row, under the frame where its stack ends, is selected.
  const selected = stacks.locator('.monaco-list-row.selected', { hasText: 'stack ends here' });
  await selected.waitFor();
  const chosen = (await selected.getAttribute('aria-label')) ?? '';
  if (!chosen.includes(straggler)) throw new Error(`the stacks opened at ${chosen}, not ${straggler}`);
  say(`the notification's button opened the stacks at the straggler: ${chosen}`);
  // The ranks of that frame are listed under its innermost frame; pause the first one.
  const rank = stacks.locator('.monaco-list-row', { hasText: 'stack ends here' }).first();
  await rank.waitFor();
  await rank.click(); // selected: its inline actions show
  await rank.getByRole('button', { name: 'Pause Worker' }).click();
  await page.locator('.statusbar-item', { hasText: 'Ray: 1 paused' }).waitFor();
  await fold(ray.locator('.pane-header'), true);
  await ray.locator('.monaco-list-row', { hasText: 'rank' }).first().waitFor();
  say('paused one rank from the stacks view: the Ray view lists it');
  await continueJobFromView(page, ray);
}

async function liveBreakpoints(page) {
  const ray = await openRayViewWithToken(page);
  // 1. The live job's two ranks are listed running: nothing has paused them.
  await ray.locator('.monaco-list-row', { hasText: /^Job .*0 paused · 2 running/ }).waitFor();
  const running = ray.locator('.monaco-list-row', { hasText: /^Rank\.run.*running/ });
  say(`the view lists the running ranks: ${await running.first().getAttribute('aria-label')}`);

  // 2. A breakpoint in the gutter of the workspace's loop.py, on code with no breakpoint().
  await quickInput(page, 'Control+P', 'loop.py');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'loop.py' }).first().click();
  await page.locator('.tabs-container .tab.active', { hasText: 'loop.py' }).waitFor();
  await goToLine(page, 8);
  await runCommand(page, 'Debug: Toggle Breakpoint');
  const breakpoints = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Breakpoints/ }) });
  await breakpoints.locator('.monaco-list-row', { hasText: 'loop.py' }).waitFor();
  say('set a breakpoint on loop.py:8 in the editor');

  // 3. Following the job sends it to both ranks, and both stop there.
  const job = ray.locator('.monaco-list-row', { hasText: /^Job / }).first();
  await onJobRow(page, job, 'Follow Job', page.locator('.statusbar-item', { hasText: 'Ray: 2 paused' }));
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: 'spin' }).first().waitFor();
  // Verified once the workers have it: a filled dot, not the hollow one of an unverified breakpoint.
  await breakpoints.locator('.monaco-list-row', { hasText: 'loop.py' }).locator('.codicon-debug-breakpoint').waitFor();
  const answer = await evaluate(page, 'steps > 0', 'True');
  say(`both ranks stopped at the editor's breakpoint, shown verified; the debug console says steps > 0 is ${answer}`);
  await page.screenshot({ path: join(screenshots, 'vscode-live-breakpoint.png') });

  // 4. Without it, they run on; Pause on a running rank's row stops that one where it is.
  await page.locator('.tabs-container .tab', { hasText: 'loop.py' }).click();
  await goToLine(page, 8);
  await runCommand(page, 'Debug: Toggle Breakpoint');
  await breakpoints.locator('.monaco-list-row', { hasText: 'loop.py' }).waitFor({ state: 'detached' });
  await continueJobFromView(page, ray);
  await ray.locator('.monaco-list-row', { hasText: /^Job .*0 paused · 2 running/ }).waitFor();
  const rank = running.first();
  await rank.click(); // selected: its inline actions show
  const pid = ((await rank.getAttribute('aria-label')) ?? '').match(/pid (\d+)/)?.[1];
  await rank.getByRole('button', { name: 'Pause Worker' }).click();
  // As for a job's row: the row redrawn as it is clicked runs Pause without it, and VS Code
  // asks which worker. A person answers with its id, which the follow session announced.
  const paused = page.locator('.statusbar-item', { hasText: 'Ray: 1 paused' });
  const asked = page.locator('.quick-input-widget', { hasText: 'Pause which running worker' });
  await paused.or(asked).first().waitFor();
  if (await asked.isVisible()) {
    const said = await page.locator('.repl').innerText();
    const id = said.match(new RegExp(`\\(pid ${pid} on [^)]*\\) \\((\\w+)\\)`))?.[1];
    if (!id) throw new Error(`no id announced for pid ${pid} in the debug console: ${said}`);
    await asked.locator('input').fill(id);
    await page.keyboard.press('Enter');
    say(`the view asked which worker to pause (its row was redrawn as it was clicked): gave ${id}`);
  }
  await paused.waitFor();
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: /Paused in Rank\.run/i }).waitFor();
  say('paused one running rank from the Ray view: the followed session shows where it is');
  await continueJobFromView(page, ray);

  // 5. The same line as a capture point: the breakpoint's "Edit Mode..." > "Capture (no stop)".
  //    Both ranks stop at it first (a breakpoint), then run on past it, captured each time.
  await page.locator('.tabs-container .tab', { hasText: 'loop.py' }).click();
  await goToLine(page, 8);
  await runCommand(page, 'Debug: Toggle Breakpoint');
  await page.locator('.statusbar-item', { hasText: 'Ray: 2 paused' }).waitFor();
  await breakpoints.locator('.monaco-list-row', { hasText: 'loop.py' }).click({ button: 'right' });
  // Chosen from the keyboard (the menu has the focus: Edit Condition..., then Edit Mode...):
  // Playwright did not always find the menu's items, though the menu was shown.
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  const capture = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Capture (no stop)' });
  await capture.waitFor();
  await capture.click();
  await continueJobFromView(page, ray);
  await ray.locator('.monaco-list-row', { hasText: /^Job .*0 paused · 2 running/ }).waitFor();
  say('made the breakpoint a capture point from its "Edit Mode...": both ranks run on');

  // 6. The Ray Captures view lists the point and what it took; a click opens one, read-only.
  const captures = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Ray Captures/ }) });
  const header = captures.locator('.pane-header');
  await header.waitFor();
  if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
  // The point's row says how many it took: two at least, one of each rank (the view reads the
  // bridge again as captures come). Rows of other captures (a failed task's) may be there too.
  const point = captures.getByRole('treeitem', { name: /^loop\.py:8, ([2-9]|\d\d+) captured/ });
  await point.waitFor().catch(async (error) => {
    throw new Error(`${error.message}\nthe Ray Captures view showed:\n${await captures.innerText()}`);
  });
  const taken = captures.locator('.monaco-list-row', { hasText: /(rank|pid) \d+ · \d\d:\d\d:\d\d/ });
  say(`the Ray Captures view lists the point and its captures: ${await point.getAttribute('aria-label')}`);
  await taken.first().click();
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: /capture point cp-[0-9a-f]+, hit \d+/i }).waitFor();
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: 'spin' }).first().waitFor();
  const flag = await evaluate(page, 'flag', 'done.flag');
  say(`opened a capture from the view: stopped at the capture point's hit in spin, where flag was ${flag}`);
  await page.screenshot({ path: join(screenshots, 'vscode-captures.png') });
  // The capture's session, then the job's. The toolbar goes the moment the last one ends, maybe
  // between seeing it and clicking it: what is checked is that it is gone at the end.
  const toolbar = page.locator('.debug-toolbar');
  for (let session = 0; session < 3 && (await toolbar.isVisible()); session++) {
    await toolbar.locator('[aria-label^="Disconnect"]').click({ timeout: 5_000 }).catch(() => undefined);
    await page.waitForTimeout(500);
  }
  await toolbar.waitFor({ state: 'hidden' });
}

const SCENARIOS = {
  'live-breakpoints': liveBreakpoints,
  'attach-and-follow': attachAndFollow,
  'child-sessions': childSessions,
  'stacks-and-pause': stacksAndPause,
};
const scenario = process.argv[2] ?? '';
if (!(scenario in SCENARIOS)) throw new Error(`drive.mjs ${Object.keys(SCENARIOS).join('|')}`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
page.setDefaultTimeout(STEP_TIMEOUT);
try {
  await page.goto(`${env('CODE_SERVER_URL')}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor();
  say('VS Code is up');
  await SCENARIOS[scenario](page);
} catch (error) {
  await page.screenshot({ path: join(screenshots, `failure-${scenario}.png`) }).catch(() => undefined);
  console.error(`FAILED: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
