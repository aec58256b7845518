-- version 2: hosts (a `swarm host serve` agent per machine, holding a lease as members do) and
-- the requests filed for them (spawn a teammate there, stop one), with each request's outcome
-- and, for a spawn, the exit of the teammate it started.

CREATE TABLE hosts (
    team              text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    name              text NOT NULL,
    info              json NOT NULL,      -- what the agent says of itself: machine, pid, cwd
    alive             boolean NOT NULL DEFAULT true,  -- false once it left (SIGTERM, SIGINT)
    lease_expires_at  timestamptz,
    joined_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, name)
);

CREATE TABLE host_requests (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team         text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    host         text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('spawn', 'stop')),
    member       text NOT NULL,
    body         json NOT NULL,           -- what to do: a spawn's spec, prompt entry, verify key
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
    outcome      json,                    -- done: {pid, backend, ...}; failed: {error}
    exited       json,                    -- a spawn's teammate exited: {code, at}
    created_at   timestamptz NOT NULL DEFAULT now(),
    answered_at  timestamptz
);
CREATE INDEX host_requests_pending ON host_requests (team, host, id) WHERE state = 'pending';
