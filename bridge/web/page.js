// The bridge's web page: paused workers live from /api/v1/events, merged stacks, evaluate
// across ranks, continue; its Captures tab is captures.js. Data is only ever put into the page
// as text (never as HTML): task names and exception messages come from the debugged program.
'use strict';

const records = new Map();
let events = null;
// The token the page is logged in with (GET /api/v1/me): what it may not do is disabled.
let me = { name: '', role: 'view', runs_code: false };

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function setStatus(text) {
  $('status').textContent = text;
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(data.error || `HTTP ${response.status}`), { status: response.status });
  return data;
}

// -- login ------------------------------------------------------------------------------------

function showLogin(message) {
  $('app').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  setStatus('not logged in');
}

$('login').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    await api('POST', '/api/v1/login', { token: $('token').value });
    $('token').value = '';
    start();
  } catch (error) {
    showLogin(error.message);
  }
});

$('logout').addEventListener('click', async () => {
  await api('POST', '/api/v1/logout', {}).catch(() => {});
  stopWatching();
  showLogin();
});

// -- workers ----------------------------------------------------------------------------------

// `dp=0 tp=1` (mesh 0), `mesh1.dp=0` (the next): a rank's mesh coordinates as rank sets say them.
function meshText(record) {
  const places = Array.isArray(record.mesh) ? record.mesh : [];
  return places.flatMap((place) => (Array.isArray(place.axes) ? place.axes : [])
    .map((axis) => `${place.mesh ? `mesh${place.mesh}.` : ''}${axis.dim}=${axis.coord}`)).join(' ');
}

function rankText(record) {
  const where = meshText(record);
  if (record.rank === null || record.rank === undefined) return [record.role || '', where].filter(Boolean).join(' ');
  const who = record.role ? `rank ${record.rank} (${record.role})` : `rank ${record.rank}`;
  return where ? `${who} ${where}` : who;
}

function taskName(record) {
  const name = record.task_name || (record.kind === 'legacy-pdb' ? 'legacy pdb'
    : record.parent ? `child of ${record.parent}` : 'worker');
  const rank = rankText(record);
  return rank ? `${rank} ${name}` : name;
}

// Each worker followed by its child processes (DataLoader workers, multiprocessing children),
// at any depth; a child whose worker is not listed stands on its own.
function underParents(members) {
  const ids = new Set(members.map((r) => r.id));
  const children = new Map();
  for (const r of members) {
    if (r.parent && ids.has(r.parent)) {
      if (!children.has(r.parent)) children.set(r.parent, []);
      children.get(r.parent).push(r);
    }
  }
  const ordered = [];
  const add = (r) => { ordered.push(r); for (const c of children.get(r.id) || []) add(c); };
  for (const r of members) if (!(r.parent && ids.has(r.parent))) add(r);
  return ordered;
}

// -- hangs: a banner while a watched job is a suspected hang ---------------------------------

const hungJobs = new Map();

// ' dp=1 tp=1': a rank's mesh coordinates (a straggler's `coords`), or ''.
function coordsText(coords) {
  return Object.entries(coords || {}).map(([dim, at]) => ` ${dim}=${at}`).join('');
}

function showHang(verdict) {
  if (verdict.state === 'suspected_hang') hungJobs.set(verdict.job, verdict);
  else hungJobs.delete(verdict.job);
  const first = hungJobs.values().next().value;
  $('hang-banner').hidden = !first;
  if (!first) return;
  const stragglers = first.stragglers.slice(0, 3).map((s) =>
    `${s.rank === null ? s.worker : `rank ${s.rank}`}${s.role ? ` (${s.role})` : ''}${coordsText(s.coords)} in ${s.function}` +
    (s.why ? ` (${s.why})` : '')).join(', ');
  $('hang-text').textContent = `Job ${first.job} looks hung: ${first.summary}` +
    (stragglers ? `. Straggler: ${stragglers}` : '');
  $('hang-stacks').dataset.job = first.job;
  $('hang-collectives').hidden = !first.collective; // torch.distributed jobs only
  // The report outlives the job: the whole of it, as one archive.
  const report = $('hang-report');
  report.hidden = !first.report;
  report.href = `/api/v1/hangs/${encodeURIComponent(first.job)}/report.tar.gz`;
}

function showHungJob(tab) {
  const job = $('hang-stacks').dataset.job;
  const select = $('job-filter');
  if (![...select.options].some((o) => o.value === job)) select.append(el('option', { value: job, text: job }));
  select.value = job;
  selectTab(tab);
}

$('hang-stacks').addEventListener('click', () => showHungJob('stacks'));
$('hang-collectives').addEventListener('click', () => showHungJob('hangs'));

function since(seconds) {
  const s = Math.max(0, Math.floor(Date.now() / 1000 - seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

async function act(button, method, path, body) {
  button.disabled = true;
  try {
    const answer = await api(method, path, body);
    if (answer.pending) setStatus(`${button.textContent} requested: ${answer.reason}`);
  } catch (error) {
    setStatus(`${button.textContent}: ${error.message}`);
    button.disabled = false;
  }
}

function workerRow(record) {
  const where = record.location;
  const runningLive = record.live && record.state === 'running';
  const file = where ? `${where.path.split('/').pop()}:${where.line}` : runningLive ? '' : '…';
  const state = runningLive ? 'running (live)' : record.state;
  const what = record.exception ? `${record.exception.type}: ${record.exception.message}` : '';
  const actions = el('td');
  if (record.state === 'paused' || runningLive) {
    actions.append(el('button', { type: 'button', text: 'Open', 'aria-label': `Open ${taskName(record)} ${record.id}`,
      onclick: () => openWorker(record) })); // worker.js
  }
  if (record.state === 'paused') {
    actions.append(el('button', { type: 'button', text: 'Continue', 'aria-label': `Continue ${taskName(record)} ${record.id}`,
      onclick: (e) => act(e.target, 'POST', `/api/v1/breakpoints/${encodeURIComponent(record.id)}/continue`, {}) }));
  } else if (runningLive) {
    actions.append(el('button', { type: 'button', text: 'Pause', 'aria-label': `Pause ${taskName(record)} ${record.id}`,
      onclick: (e) => act(e.target, 'POST', `/api/v1/workers/${encodeURIComponent(record.id)}/pause`, {}) }));
  }
  const find = [record.id, taskName(record), where ? where.path : '', record.node_ip || '', state].join(' ').toLowerCase();
  return el('tr', { 'data-worker': record.id, 'data-find': find },
    el('td', { class: 'mono', text: record.id }),
    el('td', { text: (record.parent ? '└ ' : '') + taskName(record),
      title: record.parent ? `child process of ${record.parent}` : '' }),
    el('td', { class: 'mono', text: file, title: where ? where.path : '' }),
    el('td', { text: where ? where.function : '' }),
    el('td', { text: record.node_ip || '' }),
    el('td', { text: String(record.pid ?? '') }),
    el('td', { class: `state-${record.state}`, text: state }),
    runningLive ? el('td') : el('td', { 'data-since': String(record.paused_since), text: since(record.paused_since) }),
    el('td', { text: String(record.clients) }),
    el('td', { class: 'exception', text: what || record.error || '' }),
    actions);
}

function renderWorkers() {
  const byJob = new Map();
  for (const record of records.values()) {
    const job = record.job_id || '';
    if (!byJob.has(job)) byJob.set(job, []);
    byJob.get(job).push(record);
  }
  const jobs = $('jobs');
  jobs.replaceChildren();
  for (const [job, members] of [...byJob.entries()].sort()) {
    members.sort((a, b) => a.paused_since - b.paused_since || a.id.localeCompare(b.id));
    const paused = members.filter((r) => r.state === 'paused').length;
    const heading = el('h2', {}, el('span', { text: job ? `Job ${job}` : 'Job not known yet' }),
      el('span', { class: 'count', text: `${members.length} worker${members.length === 1 ? '' : 's'}, ${paused} paused` }));
    if (job && paused) {
      heading.append(el('button', { type: 'button', text: 'Continue all', 'aria-label': 'Continue all',
        onclick: (e) => act(e.target, 'POST', '/api/v1/continue', { filter: { job } }) }));
    }
    const head = el('tr', {}, ...['Id', 'Task', 'Where', 'Function', 'Node', 'Pid', 'State', 'Paused for',
      'Clients', 'Exception', ''].map((name) => el('th', { scope: 'col', text: name })));
    jobs.append(el('section', { class: 'job', 'aria-label': job ? `Job ${job}` : 'Job not known yet' }, heading,
      el('table', {}, el('thead', {}, head), el('tbody', {}, ...underParents(members).map(workerRow))),
      el('p', { class: 'more-rows muted', hidden: '' })));
  }
  applyFilter();
  if (RANK_SET.test($('worker-find').value)) findChanged(); // workers came, or learned their coordinates
  $('empty').hidden = records.size > 0;
  const select = $('job-filter');
  const chosen = select.value;
  select.replaceChildren(el('option', { value: '', text: 'All jobs' }),
    ...[...byJob.keys()].filter(Boolean).sort().map((job) => el('option', { value: job, text: job })));
  select.value = byJob.has(chosen) ? chosen : '';
  const held = [...records.values()].filter((r) => r.state === 'paused').length;
  setStatus(`${held} paused worker${held === 1 ? '' : 's'}`);
}

// The Find box: rows whose id, task, rank, file, node or state hold every word typed. Rows are
// only hidden, never re-drawn, and a job shows its first ROWS_SHOWN matches (the rest are
// counted): with 1,000 workers a keystroke lays out 100 rows, not a thousand.
const ROWS_SHOWN = 100;

// `ranks: tp=1 dp=0` is a rank set, which only the bridge parses: it is asked which workers
// match (after a pause in typing; an answer to older text is dropped), and says what is wrong.
const RANK_SET = /^\s*ranks:\s*/i;
let rankSetIds = null;
let rankSetAsked = 0;
let rankSetTimer = null;

function findChanged() {
  const text = $('worker-find').value;
  clearTimeout(rankSetTimer);
  if (!RANK_SET.test(text)) {
    rankSetIds = null;
    applyFilter();
    return;
  }
  const asked = ++rankSetAsked;
  rankSetTimer = setTimeout(async () => {
    const ranks = text.replace(RANK_SET, '');
    try {
      const found = ranks ? (await api('GET', `/api/v1/workers?ranks=${encodeURIComponent(ranks)}`)).workers : null;
      if (asked !== rankSetAsked) return;
      rankSetIds = found ? new Set(found.map((r) => r.id)) : null;
      setStatus(found ? `ranks ${ranks}: ${found.length} worker${found.length === 1 ? '' : 's'}` : '');
    } catch (error) {
      if (asked !== rankSetAsked) return;
      rankSetIds = new Set();
      setStatus(`not a rank set: ${error.message}`);
    }
    applyFilter();
  }, 250);
}

function applyFilter() {
  const ranked = RANK_SET.test($('worker-find').value);
  const words = ranked ? [] : $('worker-find').value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const section of $('jobs').querySelectorAll('section.job')) {
    let matches = 0;
    for (const row of section.querySelectorAll('tr[data-find]')) {
      const match = ranked
        ? rankSetIds === null || rankSetIds.has(row.dataset.worker)
        : words.every((word) => row.dataset.find.includes(word));
      if (match) matches += 1;
      row.hidden = !match || matches > ROWS_SHOWN;
    }
    const more = section.querySelector('.more-rows');
    more.hidden = matches <= ROWS_SHOWN;
    more.textContent = `${matches - ROWS_SHOWN} more match: narrow Find to see them`;
  }
}

$('worker-find').addEventListener('input', findChanged);

setInterval(() => {
  for (const cell of document.querySelectorAll('[data-since]')) cell.textContent = since(Number(cell.dataset.since));
}, 1000);

function stopWatching() {
  if (events) {
    events.onclose = null;
    events.close();
    events = null;
  }
}

function watch() {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  events = new WebSocket(`${scheme}://${location.host}/api/v1/events`);
  events.onmessage = (message) => {
    const change = JSON.parse(message.data);
    if (change.kind === 'hang') {
      showHang(change.verdict);
      return;
    }
    if (change.kind === 'snapshot') {
      hungJobs.clear();
      showHang({ job: '', state: 'progressing' });
      records.clear();
      for (const record of change.records) records.set(record.id, record);
    } else if (change.kind === 'removed') {
      records.delete(change.record.id);
    } else if (change.kind === 'added' || change.kind === 'updated') {
      records.set(change.record.id, change.record);
    } else if (change.kind === 'capture' || change.kind === 'capture_point_disabled') {
      capturesChanged(change); // captures.js
      return;
    } else {
      return; // a kind a newer bridge sends that this page does not show
    }
    renderWorkers();
  };
  events.onclose = () => {
    setStatus('lost the bridge; reconnecting…');
    setTimeout(start, 2000);
  };
}

// -- evaluate ---------------------------------------------------------------------------------

function currentFilter() {
  const job = $('job-filter').value;
  return job ? { job } : {};
}

$('evaluate').addEventListener('submit', async (event) => {
  event.preventDefault();
  const expression = $('expression').value;
  const results = $('results');
  results.replaceChildren(el('p', { text: `evaluating ${expression} …` }));
  let answers;
  try {
    answers = (await api('POST', '/api/v1/evaluate', { expression, filter: currentFilter() })).results;
  } catch (error) {
    results.replaceChildren(el('p', { class: 'error', text: error.message }));
    return;
  }
  if (!answers.length) {
    results.replaceChildren(el('p', { text: 'No paused worker matches.' }));
    return;
  }
  const shown = answers.map((a) => ('result' in a ? a.result : `error: ${a.error.trim().split('\n').pop()}`));
  const counts = new Map();
  for (const value of shown) counts.set(value, (counts.get(value) || 0) + 1);
  // Marked: every value that is not the most common one (all of them when none repeats).
  const top = Math.max(...counts.values());
  const rows = answers.map((answer, i) => {
    const record = records.get(answer.id);
    const differs = counts.size > 1 && (top === 1 || counts.get(shown[i]) < top);
    return el('tr', { class: differs ? 'differs' : '', 'data-worker': answer.id },
      el('td', { class: 'mono', text: answer.id }),
      el('td', { text: record ? taskName(record) : '' }),
      el('td', { class: 'value mono', text: shown[i] }));
  });
  results.replaceChildren(el('table', { 'aria-label': `Values of ${expression}` },
    el('thead', {}, el('tr', {}, ...['Worker', 'Task', expression].map((n) => el('th', { scope: 'col', text: n })))),
    el('tbody', {}, ...rows)),
    el('p', { text: counts.size > 1 ? `${counts.size} different values` : 'the same value in every worker' }));
});

// -- stacks -----------------------------------------------------------------------------------

function frameLabel(node) {
  return `${node.function} (${node.path.split('/').pop()}:${node.line})`;
}

function showWorkersOf(node, button) {
  for (const pressed of document.querySelectorAll('.frame[aria-pressed="true"]')) pressed.setAttribute('aria-pressed', 'false');
  if (button) button.setAttribute('aria-pressed', 'true');
  $('stack-workers').replaceChildren(el('h3', { text: `${frameLabel(node)}: ${node.workers.length} worker${node.workers.length === 1 ? '' : 's'}` }),
    el('ul', {}, ...node.workers.map((id) => {
      const record = records.get(id);
      if (!record) return el('li', { class: 'mono', text: id });
      return el('li', { class: 'mono' }, `${id}  ${taskName(record)}  pid ${record.pid} on ${record.node_ip}  `,
        el('button', { type: 'button', text: 'Open', 'aria-label': `Open ${taskName(record)} ${id}`,
          onclick: () => openWorker(record) })); // worker.js
    })));
}

// The workers a hang verdict blames (its stragglers, and the ranks its collective verdict
// names), in the jobs the filter shows.
function stragglerIds() {
  const job = $('job-filter').value;
  const ids = new Set();
  for (const verdict of hungJobs.values()) {
    if (job && verdict.job !== job) continue;
    for (const straggler of verdict.stragglers) ids.add(straggler.worker);
    for (const member of (verdict.collective && verdict.collective.members) || []) {
      if (member.worker) ids.add(member.worker);
    }
  }
  return ids;
}

function stackBranch(node, stragglers) {
  const count = `${node.workers.length} worker${node.workers.length === 1 ? '' : 's'}` +
    (node.workers.every((id) => stragglers.has(id)) ? ', straggler' : '');
  const button = el('button', { type: 'button', class: 'frame', 'aria-pressed': 'false', title: node.path },
    el('span', { class: 'mono', text: frameLabel(node) }), el('span', { class: 'count', text: count }));
  button.addEventListener('click', () => showWorkersOf(node, button));
  const item = el('li', {}, button);
  if (node.children.length) item.append(el('ul', {}, ...node.children.map((child) => stackBranch(child, stragglers))));
  return item;
}

// One tree per coordinate along the dimension asked for (`by`): where each pipeline stage is.
function stackGroups(answer, stragglers) {
  return answer.groups.map((group) => {
    const at = group.coord === null || group.coord === undefined ? `no ${answer.by} coordinate` : `${answer.by}=${group.coord}`;
    const count = `${group.workers.length} worker${group.workers.length === 1 ? '' : 's'}`;
    return el('section', { class: 'stack-group' }, el('h3', { text: `${at}: ${count}` }),
      el('ul', { role: 'tree', 'aria-label': `Merged stacks, ${at}` },
        ...group.tree.children.map((child) => stackBranch(child, stragglers))));
  });
}

async function loadStacks() {
  const tree = $('stacks-tree');
  tree.replaceChildren(el('p', { text: 'reading stacks …' }));
  $('stack-workers').replaceChildren();
  try {
    const query = new URLSearchParams(currentFilter());
    if ($('stacks-locals').checked) query.set('locals', '1');
    const by = $('stacks-by').value.trim(); // the bridge checks it is a dimension's name
    if (by) query.set('by', by);
    const answer = await api('GET', `/api/v1/stacks?${query}`);
    const stragglers = stragglerIds();
    drawStacksChart(answer.tree, stragglers); // stacks-chart.js
    const parts = answer.groups ? stackGroups(answer, stragglers) : [el('ul', { role: 'tree', 'aria-label': 'Merged stacks' },
      ...answer.tree.children.map((child) => stackBranch(child, stragglers)))];
    if (!answer.tree.children.length) parts.push(el('p', { text: 'No paused worker to read.' }));
    for (const failure of answer.failed) parts.push(el('p', { class: 'error', text: `${failure.id}: ${failure.reason}` }));
    tree.replaceChildren(...parts);
  } catch (error) {
    tree.replaceChildren(el('p', { class: 'error', text: error.message }));
  }
}

const TABS = ['workers', 'stacks', 'hangs', 'captures'];

function selectTab(name) {
  for (const tab of TABS) {
    $(`tab-${tab}`).setAttribute('aria-selected', String(tab === name));
    $(`panel-${tab}`).hidden = tab !== name;
  }
  if (name === 'stacks') loadStacks();
  if (name === 'hangs') loadHangs(); // hang-grid.js
  if (name === 'captures') loadCaptures(); // captures.js
}

for (const tab of TABS) $(`tab-${tab}`).addEventListener('click', () => selectTab(tab));
$('refresh-stacks').addEventListener('click', loadStacks);
$('refresh-hangs').addEventListener('click', () => loadHangs()); // hang-grid.js

// -- start ------------------------------------------------------------------------------------

async function start() {
  try {
    me = await api('GET', '/api/v1/me');
  } catch (error) {
    if (error.status === 401) return showLogin();
    setStatus(`cannot reach the bridge: ${error.message}; retrying`);
    setTimeout(start, 2000);
    return;
  }
  $('login').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = false;
  $('status').title = `logged in as ${me.name} (${me.role})`;
  stopWatching();
  watch();
}

start();
