-- Events for other systems (billing, alerts, a SIEM): each is written in the transaction of the
-- change it reports, with one delivery row per endpoint that wants it, so a change that rolls back
-- emits nothing and one that commits is sent even if its instance dies the next moment. Any
-- instance claims due deliveries with FOR UPDATE SKIP LOCKED, so each attempt is made by one.
CREATE TABLE events (
  -- The webhook-id of every attempt: a receiver drops a repeat by it.
  id text PRIMARY KEY,
  type text NOT NULL CHECK (type ~ '^[a-z_]+\.[a-z_]+$'),
  -- The JSON sent, byte for byte the same on every attempt.
  body text NOT NULL,
  -- Events said once whoever notices (a key's expiry warning, a day's quota exhaustion): the
  -- second instance to notice inserts nothing.
  once_key text UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  url text NOT NULL,
  -- NULL: every type.
  events text[],
  description text NOT NULL DEFAULT '',
  enabled boolean NOT NULL DEFAULT true,
  -- Kept readable: an HMAC needs the secret itself to sign.
  secret text NOT NULL,
  -- A rotation's old secret signs beside the new one until it ends.
  previous_secret text,
  previous_secret_until timestamptz,
  -- Since when every attempt has failed; a success clears it.
  failing_since timestamptz,
  disabled_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  -- Due when this passes. A claim moves it past the attempt's deadline, so an instance that dies
  -- mid-attempt lets go of it then, and another takes it.
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_recent_idx ON webhook_deliveries (endpoint_id, created_at DESC);

CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id uuid NOT NULL,
  event_id text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  status integer,
  duration_ms integer NOT NULL,
  error text,
  -- The answer's first 1 KB, for the operator reading why an endpoint refuses.
  response text,
  FOREIGN KEY (endpoint_id, event_id) REFERENCES webhook_deliveries (endpoint_id, event_id) ON DELETE CASCADE
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (endpoint_id, event_id, id);
