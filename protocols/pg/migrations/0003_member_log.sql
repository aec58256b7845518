-- version 3: what `swarm logs` shows of each member, for a team that spans machines.
-- A teammate writes its transcript and its output log on its own host, where a `swarm logs` on
-- another host cannot read them; on PostgreSQL it also ships here the lines `swarm logs` shows
-- (`protocols.pg.member_log`): its transcript's records of the kinds shown, its output lines and
-- its warnings, each naming the host and process that wrote it. Only the newest lines of each
-- member are kept: every write trims the older ones.
-- (Numbered 0003: 0002 is taken by the hosts' migration of the same issue.)

CREATE TABLE member_log (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- the order written
    team        text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    member      text NOT NULL,
    host        text NOT NULL,            -- the machine the member runs on
    pid         integer NOT NULL,         -- its process there
    line        json NOT NULL,            -- {"ts", "kind", ...}: a transcript record, or output
    written_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX member_log_by_member ON member_log (team, member, seq);
