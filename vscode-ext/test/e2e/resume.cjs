// The extension's debug adapter (compiled: `npm test` builds out/) as VS Code drives it: DAP
// messages in through handleMessage, out through onDidSendMessage. tests/e2e/test_replace.py
// runs it against a real bridge that it replaces half-way. One JSON line out per step; the
// test answers the first with a line once the bridge was replaced.
//
//   node resume.cjs tcp|websocket HOST:PORT|WS-URL TOKEN JOB-ID

const readline = require('node:readline');

const { BridgeDebugAdapter } = require('../../out/src/bridgeDebugAdapter.js');
const { overTcp, overWebSocket } = require('../../out/src/dapTransport.js');

const [transport, where, token, job] = process.argv.slice(2);
const connect =
  transport === 'tcp'
    ? overTcp(where.slice(0, where.lastIndexOf(':')), Number(where.slice(where.lastIndexOf(':') + 1)))
    : overWebSocket(where, token);
const adapter = new BridgeDebugAdapter(connect);
const events = [];
const answers = new Map();
let waiting = [];
let seq = 1;

adapter.onDidSendMessage((message) => {
  if (message.type === 'response') answers.get(message.request_seq)?.(message);
  else events.push(message);
  for (const wake of waiting.splice(0)) wake();
});

function request(command, args = {}) {
  const mine = seq++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${command}`)), 60_000);
    answers.set(mine, (answer) => {
      clearTimeout(timer);
      if (answer.success) resolve(answer.body ?? {});
      else reject(new Error(`${command}: ${answer.message}`));
    });
    adapter.handleMessage({ type: 'request', seq: mine, command, arguments: args });
  });
}

/** The index-th event (from 0) that matches, once it came. */
async function nth(index, matches, what) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const found = events.filter(matches);
    if (found.length > index) return found[index];
    if (Date.now() > deadline) throw new Error(`no ${what}`);
    await new Promise((wake) => {
      waiting.push(wake);
      setTimeout(wake, 1_000);
    });
  }
}

const stopped = (event) => event.event === 'stopped';

async function main() {
  await request('initialize', { adapterID: 'ray', clientID: 'vscode' });
  await request('attach', { follow: { job }, ...(transport === 'tcp' ? { token } : {}) });
  await request('configurationDone');
  const stops = [];
  for (let i = 0; i < 3; i++) stops.push((await nth(i, stopped, 'stop')).body.threadId);
  const [frame] = (await request('stackTrace', { threadId: stops[0] })).stackFrames;
  const evaluate = async () => (await request('evaluate', { expression: 'x, y', frameId: frame.id, context: 'repl' })).result;
  process.stdout.write(`${JSON.stringify({ stops, value: await evaluate() })}\n`);

  const lines = readline.createInterface({ input: process.stdin });
  await new Promise((replaced) => lines.once('line', replaced));
  await nth(0, (event) => event.event === 'output' && /reconnected/.test(event.body.output), 'reconnected');
  const value = await evaluate(); // the frame id from before the replace
  const threads = (await request('threads')).threads.map((thread) => thread.id);
  const replayed = [];
  for (let i = 3; i < 6; i++) replayed.push((await nth(i, stopped, 'replayed stop')).body.threadId);
  await request('raydapContinueAll');
  const terminated = events.filter((event) => event.event === 'terminated').length;
  process.stdout.write(`${JSON.stringify({ value, threads, replayed, terminated })}\n`);
  lines.close();
  adapter.dispose();
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
