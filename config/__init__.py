"""ledger-janitor configuration: settings, where each value came from, and store URLs."""

from config.loader import (
    CONFIG_FILE_ENV,
    ENV_PREFIX,
    LoadedConfiguration,
    describe,
    env_var,
    load_configuration,
)
from config.settings import ServiceConfiguration
from config.urls import StoreUrl, parse_store_url

__all__ = [
    "CONFIG_FILE_ENV",
    "ENV_PREFIX",
    "LoadedConfiguration",
    "ServiceConfiguration",
    "StoreUrl",
    "describe",
    "env_var",
    "load_configuration",
    "parse_store_url",
]
