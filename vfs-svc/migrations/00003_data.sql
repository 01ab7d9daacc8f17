-- +goose Up
-- Health series. The primary key makes re-imports idempotent and serves
-- per-indicator time ranges; the lower() index serves case-insensitive
-- lookups by name or alias.
CREATE TABLE health_series (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    indicator  text NOT NULL,
    value      double precision NOT NULL,
    unit       text NOT NULL,
    time       timestamptz NOT NULL,
    source     text NOT NULL,
    PRIMARY KEY (account_id, indicator, time, source)
);
CREATE INDEX health_series_lower_idx ON health_series (account_id, lower(indicator), time);

-- rsid and chromosome compare bytewise (COLLATE "C"): they are codes, not
-- words, and byte comparisons keep bulk index maintenance cheap.
CREATE TABLE genetic_variants (
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    rsid       text COLLATE "C" NOT NULL,
    chromosome text COLLATE "C" NOT NULL,
    position   bigint NOT NULL,
    genotype   text NOT NULL,
    PRIMARY KEY (account_id, rsid)
);
CREATE INDEX genetic_variants_locus_idx ON genetic_variants (account_id, chromosome, position);

-- Import sessions: chunks are staged here (any replica may take any chunk)
-- and reach the stores only at commit. Staging tables are unlogged: a crash
-- loses only imports in flight.
CREATE TABLE data_imports (
    id         uuid PRIMARY KEY,
    account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind       text NOT NULL,
    format     text NOT NULL,
    next_seq   bigint NOT NULL DEFAULT 0,
    valid      bigint NOT NULL DEFAULT 0,
    errors     bigint NOT NULL DEFAULT 0,
    created    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX data_imports_created_idx ON data_imports (created);

CREATE UNLOGGED TABLE import_health (
    import_id uuid NOT NULL,
    line      bigint NOT NULL,
    indicator text NOT NULL,
    value     double precision NOT NULL,
    unit      text NOT NULL,
    time      timestamptz NOT NULL,
    source    text NOT NULL
);
CREATE INDEX import_health_idx ON import_health (import_id);

CREATE UNLOGGED TABLE import_genetic (
    import_id  uuid NOT NULL,
    line       bigint NOT NULL,
    rsid       text COLLATE "C" NOT NULL,
    chromosome text COLLATE "C" NOT NULL,
    position   bigint NOT NULL,
    genotype   text NOT NULL
);
CREATE INDEX import_genetic_idx ON import_genetic (import_id);

-- +goose Down
DROP TABLE import_genetic;
DROP TABLE import_health;
DROP TABLE data_imports;
DROP TABLE genetic_variants;
DROP TABLE health_series;
