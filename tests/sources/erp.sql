-- The source database of tests/sources: an ERP-like schema "public" of small tables covering the
-- types, keys and names a plan must handle, and a second schema "hr" that a Jdbc(schema="public")
-- source must not list. ANALYZE at the end, so PostgreSQL's row estimates are exact.

-- Keyed by a primary key the database numbers itself (identity), with a unique e-mail too.
CREATE TABLE customers (
    customer_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email text NOT NULL UNIQUE,
    name text NOT NULL,
    signed_up date NOT NULL,
    active boolean NOT NULL DEFAULT true,
    balance numeric(12, 2)
);

-- Text key; arrays, jsonb and bytea columns (arrays and jsonb become JSON text when pushed).
CREATE TABLE products (
    sku text PRIMARY KEY,
    title text NOT NULL,
    price numeric(10, 2) NOT NULL,
    tags text[],
    sizes integer[],
    attributes jsonb,
    thumbnail bytea
);

-- A watermark candidate (updated_at) for the incremental strategy.
CREATE TABLE orders (
    order_id bigint PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES customers,
    ordered_at timestamptz NOT NULL,
    status text NOT NULL,
    total numeric(14, 2) NOT NULL,
    updated_at timestamptz NOT NULL
);

-- A composite primary key, declared in the opposite order of the columns.
CREATE TABLE order_lines (
    line_no integer NOT NULL,
    order_id bigint NOT NULL REFERENCES orders,
    sku text NOT NULL REFERENCES products,
    quantity integer NOT NULL,
    unit_price numeric(10, 2) NOT NULL,
    PRIMARY KEY (order_id, line_no)
);

-- Keyed only by unique constraints: one on a nullable column (not a key), one on two NOT NULL
-- columns and one on a single NOT NULL column (the narrowest wins).
CREATE TABLE warehouses (
    code char(4) NOT NULL,
    region text NOT NULL,
    site integer NOT NULL,
    phone text UNIQUE,
    name text,
    CONSTRAINT warehouses_region_site UNIQUE (region, site),
    CONSTRAINT warehouses_code UNIQUE (code)
);

-- A composite primary key over a text and a date.
CREATE TABLE stock_levels (
    sku text NOT NULL REFERENCES products,
    counted_on date NOT NULL,
    on_hand integer NOT NULL,
    PRIMARY KEY (sku, counted_on)
);

-- uuid key, timestamptz, json.
CREATE TABLE sessions (
    session_id uuid PRIMARY KEY,
    customer_id bigint REFERENCES customers,
    started_at timestamptz NOT NULL,
    context json
);

-- A keyless event table: no key in the database, but an identity column profiling finds unique
-- and that the append strategy can use as its watermark.
CREATE TABLE events (
    event_id bigint GENERATED ALWAYS AS IDENTITY,
    happened_at timestamptz NOT NULL,
    kind text NOT NULL,
    payload jsonb
);

-- Keyless, and nothing in its rows is unique: no key at all.
CREATE TABLE page_views (
    path text NOT NULL,
    viewed_on date NOT NULL,
    seconds integer NOT NULL
);

-- A primary key over a floating-point column: not a key that compares exactly.
CREATE TABLE exchange_rates (
    currency char(3) NOT NULL,
    rate double precision NOT NULL,
    quoted_on date NOT NULL,
    PRIMARY KEY (currency, rate)
);

-- A column the landing zone cannot hold: the row marker's own name.
CREATE TABLE legacy_import (id integer PRIMARY KEY, "__rowMarker__" integer, note text);

-- Two column names that differ only by case: Spark's reader refuses the table.
CREATE TABLE mixed_case (id integer PRIMARY KEY, "Code" text, code text);

-- Two names that meet after mapping: "Order Notes" (a space: mapped to OrderNotes) and ordernotes
-- (the same name, case-folded).
CREATE TABLE "Order Notes" (note_id integer PRIMARY KEY, body text);
CREATE TABLE ordernotes (note_id integer PRIMARY KEY, body text);

-- Empty: nothing to suggest a key from.
CREATE TABLE returns (return_ref text NOT NULL, reason text);

CREATE SCHEMA hr;
CREATE TABLE hr.employees (employee_id integer PRIMARY KEY, name text NOT NULL);

INSERT INTO customers (email, name, signed_up, active, balance) VALUES
    ('ada@example.com', 'Ada', '2024-01-05', true, 120.50),
    ('bob@example.com', 'Bob', '2024-02-11', true, 0.00),
    ('cy@example.com', 'Cy', '2024-03-09', false, NULL);
INSERT INTO products VALUES
    ('SKU-1', 'Kettle', 39.90, '{kitchen,steel}', '{1,2}', '{"colour": "red", "watts": 2200}', '\x00ff10'),
    ('SKU-2', 'Mug', 7.50, '{kitchen}', NULL, '{"colour": "white"}', NULL),
    ('SKU-3', 'Lamp', 24.00, '{}', '{3}', NULL, '\x'),
    ('SKU-4', 'Rug', 99.00, NULL, NULL, NULL, NULL);
INSERT INTO orders VALUES
    (1001, 1, '2024-04-01 09:30:00+02', 'shipped', 47.40, '2024-04-02 10:00:00+00'),
    (1002, 2, '2024-04-03 14:00:00+00', 'open', 7.50, '2024-04-03 14:00:00+00'),
    (1003, 1, '2024-04-05 23:59:59.999999+00', 'open', 99.00, '2024-04-05 23:59:59.999999+00');
INSERT INTO order_lines VALUES
    (1, 1001, 'SKU-1', 1, 39.90), (2, 1001, 'SKU-2', 1, 7.50),
    (1, 1002, 'SKU-2', 1, 7.50), (1, 1003, 'SKU-4', 1, 99.00);
INSERT INTO warehouses VALUES
    ('NORD', 'north', 1, '+45 1111', 'North'), ('SUED', 'south', 1, NULL, 'South'),
    ('OST1', 'east', 1, NULL, NULL);
INSERT INTO stock_levels VALUES
    ('SKU-1', '2024-04-01', 10), ('SKU-1', '2024-04-02', 9), ('SKU-2', '2024-04-01', 120);
INSERT INTO sessions VALUES
    ('0b9e1f4c-7d4a-4d55-9c1e-2f8f6f0e8a11', 1, '2024-04-01 09:00:00+00', '{"agent": "firefox"}'),
    ('5a1c3e77-2b1f-4a8e-8d2c-6b7a9e0f1d22', NULL, '2024-04-02 12:00:00+00', NULL);
INSERT INTO events (happened_at, kind, payload) VALUES
    ('2024-04-01 09:00:00+00', 'login', '{"ok": true}'),
    ('2024-04-01 09:00:00+00', 'login', '{"ok": false}'),
    ('2024-04-01 09:05:00+00', 'search', '{"q": "kettle"}');
INSERT INTO page_views VALUES
    ('/', '2024-04-01', 5), ('/', '2024-04-01', 5), ('/shop', '2024-04-01', 12);
INSERT INTO exchange_rates VALUES ('EUR', 1.0, '2024-04-01'), ('USD', 1.0842, '2024-04-01');
INSERT INTO legacy_import VALUES (1, NULL, 'old');
INSERT INTO mixed_case VALUES (1, 'A', 'a');
INSERT INTO "Order Notes" VALUES (1, 'fragile');
INSERT INTO ordernotes VALUES (1, 'gift');
INSERT INTO hr.employees VALUES (1, 'Eve');

ANALYZE;
