-- version 4: history retention (`protocols.pg.retention`). Read messages, and the records of
-- finished work, are deleted once older than the team's retention (and read messages beyond a
-- per-recipient cap), in small batches; these indexes let a batch find them without reading
-- the whole table, however long it grew. Unread messages are never touched.

-- read messages by age, and each recipient's read messages newest first (the cap)
CREATE INDEX messages_read_age ON messages (team, read_at) WHERE read_at IS NOT NULL;
CREATE INDEX messages_history ON messages (team, recipient, seq) WHERE read_at IS NOT NULL;
CREATE INDEX task_events_age ON task_events (team, at);

-- what was pruned from each inbox: the newest timestamp deleted (the entry's own), so the
-- bridge does not carry back from a local inbox file a message PostgreSQL no longer holds
-- because it was pruned
CREATE TABLE history_pruned (
    team       text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    recipient  text NOT NULL,
    through    timestamptz NOT NULL,      -- the newest timestamp of a message deleted
    messages   bigint NOT NULL,           -- how many were deleted, in all
    PRIMARY KEY (team, recipient)
);
