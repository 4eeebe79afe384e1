
--- prelude
local lru, dead = KEYS[1], KEYS[2]
local prefix = string.sub(lru, 1, #lru - 3)
local now
if ARGV[1] ~= '' then
now = tonumber(ARGV[1])
else
local t = redis.call('TIME')
now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local tomb, cap = tonumber(ARGV[2]), tonumber(ARGV[3])
local events = {}
local function S(x) return string.format('%d', x) end
local function key(member) return prefix .. 'h:' .. member end
local function num(x)
if type(x) == 'string' and #x <= 16 and string.match(x, '^%-?%d+$') then return tonumber(x) end
return nil
end
local function rec(k)
local ty = redis.call('TYPE', k)['ok']
if ty == 'none' then return nil end
if ty ~= 'hash' then return false end
local h = redis.call('HMGET', k, 't', 'g', 'c', 'u', 'i', 'm', 'z', 's', 'd')
local r = {t = h[1], g = num(h[2]), c = num(h[3]), u = num(h[4]), i = num(h[5]), m = num(h[6]), z = num(h[7]), d = num(h[9])}
if type(r.t) ~= 'string' or #r.t ~= 32 or not r.g or r.g < 1 or not r.c or not r.u
or not r.i or r.i < 1 or not r.m or r.m < 1 or not r.z or r.z < 0 then
return false
end
if h[8] then
if (h[8] ~= 'e' and h[8] ~= 'i' and h[8] ~= 'm') or not r.d then return false end
r.s = h[8]
end
return r
end
local function roomy()
redis.call('ZADD', lru, 'XX', '0', '')
end
local function drop(member)
redis.call('DEL', key(member))
redis.call('ZREM', lru, member)
redis.call('ZREM', dead, member)
end
local function corrupt(member)
drop(member)
events[#events + 1] = 'corrupt:' .. member
end
local function lapsed(r)
local ie, me = r.u + r.i, r.c + r.m
if now >= me and me <= ie then return 'm', me end
if now >= ie then return 'i', ie end
if now >= me then return 'm', me end
return nil, nil
end
local function keep(member, deadline)
redis.call('PEXPIRE', key(member), S(math.max(deadline + tomb - now, 1)))
end
local function bury(member, r, state, died)
local k = key(member)
redis.call('HDEL', k, 'v')
redis.call('HSET', k, 's', state, 'd', S(died))
redis.call('ZREM', lru, member)
redis.call('ZADD', dead, S(died), member)
keep(member, died)
r.s, r.d = state, died
if state == 'e' then
events[#events + 1] = 'evicted:' .. member
else
events[#events + 1] = 'expired:' .. (state == 'i' and 'idle' or 'max_age') .. ':' .. member
end
end
local function live(member, tag)
local r = rec(key(member))
if r == nil then
redis.call('ZREM', lru, member)
redis.call('ZREM', dead, member)
return 'not_found'
end
if r == false then
corrupt(member)
return 'not_found'
end
if r.t ~= tag then return 'not_found' end
if not r.s then
local state, died = lapsed(r)
if not state then return 'ok', r end
bury(member, r, state, died)
end
if now - r.d >= tomb then
drop(member)
return 'not_found'
end
if r.s == 'e' then return 'evicted', r end
if r.s == 'm' then return 'expired_max_age', r end
return 'expired_idle', r
end
local function refused(state, r)
if r then return {state, events, S(r.i), S(r.m)} end
return {state, events}
end
local function refresh(member, r)
if now - r.u >= math.min(math.floor(r.i / 64), 1000) then
r.u = now
keep(member, math.min(now + r.i, r.c + r.m))
redis.call('HSET', key(member), 'u', S(now))
redis.call('ZADD', lru, S(now), member)
end
end
local function sweep(c)
for _, member in ipairs(redis.call('ZRANGE', lru, 0, -1)) do
local r = rec(key(member))
if r == nil then
redis.call('ZREM', lru, member)
elseif r == false then
corrupt(member)
elseif r.s then
redis.call('ZREM', lru, member)
redis.call('ZADD', dead, S(r.d), member)
else
local state, died = lapsed(r)
if state then
bury(member, r, state, died)
if state == 'i' then c.idle = c.idle + 1 else c.max = c.max + 1 end
if now - died >= tomb then
drop(member)
c.dropped = c.dropped + 1
end
end
end
end
for _, member in ipairs(redis.call('ZRANGE', dead, 0, -1)) do
local r = rec(key(member))
if r == nil then
redis.call('ZREM', dead, member)
elseif r == false then
corrupt(member)
elseif not r.s then
redis.call('ZREM', dead, member)
redis.call('ZADD', lru, S(r.u), member)
elseif now - r.d >= tomb then
drop(member)
c.dropped = c.dropped + 1
end
end
end

--- create
local member, owner, quota = ARGV[5], ARGV[10], math.max(tonumber(ARGV[11]) or 1, 1)
roomy()
sweep({idle = 0, max = 0, dropped = 0})
local function before(a, b)
if a.r.u ~= b.r.u then return a.r.u < b.r.u end
if a.r.c ~= b.r.c then return a.r.c < b.r.c end
return a.m < b.m
end
local function holders()
local byOwner = {}
for _, m in ipairs(redis.call('ZRANGE', lru, 0, -1)) do
local r = rec(key(m))
if r and not r.s then
local o = redis.call('HGET', key(m), 'o') or ''
local h = byOwner[o]
if not h then h = {n = 0}; byOwner[o] = h end
h.n = h.n + 1
h[h.n] = {m = m, r = r}
end
end
for _, h in pairs(byOwner) do
table.sort(h, before)
end
return byOwner
end
if redis.call('ZCARD', lru) >= quota then
local mine = holders()[owner]
if mine then
for i = 1, mine.n - quota + 1 do
bury(mine[i].m, mine[i].r, 'e', now)
end
end
end
local byOwner = redis.call('ZCARD', lru) >= cap and holders() or {}
while redis.call('ZCARD', lru) >= cap do
local most = nil
for _, h in pairs(byOwner) do
if h.n > 0 and (not most or h.n > most.n or (h.n == most.n and before(h[1], most[1]))) then
most = h
end
end
if not most then break end
local v = table.remove(most, 1)
most.n = most.n - 1
bury(v.m, v.r, 'e', now)
end
drop(member)
local idle, maxAge = tonumber(ARGV[8]), tonumber(ARGV[9])
redis.call('HSET', key(member), 't', ARGV[4], 'g', '1', 'c', S(now), 'u', S(now), 'i', ARGV[8], 'm', ARGV[9], 'z', ARGV[7], 'v', ARGV[6], 'o', owner)
keep(member, now + math.min(idle, maxAge))
redis.call('ZADD', lru, S(now), member)
local n = redis.call('ZCARD', dead)
if n > cap then
local dyingBy, order = {}, {}
for _, m in ipairs(redis.call('ZRANGE', dead, 0, -1)) do
local o = redis.call('HGET', key(m), 'o') or ''
if not dyingBy[o] then dyingBy[o] = {}; order[#order + 1] = o end
local l = dyingBy[o]
l[#l + 1] = m
end
while n > cap do
local most = nil
for _, o in ipairs(order) do
local l = dyingBy[o]
if #l > 0 and (not most or #l > #dyingBy[most]) then most = o end
end
drop(table.remove(dyingBy[most], 1))
n = n - 1
end
end
return {'ok', events, S(now)}

--- read
local member, mode = ARGV[5], ARGV[6]
local state, r = live(member, ARGV[4])
if state ~= 'ok' then return refused(state, r) end
local v = ''
if mode == 'get' then
v = redis.call('HGET', key(member), 'v')
if type(v) ~= 'string' then
corrupt(member)
return {'not_found', events}
end
end
if mode ~= 'exists' then refresh(member, r) end
return {'ok', events, v, S(r.g), S(r.c), S(r.i), S(r.m)}

--- put
local member = ARGV[5]
roomy()
local state, r = live(member, ARGV[4])
if state ~= 'ok' then return refused(state, r) end
if ARGV[8] ~= '' and tonumber(ARGV[8]) ~= r.g then return {'conflict', events, S(r.g)} end
local g = r.g + 1
if tonumber(ARGV[9]) ~= g then return {'stale', events, S(r.g)} end
redis.call('HSET', key(member), 'v', ARGV[6], 'z', ARGV[7], 'g', S(g), 'u', S(now))
redis.call('ZADD', lru, S(now), member)
keep(member, math.min(now + r.i, r.c + r.m))
return {'ok', events, S(g)}

--- delete
local member = ARGV[5]
local state, r = live(member, ARGV[4])
if state ~= 'ok' then return refused(state, r) end
if ARGV[6] ~= '' and tonumber(ARGV[6]) ~= r.g then return {'conflict', events, S(r.g)} end
drop(member)
return {'ok', events}

--- corrupt
local member = ARGV[4]
local r = rec(key(member))
if r and r.g == tonumber(ARGV[5]) then
if ARGV[6] == 'rollback' then drop(member) else corrupt(member) end
end
return {'ok', events}

--- list
local out = {'ok', events, S(now)}
local seen = {}
for _, set in ipairs({lru, dead}) do
for _, member in ipairs(redis.call('ZRANGE', set, 0, -1)) do
local r = (not seen[member]) and rec(key(member))
seen[member] = true
if r then
local state, t = r.s, r.d
if not state then
state, t = lapsed(r)
if not state then state, t = 'l', r.u end
end
if state == 'l' or now - t < tomb then
out[#out + 1] = {member, state, S(r.c), S(t), S(r.g), S(r.z)}
end
end
end
end
return out

--- gc
local c = {idle = 0, max = 0, dropped = 0}
sweep(c)
return {'ok', events, S(c.idle), S(c.max), S(c.dropped), S(redis.call('ZCARD', lru))}

--- layout
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
