"""Unit conversions between Celsius, Fahrenheit and Kelvin."""

ABSOLUTE_ZERO_C = -273.15


def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 + 32


def fahrenheit_to_celsius(fahrenheit: float) -> float:
    """Convert degrees Fahrenheit to degrees Celsius."""
    return fahrenheit - 32 * 5 / 9


def kelvin_to_celsius(kelvin: float) -> float:
    """Convert kelvin to degrees Celsius; refuses temperatures below absolute zero."""
    if kelvin < 0:
        raise ValueError(f"temperature below absolute zero: {kelvin} K")
    return kelvin + ABSOLUTE_ZERO_C
