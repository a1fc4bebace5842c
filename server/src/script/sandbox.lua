-- Redis 7.0's Lua environment, built once per interpreter (chunk "=[redis]").
-- Arguments: the table of Rust primitives, the globals (left read-only at the end), and the
-- compatibility target's part: {names = the globals the API table is under, versions = its
-- version fields, texts = its error texts, os_clock = whether `os.clock` exists}.
local raw, G, target = ...
local type, tostring, tonumber, select, error = type, tostring, tonumber, select, error
local next, ipairs, setmetatable = next, ipairs, setmetatable
local floor, ceil = math.floor, math.ceil
local sub, find, gsub, concat = string.sub, string.find, string.gsub, table.concat

-- Globals Redis 7.0 does not expose to scripts.
for _, name in ipairs({'print', 'dofile', 'loadfile', 'require', 'module', 'setfenv',
                       'getfenv', 'newproxy', 'package', 'io', 'os', 'debug'}) do
  G[name] = nil
end

local function trunc(n)
  if n >= 0 then return floor(n) else return ceil(n) end
end

-- luaPushErrorBuff: "-CODE msg" or "msg" (code ERR), newlines trimmed at both ends.
local function push_error(e)
  local code, msg
  if sub(e, 1, 1) == '-' then
    local sp = find(e, ' ', 1, true)
    if sp then code = sub(e, 2, sp - 1); msg = sub(e, sp + 1) else code = 'ERR'; msg = sub(e, 2) end
  else
    code = 'ERR'; msg = e
  end
  msg = gsub(gsub(msg, '^[\r\n]+', ''), '[\r\n]+$', '')
  return {err = code .. ' ' .. msg}
end
local function raise(msg) error(push_error(msg), 0) end

-- API functions written here run behind a Rust (C) trampoline, so that `return f(...)` in a
-- script keeps the script's frame (the location of errors), as Redis's C functions do. Error
-- tables pass as they are; error strings get the caller's position (luaL_error).
local cwrap = raw.cwrap

function __redis__err__handler(err)
  local source, line = raw.where()
  if type(err) == 'userdata' then err = raw.unwrap(err) end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if source then
    err['source'] = source
    err['line'] = line
  end
  return err
end

local redis = {}
-- redis.call and redis.pcall are Rust (C) functions, so a `return redis.call(...)` keeps the
-- caller's frame for error locations; they run commands through the current run's dispatcher.
redis.call = raw.call
redis.pcall = raw.pcall
redis.error_reply = function(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    return push_error('wrong number or type of arguments')
  end
  if sub(e, 1, 1) ~= '-' then e = '-' .. e end
  return push_error(e)
end
redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return push_error('wrong number or type of arguments')
  end
  return {ok = s}
end
redis.sha1hex = cwrap(function(...)
  if select('#', ...) ~= 1 then raise('wrong number of arguments') end
  local s = ...
  if type(s) == 'number' then s = tostring(s) elseif type(s) ~= 'string' then s = '' end
  return raw.sha1hex(s)
end)
redis.log = cwrap(function(...)
  local n = select('#', ...)
  if n < 2 then raise(target.texts.log_arity) end
  local level = tonumber((...))
  if level == nil then raise('First argument must be a number (log level).') end
  level = trunc(level)
  if level < 0 or level > 3 then raise(target.texts.log_level) end
  local parts = {}
  for i = 2, n do
    local v = select(i, ...)
    local t = type(v)
    if t == 'string' or t == 'number' then parts[#parts + 1] = tostring(v) end
  end
  raw.log(level, concat(parts, ' '))
end)
redis.setresp = cwrap(function(...)
  if select('#', ...) ~= 1 then raise(target.texts.setresp_arity) end
  local r = trunc(tonumber((...)) or 0)
  if r ~= 2 and r ~= 3 then raise('RESP version must be 2 or 3.') end
  raw.setresp(r)
end)
redis.set_repl = cwrap(function(...)
  if select('#', ...) ~= 1 then raise(target.texts.set_repl_arity) end
  local f = trunc(tonumber((...)) or 0)
  if f < 0 or f > 3 then
    raise('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
  raw.setrepl(f)
end)
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.acl_check_cmd = cwrap(function(...)
  local r = raw.acl_check(...)
  if type(r) == 'table' then error(r, 0) end
  return r
end)
for k, v in next, target.versions do redis[k] = v end
redis.LOG_DEBUG = 0
redis.LOG_VERBOSE = 1
redis.LOG_NOTICE = 2
redis.LOG_WARNING = 3
redis.REPL_NONE = 0
redis.REPL_AOF = 1
redis.REPL_SLAVE = 2
redis.REPL_REPLICA = 2
redis.REPL_ALL = 3
for _, name in ipairs(target.names) do G[name] = redis end

-- math.random / math.randomseed on Redis's rand48, reseeded before every script.
local function checkint(n, v, i, fname)
  local x = tonumber(v)
  if x == nil then
    local got = (i > n) and 'no value' or type(v)
    error("bad argument #" .. i .. " to '" .. fname .. "' (number expected, got " .. got .. ")", 0)
  end
  return trunc(x)
end
math.random = cwrap(function(...)
  local n = select('#', ...)
  local r = raw.rand()
  if n == 0 then
    return r
  elseif n == 1 then
    local u = checkint(n, (...), 1, 'random')
    if not (1 <= u) then error("bad argument #1 to 'random' (interval is empty)", 0) end
    return floor(r * u) + 1
  elseif n == 2 then
    local l, u = ...
    l = checkint(n, l, 1, 'random')
    u = checkint(n, u, 2, 'random')
    if not (l <= u) then error("bad argument #2 to 'random' (interval is empty)", 0) end
    return floor(r * (u - l + 1)) + l
  end
  error("wrong number of arguments", 0)
end)
math.randomseed = cwrap(function(...)
  raw.srand(checkint(select('#', ...), (...), 1, 'randomseed'))
end)

-- Binary chunks: the patched Lua parses every chunk as text (ldo.c's f_parser, as Redis's), so
-- load, loadstring and the server's own loads refuse them with "unexpected symbol near
-- 'char(27)'".

-- Valkey's sandbox has the os library with its clock alone.
if target.os_clock then G.os = {clock = raw.clock} end
G.cjson = raw.cjson
G.cjson.null = raw.null
G.cmsgpack = raw.cmsgpack
G.struct = raw.struct
G.bit = raw.bit

-- Read-only tables, as Redis 7.0 marks them (luaSetTableProtectionRecursively): the globals,
-- every table reachable from them and their metatables, and the strings' metatable. A write
-- to any of them (assignment, rawset, table.insert, setmetatable) raises "Attempt to modify a
-- readonly table" from the patched Lua itself (lua/, locksmith-lua), so reads stay plain lookups.
local mark_readonly, rawgetmetatable = raw.readonly, getmetatable
local function protect(t)
  if mark_readonly(t) then return end
  for _, v in next, t do
    if type(v) == 'table' then protect(v) end
  end
  local mt = rawgetmetatable(t)
  if type(mt) == 'table' then protect(mt) end
end

local function missing_global(_, k)
  if type(k) ~= 'string' and type(k) ~= 'number' then
    error('Second argument to luaProtectedTableError must be a string or number', 2)
  end
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
setmetatable(G, {__index = missing_global})
-- Errors raised from Rust arrive as userdata: pcall/xpcall hand scripts the error table.
local basepcall, basexpcall = pcall, xpcall
-- Redis 7.0's global pcall (luaRedisPcall) also hands over the `err` string of an error
-- table (as raised by redis.call) instead of the table.
local function fixerr(ok, ...)
  if not ok then
    local e = ...
    if type(e) == 'userdata' then e = raw.unwrap(e) end
    if type(e) == 'table' then
      local m = e.err
      local t = type(m)
      if t == 'string' or t == 'number' then e = m end
    end
    return false, e
  end
  return ok, ...
end
G.pcall = function(...) return fixerr(basepcall(...)) end
G.xpcall = function(f, h)
  return basexpcall(f, function(e)
    if type(e) == 'userdata' then e = raw.unwrap(e) end
    return h(e)
  end)
end

local string_mt = getmetatable('')
string_mt.__index = G.string
protect(string_mt)
protect(G)

-- For the functions engine (functions.lua), which builds its own environments on these.
return protect, missing_global
