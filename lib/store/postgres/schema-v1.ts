// Migration 1: the tables and the ledger functions (S-2). Every key is COLLATE "C": equality is
// bytewise, and an operating-system collation upgrade can never reorder (and so corrupt) an index.
// Times are milliseconds since the epoch as in UserRecord; the ledgers take them from the
// database's clock (httpskit.now_ms()), never from an instance's, so clock skew between instances
// cannot stretch or shorten a lock (S-2).
export const SCHEMA_V1 = `
CREATE FUNCTION httpskit.now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

CREATE TABLE httpskit.meta (key text COLLATE "C" PRIMARY KEY, value jsonb NOT NULL);

CREATE TABLE httpskit.users (
  name                text COLLATE "C" PRIMARY KEY,
  -- The name as UTF-16BE: byte order of this key is R-3's UTF-16 code unit order, which differs
  -- from UTF-8 byte order for characters above U+FFFF against U+E000..U+FFFF.
  sort_key            bytea NOT NULL UNIQUE,
  role                text NOT NULL CHECK (role IN ('user', 'admin')),
  hash                text NOT NULL CHECK (hash <> ''),
  digest              text,
  reset_tokens        jsonb CHECK (reset_tokens IS NULL OR jsonb_typeof(reset_tokens) = 'array'),
  created_at          double precision NOT NULL,
  password_changed_at double precision NOT NULL,
  -- RFC 7616 §3.4.4 userhash under the realm recorded in meta (S-4); NULL until one is recorded.
  userhash_sha256     text COLLATE "C",
  userhash_md5        text COLLATE "C"
);
CREATE INDEX users_userhash_sha256 ON httpskit.users (userhash_sha256);
CREATE INDEX users_userhash_md5 ON httpskit.users (userhash_md5);
CREATE INDEX users_admins ON httpskit.users (role) WHERE role = 'admin';

-- P-8, per account (existing or not): consecutive failures and the lock they earned.
CREATE TABLE httpskit.throttle_account (
  account      text COLLATE "C" PRIMARY KEY,
  failures     integer NOT NULL DEFAULT 0,
  locked_until bigint NOT NULL DEFAULT 0,
  last_failure bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 80);
CREATE INDEX throttle_account_last ON httpskit.throttle_account (last_failure);

-- P-8, per address: the times of the last failures within the window (at most the budget).
CREATE TABLE httpskit.throttle_address (
  address      text COLLATE "C" PRIMARY KEY,
  times        bigint[] NOT NULL DEFAULT '{}',
  last_failure bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 80);
CREATE INDEX throttle_address_last ON httpskit.throttle_address (last_failure);

-- Attempts in flight, leased: a crashed instance's reservations end at expires_at.
CREATE TABLE httpskit.throttle_lease (
  id         uuid PRIMARY KEY,
  account    text COLLATE "C",
  address    text COLLATE "C" NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX throttle_lease_account ON httpskit.throttle_lease (account) WHERE account IS NOT NULL;
CREATE INDEX throttle_lease_address ON httpskit.throttle_lease (address);
CREATE INDEX throttle_lease_expires ON httpskit.throttle_lease (expires_at);

-- P-10: the highest nonce count used per Digest nonce.
CREATE TABLE httpskit.digest_nonce (
  nonce      text COLLATE "C" PRIMARY KEY,
  nc         bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX digest_nonce_expires ON httpskit.digest_nonce (expires_at);

-- P-12: when tokens were issued per account, within the window.
CREATE TABLE httpskit.token_issuance (
  account    text COLLATE "C" PRIMARY KEY,
  times      bigint[] NOT NULL DEFAULT '{}',
  forget_at  bigint NOT NULL DEFAULT 0
);
CREATE INDEX token_issuance_forget ON httpskit.token_issuance (forget_at);

-- Reserve one attempt (SEAM.md ThrottleLedger.reserve) in one statement. Rows are locked in one
-- order everywhere (account, then address), so reserve and settle cannot deadlock.
CREATE FUNCTION httpskit.throttle_reserve(
  p_account text, p_address text, p_free integer, p_addr_max integer, p_window bigint, p_lease bigint,
  OUT kind text, OUT lease uuid, OUT retry_after integer
) LANGUAGE plpgsql AS $$
DECLARE
  t bigint := httpskit.now_ms();
  a_failures integer := 0;
  until bigint := 0;
  live bigint[];
  n integer;
  pending integer;
BEGIN
  IF p_account IS NOT NULL THEN
    INSERT INTO httpskit.throttle_account (account) VALUES (p_account) ON CONFLICT DO NOTHING;
    SELECT failures, locked_until INTO a_failures, until FROM httpskit.throttle_account WHERE account = p_account FOR UPDATE;
  END IF;
  INSERT INTO httpskit.throttle_address (address) VALUES (p_address) ON CONFLICT DO NOTHING;
  SELECT times INTO live FROM httpskit.throttle_address WHERE address = p_address FOR UPDATE;
  SELECT coalesce(array_agg(x ORDER BY x), '{}') INTO live FROM unnest(live) AS x WHERE x + p_window > t;
  n := cardinality(live);
  -- The address waits until its oldest failure among the last p_addr_max leaves the window.
  IF n >= p_addr_max THEN until := greatest(until, live[n - p_addr_max + 1] + p_window); END IF;
  IF until > t THEN
    kind := 'locked'; retry_after := greatest(1, ceil((until - t) / 1000.0))::integer; RETURN;
  END IF;
  IF p_account IS NOT NULL THEN
    SELECT count(*) INTO pending FROM httpskit.throttle_lease WHERE account = p_account AND expires_at > t;
    -- At the threshold only one attempt at a time: its failure re-locks the account.
    IF pending > 0 AND a_failures + pending >= p_free THEN kind := 'busy'; RETURN; END IF;
  END IF;
  SELECT count(*) INTO pending FROM httpskit.throttle_lease WHERE address = p_address AND expires_at > t;
  IF pending > 0 AND n + pending >= p_addr_max THEN kind := 'busy'; RETURN; END IF;
  lease := gen_random_uuid();
  INSERT INTO httpskit.throttle_lease (id, account, address, expires_at) VALUES (lease, p_account, p_address, t + p_lease);
  kind := 'ok';
END $$;

-- Settle a reservation (SEAM.md ThrottleLedger.settle) in one statement.
CREATE FUNCTION httpskit.throttle_settle(
  p_lease uuid, p_account text, p_address text, p_outcome text,
  p_free integer, p_base bigint, p_max bigint, p_addr_max integer, p_window bigint
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  t bigint := httpskit.now_ms();
BEGIN
  IF p_outcome = 'fail' THEN
    IF p_account IS NOT NULL THEN
      INSERT INTO httpskit.throttle_account AS a (account, failures, locked_until, last_failure)
      VALUES (p_account, 1, CASE WHEN 1 >= p_free THEN t + least(p_base * 2 ^ (1 - p_free), p_max)::bigint ELSE 0 END, t)
      ON CONFLICT (account) DO UPDATE SET
        failures = a.failures + 1,
        locked_until = CASE WHEN a.failures + 1 >= p_free
          THEN t + least(p_base * 2 ^ least(a.failures + 1 - p_free, 40), p_max)::bigint ELSE 0 END,
        last_failure = t;
    END IF;
    INSERT INTO httpskit.throttle_address AS a (address, times, last_failure) VALUES (p_address, ARRAY[t], t)
    ON CONFLICT (address) DO UPDATE SET
      times = (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM (
                 SELECT x FROM unnest(a.times || t) AS x WHERE x + p_window > t ORDER BY x DESC LIMIT p_addr_max) AS kept),
      last_failure = t;
  ELSIF p_outcome = 'success' AND p_account IS NOT NULL THEN
    DELETE FROM httpskit.throttle_account WHERE account = p_account;
  END IF;
  DELETE FROM httpskit.throttle_lease WHERE id = p_lease;
END $$;

-- P-12 (SEAM.md IssuanceLedger.take): true and counted when fewer than p_max in the window.
CREATE FUNCTION httpskit.issuance_take(p_account text, p_max integer, p_window bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  t bigint := httpskit.now_ms();
  live bigint[];
BEGIN
  INSERT INTO httpskit.token_issuance (account) VALUES (p_account) ON CONFLICT DO NOTHING;
  SELECT times INTO live FROM httpskit.token_issuance WHERE account = p_account FOR UPDATE;
  SELECT coalesce(array_agg(x ORDER BY x), '{}') INTO live FROM unnest(live) AS x WHERE x + p_window > t;
  IF cardinality(live) >= p_max THEN
    UPDATE httpskit.token_issuance SET times = live WHERE account = p_account;
    RETURN false;
  END IF;
  UPDATE httpskit.token_issuance SET times = live || t, forget_at = greatest(forget_at, t + p_window) WHERE account = p_account;
  RETURN true;
END $$;
`;
