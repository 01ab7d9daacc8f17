-- Runs once when the compose Postgres volume is created. vfs-svc applies its
-- own migrations at start; pg_trgm is created here too because creating an
-- extension needs more rights than the application role may have.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
