"""Configuration: one TOML file + PRICEADVISOR_* environment + a secrets directory.

Precedence, highest first: environment variables (`__` nests: PRICEADVISOR_PROVIDERS__AZURE__
ENABLED=false), the TOML file, defaults. Credentials are SecretStr and are looked up by the env
var name a provider's manifest gives, in the environment, then in the secrets directories
(systemd LoadCredential's $CREDENTIALS_DIRECTORY, Docker's /run/secrets, or `secrets_dir`).
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    BeforeValidator,
    ByteSize,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from priceadvisor.config_basics import (
    CONFIG_ENV,
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_LOG_LEVEL,
    DEFAULT_READER_MEMORY,
    DEFAULT_READER_THREADS,
    DEFAULT_SQL_TIMEOUT,
    ENV_PREFIX,
    LOG_LEVELS,
    ConfigError,
    db_or_default,
    find_config_file,
    memory_size,
)
from priceadvisor.durations import parse_duration
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.manifest import ManifestError, RedirectPolicy, manifest, manifest_ids
from priceadvisor.records import TRAINING_TASKS
from priceadvisor.workload import RunCosts, WorkloadError, WorkloadSpec, describe

Seconds = Annotated[float, BeforeValidator(parse_duration)]

_config_file: ContextVar[Path | None] = ContextVar("priceadvisor_config_file", default=None)


class ProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    interval: Seconds | None = Field(None, description="overrides the manifest's default")
    endpoints: dict[str, str] = Field(default_factory=dict)
    api_key: SecretStr | None = None
    deadline: Seconds = Field(300.0, description="give up on one fetch after this long")
    request_spacing: float | None = Field(
        None, ge=0, description="seconds between requests; overrides the manifest's default"
    )
    max_response_size: ByteSize | None = Field(
        None,
        gt=0,
        description="largest decompressed response, e.g. '256 MiB'; overrides the manifest",
    )
    redirects: RedirectPolicy | None = Field(None, description="overrides the manifest's policy")
    min_offer_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="fewer offers than this share of the last ok run: none closed (0 = off)",
    )
    allow_flagged: list[str] = Field(
        default_factory=list,
        description="offers the offer guard flags but you accept: '*' (all of this provider's),"
        " 'region/instance_type' or 'region/instance_type/pricing' (docs/offers-guard.md)",
    )


class HttpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeout: Seconds = 30.0
    attempts: int = Field(4, ge=1, le=20)
    max_retry_after: Seconds = 120.0
    contact: str | None = Field(None, description="appended to the User-Agent, e.g. an email")


class ReaderSettings(BaseModel):
    """[readers]: bounds of every read-only connection (sql, prices, exports, the dashboard)."""

    model_config = ConfigDict(extra="forbid")

    memory_limit: str = Field(
        DEFAULT_READER_MEMORY, description="DuckDB memory limit: a size (2GiB) or a share of RAM"
    )
    threads: int = Field(DEFAULT_READER_THREADS, ge=1, le=256, description="DuckDB threads")
    sql_timeout: Seconds = Field(
        DEFAULT_SQL_TIMEOUT, gt=0, description="`sql` stops a query after this long"
    )

    @field_validator("memory_limit")
    @classmethod
    def _size(cls, value: str) -> str:
        memory_size(value)
        return value


class DaemonSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    health_host: str = Field("127.0.0.1", description="address of /healthz and /metrics")
    health_port: int = Field(9464, ge=0, le=65535, description="0 picks a free port")
    jitter: float = Field(0.1, ge=0, le=0.5, description="fetch start jitter, share of interval")
    failing_after: int = Field(3, ge=1, description="consecutive failed runs = provider failing")
    export_dir: Path | None = Field(None, description="Parquet export after every fetch job")
    shutdown_grace: Seconds = Field(5.0, description="wait this long for a running job on stop")
    dashboard: bool = Field(True, description="serve the web dashboard beside /healthz")
    web_token_env: str = Field(
        "PRICEADVISOR_WEB_TOKEN", description="secret's env/file name: dashboard bearer token"
    )
    public_url: str | None = Field(None, description="the dashboard's address for links in digests")
    metrics_per_provider: bool = Field(
        False,
        description="/metrics: also the cheapest $/GPU-hour per provider (x providers series)",
    )
    metrics_cache: Seconds = Field(
        30.0, ge=0, description="/metrics: reuse the price gauges' read for this long"
    )
    # Scale-out on a lake: several daemons share one store, each fetching its own providers.
    providers: list[str] = Field(
        default_factory=list,
        description="the providers this daemon fetches; empty: every enabled provider",
    )
    lease: Seconds = Field(
        600.0,
        gt=0,
        description="alert/digest job lease: another daemon takes over this long after a crash",
    )

    @field_validator("providers")
    @classmethod
    def _known_owned(cls, value: list[str]) -> list[str]:
        _known_provider_ids(value)
        repeated = sorted({p for p in value if value.count(p) > 1})
        if repeated:
            raise ValueError(f"provider listed twice: {', '.join(repeated)}")
        return value


class EmailSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str
    port: int = Field(587, ge=1, le=65535)
    security: Literal["starttls", "tls", "none"] = "starttls"
    username: str | None = None
    password: SecretStr | None = None
    password_env: str = Field("PRICEADVISOR_SMTP_PASSWORD", description="secret's env/file name")
    sender: str = Field(min_length=3)
    recipients: list[str] = Field(min_length=1)
    timeout: Seconds = 30.0
    chart: bool = Field(False, description="inline PNG price chart (needs the chart extra)")


class SlackSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    webhook_url: SecretStr | None = None
    webhook_env: str = Field("SLACK_WEBHOOK_URL", description="secret's env/file name")


class NotifySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailSettings | None = None
    slack: SlackSettings | None = None
    max_attempts: int = Field(12, ge=1)
    retry_base: Seconds = 30.0
    retry_max: Seconds = 3600.0
    deliver_every: Seconds = Field(60.0, gt=0, description="the daemon's outbox delivery interval")
    claim_lease: Seconds = Field(
        600.0, gt=0, description="a claimed row is retried after this long without an outcome"
    )


class AlertRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal[
        "cheaper", "price_drop", "new_offer", "provider_failing", "available", "api_cheaper"
    ]
    workload: str | None = Field(
        None, description="cheaper/available/api_cheaper: the workload watched"
    )
    gpu_model: str | None = Field(None, description="price_drop/new_offer: canonical GPU id")
    pricing: Literal["on_demand", "spot"] | None = None
    threshold_pct: float = Field(10.0, gt=0, lt=100)
    baseline: float | None = Field(None, gt=0, description="cheaper: what you pay today")
    providers: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _needs(self) -> AlertRule:
        if self.kind in ("cheaper", "available", "api_cheaper") and not self.workload:
            raise ValueError(f"a {self.kind!r} rule needs workload")
        if self.kind == "price_drop" and not self.gpu_model:
            raise ValueError("a 'price_drop' rule needs gpu_model")
        if self.gpu_model is not None and self.gpu_model not in gpu_catalog().gpus:
            raise ValueError(
                f"unknown gpu_model {self.gpu_model!r} (canonical ids are in the gpus table)"
            )
        _known_provider_ids(self.providers)
        return self


class AlertSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: list[AlertRule] = Field(default_factory=list)
    for_fetches: int = Field(2, ge=1, description="the condition must hold this many times")
    repeat_interval: Seconds = Field(86400.0, description="an unchanged alert repeats after")
    failing_after: int = Field(3, ge=1, description="failed runs in a row = provider failing")
    send_resolved: bool = False
    include_stale: bool = Field(
        False, description="also alert on prices older than 2 fetch intervals (marked stale)"
    )


_DEFAULT_DIGEST_CRON = "0 8 * * mon"


class DigestSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cron: str = Field(_DEFAULT_DIGEST_CRON, description="crontab: minute hour day month weekday")
    timezone: str = "UTC"
    top: int = Field(5, ge=1, le=20)
    gpus: list[str] = Field(
        default_factory=list,
        description="GPU models to chart and list first; empty: your workloads' and alerts'",
    )

    @model_validator(mode="after")
    def _valid_schedule(self) -> DigestSettings:
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {self.timezone!r}") from None
        if self.cron == _DEFAULT_DIGEST_CRON:
            return self  # the default is valid; the scheduler is imported only for a given one
        from apscheduler.triggers.cron import CronTrigger  # noqa: PLC0415

        try:
            CronTrigger.from_crontab(self.cron, timezone=zone)
        except ValueError as exc:
            raise ValueError(f"invalid cron {self.cron!r}: {exc}") from None
        return self


class WorkloadProfile(WorkloadSpec, RunCosts):
    """A `[[workloads]]` entry: the workload (priceadvisor.workload, the same fields and checks
    as `estimate`'s options), its name, and the offers advice may rank for it."""

    name: str = Field(min_length=1)
    monthly_output_tokens: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="sizes always-on replicas for monthly_usd"
    )
    replicas: int | None = Field(None, gt=0, description="serve/batch: replicas to run")
    spot_ok: bool = False
    require_available: bool = Field(
        False, description="rank only offers whose source says they can be rented now"
    )
    providers: list[str] = Field(default_factory=list)
    countries: list[str] = Field(default_factory=list)
    continents: list[Literal["AF", "AS", "EU", "NA", "OC", "SA"]] = Field(default_factory=list)
    eu_only: bool = False
    max_gpus: int | None = Field(None, gt=0)
    pricing: list[Literal["on_demand", "spot"]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _advisable(self) -> WorkloadProfile:
        """Advice costs a training run by its length, and buys replicas for serving only."""
        if self.task in TRAINING_TASKS and not self.train_tokens:
            raise WorkloadError(f"a {self.task} workload needs train_tokens", "train_tokens")
        if self.replicas and self.task in TRAINING_TASKS:
            raise WorkloadError(
                f"replicas applies to serve and batch tasks, not {self.task!r}", "replicas"
            )
        return self

    def label(self) -> str:
        return self.name


class S3Settings(BaseModel):
    """Object storage for a lake's data files (AWS S3 or any S3-compatible server)."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str | None = Field(None, description="host[:port] of an S3-compatible server")
    region: str | None = None
    url_style: Literal["vhost", "path"] = "vhost"
    use_ssl: bool = True
    key_id_env: str = Field("AWS_ACCESS_KEY_ID", description="secret's env/file name")
    secret_env: str = Field("AWS_SECRET_ACCESS_KEY", description="secret's env/file name")


# Lake maintenance (merge files, expire snapshots, delete old files): weekly, Sunday 03:00 UTC;
# `--as-of` reaches back this far.
_DEFAULT_LAKE_MAINTENANCE = "0 3 * * 0"
_DEFAULT_SNAPSHOT_RETENTION = 90 * 86400.0


class LakeSettings(BaseModel):
    """A DuckLake (storage = "ducklake"): where its catalog and its data files are."""

    model_config = ConfigDict(extra="forbid")

    catalog: str = Field(
        min_length=1,
        description="postgres:<libpq DSN> | sqlite:<file> | <DuckDB catalog file>",
    )
    data_path: str = Field(min_length=1, description="directory or s3://bucket/prefix/")
    password_env: str = Field("PRICEADVISOR_CATALOG_PASSWORD", description="secret's env/file name")
    s3: S3Settings = Field(default_factory=S3Settings)
    snapshot_retention: Seconds = Field(
        _DEFAULT_SNAPSHOT_RETENTION,
        description="snapshots kept for --as-of; maintenance expires older ones",
    )
    maintenance: str = Field(
        _DEFAULT_LAKE_MAINTENANCE,
        description='crontab (UTC) of the daemons\' lake maintenance, or "off"',
    )

    @field_validator("maintenance")
    @classmethod
    def _maintenance(cls, value: str) -> str:
        value = value.strip()
        if value in {"off", _DEFAULT_LAKE_MAINTENANCE}:
            return value  # the scheduler is imported only for a given cron
        from apscheduler.triggers.cron import CronTrigger  # noqa: PLC0415

        try:
            CronTrigger.from_crontab(value, timezone=ZoneInfo("UTC"))
        except ValueError as exc:
            raise ValueError(f'invalid cron {value!r} (or "off"): {exc}') from None
        return value

    @field_validator("catalog")
    @classmethod
    def _catalog(cls, value: str) -> str:
        value = value.strip().removeprefix("ducklake:")
        if "password" in value.lower():
            raise ValueError(
                "must not hold a password: put it in the secret named by lake.password_env"
            )
        if value.startswith(("postgres:", "sqlite:")) and not value.split(":", 1)[1].strip():
            raise ValueError(f"{value!r} names no database")
        return value

    @field_validator("data_path")
    @classmethod
    def _data_path(cls, value: str) -> str:
        if "://" in value and not value.startswith("s3://"):
            raise ValueError(f"{value!r}: use a directory or an s3://bucket/prefix/ URL")
        return value if value.endswith("/") else value + "/"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    db: Path | None = None
    storage: Literal["duckdb", "ducklake"] = "duckdb"
    lake: LakeSettings | None = None
    log_level: str = Field(DEFAULT_LOG_LEVEL, pattern=rf"^({'|'.join(LOG_LEVELS)})$")
    lock_timeout: Seconds = DEFAULT_LOCK_TIMEOUT
    secrets_dir: Path | None = None
    http: HttpSettings = Field(default_factory=HttpSettings)
    readers: ReaderSettings = Field(default_factory=ReaderSettings)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    workloads: list[WorkloadProfile] = Field(default_factory=list)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    digest: DigestSettings = Field(default_factory=DigestSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = _config_file.get()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    @model_validator(mode="after")
    def _unique_workloads(self) -> Settings:
        names = [w.name for w in self.workloads]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(duplicates)}")
        return self

    @model_validator(mode="after")
    def _lake_configured(self) -> Settings:
        if self.storage == "ducklake" and self.lake is None:
            raise ValueError(
                'storage = "ducklake" needs a [lake] section with catalog and data_path'
            )
        return self

    @field_validator("providers")
    @classmethod
    def _known_sections(cls, value: dict[str, ProviderSettings]) -> dict[str, ProviderSettings]:
        """A misspelt [providers.<id>] section would otherwise configure nothing, silently."""
        _known_provider_ids(list(value))
        return value

    @model_validator(mode="after")
    def _known_workloads(self) -> Settings:
        """A rule watching a workload that does not exist would never fire."""
        names = {w.name for w in self.workloads}
        for rule in self.alerts.rules:
            if rule.workload is not None and rule.workload not in names:
                known = ", ".join(sorted(names)) or "none configured"
                raise ValueError(
                    f"alert rule names unknown workload {rule.workload!r} (workloads: {known})"
                )
        return self

    def workload(self, name: str) -> WorkloadProfile:
        for profile in self.workloads:
            if profile.name == name:
                return profile
        known = ", ".join(w.name for w in self.workloads) or "none configured"
        raise ConfigError(f"unknown workload {name!r} (configured: {known})")

    def db_path(self) -> Path:
        return db_or_default(self.db)

    def provider_enabled(self, provider_id: str) -> bool:
        """`[providers.<id>] enabled` where the config sets it, else the manifest's default."""
        return self.provider(provider_id).enabled

    def provider(self, provider_id: str) -> ProviderSettings:
        """The provider's settings; `enabled` not set in the config is the manifest's
        `enabled_by_default`."""
        configured = self.providers.get(provider_id)
        if configured is not None and "enabled" in configured.model_fields_set:
            return configured
        default = _enabled_by_default(provider_id)
        if configured is None:
            return ProviderSettings(enabled=default)
        return configured.model_copy(update={"enabled": default})


def _enabled_by_default(provider_id: str) -> bool:
    try:
        return manifest(provider_id).enabled_by_default
    except ManifestError:  # not a shipped provider: validation reports it elsewhere
        return True


def _known_provider_ids(ids: list[str]) -> None:
    known = manifest_ids()
    for provider_id in ids:
        if provider_id not in known:
            raise ValueError(f"unknown provider {provider_id!r} (known: {', '.join(known)})")


def unknown_env_vars(settings: Settings) -> list[str]:
    """PRICEADVISOR_* variables that configure nothing: not a setting (PRICEADVISOR_<KEY> or
    PRICEADVISOR_<KEY>__…), not the config path, not a secret a setting names. Settings read
    only the names they know, so a typo would otherwise be ignored without a word."""
    keys = {name.upper() for name in Settings.model_fields}
    unknown = [name for name in os.environ if _unknown_setting(name.upper(), keys)]
    if not unknown:
        return []  # the usual case: no provider manifest needs reading to know it
    secrets = _secret_env_names(settings)
    return sorted(name for name in unknown if name not in secrets)


def _unknown_setting(name: str, keys: set[str]) -> bool:
    """Settings read their variables whatever the case, so `name` comes upper-cased."""
    if not name.startswith(ENV_PREFIX) or name == CONFIG_ENV:
        return False
    return name[len(ENV_PREFIX) :].split("__", maxsplit=1)[0] not in keys


def _secret_env_names(settings: Settings) -> set[str]:
    names = {manifest(p).credential_env for p in manifest_ids()}
    names |= {EmailSettings.model_fields["password_env"].default}
    names |= {SlackSettings.model_fields["webhook_env"].default}
    names |= {DaemonSettings.model_fields["web_token_env"].default, settings.daemon.web_token_env}
    if settings.notify.email is not None:
        names.add(settings.notify.email.password_env)
    if settings.notify.slack is not None:
        names.add(settings.notify.slack.webhook_env)
    names.add(settings.lake.password_env if settings.lake else "PRICEADVISOR_CATALOG_PASSWORD")
    return {name for name in names if name}


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Load and validate; every failure becomes a one-line ConfigError naming the key."""
    path = find_config_file(config_file)
    token = _config_file.set(path)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None
    except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(f"invalid config {path}: {exc}") from None
    finally:
        _config_file.reset(token)


def _describe(exc: ValidationError, path: Path | None) -> str:
    where, message = describe(exc)
    key = ".".join(str(part) for part in where) or "(top level)"
    at = f" in {path}" if path else ""
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"invalid config{at}: {key}: {message}{more}"


def secret_dirs(settings: Settings) -> list[Path]:
    dirs = [settings.secrets_dir] if settings.secrets_dir else []
    if os.environ.get("CREDENTIALS_DIRECTORY"):
        dirs.append(Path(os.environ["CREDENTIALS_DIRECTORY"]))
    dirs.append(Path("/run/secrets"))
    return dirs


def lookup_secret(settings: Settings, env_name: str) -> SecretStr | None:
    """A credential from the environment or a file of that name in a secrets directory."""
    if os.environ.get(env_name):
        return SecretStr(os.environ[env_name])
    # `LoadCredential=priceadvisor:/etc/priceadvisor/credentials` (a directory, so absent keys
    # are fine) names each file's credential "priceadvisor_<file name>" (systemd.exec(5)).
    names = (env_name, f"priceadvisor_{env_name}")
    for directory in secret_dirs(settings):
        for candidate in (directory / name for name in names):
            if candidate.is_file():
                return SecretStr(candidate.read_text(encoding="utf-8").strip())
    return None
