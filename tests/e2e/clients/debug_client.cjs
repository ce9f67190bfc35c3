// Microsoft's DebugClient (@vscode/debugadapter-testsupport, what VS Code's own debug adapters
// are tested with) against the bridge, as an editor would use it.
//
//   node debug_client.cjs tcp|stdio single|follow CONFIG_JSON
//
// tcp connects to the bridge's DAP port; stdio starts `raydap dap` as the debug adapter.
// CONFIG: {"clients": dir of its node_modules, "port", "raydap", "token", "breakpoint", "job"}.
// Prints one JSON line of what it saw; exits non-zero with the reason on any failure.
"use strict";

const assert = require("node:assert/strict");
const path = require("node:path");

const [mode, scenario, configJson] = process.argv.slice(2);
const config = JSON.parse(configJson);
const { DebugClient } = require(
  path.join(config.clients, "node_modules", "@vscode", "debugadapter-testsupport"),
);

const client =
  mode === "tcp"
    ? new DebugClient("unused", "unused", "ray")
    : new DebugClient(config.raydap, "dap", "ray", { env: process.env });

// DebugClient.waitForEvent only sees events after it is called: keep every event instead.
const events = [];
const watched = ["initialized", "stopped", "continued", "thread", "terminated", "output", "process", "breakpoint"];
for (const name of watched) client.on(name, (e) => events.push(e));

async function waitFor(name, where = () => true, timeout = 60000, after = 0) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const found = events.slice(after).find((e) => e.event === name && where(e));
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no ${name} event in ${timeout} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function attach(args, configure = async () => {}) {
  await client.start(mode === "tcp" ? config.port : undefined);
  await client.initializeRequest({
    adapterID: "ray", clientID: "debugclient", linesStartAt1: true, columnsStartAt1: true,
    pathFormat: "path",
  });
  if (mode === "tcp") args.token = config.token; // `raydap dap` adds it by itself
  const attached = client.attachRequest(args);
  await waitFor("initialized");
  await configure();
  await client.configurationDoneRequest();
  await attached;
}

async function evaluate(frameId, expression) {
  const answer = await client.evaluateRequest({ expression, frameId, context: "repl" });
  return answer.body.result;
}

async function single() {
  // As an editor attaches: its gutter breakpoint (on the line after the worker's breakpoint())
  // is sent before configurationDone, before any worker is in the session.
  let given;
  await attach({ breakpoint: config.breakpoint }, async () => {
    const source = { path: config.path };
    given = (await client.setBreakpointsRequest({ source, breakpoints: [{ line: config.then }] })).body.breakpoints[0];
  });
  const verified = await waitFor("breakpoint", (e) => e.body.breakpoint.id === given.id && e.body.breakpoint.verified);
  const stopped = await waitFor("stopped");
  const threadId = stopped.body.threadId;
  const threads = (await client.threadsRequest()).body.threads;
  const frames = (await client.stackTraceRequest({ threadId })).body.stackFrames;
  const y = await evaluate(frames[0].id, "y");
  const after = events.length;
  await client.continueRequest({ threadId });
  const hit = await waitFor("stopped", () => true, 60000, after);
  const then = (await client.stackTraceRequest({ threadId: hit.body.threadId })).body.stackFrames[0].line;
  await client.continueRequest({ threadId: hit.body.threadId });
  await waitFor("terminated");
  return {
    threads: threads.length, function: frames[0].name, line: frames[0].line, y,
    given: given.verified, verifiedLine: verified.body.breakpoint.line, hit: hit.body.hitBreakpointIds[0] === given.id, then,
  };
}

async function follow() {
  await attach({ follow: { job: config.job } });
  const stops = [];
  for (let i = 0; i < 4; i++) {
    const seen = new Set(stops.map((s) => s.body.threadId));
    stops.push(await waitFor("stopped", (e) => !seen.has(e.body.threadId)));
  }
  const started = events.filter((e) => e.event === "thread" && e.body.reason === "started");
  for (const stop of stops) {
    const announced = events.findIndex(
      (e) => e.event === "thread" && e.body.threadId === stop.body.threadId,
    );
    assert.ok(announced >= 0 && announced < events.indexOf(stop), "thread announced first");
  }
  const [first, ...others] = stops;
  const answer = await client.continueRequest({ threadId: first.body.threadId });
  const stillStopped = (await client.threadsRequest()).body.threads.map((t) => t.id);
  const other = others[0].body.threadId;
  const frames = (await client.stackTraceRequest({ threadId: other })).body.stackFrames;
  const rank = await evaluate(frames[0].id, "self.rank");
  const resumed = await client.customRequest("raydapContinueAll");
  await waitFor("terminated");
  return {
    stopped: stops.length,
    started: started.length,
    allThreadsContinued: answer.body.allThreadsContinued,
    othersStillListed: others.every((s) => stillStopped.includes(s.body.threadId)),
    rank,
    continuedByAll: resumed.body.continued.length,
  };
}

const scenarios = { single, follow };
scenarios[scenario]()
  .then((seen) => {
    console.log(JSON.stringify(seen));
    client.stopAdapter();
    process.exit(0);
  })
  .catch((error) => {
    console.error(`${scenario} over ${mode}: ${error.stack || error}`);
    console.error(JSON.stringify(events, null, 1).slice(-4000));
    process.exit(1);
  });
