-- swarm's team store on PostgreSQL, version 1: teams, members with leases, messages, tasks with
-- dependencies and claim epochs, permission requests, member status.
-- Records that Claude Code's files also hold (a member, an inbox entry, a request, a status) are
-- kept as `json` (not `jsonb`): json keeps the key order and the exact text, so a store hands back
-- the very objects the file layer does. Columns that queries select on are kept beside them.

CREATE TABLE teams (
    name          text PRIMARY KEY,
    config        json NOT NULL,          -- the team file's keys but its members, in order
    next_task_id  bigint NOT NULL DEFAULT 1,  -- task ids are never reused
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
    team              text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    name              text NOT NULL,
    position          bigint GENERATED ALWAYS AS IDENTITY,  -- roster order
    data              json NOT NULL,      -- the Member record
    join_token        text NOT NULL,      -- makes a retried add_member idempotent
    alive             boolean NOT NULL DEFAULT true,
    lease_expires_at  timestamptz,        -- NULL: holds no lease (never heartbeated)
    PRIMARY KEY (team, name)
);
CREATE INDEX members_leases ON members (lease_expires_at) WHERE alive AND lease_expires_at IS NOT NULL;

CREATE TABLE messages (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- delivery order
    team       text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    recipient  text NOT NULL,
    msg_id     text NOT NULL,             -- the entry's identity: one per team and recipient
    sender     text NOT NULL,
    entry      json NOT NULL,             -- the InboxEntry as sent (its "read" is read_at's)
    sent_at    timestamptz NOT NULL DEFAULT now(),
    read_at    timestamptz,               -- NULL: unread, in the live queue
    UNIQUE (team, recipient, msg_id)
);
-- the live queue: only unread messages are in this index, so it stays small however long the
-- history grows; read ones stay in the table as the history
CREATE INDEX messages_live ON messages (team, recipient, seq) WHERE read_at IS NULL;

CREATE TABLE tasks (
    team         text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    id           bigint NOT NULL,
    subject      text NOT NULL,
    description  text NOT NULL,
    active_form  text,
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'in_progress', 'completed')),
    owner        text,
    metadata     json,
    internal     boolean NOT NULL DEFAULT false,  -- metadata._internal
    failed       boolean NOT NULL DEFAULT false,  -- metadata.failed
    epoch        bigint NOT NULL DEFAULT 0,       -- +1 on every claim and every return to pending
    claim_token  text,                            -- the claim_next call that made the current claim
    create_key   text,                            -- makes a retried create idempotent
    key_order    json,                            -- the record's keys in order; NULL: Claude Code's
    claimed_at   timestamptz,
    completed_at timestamptz,
    PRIMARY KEY (team, id),
    UNIQUE (team, create_key)
);
CREATE INDEX tasks_claimable ON tasks (team, id) WHERE status = 'pending' AND owner IS NULL;
CREATE INDEX tasks_owned ON tasks (team, owner) WHERE owner IS NOT NULL;

CREATE TABLE task_deps (
    team        text NOT NULL,
    task_id     bigint NOT NULL,
    blocker_id  bigint NOT NULL,
    position    bigint GENERATED ALWAYS AS IDENTITY,  -- blockedBy order
    PRIMARY KEY (team, task_id, blocker_id),
    FOREIGN KEY (team, task_id) REFERENCES tasks (team, id) ON DELETE CASCADE,
    -- a deleted blocker no longer blocks, as on the file board
    FOREIGN KEY (team, blocker_id) REFERENCES tasks (team, id) ON DELETE CASCADE,
    CHECK (task_id <> blocker_id)
);
CREATE INDEX task_deps_blocker ON task_deps (team, blocker_id);

-- every claim and every return to pending, for the record (and the tests' exactly-once checks)
CREATE TABLE task_events (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team     text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    task_id  bigint NOT NULL,
    event    text NOT NULL CHECK (event IN ('claimed', 'completed', 'released')),
    agent    text,
    epoch    bigint NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX task_events_task ON task_events (team, task_id);

CREATE TABLE permission_requests (
    team         text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    id           text NOT NULL,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    request      json NOT NULL,           -- the PermissionFileRequest, resolution included
    created_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at  timestamptz,
    PRIMARY KEY (team, id)
);
CREATE INDEX permission_requests_pending ON permission_requests (team, created_at) WHERE status = 'pending';

CREATE TABLE member_status (
    team        text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    name        text NOT NULL,
    status      json NOT NULL,            -- the AgentStatus record
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team, name)
);
