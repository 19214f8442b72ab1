-- MCP server: calls counted per company and billing cycle (exact under
-- concurrency: one row per cycle, incremented only below the limit), and the
-- activity of every call for `wsctl mcp activity`.
ALTER TABLE companies ADD COLUMN mcp_cycle_anchor timestamptz;
UPDATE companies SET mcp_cycle_anchor = created_at;
ALTER TABLE companies ALTER COLUMN mcp_cycle_anchor SET DEFAULT now();
ALTER TABLE companies ALTER COLUMN mcp_cycle_anchor SET NOT NULL;

CREATE TABLE mcp_usage (
  company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  cycle_start timestamptz NOT NULL,
  used        integer NOT NULL DEFAULT 0,
  PRIMARY KEY (company_id, cycle_start)
);

CREATE TABLE mcp_calls (
  id          bigserial PRIMARY KEY,
  company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  credential  text NOT NULL,
  tool        text NOT NULL,
  ok          boolean NOT NULL,
  error_code  integer,
  duration_ms integer NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_calls_company ON mcp_calls (company_id, created_at DESC);
