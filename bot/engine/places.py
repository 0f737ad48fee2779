"""Where a client lives, as an IANA time zone: from a city or a country, in any of our languages.

Clients are asked for a city, never for "Europe/Rome". City and country names come from
CLDR (through Babel) in every supported language, and the zone-to-country table from tzdata.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from zoneinfo import available_timezones

from babel import Locale

from bot.i18n import SUPPORTED_LOCALES, without_accents


def _tz_text(name: str) -> str:
    return resources.files("tzdata").joinpath("zoneinfo", name).read_text(encoding="utf-8")


@cache
def _canonical_zones() -> Mapping[str, str]:
    """zone.tab: each canonical zone and its country, the country's main zone first."""
    zones: dict[str, str] = {}
    for line in _tz_text("zone.tab").splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) >= 3:
            zones[fields[2]] = fields[0]
    return zones


@cache
def _zone_countries() -> Mapping[str, str]:
    zones = dict(_canonical_zones())
    # Backward-compatible links ("Asia/Tel_Aviv" -> "Asia/Jerusalem", "US/Eastern" -> ...).
    links: dict[str, str] = {}
    try:
        for line in _tz_text("tzdata.zi").splitlines():
            if line.startswith("L "):
                parts = line.split()
                if len(parts) == 3:
                    links[parts[2]] = parts[1]
    except FileNotFoundError:  # pragma: no cover - tzdata always ships it
        pass
    for link, target in links.items():
        seen = {link}
        while target in links and target not in seen:
            seen.add(target)
            target = links[target]
        if link not in zones and target in zones:
            zones[link] = zones[target]
    return zones


def country_for_timezone(tz: str) -> str | None:
    """ISO country code for an IANA time zone name, or None for non-geographic zones."""
    return _zone_countries().get(tz.strip())



def _key(text: str) -> str:
    return " ".join(without_accents(text.casefold()).replace("_", " ").replace("-", " ").split())


# Big cities and regions of our clients' countries that CLDR does not name, as people write them.
_CITY_ALIASES: dict[str, tuple[str, ...]] = {
    "Europe/Madrid": ("Barcelona", "Catalunya", "Cataluña", "Catalonia", "València", "Valencia",
                      "Girona", "Lleida", "Tarragona", "Sabadell", "Terrassa", "Badalona",
                      "Palma", "Sevilla", "Bilbao", "Zaragoza", "Màlaga", "Málaga"),
    "Europe/Andorra": ("Andorra",),
    "Europe/Rome": ("Milano", "Milan", "Napoli", "Naples", "Torino", "Turin", "Firenze",
                    "Florence", "Bologna", "Genova", "Genoa", "Palermo", "Venezia", "Venice",
                    "Bari", "Verona", "Trieste"),
    "Europe/Zurich": ("Lugano", "Bellinzona", "Svizzera", "Schweiz", "Suisse"),
    "Europe/Zagreb": ("Split", "Rijeka", "Osijek", "Zadar", "Pula", "Dubrovnik", "Varaždin"),
    "Europe/Sofia": ("Plovdiv", "Пловдив", "Varna", "Варна", "Burgas", "Бургас", "Ruse", "Русе",
                     "Stara Zagora", "Стара Загора"),
    "Asia/Jerusalem": ("Tel Aviv", "תל אביב", "Haifa", "חיפה", "Beer Sheva", "באר שבע",
                       "Eilat", "אילת", "Netanya", "נתניה", "Rishon LeZion", "ראשון לציון"),
    "Europe/London": ("UK", "United Kingdom", "England", "Scotland", "Wales", "Manchester",
                      "Birmingham", "Edinburgh", "Glasgow"),
}


@cache
def _names() -> Mapping[str, frozenset[str]]:
    """Every known name of a place (city, country, zone id) -> the zones it may mean."""
    canonical = _canonical_zones()
    zones_by_country: dict[str, set[str]] = {}
    for zone, country in canonical.items():
        zones_by_country.setdefault(country, set()).add(zone)
    names: dict[str, set[str]] = {}

    def add(name: str | None, zones: set[str]) -> None:
        if name:
            names.setdefault(_key(name), set()).update(zones)

    geographic = {z for z in available_timezones() if z in canonical}
    for zone in geographic:
        add(zone, {zone})
        add(zone.rsplit("/", 1)[-1], {zone})
    for locale in SUPPORTED_LOCALES:
        cldr = Locale.parse(locale)
        for zone, info in cldr.time_zones.items():
            if zone in geographic:
                add(info.get("city"), {zone})
        for country, zones in zones_by_country.items():
            add(cldr.territories.get(country), zones)
    for utc in ("UTC", "GMT"):
        add(utc, {"UTC"})
    for zone, aliases in _CITY_ALIASES.items():
        for alias in aliases:
            add(alias, {zone})
    return {name: frozenset(zones) for name, zones in names.items()}


def find_time_zones(text: str) -> frozenset[str]:
    """The zones a city or country name may mean: one, several (a big country), or none."""
    return _names().get(_key(text), frozenset())
