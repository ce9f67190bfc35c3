// The worker view: one worker as a debugger shows it, through its own DAP session (dap.js):
// its source (read on its node, highlighted by Prism's tokenizer, every token put in as text),
// the call stack, scopes and variables read as they are opened, a console in the selected frame
// and the controls. Another tab on the same worker shares the worker's stop (the bridge sends
// both sessions the same events), so each follows what the other does.
'use strict';

const VARIABLES_PAGE = 100; // children shown at once; "show more" adds as many again
const HISTORY_MOST = 100;
const OUTPUT_MOST = 500; // console lines kept: a chatty worker's output drops its oldest

const view = {
  socket: null,
  record: null,
  threadId: null,
  frame: null,
  stops: 0, // stopped events seen: a step's response after its stop must not undo it
  history: [],
  historyAt: 0,
  sources: new Map(), // path -> text, for this session
  shownPath: null, // the file the source pane shows
};

// Breakpoints set in the gutter, per job and file: line -> condition (or null). They go to every
// live worker of the job (PUT /api/v1/line-breakpoints), so one set while looking at one rank
// stops them all.
const lineBreakpoints = new Map();

const CONTROLS = [
  ['continue', 'Continue'], ['pause', 'Pause'], ['next', 'Step over'], ['stepIn', 'Step in'],
  ['stepOut', 'Step out'],
];

function workerState(text) {
  $('worker-state').textContent = text;
}

function setControls(paused) {
  const capture = Boolean(view.record && view.record.capture);
  const allowed = me.runs_code && !capture;
  const why = capture ? 'a capture is read-only: its worker ran on'
    : `the token ${me.name} may only look: use a debug token`;
  for (const [command] of CONTROLS) {
    const button = $(`worker-${command}`);
    button.disabled = !allowed || (command === 'pause' ? paused : !paused);
    button.title = allowed ? '' : why;
  }
  const evaluates = me.runs_code; // a capture's console reads captured values, nothing runs
  $('worker-expression').disabled = !evaluates || !paused;
  $('worker-evaluate').disabled = !evaluates || !paused;
  $('worker-expression').placeholder = !evaluates ? 'a view token may only look'
    : view.record && view.record.capture ? 'a captured name, or a path into one (loss, batch.shape)'
      : 'an expression in the selected frame';
}

// A capture opened as its worker was, read-only (the bridge refuses what would move it).
function openCaptureView(capture) {
  const who = capture.rank === null || capture.rank === undefined ? capture.worker : `rank ${capture.rank}`;
  return openWorker({ id: capture.id, task_name: `capture of ${who}`, job_id: capture.job, live: false,
    state: 'paused', node_ip: capture.node, pid: capture.pid, capture: true }, { capture: capture.id });
}

async function openWorker(record, target = { breakpoint: record.id }) {
  closeWorker();
  view.record = record;
  view.sources.clear();
  view.threadId = null;
  view.shownPath = null;
  $('app').classList.add('viewing-worker');
  $('worker-view').hidden = false;
  $('worker-title').textContent = `${taskName(record)} ${record.id}`;
  $('worker-where').textContent = record.node_ip ? `pid ${record.pid} on ${record.node_ip}` : '';
  for (const id of ['worker-stack', 'worker-variables', 'worker-source', 'worker-output']) $(id).replaceChildren();
  setControls(false);
  workerState('attaching…');
  const socket = new DapSocket(onWorkerEvent, (why) => endWorker(`The session ended: ${why}`));
  view.socket = socket;
  try {
    await socket.connect();
    await socket.attach({ ...target, remoteSources: true });
  } catch (error) {
    if (view.socket === socket) endWorker(`Cannot attach: ${error.message}`);
    return;
  }
  if (view.socket !== socket || view.threadId !== null) return;
  workerState(record.state === 'paused' ? 'paused' : 'running');
  setControls(false);
}

function closeWorker() {
  if (view.socket) view.socket.close();
  view.socket = null;
  view.record = null;
  $('worker-view').hidden = true;
  $('app').classList.remove('viewing-worker');
}

function endWorker(why) {
  view.socket = null;
  workerState(why);
  setControls(false);
  for (const [command] of CONTROLS) $(`worker-${command}`).disabled = true;
}

function onWorkerEvent(event, body) {
  if (event === 'stopped') {
    view.stops += 1;
    showStop(body.threadId, body.description || body.reason || 'paused');
  } else if (event === 'continued') {
    view.frame = null;
    workerState('running');
    $('worker-stack').replaceChildren();
    $('worker-variables').replaceChildren();
    for (const line of document.querySelectorAll('#worker-source [aria-current]')) {
      line.removeAttribute('aria-current');
    }
    setControls(false);
  } else if (event === 'output' && body.output) {
    say(body.output.replace(/\n$/, ''), 'output');
  } else if (event === 'terminated' || event === 'exited') {
    endWorker('The worker left.');
  }
}

async function showStop(threadId, why) {
  view.threadId = threadId;
  const socket = view.socket;
  let frames;
  try {
    frames = (await socket.request('stackTrace', { threadId, startFrame: 0, levels: 200 })).stackFrames;
  } catch (error) {
    workerState(`paused; its stack cannot be read: ${error.message}`);
    return;
  }
  if (view.socket !== socket) return;
  workerState(`paused (${why})`);
  setControls(true);
  $('worker-stack').replaceChildren(...frames.map((frame, index) => el('li', {},
    el('button', { type: 'button', class: 'frame-button', 'aria-pressed': 'false', 'data-frame': String(frame.id),
      title: frame.source && frame.source.path ? `${frame.source.path}:${frame.line}` : '',
      onclick: () => selectFrame(frame) },
    el('span', { class: 'mono', text: frame.name }),
    el('span', { class: 'where mono', text: frame.source && frame.source.path
      ? ` ${frame.source.path.split('/').pop()}:${frame.line}` : '' })))));
  if (frames.length) await selectFrame(frames[0]);
}

async function selectFrame(frame) {
  view.frame = frame;
  for (const button of document.querySelectorAll('#worker-stack .frame-button')) {
    button.setAttribute('aria-pressed', String(button.dataset.frame === String(frame.id)));
  }
  await Promise.all([showSource(frame), showScopes(frame)]);
}

// -- source ---------------------------------------------------------------------------------

// Prism's token tree flattened to [text, classes] pieces, split into lines. Prism only names
// the pieces; each is put into the page as text.
function tokenLines(text) {
  const grammar = window.Prism && Prism.languages.python;
  const pieces = [];
  const walk = (token, classes) => {
    if (typeof token === 'string') pieces.push([token, classes]);
    else if (Array.isArray(token)) for (const part of token) walk(part, classes);
    else {
      const alias = [].concat(token.alias || []).join(' ');
      walk(token.content, `${classes} token ${token.type} ${alias}`.trim());
    }
  };
  walk(grammar ? Prism.tokenize(text, grammar) : text, '');
  const lines = [[]];
  for (const [piece, classes] of pieces) {
    piece.split('\n').forEach((part, index) => {
      if (index) lines.push([]);
      if (part) lines[lines.length - 1].push(classes ? el('span', { class: classes, text: part }) : part);
    });
  }
  return lines;
}

async function sourceText(source) {
  const key = source.path || `ref:${source.sourceReference}`;
  if (view.sources.has(key)) return view.sources.get(key);
  if (!source.sourceReference) return null;
  const body = await view.socket.request('source', { source, sourceReference: source.sourceReference });
  view.sources.set(key, body.content);
  return body.content;
}

async function showSource(frame) {
  const shown = $('worker-source');
  const source = frame.source;
  if (!source) {
    shown.replaceChildren(el('p', { text: `${frame.name} has no source (native or generated code).` }));
    return;
  }
  let text;
  try {
    text = await sourceText(source);
  } catch (error) {
    shown.replaceChildren(el('p', { class: 'error', text: `${source.path}: ${error.message}` }));
    return;
  }
  if (view.frame !== frame) return;
  if (text === null) {
    shown.replaceChildren(el('p', { text: `${source.path} cannot be read from here.` }));
    return;
  }
  view.shownPath = source.path || null;
  const lines = tokenLines(text).map((parts, index) => {
    const number = index + 1;
    const attributes = { 'data-line': String(number) };
    if (number === frame.line) attributes['aria-current'] = 'true';
    return el('li', attributes, gutterButton(number), ...parts);
  });
  shown.replaceChildren(el('p', { class: 'mono path', text: source.path || source.name || '' }),
    el('ol', { class: 'source-lines mono', 'aria-label': `Source of ${frame.name}` }, ...lines));
  const current = shown.querySelector('[aria-current]');
  if (current) current.scrollIntoView({ block: 'center' });
  showBreakpoints();
}

// -- breakpoints in the gutter ----------------------------------------------------------------

function breakpointsHere() {
  const key = `${view.record.job_id}\n${view.shownPath}`;
  if (!lineBreakpoints.has(key)) lineBreakpoints.set(key, new Map());
  return lineBreakpoints.get(key);
}

function gutterUsable() {
  if (!me.runs_code) return `the token ${me.name} may only look: use a debug token`;
  if (!view.record || !view.record.live) return 'breakpoints set here reach live workers (raydap.live, docs/live.md)';
  if (!view.shownPath || !view.record.job_id) return 'no file of a known job is shown';
  return null;
}

function gutterButton(line) {
  return el('button', { type: 'button', class: 'gutter', tabindex: '-1', 'data-gutter': String(line),
    'aria-label': `Breakpoint at line ${line}`, 'aria-pressed': 'false', onclick: () => toggleBreakpoint(line) });
}

function showBreakpoints() {
  const why = gutterUsable();
  const set = why ? new Map() : breakpointsHere();
  for (const button of document.querySelectorAll('#worker-source .gutter')) {
    const line = Number(button.dataset.gutter);
    button.disabled = Boolean(why);
    button.title = why || (set.has(line) ? `breakpoint${set.get(line) ? ` if ${set.get(line)}` : ''}: click to clear` : 'click to set a breakpoint');
    button.setAttribute('aria-pressed', String(set.has(line)));
  }
  $('worker-breakpoint').hidden = Boolean(why);
}

// Each change is sent after the one before has been answered: two quick clicks must reach the
// bridge in the order they were made, and each answer speaks of what its request sent.
let breakpointsSent = Promise.resolve();

function toggleBreakpoint(line, condition) {
  if (gutterUsable()) return;
  const set = breakpointsHere();
  if (set.has(line) && condition === undefined) set.delete(line);
  else set.set(line, condition || null);
  showBreakpoints();
  const path = view.shownPath, job = view.record.job_id;
  const breakpoints = [...set].map(([at, when]) => (when ? { line: at, condition: when } : { line: at }));
  breakpointsSent = breakpointsSent.then(() => sendBreakpoints(path, job, breakpoints));
}

async function sendBreakpoints(path, job, breakpoints) {
  const lines = breakpoints.map((b) => b.line).join(', ') || 'none';
  try {
    const answer = await api('PUT', '/api/v1/line-breakpoints', { path, job, breakpoints });
    const refused = answer.workers.filter((w) => w.refused);
    say(`breakpoints in ${path.split('/').pop()}: lines ${lines}, ` +
      `${answer.workers.length - refused.length} live worker${answer.workers.length === 1 ? '' : 's'}` +
      (refused.length ? `; refused by ${refused.map((w) => `${w.id}: ${w.refused}`).join('; ')}` : ''), 'output');
  } catch (error) {
    say(`breakpoints: ${error.message}`, 'error');
  }
}

$('worker-breakpoint').addEventListener('submit', (event) => {
  event.preventDefault();
  const line = Number($('breakpoint-line').value);
  if (line >= 1) toggleBreakpoint(line, $('breakpoint-condition').value.trim());
});

// -- scopes and variables -------------------------------------------------------------------

async function showScopes(frame) {
  const shown = $('worker-variables');
  let scopes;
  try {
    scopes = (await view.socket.request('scopes', { frameId: frame.id })).scopes;
  } catch (error) {
    shown.replaceChildren(el('p', { class: 'error', text: error.message }));
    return;
  }
  if (view.frame !== frame) return;
  const trees = scopes.map((scope, index) => {
    const item = variableItem({ name: scope.name, value: '', variablesReference: scope.variablesReference });
    if (index === 0) item.querySelector('button').click(); // the frame's locals, opened
    return item;
  });
  shown.replaceChildren(el('ul', { role: 'tree', 'aria-label': 'Variables' }, ...trees));
}

function variableItem(variable) {
  const label = [el('span', { class: 'name mono', text: variable.name })];
  if (variable.value !== '') {
    label.push(el('span', { text: ' = ' }),
      el('span', { class: 'value mono', text: variable.value, title: variable.type || '' }));
  }
  if (!variable.variablesReference) return el('li', { role: 'treeitem', 'data-name': variable.name }, ...label);
  const children = el('ul', { role: 'group', hidden: '' });
  const toggle = el('button', { type: 'button', class: 'toggle', 'aria-expanded': 'false',
    'aria-label': `${variable.name}` });
  toggle.append(...label);
  let loaded = false;
  toggle.addEventListener('click', async () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    children.hidden = !open;
    if (open && !loaded) {
      loaded = true;
      await loadChildren(variable.variablesReference, children);
    }
  });
  return el('li', { role: 'treeitem', 'data-name': variable.name }, toggle, children);
}

async function loadChildren(reference, into) {
  let variables;
  try {
    variables = (await view.socket.request('variables', { variablesReference: reference })).variables;
  } catch (error) {
    into.replaceChildren(el('li', { class: 'error', text: error.message }));
    return;
  }
  const page = (from) => {
    const shown = variables.slice(from, from + VARIABLES_PAGE).map(variableItem);
    const left = variables.length - from - shown.length;
    if (left > 0) {
      const more = el('li', {}, el('button', { type: 'button', class: 'more',
        text: `show ${Math.min(left, VARIABLES_PAGE)} more of ${left}` }));
      more.firstChild.addEventListener('click', () => more.replaceWith(...page(from + VARIABLES_PAGE)));
      shown.push(more);
    }
    return shown;
  };
  into.replaceChildren(...page(0));
}

// -- console and controls -------------------------------------------------------------------

function say(text, kind) {
  const output = $('worker-output');
  output.append(el('pre', { class: `mono ${kind}`, text }));
  while (output.childElementCount > OUTPUT_MOST) output.firstElementChild.remove();
  output.scrollTop = output.scrollHeight;
}

$('worker-console').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('worker-expression');
  const expression = input.value.trim();
  if (!expression || !view.frame) return;
  view.history = [...view.history.filter((e) => e !== expression), expression].slice(-HISTORY_MOST);
  view.historyAt = view.history.length;
  input.value = '';
  say(`> ${expression}`, 'input');
  try {
    const answer = await view.socket.request('evaluate',
      { expression, frameId: view.frame.id, context: 'repl' });
    say(answer.result, 'result');
  } catch (error) {
    say(error.message, 'error');
  }
});

$('worker-expression').addEventListener('keydown', (event) => {
  if (event.key !== 'ArrowUp' && event.key !== 'ArrowDown') return;
  event.preventDefault();
  const step = event.key === 'ArrowUp' ? -1 : 1;
  view.historyAt = Math.max(0, Math.min(view.history.length, view.historyAt + step));
  $('worker-expression').value = view.history[view.historyAt] || '';
});

async function control(command) {
  const socket = view.socket;
  if (!socket) return;
  try {
    let threadId = view.threadId;
    if (threadId === null) threadId = (await socket.request('threads')).threads[0].id;
    const stops = view.stops;
    await socket.request(command, { threadId });
    // debugpy tells other clients that the worker runs, not the one that asked.
    if (command !== 'pause' && view.stops === stops && view.socket === socket) onWorkerEvent('continued', {});
  } catch (error) {
    say(`${command}: ${error.message}`, 'error');
  }
}

for (const [command] of CONTROLS) $(`worker-${command}`).addEventListener('click', () => control(command));
$('worker-close').addEventListener('click', closeWorker);
