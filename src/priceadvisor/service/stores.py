"""The configured store, built once at the top (the CLI's state, the daemon) and passed down:
the DuckDB file (--db, PRICEADVISOR_DB) or the [lake], with the lake's secrets resolved here
(environment or credential files), so nothing below reads the configuration for them."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from priceadvisor.store.handle import Store

if TYPE_CHECKING:
    from priceadvisor.config import LakeSettings, Settings
    from priceadvisor.config_basics import DbSettings
    from priceadvisor.store.lake import S3, Lake


def configured_store(settings: DbSettings) -> Store:
    """The light read settings never name a lake (config_basics defers any storage key to the
    full load), so only the full Settings can lead here to a lake."""
    lake_settings = getattr(settings, "lake", None)
    if getattr(settings, "storage", "duckdb") == "ducklake" and lake_settings is not None:
        lake = configured_lake(cast("Settings", settings), lake_settings)
        return Store(lake, settings.lock_timeout)
    return Store(settings.db_path(), settings.lock_timeout)


def configured_lake(settings: Settings, config: LakeSettings) -> Lake:
    """The lake of the [lake] settings, with its secrets looked up (environment or files)."""
    from priceadvisor.store.lake import Lake  # noqa: PLC0415 - a file's readers never need it

    return Lake(
        catalog=config.catalog,
        data_path=config.data_path,
        password=_secret(settings, config.password_env),
        s3=_s3(settings, config) if config.data_path.startswith("s3://") else None,
    )


def _s3(settings: Settings, config: LakeSettings) -> S3:
    from priceadvisor.store.lake import S3  # noqa: PLC0415

    return S3(
        endpoint=config.s3.endpoint,
        region=config.s3.region,
        url_style=config.s3.url_style,
        use_ssl=config.s3.use_ssl,
        key_id=_secret(settings, config.s3.key_id_env),
        secret=_secret(settings, config.s3.secret_env),
    )


def _secret(settings: Settings, name: str) -> str | None:
    """The full configuration, imported here: the light read path never names a lake."""
    from priceadvisor.config import lookup_secret  # noqa: PLC0415

    found = lookup_secret(settings, name)
    return found.get_secret_value() if found else None
