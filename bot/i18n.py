"""Where bot's string catalogues live (`bot/catalogs/<name>.toml`), and the router's and
transports' own strings (zh default, en)."""

from pathlib import Path

from kernel.i18n import Catalog

CATALOGS = Path(__file__).resolve().parent / "catalogs"


def catalog(name: str) -> Catalog:
    """`bot/catalogs/<name>.toml`, read and checked on first use."""
    return Catalog.from_toml(CATALOGS / f"{name}.toml")


T = catalog("router")
