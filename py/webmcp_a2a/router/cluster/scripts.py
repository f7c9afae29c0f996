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
``P lock:NAME``       hash       a lock's holder, its node, its lease's end, its queue's next
``P lockq:NAME``      sorted set agents waiting for the lock, in arrival order
``P barrier:NAME``    hash       a barrier's rule, deadline and arrivals
====================  =========  ===========================================================
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
-- KEYS: nodes. ARGV: node, lease ms. Extends this node's lease; returns the nodes whose lease ended.
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
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
-- KEYS: nodes, node-agents:DEAD, online, events. ARGV: dead node.
-- The first router to see a node's lease ended takes its agents offline (one event each) and its
-- locks' holds end (lock:NAME entries name the node; see LOCK_ACQUIRE). Returns how many agents.
local lease = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not lease or tonumber(lease) > now then return -1 end
redis.call('ZREM', KEYS[1], ARGV[1])
local gone = 0
for _, agent in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if redis.call('HGET', KEYS[3], agent) == ARGV[1] then
        redis.call('HDEL', KEYS[3], agent)
        redis.call('PUBLISH', KEYS[4], cjson.encode({e = 'offline', node = ARGV[1], agent = agent}))
        gone = gone + 1
    end
end
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', KEYS[4], cjson.encode({e = 'node_gone', node = ARGV[1]}))
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
