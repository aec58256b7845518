-- version 5: scheduled runs kept in the store (`protocols.pg.schedules`), so every scheduler of
-- a team that spans machines sees them, and a row lock makes each firing once. The body is
-- the schedule as `swarm.schedule.book` writes it: swarm's own JSON (json, not jsonb: a text
-- of the schedule may hold NUL, as every document here may).
CREATE TABLE schedules (
    id       text PRIMARY KEY,
    team     text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    created  timestamptz NOT NULL DEFAULT now(),
    body     json NOT NULL
);
CREATE INDEX schedules_team ON schedules (team);
