-- nvim-dap (unmodified, from ../shared/clients) in a headless Neovim, with `raydap dap` as an
-- `executable` debug adapter, as a Neovim user configures it.
--
--   nvim --clean --headless -l nvim_dap.lua NVIM_DAP_DIR RAYDAP single|follow|capture ID_OR_JOB
--
-- Prints one JSON line of what it saw; exits 1 with the reason on any failure.
local nvim_dap_dir, raydap, scenario, target = unpack(_G.arg)
vim.opt.rtp:prepend(nvim_dap_dir)
local dap = require('dap')

-- The trap of follow sessions: by default nvim-dap continues the other stopped threads when
-- a second one stops, which would resume every other worker of the job.
dap.defaults.fallback.auto_continue_if_many_stopped = false
dap.adapters.ray = { type = 'executable', command = raydap, args = { 'dap' } }

local events = {}
for _, name in ipairs({ 'initialized', 'stopped', 'continued', 'thread', 'terminated', 'output' }) do
  dap.listeners.after['event_' .. name]['raydap-test'] = function(_, body)
    table.insert(events, { event = name, body = body })
  end
end

local function fail(why)
  io.stderr:write(scenario .. ': ' .. why .. '\n' .. vim.inspect(events):sub(-4000) .. '\n')
  os.exit(1)
end

local function wait_for(name, where, timeout)
  local found
  local ok = vim.wait(timeout or 60000, function()
    for _, e in ipairs(events) do
      if e.event == name and (not where or where(e)) then
        found = e
        return true
      end
    end
    return false
  end, 20)
  if not ok then fail('no ' .. name .. ' event') end
  return found
end

local function request(command, arguments)
  local session = dap.session()
  if not session then fail('no session for ' .. command) end
  local done, err, result = false, nil, nil
  session:request(command, arguments, function(e, r) done, err, result = true, e, r end)
  if not vim.wait(30000, function() return done end, 20) then fail('no answer to ' .. command) end
  if err then fail(command .. ': ' .. vim.inspect(err)) end
  return result
end

local function evaluate(frame_id, expression)
  return request('evaluate', { expression = expression, frameId = frame_id, context = 'repl' }).result
end

local function single()
  dap.run({ type = 'ray', request = 'attach', name = 'Ray worker', breakpoint = target })
  local stopped = wait_for('stopped')
  local thread_id = stopped.body.threadId
  local frames = request('stackTrace', { threadId = thread_id }).stackFrames
  local y = evaluate(frames[1].id, 'y')
  request('continue', { threadId = thread_id })
  wait_for('terminated')
  return { ['function'] = frames[1].name, line = frames[1].line, y = y }
end

local function follow()
  dap.run({ type = 'ray', request = 'attach', name = 'Ray job', follow = { job = target } })
  local stops = {}
  vim.wait(60000, function()
    stops = vim.tbl_filter(function(e) return e.event == 'stopped' end, events)
    return #stops >= 4
  end, 20)
  if #stops < 4 then fail('saw ' .. #stops .. ' of 4 ranks stop') end
  local started = vim.tbl_filter(function(e)
    return e.event == 'thread' and e.body.reason == 'started'
  end, events)
  local first, other = stops[1].body.threadId, stops[2].body.threadId
  local answer = request('continue', { threadId = first })
  local listed = {}
  for _, t in ipairs(request('threads', {}).threads) do listed[t.id] = true end
  local frames = request('stackTrace', { threadId = other }).stackFrames
  local rank = evaluate(frames[1].id, 'self.rank')
  local all = request('raydapContinueAll', {})
  wait_for('terminated')
  return {
    stopped = #stops,
    started = #started,
    allThreadsContinued = answer.allThreadsContinued,
    otherStillListed = listed[other] == true,
    rank = rank,
    continuedByAll = #all.continued,
  }
end

-- A capture opened as a read-only stop. (nvim-dap 0.10.0 sends no breakpoint `mode`: its
-- breakpoints cannot be made capture points from its UI; a capture it can open.)
local function capture()
  dap.run({ type = 'ray', request = 'attach', name = 'Ray capture', capture = target })
  local stopped = wait_for('stopped')
  local frames = request('stackTrace', { threadId = stopped.body.threadId }).stackFrames
  local batch = evaluate(frames[1].id, 'batch')
  local session = dap.session()
  local refused
  session:request('continue', { threadId = stopped.body.threadId }, function(e) refused = e or 'answered' end)
  if not vim.wait(30000, function() return refused ~= nil end, 20) then fail('no answer to continue') end
  return {
    ['function'] = frames[1].name, line = frames[1].line, batch = batch, reason = stopped.body.reason,
    refused = type(refused) == 'table' and (refused.message or vim.inspect(refused)) or refused,
  }
end

local ok, seen = pcall(({ single = single, follow = follow, capture = capture })[scenario])
if not ok then fail(tostring(seen)) end
io.stdout:write(vim.json.encode(seen) .. '\n')
os.exit(0)
