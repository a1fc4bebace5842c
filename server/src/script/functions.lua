-- Redis 7.0's environment for functions (function_lua.c), built once per functions interpreter
-- after sandbox.lua (chunk "=[redis]").
-- Arguments: the Rust primitives of the library API, the (read-only) globals, sandbox.lua's
-- `protect` and `missing_global`, and the compatibility target's part (as sandbox.lua's).
-- Returns the globals table that library code and its functions see, its metatable, and the
-- library API table. The globals table is empty and read-only; its metatable's `__index` is
-- the library API while FUNCTION LOAD runs a library's code and the real globals otherwise
-- (the engine switches it), so the functions a library registers see the whole `redis` API
-- when they run, and the library's code sees only `redis.register_function`, `redis.log` and
-- the constants while it loads.
local raw, G, protect, missing_global, target = ...
-- The API's name in error texts: `redis`, or Valkey's `server`.
local API = target.names[1]
local type, select, tostring, next, error = type, select, tostring, next, error
local lower = string.lower
local bor = G.bit.bor

local function raise(msg) error({err = 'ERR ' .. msg}, 0) end
-- lua_isstring: strings and numbers.
local function isstring(v) local t = type(v) return t == 'string' or t == 'number' end

-- luaRegisterFunction: the named (one table) or positional (name, callback) form.
local function register_function(...)
  if not raw.loading() then
    raise(API .. '.register_function can only be called on FUNCTION LOAD command')
  end
  local n = select('#', ...)
  if n < 1 or n > 2 then raise('wrong number of arguments to ' .. API .. '.register_function') end
  local name, callback, desc, flags = nil, nil, nil, 0
  if n == 1 then
    local args = ...
    if type(args) ~= 'table' then
      raise('calling ' .. API .. '.register_function with a single argument is only applicable to ' ..
            'Lua table (representing named arguments).')
    end
    for k, v in next, args do
      if not isstring(k) then
        raise('named argument key given to ' .. API .. '.register_function is not a string')
      end
      local key = lower(tostring(k))
      if key == 'function_name' then
        if not isstring(v) then
          raise('function_name argument given to ' .. API .. '.register_function must be a string')
        end
        name = tostring(v)
      elseif key == 'description' then
        if not isstring(v) then
          raise('description argument given to ' .. API .. '.register_function must be a string')
        end
        desc = tostring(v)
      elseif key == 'callback' then
        if type(v) ~= 'function' then
          raise('callback argument given to ' .. API .. '.register_function must be a function')
        end
        callback = v
      elseif key == 'flags' then
        if type(v) ~= 'table' then
          raise('flags argument to ' .. API .. '.register_function must be a table representing ' ..
                'function flags')
        end
        flags = 0
        local j = 1
        while true do
          local f = v[j]
          if f == nil then break end
          if not isstring(f) then raise('unknown flag given') end
          local bit = raw.flags[lower(tostring(f))]
          if bit == nil then raise('unknown flag given') end
          flags = bor(flags, bit)
          j = j + 1
        end
      else
        raise('unknown argument given to ' .. API .. '.register_function')
      end
    end
    if name == nil then raise(API .. '.register_function must get a function name argument') end
    if callback == nil then raise(API .. '.register_function must get a callback argument') end
  else
    local a, b = ...
    if not isstring(a) then raise('first argument to ' .. API .. '.register_function must be a string') end
    name = tostring(a)
    if type(b) ~= 'function' then
      raise('second argument to ' .. API .. '.register_function must be a function')
    end
    callback = b
  end
  local err = raw.register(name, callback, desc, flags)
  if err then raise(err) end
end

local redis = G.redis
local lib_redis = {
  register_function = register_function,
  log = redis.log,
  LOG_DEBUG = redis.LOG_DEBUG,
  LOG_VERBOSE = redis.LOG_VERBOSE,
  LOG_NOTICE = redis.LOG_NOTICE,
  LOG_WARNING = redis.LOG_WARNING,
}
for k, v in next, target.versions do lib_redis[k] = v end
setmetatable(lib_redis, {__index = missing_global})
local lib = {}
for _, name in ipairs(target.names) do lib[name] = lib_redis end
setmetatable(lib, {__index = missing_global})
protect(lib)

local env = {}
local env_mt = {__index = G}
setmetatable(env, env_mt)
protect(env)
return env, env_mt, lib
