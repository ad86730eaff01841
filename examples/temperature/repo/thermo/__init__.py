"""Small temperature helpers used by the weather station dashboard."""

from .convert import celsius_to_fahrenheit, fahrenheit_to_celsius, kelvin_to_celsius

__all__ = ["celsius_to_fahrenheit", "fahrenheit_to_celsius", "kelvin_to_celsius"]
