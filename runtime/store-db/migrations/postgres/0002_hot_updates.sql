-- Schema version 2: a change to a record stays on its page. PostgreSQL writes an updated row as
-- a new version, and unless the update is "heap-only" (HOT: no indexed column changed, and
-- room on the same page) every index of the table gains an entry for it too. Rollouts and
-- attempts change several times each and workers on every call of theirs, so:
-- - `rollouts_status` goes: nothing looks rollouts up by status alone (queries filter the
--   records), yet every status change wrote an entry into it and into every other index;
-- - pages are left partly free for the next versions of their rows.

DROP INDEX rollouts_status;
ALTER TABLE rollouts SET (fillfactor = 70);
ALTER TABLE attempts SET (fillfactor = 70);
ALTER TABLE workers SET (fillfactor = 50);
