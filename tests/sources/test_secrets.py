"""Secrets never enter a plan: a password given as a value, in the URL or in a property is used
(the real PostgreSQL accepts it) and appears in no repr, no saved file and no error; a saved plan
keeps only where the password is (an environment variable, a Key Vault secret), and a plan file
holding a password or credentials is refused."""

from __future__ import annotations

import pytest
import yaml

import openmirror_nb as om
from openmirror_nb._core.errors import scrub
from openmirror_nb._core.sources.passwords import split_url
from tests.sources.postgres import PASSWORD, SUPERUSER

OTHER = "Tok-9f2e71c4-property-secret"  # a secret connection property, kept like the password


@pytest.mark.spark
def test_a_password_given_as_a_value_is_used_and_shown_saved_or_raised_nowhere(postgres, db, tmp_path):
    src = om.Jdbc(f"{postgres.url}?password={PASSWORD}&connectTimeout=10", user=SUPERUSER, schema="public",
                  properties={"sslpassword": OTHER})  # fmt: skip
    plan = db.plan_sources(src, target_schema="shop", suggest=False)
    assert len(plan.tables) == 15 and src.url == f"{postgres.url}?connectTimeout=10"
    plan.save(tmp_path / "shop.yaml")
    saved = (tmp_path / "shop.yaml").read_text(encoding="utf-8")
    shown = [repr(src), repr(plan), plan._repr_html_(), plan.to_pandas().to_string(), saved]
    try:
        src.read("no_such_table")
    except om.ConfigError as exc:
        shown.append(str(exc))
        assert 'relation "public.no_such_table" does not exist' in str(exc)
    for text in shown:
        assert PASSWORD not in text and OTHER not in text
    assert "password: given (not saved)" in repr(src)
    assert "was given as a value and is not saved: add\n# password_env: NAME" in saved
    loaded = om.load_plan(tmp_path / "shop.yaml")  # loads: the file holds no secret, only the gap
    assert loaded.source == src and not loaded.source.has_unsaved_secrets and loaded.tables == plan.tables
    assert yaml.safe_load(saved)["source"] == {
        "kind": "jdbc", "url": f"{postgres.url}?connectTimeout=10", "user": SUPERUSER, "schema": "public",
    }  # fmt: skip


@pytest.mark.spark
def test_a_saved_plan_keeps_the_passwords_reference_and_round_trips(erp_plan, tmp_path):
    erp_plan.save(tmp_path / "shop.yaml")
    saved = (tmp_path / "shop.yaml").read_text(encoding="utf-8")
    assert "  password_env: ERP_PASSWORD\n" in saved and PASSWORD not in saved and "not saved" not in saved
    loaded = om.load_plan(tmp_path / "shop.yaml")
    assert loaded == erp_plan and loaded.source.password_env == "ERP_PASSWORD"
    loaded.save(tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_text(encoding="utf-8") == saved
    assert loaded.source.discover()[0].name == "Order Notes"  # the reference is enough to connect


def test_a_key_vault_secret_is_read_in_fabric_only_and_said_so(monkeypatch):
    src = om.Jdbc(
        "jdbc:postgresql://db/erp", user="etl", password_secret="https://erp-kv.vault.azure.net/secrets/db"
    )
    assert src.to_dict()["password_secret"] == "https://erp-kv.vault.azure.net/secrets/db"
    assert "from Key Vault secret https://erp-kv.vault.azure.net/secrets/db" in repr(src)
    with pytest.raises(om.ConfigError, match="read with notebookutils, which only a Fabric notebook has"):
        src.connection_properties()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"password": PASSWORD, "password_env": "ERP_PASSWORD"}, ["one way, not password and password_env"]),
        ({"password_env": PASSWORD}, ["password_env is not an environment variable name"]),
        ({"password_secret": PASSWORD}, ["password_secret is not a Key Vault secret URL"]),
        ({"url": f"postgresql://db/erp?password={PASSWORD}"}, ["does not start with 'jdbc:'"]),
    ],
)
def test_a_password_in_the_wrong_place_is_refused_without_repeating_it(args, words):
    url = args.pop("url", "jdbc:postgresql://db/erp")
    with pytest.raises(om.ConfigError) as caught:
        om.Jdbc(url, **args)
    assert all(w in str(caught.value) for w in words) and PASSWORD not in str(caught.value)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (
            {"password": PASSWORD},
            ["source holds a password, which a plan file never does", "password_env: NAME"],
        ),
        ({"url": f"jdbc:postgresql://db/erp?user=etl&password={PASSWORD}"}, ["source holds credentials"]),
        ({"url": f"jdbc:mysql://etl:{PASSWORD}@db/erp"}, ["source holds credentials"]),
        ({"properties": {"sslpassword": PASSWORD}}, ["source holds credentials"]),
    ],
)
def test_a_plan_file_holding_a_secret_is_refused_without_repeating_it(tmp_path, source, words):
    data = {"version": 1, "source": {"kind": "jdbc", "url": "jdbc:postgresql://db/erp", **source},
            "target_schema": "shop", "problems": [], "tables": []}  # fmt: skip
    (tmp_path / "shop.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(om.ConfigError) as caught:
        om.load_plan(tmp_path / "shop.yaml")
    assert all(w in str(caught.value) for w in words) and PASSWORD not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "clean", "user", "password"),
    [
        ("jdbc:postgresql://db:5432/erp?user=u&password=p%40ss&ssl=true", "jdbc:postgresql://db:5432/erp?ssl=true",
         "u", "p@ss"),
        ("jdbc:sqlserver://db:1433;databaseName=erp;user=u;password=pw;encrypt=true",
         "jdbc:sqlserver://db:1433;databaseName=erp;encrypt=true", "u", "pw"),
        ("jdbc:mysql://u:pw@db:3306/erp", "jdbc:mysql://db:3306/erp", "u", "pw"),
        ("jdbc:oracle:thin:scott/tiger@db:1521/erp", "jdbc:oracle:thin:@db:1521/erp", "scott", "tiger"),
        ("jdbc:postgresql://db/erp?ssl=true", "jdbc:postgresql://db/erp?ssl=true", None, None),
    ],
)  # fmt: skip
def test_credentials_are_taken_out_of_a_url(url, clean, user, password):
    assert split_url(url) == (clean, user, password)
    src = om.Jdbc(url)
    assert (src.url, src.user) == (clean, user) and src.has_unsaved_secrets == (password is not None)
    if password:
        assert password not in repr(src) and password not in str(src.to_dict())


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("jdbc:postgresql://db/erp?user=u&password=s3cr3t&ssl=1", "jdbc:postgresql://db/erp?user=u&password=***&ssl=1"),
        ("jdbc:sqlserver://db;password=s3cr3t;encrypt=true", "jdbc:sqlserver://db;password=***;encrypt=true"),
        ("mysql://u:s3cr3t@db/erp", "mysql://u:***@db/erp"),
        ("jdbc:oracle:thin:u/s3cr3t@db:1521/x", "jdbc:oracle:thin:u/***@db:1521/x"),
        ("password_env: ERP_PASSWORD", "password_env: ERP_PASSWORD"),
    ],
)  # fmt: skip
def test_the_error_scrubber_hides_url_passwords(text, shown):
    assert scrub(text) == shown
