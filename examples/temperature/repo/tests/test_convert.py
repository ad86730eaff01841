import pytest

from thermo import celsius_to_fahrenheit, fahrenheit_to_celsius, kelvin_to_celsius


def test_boiling_point_round_trip():
    assert celsius_to_fahrenheit(100) == 212
    assert fahrenheit_to_celsius(212) == pytest.approx(100)


def test_body_temperature():
    assert fahrenheit_to_celsius(98.6) == pytest.approx(37.0)


def test_kelvin():
    assert kelvin_to_celsius(273.15) == pytest.approx(0)
    with pytest.raises(ValueError):
        kelvin_to_celsius(-1)
