"""The cluster's Lua scripts: each runs atomically in Redis, so no two routers ever see half of one.

Every script that changes who is online publishes the change on the events channel *inside*
the script: Redis runs one script at a time, so the order of the events is the order of the
changes, whichever routers made them. Times are Redis's own clock (``TIME``), one clock for
every router.

Keys (``P`` is the cluster's key prefix, ``mesh:`` by default):

====================  =========  ===========================================================
``P online``          hash       agent id -> the node (router) it is connected to
``P node-agents:N``   set        the agents online at node N (to bury N's agents at once)
``P nodes``           sorted set node -> when its lease ends (ms, Redis time)
``P agents``          hash       agent id -> {hello, last_seen}: every agent met
``P credentials``     hash       agent id -> salt and digest of its credential (never the secret)
``P secrets``         hash       the routers' shared secrets (the signing key's seed)
``P subscriptions``   hash       subscription id -> {agent_id, topic, filter}
``P mail:A``          hash       message id -> envelope kept for absent agent A
``P mailq:A``         sorted set message id -> acceptance order (``P mail-seq``)
``P mailx:A``         sorted set message id -> expiry (unix seconds)
``P mail-bytes``      hash       agent id -> bytes kept for it; field "" holds the total
``P lock:NAME``       hash       a lock's holder, the node it is at, its lease's end (ms)
``P lockq:NAME``      sorted set agents waiting for the lock, in arrival order (``P lock-seq``)
``P lockqx:NAME``     hash       agent -> when it stops waiting (ms)
``P node-locks:N``    set        the locks node N's agents hold or wait for (to bury N)
``P barrier:NAME``    hash       a barrier's rule, timeout, deadline, generation (``P barrier-seq``)
``P barrier-arrivals:NAME`` hash agent -> the node it arrived at
====================  =========  ===========================================================

Scripts name some keys they build (``node-agents:N``, ``lock:NAME`` in :data:`BURY`), so the
cluster runs on one Redis (with replicas if you like), not on a sharded Redis Cluster.
"""

from __future__ import annotations

# Redis's clock in milliseconds.
_NOW = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
"""

HEARTBEAT = (
    _NOW
    + """
-- KEYS: nodes. ARGV: node, lease ms. Extends this node's lease; returns {1 if this node's lease had
-- run out (or it was buried) else 0, the nodes whose lease ended...}.
local lease = redis.call('ZSCORE', KEYS[1], ARGV[1])
local lapsed = (not lease or tonumber(lease) <= now) and 1 or 0
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
table.insert(dead, 1, lapsed)
return dead
"""
)

CLAIM = (
    _NOW
    + """
-- KEYS: online, nodes, node-agents:ME, events, node-agents: (prefix).
-- ARGV: agent, me, event. Takes the agent id for this node unless a live node has it; returns
-- the live holder then, else "" (and the event is published).
local holder = redis.call('HGET', KEYS[1], ARGV[1])
if holder and holder ~= ARGV[2] then
    local lease = redis.call('ZSCORE', KEYS[2], holder)
    if lease and tonumber(lease) > now then return holder end
    redis.call('SREM', KEYS[5] .. holder, ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('PUBLISH', KEYS[4], ARGV[3])
return ''
"""
)

RELEASE = """
-- KEYS: online, node-agents:ME, events. ARGV: agent, me, event. Lets the agent id go if this node has it.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', KEYS[3], ARGV[3])
return 1
"""

BURY = (
    _NOW
    + """
-- KEYS: nodes, online, events. ARGV: dead node, key prefix.
-- The first router to see a node's lease ended takes its agents offline (one event each), ends
-- its agents' holds on locks and takes them out of lock queues (a lock_free event wakes the next).
-- Returns how many agents went offline; -1 when another router buried the node first.
local lease = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not lease or tonumber(lease) > now then return -1 end
redis.call('ZREM', KEYS[1], ARGV[1])
local agents_key = ARGV[2] .. 'node-agents:' .. ARGV[1]
local locks_key = ARGV[2] .. 'node-locks:' .. ARGV[1]
local agents = redis.call('SMEMBERS', agents_key)
local gone = 0
for _, agent in ipairs(agents) do
    if redis.call('HGET', KEYS[2], agent) == ARGV[1] then
        redis.call('HDEL', KEYS[2], agent)
        redis.call('PUBLISH', KEYS[3], cjson.encode({e = 'offline', node = ARGV[1], agent = agent}))
        gone = gone + 1
    end
end
for _, name in ipairs(redis.call('SMEMBERS', locks_key)) do
    local lock = ARGV[2] .. 'lock:' .. name
    if redis.call('HGET', lock, 'node') == ARGV[1] then redis.call('DEL', lock) end
    for _, agent in ipairs(agents) do
        redis.call('ZREM', ARGV[2] .. 'lockq:' .. name, agent)
        redis.call('HDEL', ARGV[2] .. 'lockqx:' .. name, agent)
    end
    redis.call('PUBLISH', KEYS[3], cjson.encode({e = 'lock_free', name = name}))
end
redis.call('DEL', agents_key, locks_key)
return gone
"""
)

# Shared by the mail scripts: forget one kept message (KEYS: mail, mailq, mailx, mail-bytes; ARGV[1]: agent).
_FORGET = """
local function forget(message_id)
    local envelope = redis.call('HGET', KEYS[1], message_id)
    if not envelope then return 0 end
    local size = string.len(envelope)
    redis.call('HDEL', KEYS[1], message_id)
    redis.call('ZREM', KEYS[2], message_id)
    redis.call('ZREM', KEYS[3], message_id)
    redis.call('HINCRBY', KEYS[4], ARGV[1], -size)
    redis.call('HINCRBY', KEYS[4], '', -size)
    return 1
end
"""

MAIL_PUT = """
-- KEYS: mail, mailq, mailx, mail-bytes, mail-seq, events.
-- ARGV: agent, message id, envelope, expires at, limit, bytes limit, total bytes limit, event.
-- 1 when kept (a second put of the same message keeps one copy), 0 when a limit says no.
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then return 1 end
local size = string.len(ARGV[3])
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then return 0 end
if tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0') + size > tonumber(ARGV[6]) then return 0 end
if tonumber(redis.call('HGET', KEYS[4], '') or '0') + size > tonumber(ARGV[7]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
redis.call('HINCRBY', KEYS[4], ARGV[1], size)
redis.call('HINCRBY', KEYS[4], '', size)
redis.call('PUBLISH', KEYS[6], ARGV[8])
return 1
"""

MAIL_REMOVE = (
    _FORGET
    + """
-- KEYS: mail, mailq, mailx, mail-bytes. ARGV: agent, message id.
return forget(ARGV[2])
"""
)

MAIL_TAKE = (
    _FORGET
    + """
-- KEYS: mail, mailq, mailx, mail-bytes. ARGV: agent, now (unix seconds).
-- What is kept for the agent, in acceptance order; the expired are dropped first.
for _, message_id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])) do forget(message_id) end
local kept = {}
for i, message_id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    kept[i] = redis.call('HGET', KEYS[1], message_id)
end
return kept
"""
)

MAIL_FORGET_ALL = (
    _FORGET
    + """
-- KEYS: mail, mailq, mailx, mail-bytes. ARGV: agent.
for _, message_id in ipairs(redis.call('HKEYS', KEYS[1])) do forget(message_id) end
return 1
"""
)

# --- locks: one holder at a time, first come first served, leases ------------------------------
# KEYS of the lock scripts: lock:NAME, lockq:NAME, lockqx:NAME (agent -> when it stops waiting, ms),
# lock-seq, node-locks:NODE (the locks this node's agents hold or wait for), events.

# Whether the lock is held now (a lease that ended frees it); drops waiters who stopped waiting.
_LOCK_STATE = """
local function free_if_ended()
    local ends = redis.call('HGET', KEYS[1], 'until')
    if ends and tonumber(ends) <= now then redis.call('DEL', KEYS[1]) end
    return redis.call('HGET', KEYS[1], 'holder')
end
local function head()
    while true do
        local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
        if not first then return nil end
        if tonumber(redis.call('HGET', KEYS[3], first) or '0') > now then return first end
        redis.call('ZREM', KEYS[2], first)
        redis.call('HDEL', KEYS[3], first)
    end
end
local function status(code)
    return {code, redis.call('HGET', KEYS[1], 'holder') or '', tonumber(redis.call('HGET', KEYS[1], 'until') or '0'),
            redis.call('ZCARD', KEYS[2]), now}
end
"""

LOCK_ACQUIRE = (
    _NOW
    + _LOCK_STATE
    + """
-- ARGV: agent, node, lease ms, wait ms (0: do not queue), lock name.
-- {1, holder, lease end, waiters, now} when the agent has the lock (taken or renewed); else {0, ...}
-- and the agent keeps its place in the queue (or takes the last one) until its wait ends.
local holder = free_if_ended()
local first = head()
if holder == ARGV[1] or (not holder and (not first or first == ARGV[1])) then
    redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'node', ARGV[2], 'until', now + tonumber(ARGV[3]))
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('HDEL', KEYS[3], ARGV[1])
    redis.call('SADD', KEYS[5], ARGV[5])
    return status(1)
end
if tonumber(ARGV[4]) > 0 then
    if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
        redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), ARGV[1])
    end
    redis.call('HSET', KEYS[3], ARGV[1], now + tonumber(ARGV[4]))
    redis.call('SADD', KEYS[5], ARGV[5])
end
return status(0)
"""
)

LOCK_RELEASE = (
    _NOW
    + _LOCK_STATE
    + """
-- ARGV: agent, lock name, lock_free event. {1, ...} when the agent held it (now released), else {0, ...}.
if free_if_ended() ~= ARGV[1] then return status(0) end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[6], ARGV[3])
return status(1)
"""
)

LOCK_GIVE_UP = (
    _NOW
    + _LOCK_STATE
    + """
-- ARGV: agent, lock name, lock_free event. The agent stops waiting; if the lock is free, the next wakes.
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if not free_if_ended() then return status(0) end
redis.call('PUBLISH', KEYS[6], ARGV[3])
return status(0)
"""
)

# --- barriers: everyone released at once, or everyone told who never came --------------------
# KEYS: barrier:NAME (its rule, deadline, generation), barrier-arrivals:NAME, barrier-seq, events.

BARRIER_ARRIVE = (
    _NOW
    + """
-- ARGV: agent, node, rule (canonical JSON: {"count": n} or {"expected": [...]}), timeout ms, name.
-- {0, rule} when the barrier waits under another rule; {1, generation, deadline - now} when waiting;
-- {2, generation} when this arrival completed it (the event tells every router's waiters).
local rule = redis.call('HGET', KEYS[1], 'rule')
if not rule then
    rule = ARGV[3]
    redis.call('HSET', KEYS[1], 'rule', rule, 'deadline', now + tonumber(ARGV[4]), 'timeout', ARGV[4],
               'generation', redis.call('INCR', KEYS[3]))
    redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) + 60000)
elseif rule ~= ARGV[3] then
    return {0, rule}
end
local generation = redis.call('HGET', KEYS[1], 'generation')
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
local wanted = cjson.decode(rule)
local complete = true
if wanted.expected then
    for _, agent in ipairs(wanted.expected) do
        if redis.call('HEXISTS', KEYS[2], agent) == 0 then complete = false end
    end
else
    complete = redis.call('HLEN', KEYS[2]) >= wanted.count
end
if not complete then
    return {1, generation, tonumber(redis.call('HGET', KEYS[1], 'deadline')) - now}
end
local arrived = redis.call('HKEYS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', KEYS[4], cjson.encode({e = 'barrier', name = ARGV[5], generation = generation,
                                             arrived = arrived}))
return {2, generation}
"""
)

BARRIER_TIMEOUT = (
    _NOW
    + """
-- ARGV: name, generation. Ends the barrier if its time is up: every router's waiters hear who came.
-- Returns the ms left (0 when it ended now or had ended already).
if redis.call('HGET', KEYS[1], 'generation') ~= ARGV[2] then return 0 end
local left = tonumber(redis.call('HGET', KEYS[1], 'deadline')) - now
if left > 0 then return left end
local arrived = redis.call('HKEYS', KEYS[2])
local rule = redis.call('HGET', KEYS[1], 'rule')
local timeout = redis.call('HGET', KEYS[1], 'timeout')
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', KEYS[4], cjson.encode({e = 'barrier', name = ARGV[1], generation = ARGV[2],
                                             arrived = arrived, rule = rule, timeout = timeout, timed_out = true}))
return 0
"""
)
