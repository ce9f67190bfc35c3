// The Hangs tab: each suspected hang as a grid (GET /api/v1/hangs/{job}/grid): the blamed
// group's ranks against their last collective numbers, each cell the op a rank called there,
// coloured by kind. The missing rank's empty cell and the odd rank's op are marked; ranks whose
// rows agree share one, so a thousand ranks are a few lines; the table scrolls. Rows name global
// ranks and the device-mesh coordinates they share.
'use strict';

const OP_KINDS = {
  all_reduce: 'reduce', reduce: 'reduce', allreduce_coalesced: 'reduce',
  all_gather: 'gather', _allgather_base: 'gather', all_gather_into_tensor: 'gather', gather: 'gather',
  reduce_scatter: 'scatter', _reduce_scatter_base: 'scatter', reduce_scatter_tensor: 'scatter', scatter: 'scatter',
  all_to_all: 'scatter', alltoall_base: 'scatter',
  broadcast: 'broadcast', barrier: 'barrier', send: 'p2p', recv: 'p2p',
};
const RUNS_SHOWN = 8;

// 0, 1, 2, 5 -> "0-2, 5"; past RUNS_SHOWN runs, the rest counted.
function rankRuns(ranks) {
  const runs = [];
  for (const rank of ranks) {
    const last = runs[runs.length - 1];
    if (last && rank === last[1] + 1) last[1] = rank;
    else runs.push([rank, rank]);
  }
  const shown = runs.slice(0, RUNS_SHOWN).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`));
  const more = runs.slice(RUNS_SHOWN).reduce((n, [a, b]) => n + b - a + 1, 0);
  return more ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}

function gridCell(cell, ranks, seq) {
  const who = `${ranks.length === 1 ? 'rank' : 'ranks'} ${rankRuns(ranks)} at #${seq}`;
  if (cell.mark === 'missing') {
    return el('td', { class: 'cell marked missing', 'data-mark': 'missing', title: `${who}: never came` }, 'missing');
  }
  if (!cell.op) return el('td', { class: 'cell empty', title: `${who}: nothing recorded` });
  const kind = OP_KINDS[cell.op] || 'other';
  const state = cell.done ? 'done' : 'waiting';
  const attributes = { class: `cell op-${kind} ${state}${cell.mark ? ' marked' : ''}`, title: `${who}: ${cell.op}, ${state}` };
  if (cell.mark) attributes['data-mark'] = cell.mark;
  return el('td', attributes, cell.mark === 'mismatch' ? `${cell.op} (odd)` : cell.op);
}

function hangGrid(grid, verdict) {
  const head = el('tr', {}, el('th', { scope: 'col', text: 'Ranks' }),
    ...grid.seqs.map((seq) => el('th', { scope: 'col', class: seq === grid.seq ? 'verdict-seq' : '', text: `#${seq}` })));
  const rows = grid.rows.map((row) => {
    const ranks = row.global_ranks || row.ranks; // global: as the summary and the mesh name them
    const coords = Object.entries(row.coords || {}).map(([dim, coord]) => `${dim}=${coord}`).join(' ');
    return el('tr', { 'data-ranks': ranks.join(' ') },
      el('th', { scope: 'row', class: 'mono', text: `${rankRuns(ranks)}${ranks.length > 1 ? ` (${ranks.length})` : ''}` },
        ...(coords ? [el('br'), el('span', { class: 'coords', text: coords })] : []),
        ...(ranks.length === 1 && row.workers[0] ? [el('br'), el('span', { class: 'muted', text: row.workers[0] })] : [])),
      ...row.cells.map((cell, index) => gridCell(cell, ranks, grid.seqs[index])));
  });
  const parts = [el('p', { class: 'summary', text: grid.summary })];
  if (verdict && verdict.report) {
    parts.push(el('p', {}, el('a', { href: `/api/v1/hangs/${encodeURIComponent(grid.job)}/report.tar.gz`,
      download: '', text: 'Download report' })));
  }
  parts.push(el('div', { class: 'grid-scroll' }, el('table', { class: 'hang-grid',
    'aria-label': `Collectives of job ${grid.job}, ${grid.group_desc} (${grid.backend})` },
  el('thead', {}, head), el('tbody', {}, ...rows))));
  return parts;
}

async function loadHangs() {
  const shown = $('hang-grids');
  const job = $('job-filter').value;
  const hung = [...hungJobs.values()].filter((v) => !job || v.job === job);
  if (!hung.length) {
    shown.replaceChildren(el('p', { text: 'No watched job looks hung.' }));
    return;
  }
  const sections = await Promise.all(hung.map(async (verdict) => {
    const section = el('section', { 'aria-label': `Job ${verdict.job} collectives` },
      el('h3', { text: `Job ${verdict.job}` }));
    try {
      section.append(...hangGrid(await api('GET', `/api/v1/hangs/${encodeURIComponent(verdict.job)}/grid`), verdict));
    } catch (error) {
      section.append(el('p', { text: `${verdict.summary} (${error.message})` }));
    }
    return section;
  }));
  shown.replaceChildren(...sections,
    el('p', { class: 'legend' }, 'Ops: ', ...['reduce', 'gather', 'scatter', 'broadcast', 'barrier', 'p2p', 'other']
      .map((kind) => el('span', { class: `cell op-${kind}`, text: kind }))));
}
