"""Settings: read once from the environment, and never printed with their secrets."""

from service.settings import Settings


def test_settings_come_from_upper_case_environment_names() -> None:
    settings = Settings.from_env(
        {"PORT": "9000", "REQUIRE_AUTH": "true", "DB_STATEMENT_TIMEOUT_S": "2.5", "UNRELATED": "x"}
    )
    assert (settings.port, settings.require_auth, settings.db_statement_timeout_s) == (
        9000,
        True,
        2.5,
    )
    assert settings.rate_limit_per_minute == 600  # untouched default


def test_repr_hides_the_signing_secret_and_the_database_password() -> None:
    settings = Settings(
        database_url="postgresql+psycopg://planner:hunter2@db:5432/plans",
        slack_signing_secret="8f742231b10e8888abcd99yyyzzz85a5",
    )
    shown = repr(settings)
    assert "hunter2" not in shown and "8f742231" not in shown
    assert "postgresql+psycopg://planner:***@db:5432/plans" in shown
    assert "port=8000" in shown
