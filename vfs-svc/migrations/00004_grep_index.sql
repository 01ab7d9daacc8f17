-- +goose Up
-- Without the GIN pending list, every write lands in the trigram index at
-- once: a burst of writes can no longer leave grep with a pending list so
-- large that the planner prefers scanning and regex-matching every file.
-- Writes pay a little more; searches stay indexed.
ALTER INDEX vfs_files_content_trgm SET (fastupdate = off);

-- +goose Down
ALTER INDEX vfs_files_content_trgm RESET (fastupdate);
